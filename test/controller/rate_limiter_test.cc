#include "controller/rate_limiter.h"

#include <gtest/gtest.h>

#include "test/fakes/fake_clock.h"

namespace ds {
namespace {

TEST(RateLimiter, BurstIsFreeThenOneTokenPerInterval) {
  FakeClock clock;
  RateLimiter limiter(/*qps=*/5, /*burst=*/3, &clock);
  std::atomic<bool> stop{false};
  const TimePoint t0 = clock.Now();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(limiter.Acquire(&stop));
  EXPECT_EQ(clock.Now(), t0) << "the bucket starts full: a burst of 3 waits for nothing";
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(limiter.Acquire(&stop));
  EXPECT_NEAR(ToSeconds(clock.Now() - t0), 10 / 5.0, 1e-6) << "then exactly qps tokens a second";
}

TEST(RateLimiter, IdleTimeRefillsUpToTheBurstOnly) {
  FakeClock clock;
  RateLimiter limiter(2, 4, &clock);
  std::atomic<bool> stop{false};
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(limiter.Acquire(&stop));
  clock.AdvanceSeconds(3600);  // an hour idle refills 4 tokens, not 7200
  const TimePoint t0 = clock.Now();
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(limiter.Acquire(&stop));
  EXPECT_NEAR(ToSeconds(clock.Now() - t0), 2 / 2.0, 1e-6);
}

// A clock whose waits are cut by a stop (a shutdown arriving while Acquire waits).
class StopWhileWaitingClock : public FakeClock {
 public:
  explicit StopWhileWaitingClock(std::atomic<bool>* stop) : stop_(stop) {}
  bool SleepUntil(TimePoint, const std::atomic<bool>*) const override {
    *stop_ = true;
    return false;
  }

 private:
  std::atomic<bool>* stop_;
};

TEST(RateLimiter, StopEndsTheWaitWithoutAToken) {
  std::atomic<bool> stop{false};
  StopWhileWaitingClock clock(&stop);
  RateLimiter limiter(1, 1, &clock);
  ASSERT_TRUE(limiter.Acquire(&stop));
  EXPECT_FALSE(limiter.Acquire(&stop)) << "the wait for the second token was cut by the stop";
}

TEST(RateLimiter, ZeroQpsIsUnlimited) {
  FakeClock clock;
  RateLimiter limiter(0, 1, &clock);
  std::atomic<bool> stop{false};
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(limiter.Acquire(&stop));
  EXPECT_TRUE(clock.sleeps().empty());
}

}  // namespace
}  // namespace ds
