#include "replay/pod_usage_history.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ds {
namespace {

// Answers every range query with two containers of shop/web (1 and 2 at each step), a NaN point,
// and a series without a pod label; records what it was asked.
class RangeFake : public PrometheusClient {
 public:
  StatusOr<QueryResult> Query(const std::string&, const LabelFilter*, SampleSink*) override {
    return Status::Internal("no instant queries here");
  }
  StatusOr<RangeResult> QueryRange(const std::string& expr, double start, double end, double step,
                                   const LabelFilter*) override {
    asked.push_back({expr, start, end});
    if (fail_at >= 0 && start == fail_at) return Status::Unavailable("connection refused");
    RangeResult r;
    RangeSeries a, b, nolabel;
    a.metric = {{"namespace", "shop"}, {"pod", "web"}};
    b.metric = a.metric;
    nolabel.metric = {{"namespace", "shop"}};
    for (double t = start; t <= end; t += step) {
      a.times.push_back(t);
      a.values.push_back(t == 20 ? NAN : 1);
      b.times.push_back(t);
      b.values.push_back(2);
    }
    r.series = {a, b, nolabel};
    return r;
  }
  struct Asked {
    std::string expr;
    double start, end;
  };
  std::vector<Asked> asked;
  double fail_at = -1;
};

TEST(PodUsageHistoryTest, ChunksSumsContainersAndKeepsTimeOrder) {
  RangeFake prom;
  RebalanceConfig cfg;
  cfg.cpu_usage_query = "cpu_by_pod{node=~\"$nodes\"}";
  cfg.memory_usage_query = "mem_by_pod";
  // 0, 10, ..., 100: 11 steps; 2 series of 4 steps fit 8 points -> [0, 30], [40, 70], [80, 100].
  PodUsageFetch f{0, 100, 10, {"n1", "n2"}, 2, 8};
  auto got = FetchPodUsageHistory(&prom, cfg, f, nullptr, nullptr);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(prom.asked.size(), 6u);
  EXPECT_EQ(got->requests, 6u);
  EXPECT_EQ(prom.asked[0].expr.find("$nodes"), std::string::npos);
  EXPECT_NE(prom.asked[0].expr.find("n1"), std::string::npos);
  EXPECT_EQ(prom.asked[1].start, 40);
  EXPECT_EQ(prom.asked[2].end, 100);
  EXPECT_EQ(prom.asked[3].expr, "mem_by_pod");
  ASSERT_EQ(got->cpu.size(), 1u);
  const UsageSeries& web = got->cpu[0];
  EXPECT_EQ(web.ns, "shop");
  EXPECT_EQ(web.pod, "web");
  ASSERT_EQ(web.points.size(), 11u);
  for (size_t i = 0; i < web.points.size(); ++i) {
    EXPECT_EQ(web.points[i].first, 10.0 * static_cast<double>(i));
    // Both containers, but at 20 s the first one's point is NaN: only the second's 2 counts.
    EXPECT_EQ(web.points[i].second, i == 2 ? 2 : 3) << i;
  }
  EXPECT_EQ(got->unlabelled, 6u);  // one per request
  EXPECT_EQ(got->memory.size(), 1u);
}

TEST(PodUsageHistoryTest, AFailedChunkIsAnErrorNamingIt) {
  RangeFake prom;
  prom.fail_at = 40;
  PodUsageFetch f{0, 100, 10, {}, 0, kMaxPointsPerRequest, 4};
  auto got = FetchPodUsageHistory(&prom, RebalanceConfig{}, f, nullptr, nullptr);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().ToString().find("podUsage cpu from 1970-01-01T00:00:40Z"),
            std::string::npos)
      << got.status().ToString();
  EXPECT_NE(got.status().ToString().find("connection refused"), std::string::npos);
}

TEST(PodUsageHistoryTest, FeedsTheRightSizerWholeAndKeepsOnlyTheMarkedPoints) {
  RangeFake prom;
  std::vector<PodInfo> pods(1);
  pods[0].ns = "shop";
  pods[0].name = "web";
  pods[0].node = "n1";
  pods[0].owner_kind = "StatefulSet";
  pods[0].owner_name = "web";
  NodeMarks marks = {{"n1", {{25, 55}, {90, 200}}}};  // holds 30, 40, 50 and 90, 100
  RightSizer sizer(pods, marks, 10);
  MarkedPoints keep(pods, marks);
  PodUsageFetch f{0, 100, 10, {}, 0, kMaxPointsPerRequest, 4};
  auto got = FetchPodUsageHistory(&prom, RebalanceConfig{}, f, &sizer, nullptr, &keep);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->cpu.size(), 1u);
  std::vector<double> times;
  for (const auto& p : got->cpu[0].points) times.push_back(p.first);
  EXPECT_EQ(times, (std::vector<double>{30, 40, 50, 90, 100}));
  RightSizing rs = sizer.Finish();
  ASSERT_EQ(rs.rows.size(), 1u);
  EXPECT_EQ(rs.rows[0].cpu_p95_cores, 3);  // both containers, every point of every chunk
  EXPECT_EQ(rs.rows[0].hot_node_seconds, 50);

  // Right-sizing alone (an empty `wanted`): nothing kept.
  RightSizer again(pods, marks, 10);
  const std::unordered_set<std::string> none;
  got = FetchPodUsageHistory(&prom, RebalanceConfig{}, f, &again, &none);
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->cpu.empty());
  EXPECT_TRUE(got->memory.empty());
  EXPECT_EQ(again.Finish().rows[0].hot_node_seconds, 50);

  // A pod the list does not name, or on a node never marked: nothing kept.
  UsageSeries other{"shop", "gone", "", {{30, 1}}};
  keep.Filter(&other);
  EXPECT_TRUE(other.points.empty());
  UsageSeries moved{"shop", "web", "n2", {{30, 1}}};  // its series says it ran on n2 then
  keep.Filter(&moved);
  EXPECT_TRUE(moved.points.empty());
}

TEST(FoldPodUsageTest, ANodeLabelKeepsThePodsSeriesApart) {
  RangeResult r;
  RangeSeries on1, on2;
  on1.metric = {{"namespace", "a"}, {"pod", "p"}, {"node", "n1"}};
  on1.times = {0};
  on1.values = {1};
  on2.metric = {{"namespace", "a"}, {"pod", "p"}, {"node", "n2"}};
  on2.times = {60};
  on2.values = {5};
  r.series = {on1, on2};
  std::vector<UsageSeries> out;
  size_t unlabelled = 0;
  FoldPodUsage(r, &out, &unlabelled);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].node, "n1");
  EXPECT_EQ(out[1].node, "n2");
  EXPECT_EQ(out[1].points[0].second, 5);
}

}  // namespace
}  // namespace ds
