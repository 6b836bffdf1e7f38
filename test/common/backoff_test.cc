#include "common/backoff.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "common/status.h"

namespace ds {
namespace {

// Durations are whole nanoseconds; compare seconds with that much slack.
constexpr double kEps = 1e-6;

std::vector<double> Take(Backoff* b, int n) {
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(ToSeconds(b->Next()));
  return out;
}

TEST(Backoff, StartsAtInitialAndGrowsByFactor) {
  Backoff b(/*initial_seconds=*/0.8, /*max_seconds=*/100, /*factor=*/2, /*jitter=*/0, /*seed=*/1);
  std::vector<double> want = {0.8, 1.6, 3.2, 6.4, 12.8};
  std::vector<double> got = Take(&b, 5);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], kEps) << i;

  Backoff triple(1, 100, 3, 0, 1);
  EXPECT_NEAR(ToSeconds(triple.Next()), 1, kEps);
  EXPECT_NEAR(ToSeconds(triple.Next()), 3, kEps);
  EXPECT_NEAR(ToSeconds(triple.Next()), 9, kEps);
}

TEST(Backoff, CappedAtMax) {
  Backoff b(1, 5, 2, 0, 1);
  std::vector<double> want = {1, 2, 4, 5, 5, 5};
  std::vector<double> got = Take(&b, 6);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], kEps) << i;
}

TEST(Backoff, CapWithJitterStaysWithinJitterBound) {
  Backoff b(1, 5, 2, 0.5, 7);
  std::vector<double> got = Take(&b, 200);
  for (size_t i = 3; i < got.size(); ++i) {  // from the 4th delay on the base is the maximum
    EXPECT_GE(got[i], 5 - kEps) << i;
    EXPECT_LE(got[i], 5 * 1.5 + kEps) << i;
  }
}

TEST(Backoff, JitterSpreadsWithinRange) {
  // Many first delays (base 2 s, jitter 0.5): all within [2, 3], and actually spread over it, so
  // that controllers restarted together do not reconnect together.
  Backoff b(2, 30, 2, 0.5, 42);
  double lo = 1e9, hi = 0;
  for (int i = 0; i < 1000; ++i) {
    b.Reset();
    double d = ToSeconds(b.Next());
    EXPECT_GE(d, 2 - kEps);
    EXPECT_LE(d, 3 + kEps);
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  EXPECT_LT(lo, 2.1);
  EXPECT_GT(hi, 2.9);
}

TEST(Backoff, ResetStartsOverFromInitial) {
  Backoff b(0.5, 30, 2, 0, 1);
  Take(&b, 4);  // 0.5, 1, 2, 4
  EXPECT_NEAR(ToSeconds(b.Next()), 8, kEps);
  b.Reset();
  EXPECT_NEAR(ToSeconds(b.Next()), 0.5, kEps);
  EXPECT_NEAR(ToSeconds(b.Next()), 1, kEps);
}

TEST(Backoff, SameSeedSameSequence) {
  Backoff a(0.8, 30, 2, 0.5, 1234), b(0.8, 30, 2, 0.5, 1234), c(0.8, 30, 2, 0.5, 1235);
  std::vector<double> sa = Take(&a, 10), sb = Take(&b, 10), sc = Take(&c, 10);
  EXPECT_EQ(sa, sb);
  EXPECT_NE(sa, sc);
}

}  // namespace
}  // namespace ds

namespace ds {
namespace {

// Flags and servers can send any number: the conversion must neither overflow nor go negative.
TEST(Clock, FromSecondsSaturates) {
  EXPECT_EQ(FromSeconds(-5), Duration::zero());
  EXPECT_EQ(FromSeconds(std::nan("")), Duration::zero());
  EXPECT_EQ(FromSeconds(1.5), std::chrono::milliseconds(1500));
  const Duration century = FromSeconds(1e300);
  EXPECT_GT(century, std::chrono::hours(24 * 365 * 99));
  EXPECT_EQ(FromSeconds(std::numeric_limits<double>::infinity()), century);
  EXPECT_GT(TimePoint(std::chrono::hours(1000)) + century, TimePoint(std::chrono::hours(1000)))
      << "a deadline that far ahead is still in the future";
}

TEST(Status, RetryAfterIsBounded) {
  EXPECT_EQ(Status::Unavailable("x").set_retry_after_seconds(1e9).retry_after_seconds(),
            Status::kMaxRetryAfterSeconds);
  EXPECT_EQ(Status::Unavailable("x").set_retry_after_seconds(-1).retry_after_seconds(), 0);
  EXPECT_EQ(Status::Unavailable("x").set_retry_after_seconds(2.5).retry_after_seconds(), 2.5);
}

}  // namespace
}  // namespace ds
