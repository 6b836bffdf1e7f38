#include "replay/right_sizing.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <cmath>

namespace ds {
namespace {

PodInfo Pod(const std::string& name, const std::string& node, const std::string& kind,
            const std::string& owner, double cpu, double memory, Labels labels = {}) {
  PodInfo p;
  p.ns = "shop";
  p.name = name;
  p.node = node;
  p.owner_kind = kind;
  p.owner_name = owner;
  p.cpu_request = cpu;
  p.memory_request = memory;
  p.labels = std::move(labels);
  return p;
}

// Points every 60 s from 0, one value each.
UsageSeries Series(const std::string& pod, std::vector<double> values,
                   const std::string& node = "") {
  UsageSeries s{"shop", pod, node, {}};
  for (size_t i = 0; i < values.size(); ++i)
    s.points.emplace_back(60.0 * static_cast<double>(i), values[i]);
  return s;
}

TEST(WorkloadOfTest, FollowsReplicaSetToDeploymentOnlyWhenTheHashAgrees) {
  struct Case {
    std::string kind, owner, hash;
    WorkloadId want;
  } cases[] = {
      {"ReplicaSet", "web-7f9c", "7f9c", {"shop", "Deployment", "web"}},
      {"ReplicaSet", "my-web-app-7f9c", "7f9c", {"shop", "Deployment", "my-web-app"}},
      {"ReplicaSet", "web-7f9c", "", {"shop", "ReplicaSet", "web-7f9c"}},      // no label
      {"ReplicaSet", "web-7f9c", "aaaa", {"shop", "ReplicaSet", "web-7f9c"}},  // another hash
      {"ReplicaSet", "web7f9c", "7f9c", {"shop", "ReplicaSet", "web7f9c"}},    // no dash
      {"ReplicaSet", "7f9c", "7f9c", {"shop", "ReplicaSet", "7f9c"}},          // nothing before
      {"StatefulSet", "db", "", {"shop", "StatefulSet", "db"}},
      {"", "", "", {"shop", "Pod", "p"}},
  };
  for (const Case& c : cases) {
    Labels labels;
    if (!c.hash.empty()) labels.emplace_back("pod-template-hash", c.hash);
    EXPECT_EQ(WorkloadOf(Pod("p", "n1", c.kind, c.owner, 0, 0, labels)), c.want) << c.owner;
  }
}

// Marks: n1 over [100, 300). Points at 0, 60, ..., 540: 120, 180 and 240 fall in the mark.
TEST(RightSizeTest, PercentilesRequestsAndHotShares) {
  std::vector<PodInfo> pods = {
      Pod("web-7f9c-a", "n1", "ReplicaSet", "web-7f9c", 0.5, 1e9, {{"pod-template-hash", "7f9c"}}),
      Pod("web-7f9c-b", "n2", "ReplicaSet", "web-7f9c", 0.25, 2e9, {{"pod-template-hash", "7f9c"}}),
      Pod("db-0", "n2", "StatefulSet", "db", 2, 4e9),
      Pod("lonely", "n1", "", "", 0.1, 1e8),
      Pod("plain-1", "n3", "ReplicaSet", "plain", 1, 1e9),
  };
  std::vector<UsageSeries> cpu = {
      Series("web-7f9c-a", {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}),
      Series("web-7f9c-b", {11, 12, 13, 14, 15, 16, 17, 18, 19, 20}),
      // The series names the node it ran on (n1), not the pod list's (n2).
      Series("db-0", {1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, "n1"), Series("plain-1", {0.5, NAN, 0.5}),
      Series("gone", {9, 9, 9}, "n1"),  // not in the pod list
  };
  std::vector<UsageSeries> memory = {
      Series("web-7f9c-a", {3e9}),
      // No CPU series: its hot time comes from these points (0, 60, 120: one in the mark).
      Series("lonely", {1e8, 2e8, 3e8}),
  };
  NodeMarks marks = {{"n1", {{100, 300}}}};
  RightSizing got = RightSize(pods, cpu, memory, marks, 60);

  ASSERT_EQ(got.rows.size(), 4u);
  EXPECT_EQ(got.unlisted_pods, 1u);
  // web: 20 samples 1..20, rank ceil(0.95 * 20) = 19; only pod a (n1) was on the marked node, 3
  // steps. db: 3 steps on n1. lonely: one step. Total 7 steps = 420 s.
  const WorkloadRow& web = got.rows[0];
  EXPECT_EQ(web.kind, "Deployment");
  EXPECT_EQ(web.name, "web");
  EXPECT_EQ(web.cpu_p95_cores, 19);
  EXPECT_EQ(web.cpu_request_cores, 0.5);
  EXPECT_EQ(web.memory_p95_bytes, 3e9);
  EXPECT_EQ(web.memory_request_bytes, 2e9);
  EXPECT_EQ(web.hot_node_seconds, 180);
  EXPECT_DOUBLE_EQ(web.hot_node_seconds_share, 180.0 / 420);
  EXPECT_EQ(web.pods, 2u);
  // db has the same share as web, but uses half its request where web uses 38 times it.
  const WorkloadRow& db = got.rows[1];
  EXPECT_EQ(db.name, "db");
  EXPECT_EQ(db.cpu_p95_cores, 1);
  EXPECT_DOUBLE_EQ(db.hot_node_seconds_share, 180.0 / 420);
  EXPECT_TRUE(std::isnan(db.memory_p95_bytes));
  const WorkloadRow& lonely = got.rows[2];
  EXPECT_EQ(lonely.kind, "Pod");
  EXPECT_EQ(lonely.hot_node_seconds, 60);
  EXPECT_EQ(lonely.memory_p95_bytes, 3e8);  // rank ceil(2.85) = 3 of 3
  EXPECT_TRUE(std::isnan(lonely.cpu_p95_cores));
  const WorkloadRow& plain = got.rows[3];
  EXPECT_EQ(plain.kind, "ReplicaSet");  // no pod-template-hash: stands alone
  EXPECT_EQ(plain.cpu_p95_cores, 0.5);  // the NaN point is no sample
  EXPECT_EQ(plain.hot_node_seconds_share, 0);
}

TEST(RightSizeTest, NoMarkMeansNoShareAndOrderByUsageOverRequest) {
  std::vector<PodInfo> pods = {Pod("a", "n1", "StatefulSet", "small", 1, 0),
                               Pod("b", "n1", "StatefulSet", "big", 1, 0)};
  std::vector<UsageSeries> cpu = {Series("a", {0.5}), Series("b", {3})};
  RightSizing got = RightSize(pods, cpu, {}, {}, 60);
  ASSERT_EQ(got.rows.size(), 2u);
  EXPECT_EQ(got.rows[0].name, "big");
  EXPECT_EQ(got.rows[0].hot_node_seconds_share, 0);
}

TEST(P95SketchTest, ExactWhileSmallThenWithinHalfAPercent) {
  P95Sketch small;
  for (int i = 1000; i >= 1; --i) small.Add(i);  // order does not matter
  EXPECT_EQ(small.Get(), 950);                   // rank ceil(950) of 1..1000
  P95Sketch large;
  for (int i = 1; i <= 100000; ++i) large.Add(i * 0.001);  // rank 95,000: 95 exactly
  EXPECT_EQ(large.count(), 100000u);
  EXPECT_NEAR(large.Get(), 95, 95 * 0.005);
  EXPECT_NE(large.Get(), 95);  // from the buckets, not a kept sample
  P95Sketch zeros;
  for (int i = 0; i < 5000; ++i) zeros.Add(i < 4900 ? 0 : 7);  // 98 % zeros
  EXPECT_EQ(zeros.Get(), 0);
  zeros.Add(NAN);
  zeros.Add(INFINITY);  // past the exact samples: an infinity has no bucket
  zeros.Add(-INFINITY);
  EXPECT_EQ(zeros.count(), 5000u);
  EXPECT_TRUE(std::isnan(P95Sketch().Get()));
}

TEST(RightSizerTest, ChunksInAnyOrderGiveTheSameFiguresAsTheWholeSeries) {
  std::vector<PodInfo> pods = {Pod("a", "n1", "StatefulSet", "db", 1, 1e9),
                               Pod("b", "n2", "StatefulSet", "db", 1, 1e9)};
  NodeMarks marks = {{"n1", {{0, 100}, {200, 300}}}};
  std::vector<double> values;
  for (int i = 0; i < 10; ++i) values.push_back(i);
  UsageSeries whole = Series("a", values);  // points at 0, 60, ..., 540: 0, 60, 240 are marked
  UsageSeries first = whole, second = whole;
  first.points.resize(5);
  second.points.erase(second.points.begin(), second.points.begin() + 5);
  RightSizer sizer(pods, marks, 60);
  sizer.AddMemory(Series("b", {5, 5}));
  sizer.AddCpu(second);
  sizer.AddCpu(first);
  RightSizing got = sizer.Finish();
  RightSizing want = RightSize(pods, {whole}, {Series("b", {5, 5})}, marks, 60);
  ASSERT_EQ(got.rows.size(), 1u);
  EXPECT_EQ(got.rows[0].cpu_p95_cores, want.rows[0].cpu_p95_cores);
  EXPECT_EQ(got.rows[0].cpu_p95_cores, 9);
  EXPECT_EQ(got.rows[0].hot_node_seconds, 180);
  EXPECT_EQ(got.rows[0].hot_node_seconds, want.rows[0].hot_node_seconds);
  EXPECT_EQ(got.rows[0].pods, 2u);
}

TEST(RightSizeTest, WritesTheContractsFieldsAndNullForNoSample) {
  WorkloadRow r;
  r.ns = "a\"b";
  r.kind = "Deployment";
  r.name = "web";
  r.cpu_p95_cores = 1.5;
  r.cpu_request_cores = 0.5;
  r.memory_p95_bytes = NAN;
  r.memory_request_bytes = 1e9;
  r.hot_node_seconds_share = 0.25;
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  WriteWorkloads(w, {r});
  rapidjson::Document d;
  d.Parse(buf.GetString());
  ASSERT_FALSE(d.HasParseError());
  ASSERT_TRUE(d.IsArray());
  const rapidjson::Value& o = d[0];
  EXPECT_STREQ(o["namespace"].GetString(), "a\"b");
  EXPECT_STREQ(o["kind"].GetString(), "Deployment");
  EXPECT_STREQ(o["name"].GetString(), "web");
  EXPECT_EQ(o["cpu_p95_cores"].GetDouble(), 1.5);
  EXPECT_EQ(o["cpu_request_cores"].GetDouble(), 0.5);
  EXPECT_TRUE(o["memory_p95_bytes"].IsNull());
  EXPECT_EQ(o["memory_request_bytes"].GetDouble(), 1e9);
  EXPECT_EQ(o["hot_node_seconds_share"].GetDouble(), 0.25);
}

}  // namespace
}  // namespace ds
