#include "controller/event_limiter.h"

#include <gtest/gtest.h>

namespace ds {
namespace {

TimePoint At(double seconds) { return TimePoint{} + FromSeconds(seconds); }

TEST(EventLimiterTest, ABurstPerObjectThenOneAPerRefillAndTheHeldBackAreCounted) {
  EventLimiter l(EventLimits{3, 300, 100});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(l.Admit("node-1", At(i)), 0u) << i;
  EXPECT_EQ(l.Admit("node-1", At(10)), std::nullopt) << "a flapping node: the burst is spent";
  EXPECT_EQ(l.Admit("node-1", At(20)), std::nullopt);
  EXPECT_EQ(l.Admit("node-2", At(20)), 0u) << "each node has its own bucket";
  EXPECT_EQ(l.Admit("node-1", At(250)), std::nullopt) << "not a whole token yet";
  EXPECT_EQ(l.Admit("node-1", At(310)), 3u) << "the next Event says how many went unreported";
  EXPECT_EQ(l.Admit("node-1", At(320)), std::nullopt);
  EXPECT_EQ(l.suppressed_total(), 4u);
}

TEST(EventLimiterTest, ACycleSendsAtMostPerCycle) {
  EventLimiter l(EventLimits{5, 300, 2});
  l.NewCycle();
  EXPECT_TRUE(l.Admit("a", At(0)));
  EXPECT_TRUE(l.Admit("b", At(0)));
  EXPECT_FALSE(l.Admit("c", At(0))) << "a cluster-wide spike: the rest wait";
  l.NewCycle();
  EXPECT_EQ(l.Admit("c", At(10)), 1u);
}

TEST(EventLimiterTest, IdleBucketsAreForgottenWhenManyNodesCame) {
  EventLimiter l(EventLimits{1, 1, 100000});
  for (int i = 0; i < 20001; ++i) l.Admit("node-" + std::to_string(i), At(0));
  EXPECT_EQ(l.tracked(), 20001u);
  l.Admit("late", At(10));  // every earlier bucket has refilled and holds nothing back
  EXPECT_LE(l.tracked(), 1u);
}

}  // namespace
}  // namespace ds
