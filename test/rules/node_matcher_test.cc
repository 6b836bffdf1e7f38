#include "rules/node_matcher.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ds {
namespace {

TEST(StripPort, Forms) {
  EXPECT_EQ(StripPort("10.0.0.1:9100"), "10.0.0.1");
  EXPECT_EQ(StripPort("10.0.0.1"), "10.0.0.1");
  EXPECT_EQ(StripPort("node-1:9100"), "node-1");
  EXPECT_EQ(StripPort("[fd00::1]:9100"), "fd00::1");
  EXPECT_EQ(StripPort("fd00::1"), "fd00::1");
  EXPECT_EQ(StripPort("host:http"), "host:http");
}

class MatcherTest : public ::testing::Test {
 protected:
  std::vector<NodeIdentity> nodes_ = {{"node-1", {"10.0.0.1", "node-1.example"}},
                                      {"node-2", {"10.0.0.2", "203.0.113.2"}},
                                      {"node-3", {"10.0.0.3"}}};
  NodeMatcher m_{nodes_};
};

TEST_F(MatcherTest, DefaultLabelOrder) {
  EXPECT_EQ(m_.Match(Labels{{"node", "node-2"}}, ""), 1);
  EXPECT_EQ(m_.Match(Labels{{"instance", "10.0.0.3:9100"}}, ""), 2);
  EXPECT_EQ(m_.Match(Labels{{"instance", "node-1.example:9100"}}, ""), 0);
  EXPECT_EQ(m_.Match(Labels{{"ip", "203.0.113.2"}}, ""), 1);
  EXPECT_EQ(m_.Match(Labels{{"nodename", "node-3"}}, ""), 2);
  EXPECT_EQ(m_.Match(Labels{{"job", "x"}}, ""), -1);
  EXPECT_EQ(m_.Match(Labels{{"instance", "10.9.9.9:9100"}}, ""), -1);
}

struct FirstPresentCase {
  const char* name;
  Labels labels;
  int want;
};

// The first candidate label the series carries names its node. When that node is not one we
// manage (a control-plane node, a node that left), a later label must not be tried: `instance`
// is typically the exporter's address, which may belong to another node (kube-state-metrics,
// a DaemonSet on host network), so falling through would give a managed node another's value.
TEST_F(MatcherTest, FirstPresentLabelDecides) {
  const std::vector<FirstPresentCase> cases = {
      {"node names an unmanaged node, instance a managed node's address",
       {{"node", "cp-1"}, {"instance", "10.0.0.1:9100"}},
       -1},
      {"node names a node that left", {{"node", "gone"}, {"instance", "10.0.0.1:9100"}}, -1},
      {"node and instance disagree: node wins",
       {{"node", "node-2"}, {"instance", "10.0.0.1:9100"}},
       1},
      {"instance names nothing, ip a managed node",
       {{"instance", "10.9.9.9:9100"}, {"ip", "10.0.0.1"}},
       -1},
      {"node absent: instance decides", {{"instance", "10.0.0.3:9100"}, {"ip", "10.0.0.1"}}, 2},
      {"node and instance absent: ip decides", {{"ip", "203.0.113.2"}, {"nodename", "node-1"}}, 1},
      // Prometheus treats an empty label value as no label at all.
      {"empty node value is absent", {{"node", ""}, {"instance", "10.0.0.1:9100"}}, 0},
      {"labels in any order", {{"instance", "10.0.0.1:9100"}, {"node", "cp-1"}}, -1},
  };
  for (const FirstPresentCase& c : cases) {
    EXPECT_EQ(m_.Match(c.labels, ""), c.want) << c.name;
    LabelViews views;
    for (const auto& [k, v] : c.labels) views.emplace_back(k, v);
    EXPECT_EQ(m_.Match(views, ""), c.want) << c.name << " (views)";
  }
}

TEST_F(MatcherTest, ConfiguredLabelOnly) {
  EXPECT_EQ(m_.Match(Labels{{"node", "node-2"}, {"host", "10.0.0.3"}}, "host"), 2);
  EXPECT_EQ(m_.Match(Labels{{"node", "node-2"}}, "host"), -1);
}

TEST(Matcher, AmbiguousAddressMatchesNothing) {
  NodeMatcher m({{"a", {"10.0.0.9"}}, {"b", {"10.0.0.9"}}});
  EXPECT_EQ(m.Match(Labels{{"ip", "10.0.0.9"}}, ""), -1);
  EXPECT_EQ(m.Match(Labels{{"node", "a"}}, ""), 0);
  // An ambiguous address is present, so the labels after it are not tried.
  EXPECT_EQ(m.Match(Labels{{"ip", "10.0.0.9"}, {"nodename", "a"}}, ""), -1);
}

TEST(Matcher, NameBeatsAnotherNodesAddress) {
  NodeMatcher m({{"a", {"b"}}, {"b", {"10.0.0.2"}}});
  EXPECT_EQ(m.Match(Labels{{"node", "b"}}, ""), 1) << "a name wins over an address";
  EXPECT_EQ(m.Match(Labels{{"node", "a"}}, ""), 0);
}

// The index is an open-addressing table: many keys, long keys (beyond any inline size), keys
// that are prefixes of one another, and misses must all behave like a map.
TEST(Matcher, ManyAndLongKeys) {
  std::vector<NodeIdentity> nodes;
  for (int i = 0; i < 5000; ++i) {
    const std::string n = std::to_string(i);
    nodes.push_back({"ip-10-0-" + n + ".eu-west-1.compute.internal." + std::string(i % 40, 'x'),
                     {"10.1." + n, n, "host-" + n + ".example"}});
  }
  nodes.push_back({"", {"", "shared"}});
  nodes.push_back({"last", {"shared"}});
  NodeMatcher m(nodes);
  ASSERT_EQ(m.size(), nodes.size());
  for (int i = 0; i < 5000; ++i) {
    const std::string n = std::to_string(i);
    EXPECT_EQ(m.Match(Labels{{"node", nodes[static_cast<size_t>(i)].name}}, ""), i);
    EXPECT_EQ(m.Match(Labels{{"instance", "10.1." + n + ":9100"}}, ""), i);
    EXPECT_EQ(m.Match(Labels{{"ip", n}}, ""), i);
    EXPECT_EQ(m.Match(Labels{{"h", "host-" + n + ".example"}}, "h"), i);
    EXPECT_EQ(m.Match(Labels{{"node", "10.1." + n + "0000"}}, ""), -1);
    EXPECT_EQ(m.Match(Labels{{"node", "host-" + n}}, ""), -1);
  }
  EXPECT_EQ(m.Match(Labels{{"ip", "shared"}}, ""), -1);
  EXPECT_EQ(m.Match(Labels{{"h", ""}}, "h"), 5000) << "a configured label may be empty";
  EXPECT_EQ(NodeMatcher({}).Match(Labels{{"node", "a"}}, ""), -1);
}

TEST_F(MatcherTest, MatchSamplesWorstValueAndUnmatched) {
  Rule gt;
  gt.op = Comparison::kGreater;
  std::vector<Sample> samples = {{{{"instance", "10.0.0.1:9100"}}, 50, 0},
                                 {{{"instance", "10.0.0.1:9200"}}, 70, 0},  // duplicate: max wins
                                 {{{"instance", "10.0.0.2:9100"}}, std::nan(""), 0},
                                 {{{"instance", "10.7.7.7:9100"}}, 99, 0},
                                 {{{"__name__", "x"}, {"job", "y"}}, 99, 0}};
  MatchedValues mv = MatchSamples(m_, samples, gt);
  EXPECT_EQ(mv.values[0], 70);
  EXPECT_TRUE(std::isnan(mv.values[1]));
  EXPECT_TRUE(std::isnan(mv.values[2]));
  EXPECT_EQ(mv.unmatched, 2u);
  EXPECT_EQ(mv.duplicates, 1u);
  ASSERT_EQ(mv.unmatched_names.size(), 2u);
  EXPECT_EQ(mv.unmatched_names[0], "{instance=10.7.7.7:9100}");
  Rule lt;
  lt.op = Comparison::kLess;
  EXPECT_EQ(MatchSamples(m_, samples, lt).values[0], 50) << "for '<' the minimum is the worst";
}

TEST_F(MatcherTest, MatchSamplesUnmanagedNodeLabelIsUnmatched) {
  Rule gt;
  gt.op = Comparison::kGreater;
  std::vector<Sample> samples = {{{{"node", "cp-1"}, {"instance", "10.0.0.1:9100"}}, 99, 0},
                                 {{{"node", "node-2"}, {"instance", "10.0.0.2:9100"}}, 40, 0}};
  MatchedValues mv = MatchSamples(m_, samples, gt);
  EXPECT_TRUE(std::isnan(mv.values[0])) << "node-1 must not take cp-1's value";
  EXPECT_EQ(mv.values[1], 40);
  EXPECT_EQ(mv.unmatched, 1u);
  ASSERT_EQ(mv.unmatched_names.size(), 1u);
  EXPECT_EQ(mv.unmatched_names[0], "{node=cp-1,instance=10.0.0.1:9100}");
}

// Feeds `samples` with their timestamps, as the decoders do.
MatchedValues Fold(MatchAccumulator* acc, const std::vector<Sample>& samples) {
  LabelViews views;
  for (const auto& s : samples) {
    views.clear();
    for (const auto& [k, v] : s.metric) views.emplace_back(k, v);
    acc->AddAt(views, s.value, s.timestamp);
  }
  return acc->result();
}

TEST_F(MatcherTest, MaxAgeWithoutAgeQueryDropsSamplesOlderThanItsTimestamp) {
  Rule r;
  r.op = Comparison::kLess;
  r.max_age_seconds = 120;
  const double now = 1795303300;
  std::vector<Sample> samples = {
      {{{"node", "node-1"}}, 5, now - 10},   // fresh
      {{{"node", "node-2"}}, 1, now - 121},  // too old and the worst value: must not count
      {{{"node", "node-2"}}, 9, now - 30},   // node-2's fresh series
      {{{"node", "node-3"}}, 2, now - 300},  // only too old
      {{{"node", "node-3"}}, 3, now - 200},
      {{{"node", "gone"}}, 1, now - 500}};  // unmatched, old or not
  MatchAccumulator acc(&m_, &r, now);
  MatchedValues mv = Fold(&acc, samples);
  EXPECT_EQ(mv.values[0], 5);
  EXPECT_EQ(mv.values[1], 9) << "the too old series is absent, not the minimum";
  EXPECT_TRUE(std::isnan(mv.values[2])) << "missing data, not its last value";
  EXPECT_EQ(mv.unmatched, 1u);
  ASSERT_EQ(mv.stale.size(), 1u) << "node-2 kept a fresh value";
  EXPECT_EQ(mv.stale[0].first, 2u);
  EXPECT_EQ(mv.stale[0].second, 200) << "the age of its newest sample";
  // At exactly maxAge a sample still counts.
  MatchAccumulator edge(&m_, &r, now);
  EXPECT_EQ(Fold(&edge, {{{{"node", "node-1"}}, 4, now - 120}}).values[0], 4);

  // No maxAge (or no clock given): timestamps are not judged.
  Rule plain = r;
  plain.max_age_seconds = 0;
  MatchAccumulator off(&m_, &plain, now);
  MatchedValues all = Fold(&off, samples);
  EXPECT_EQ(all.values[1], 1);
  EXPECT_EQ(all.values[2], 2);
  EXPECT_TRUE(all.stale.empty());
  MatchAccumulator no_clock(&m_, &r);
  EXPECT_EQ(Fold(&no_clock, samples).values[2], 2);
  // Reset forgets the too old samples too.
  acc.Reset();
  EXPECT_TRUE(acc.result().stale.empty());
}

TEST_F(MatcherTest, MaxAgeWithAnAgeQueryLeavesTheSamplesToIt) {
  Rule r;
  r.max_age_seconds = 120;
  r.age_query = "push_time_seconds";
  const double now = 1795303300;
  MatchAccumulator acc(&m_, &r, now);
  EXPECT_EQ(Fold(&acc, {{{{"node", "node-1"}}, 5, now - 1000}}).values[0], 5)
      << "an instant query's timestamp is its evaluation time: the ageQuery judges the age";
}

TEST_F(MatcherTest, UpdateAgesMeasureAgainstTheReportedEvaluationTime) {
  Rule r;
  r.max_age_seconds = 120;
  r.age_query = "push_time_seconds";
  // Prometheus evaluates at 1000 by its own clock, whatever ours says.
  std::vector<Sample> pushes = {{{{"instance", "node-1"}, {"job", "push"}}, 950, 1000},
                                {{{"instance", "node-2"}, {"job", "push"}}, 700, 1000},
                                {{{"instance", "node-2"}, {"job", "other"}}, 990, 1000},
                                {{{"instance", "gone"}, {"job", "push"}}, 999, 1000},
                                {{{"instance", "node-3"}, {"job", "push"}}, NAN, 1000}};
  UpdateAgeAccumulator ages(&m_, &r);
  LabelViews views;
  for (const auto& s : pushes) {
    views.clear();
    for (const auto& [k, v] : s.metric) views.emplace_back(k, v);
    ages.AddAt(views, s.value, s.timestamp);
    ages.Add(views, 0);  // without an evaluation time nothing can be judged
  }
  ASSERT_EQ(ages.ages().size(), 3u);
  EXPECT_EQ(ages.ages()[0], 50);
  EXPECT_EQ(ages.ages()[1], 10) << "the newest update of a node counts";
  EXPECT_TRUE(std::isnan(ages.ages()[2])) << "a NaN update time is none";
  EXPECT_EQ(ages.unmatched(), 1u);
  ages.Reset();
  EXPECT_TRUE(std::isnan(ages.ages()[0]));
  EXPECT_EQ(ages.unmatched(), 0u);
}

TEST(DropStaleValues, TooOldOrUndatedValuesBecomeMissing) {
  MatchedValues m;
  m.values = {1, 2, 3, NAN, 5};
  const std::vector<double> ages = {119.5, 120, 121, 500, NAN};
  DropStaleValues(ages, 120, &m);
  EXPECT_EQ(m.values[0], 1);
  EXPECT_EQ(m.values[1], 2) << "exactly maxAge still counts";
  EXPECT_TRUE(std::isnan(m.values[2]));
  EXPECT_TRUE(std::isnan(m.values[3]));
  EXPECT_TRUE(std::isnan(m.values[4])) << "no update time at all: unknown age, not fresh";
  ASSERT_EQ(m.stale.size(), 2u) << "a node without a value was not dropped";
  EXPECT_EQ(m.stale[0], (std::pair<size_t, double>{2, 121}));
  EXPECT_EQ(m.stale[1].first, 4u);
  EXPECT_TRUE(std::isnan(m.stale[1].second));
}

}  // namespace
}  // namespace ds
