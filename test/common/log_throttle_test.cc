#include "common/log_throttle.h"

#include <gtest/gtest.h>

#include <string>

namespace ds {
namespace {

TEST(LogThrottle, OneLinePerKeyPerPeriod) {
  LogThrottle t(300);
  TimePoint t0{};
  EXPECT_TRUE(t.ShouldLog("a", t0));
  EXPECT_FALSE(t.ShouldLog("a", t0 + FromSeconds(299)));
  EXPECT_TRUE(t.ShouldLog("b", t0 + FromSeconds(299)));
  EXPECT_TRUE(t.ShouldLog("a", t0 + FromSeconds(300)));
  EXPECT_FALSE(t.ShouldLog("a", t0 + FromSeconds(599)));
}

// Node names come and go for months; a key per node ever seen must not pile up.
TEST(LogThrottle, KeysOlderThanAPeriodAreForgotten) {
  LogThrottle t(300);
  TimePoint now{};
  for (int day = 0; day < 30; ++day) {
    for (int i = 0; i < 1000; ++i)
      EXPECT_TRUE(t.ShouldLog("node-" + std::to_string(day) + "-" + std::to_string(i), now));
    now += FromSeconds(86400);
  }
  EXPECT_LE(t.size(), 2048u) << "30,000 node names seen, at most two days' worth kept";
  // What was logged within the period is still held back.
  EXPECT_FALSE(t.ShouldLog("node-29-999", now - FromSeconds(86400) + FromSeconds(1)));
}

}  // namespace
}  // namespace ds
