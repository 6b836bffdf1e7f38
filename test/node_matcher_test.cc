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
  // `node` is tried first, but when it names nothing the next label is used.
  EXPECT_EQ(m_.Match(Labels{{"node", "gone"}, {"instance", "10.0.0.1:9100"}}, ""), 0);
  EXPECT_EQ(m_.Match(Labels{{"job", "x"}}, ""), -1);
  EXPECT_EQ(m_.Match(Labels{{"instance", "10.9.9.9:9100"}}, ""), -1);
}

TEST_F(MatcherTest, ConfiguredLabelOnly) {
  EXPECT_EQ(m_.Match(Labels{{"node", "node-2"}, {"host", "10.0.0.3"}}, "host"), 2);
  EXPECT_EQ(m_.Match(Labels{{"node", "node-2"}}, "host"), -1);
}

TEST(Matcher, AmbiguousAddressMatchesNothing) {
  NodeMatcher m({{"a", {"10.0.0.9"}}, {"b", {"10.0.0.9"}}});
  EXPECT_EQ(m.Match(Labels{{"ip", "10.0.0.9"}}, ""), -1);
  EXPECT_EQ(m.Match(Labels{{"node", "a"}}, ""), 0);
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

}  // namespace
}  // namespace ds
