#include "rules/rule_scope.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ds {
namespace {

const double kNaN = std::nan("");

TEST(RuleScope, AppliesByEachRulesSelector) {
  Rule all, gpu, bad;
  gpu.node_selector = "pool=gpu";
  bad.node_selector = "pool in";  // refused by ParseRuleConfig; here it selects nothing
  RuleScope scope({all, gpu, bad});
  Labels a{{"pool", "gpu"}}, b{{"pool", "general"}}, c{};
  auto m = scope.Applies({&a, &b, &c});
  ASSERT_EQ(m.size(), 3u);
  EXPECT_TRUE(m[0].empty()) << "no selector: every node, no mask";
  EXPECT_EQ(m[1], (std::vector<uint8_t>{1, 0, 0}));
  EXPECT_EQ(m[2], (std::vector<uint8_t>{0, 0, 0}));
  std::vector<double> v{1, 2, 3};
  MaskOutOfScope(m[1], &v);
  EXPECT_EQ(v[0], 1);
  EXPECT_TRUE(std::isnan(v[1]) && std::isnan(v[2]));
  MaskOutOfScope(m[0], &v);
  EXPECT_EQ(v[0], 1) << "an empty mask changes nothing";
}

TEST(RuleScope, DueOncePerIntervalWithSlackForJitter) {
  Rule every, slow, odd;
  slow.interval_seconds = 30;
  odd.interval_seconds = 25;  // not a multiple of 10: in effect every third cycle
  const TimePoint t0{};
  auto at = [&](double s) { return t0 + FromSeconds(s); };
  EXPECT_TRUE(RuleDue(every, t0, at(1), 10));
  EXPECT_TRUE(RuleDue(slow, std::nullopt, at(0), 10)) << "never answered";
  EXPECT_FALSE(RuleDue(slow, t0, at(20), 10));
  EXPECT_TRUE(RuleDue(slow, t0, at(29.5), 10)) << "a cycle a little early";
  EXPECT_TRUE(RuleDue(slow, t0, at(30), 10));
  EXPECT_FALSE(RuleDue(odd, t0, at(20), 10));
  EXPECT_TRUE(RuleDue(odd, t0, at(30), 10));
}

TEST(RuleScope, GraceCoversThreeOfTheRulesIntervals) {
  Rule every, slow;
  slow.interval_seconds = 60;
  EXPECT_EQ(RuleGrace(every, FromSeconds(30)), FromSeconds(30));
  EXPECT_EQ(RuleGrace(slow, FromSeconds(30)), FromSeconds(180));
  EXPECT_EQ(RuleGrace(slow, FromSeconds(600)), FromSeconds(600));
}

TEST(RuleScope, AReusedAnswerFollowsItsNodesByName) {
  Rule r;
  MatchedValues m;
  m.values = {1, kNaN, 3};
  RuleAnswer a = KeepAnswer(r, TimePoint{}, 1000, {"a", "b", "c"}, m, {}, 2);
  // "b" left, "d" came, the order is the snapshot's.
  MatchedValues now = ReuseAnswer(r, a, {"a", "c", "d"}, 1010);
  ASSERT_EQ(now.values.size(), 3u);
  EXPECT_EQ(now.values[0], 1);
  EXPECT_EQ(now.values[1], 3);
  EXPECT_TRUE(std::isnan(now.values[2])) << "a node the answer did not know has no value";
}

TEST(RuleScope, AReusedAnswerIsAgedByMaxAge) {
  Rule r;
  r.max_age_seconds = 60;
  MatchedValues m;
  m.values = {1, 2, kNaN};
  m.times = {950, kNaN, kNaN};  // sample times; node 1's sample had none (taken as fresh)
  m.stale = {{2, 70}};          // node 2 was too old already (70 s)
  RuleAnswer a = KeepAnswer(r, TimePoint{}, 1000, {"a", "b", "c"}, m, {}, 3);
  MatchedValues later = ReuseAnswer(r, a, {"a", "b", "c"}, 1005);
  EXPECT_EQ(later.values[0], 1) << "55 s old";
  EXPECT_EQ(later.stale, (std::vector<std::pair<size_t, double>>{{2, 75}}));
  later = ReuseAnswer(r, a, {"a", "b", "c"}, 1011);
  EXPECT_TRUE(std::isnan(later.values[0])) << "61 s old";
  EXPECT_EQ(later.values[1], 2);
  EXPECT_EQ(later.stale, (std::vector<std::pair<size_t, double>>{{0, 61}, {2, 81}}));
  // With an ageQuery: the update ages it gave, measured at the answer.
  r.age_query = "push_time_seconds";
  m.times.clear();
  a = KeepAnswer(r, TimePoint{}, 1000, {"a", "b", "c"}, m, {10, 50, kNaN}, 3);
  later = ReuseAnswer(r, a, {"a", "b", "c"}, 1015);
  EXPECT_EQ(later.values[0], 1);
  EXPECT_TRUE(std::isnan(later.values[1])) << "updated 65 s ago";
}

}  // namespace
}  // namespace ds
