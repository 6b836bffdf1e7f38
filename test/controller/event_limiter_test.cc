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

TEST(EventLimiterTest, IdleBucketsAreForgottenOncePerRefillInterval) {
  // Nodes take turns being marked (churn at 10,000 nodes): the buckets of those marked long ago
  // go, not only once 20,000 have piled up, so memory stays flat however long the process runs.
  EventLimiter l(EventLimits{2, 300, 100000});
  for (int i = 0; i < 1000; ++i) l.Admit("wave1-" + std::to_string(i), At(0));
  for (int i = 0; i < 10; ++i) l.Admit("wave2-" + std::to_string(i), At(200));
  EXPECT_EQ(l.tracked(), 1010u) << "nothing has refilled yet";
  l.Admit("late", At(320));  // wave 1 refilled at 300; wave 2 has not yet
  EXPECT_EQ(l.tracked(), 11u);
  EXPECT_EQ(l.Admit("wave2-0", At(330)), 0u) << "a kept bucket still counts";
  EXPECT_EQ(l.Admit("wave2-0", At(331)), std::nullopt) << "its burst is spent";
}

}  // namespace
}  // namespace ds
