#include "rules/prediction.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

namespace ds {
namespace {

constexpr double kNov25 = 1795564800;  // 2026-11-25T00:00:00Z
constexpr double kMar29 = 1774742400;  // 2026-03-29T00:00:00Z: Europe/Berlin springs forward
constexpr double kOct25 = 1792886400;  // 2026-10-25T00:00:00Z: Europe/Berlin falls back

Sample S(const std::string& node, double v) { return Sample{{{"node", node}}, v, 0}; }

TEST(Prediction, UtcDaysAndTheirBounds) {
  const TimeZone utc = TimeZone::Utc();
  const int64_t day = LocalDay(kNov25 + 13 * 3600, utc);
  EXPECT_EQ(DayName(day), "2026-11-25");
  EXPECT_EQ(LocalDay(kNov25 - 0.5, utc), day - 1);
  const DayWindow w = DayBounds(day, utc);
  EXPECT_EQ(w.start, kNov25);
  EXPECT_EQ(w.end, kNov25 + 86400);
}

TEST(Prediction, YesterdayIsFinishedOnlyAfterTheSettleTime) {
  const TimeZone utc = TimeZone::Utc();
  const int64_t nov25 = LocalDay(kNov25, utc);
  // Just after midnight the last minutes of the 24th may not be stored yet: the 23rd is newest.
  EXPECT_EQ(LastFinishedDay(kNov25 + 60, utc), nov25 - 2);
  EXPECT_EQ(LastFinishedDay(kNov25 + kPredictSettleSeconds + 1, utc), nov25 - 1);
  EXPECT_EQ(LastFinishedDay(kNov25 + 86399, utc), nov25 - 1);
}

TEST(Prediction, DayQueryCoversTheDayAndIsEvaluatedAtItsEnd) {
  PredictConfig cfg;
  cfg.quantile = 0.9;
  cfg.resolution_seconds = 30;
  const DayQuery q = MakeDayQuery("cpu # a comment", cfg, DayWindow{kNov25, kNov25 + 86400});
  EXPECT_EQ(q.expr, "quantile_over_time(0.9, (\ncpu # a comment\n)[86400s:30s])");
  EXPECT_DOUBLE_EQ(q.eval_time, kNov25 + 86400 - 0.001);
}

TEST(Prediction, LocalDaysFollowTheTimeZoneAndItsDaylightSaving) {
  if (!std::filesystem::exists("/usr/share/zoneinfo/Europe/Berlin") ||
      !std::filesystem::exists("/usr/share/zoneinfo/Asia/Kolkata"))
    GTEST_SKIP() << "no tz database";
  auto berlin = TimeZone::Load("Europe/Berlin");
  auto kolkata = TimeZone::Load("Asia/Kolkata");
  ASSERT_TRUE(berlin.ok() && kolkata.ok());
  // 23:30Z on Nov 24 is already Nov 25 in Berlin (UTC+1) and in Kolkata (UTC+5:30).
  EXPECT_EQ(DayName(LocalDay(kNov25 - 1800, *berlin)), "2026-11-25");
  EXPECT_EQ(DayName(LocalDay(kNov25 - 1800, TimeZone::Utc())), "2026-11-24");
  const DayWindow k = DayBounds(LocalDay(kNov25 + 3600, *kolkata), *kolkata);
  EXPECT_EQ(k.start, kNov25 - 5.5 * 3600);
  EXPECT_EQ(k.end - k.start, 86400);
  // The spring-forward day has 23 hours, the fall-back day 25: each query covers its own day.
  const DayWindow spring = DayBounds(LocalDay(kMar29 + 12 * 3600, *berlin), *berlin);
  EXPECT_EQ(spring.start, kMar29 - 3600);  // midnight CET
  EXPECT_EQ(spring.end - spring.start, 23 * 3600);
  const DayWindow fall = DayBounds(LocalDay(kOct25 + 12 * 3600, *berlin), *berlin);
  EXPECT_EQ(fall.start, kOct25 - 7200);  // midnight CEST
  EXPECT_EQ(fall.end - fall.start, 25 * 3600);
  EXPECT_NE(MakeDayQuery("x", PredictConfig{}, fall).expr.find("[90000s:60s]"), std::string::npos);
}

TEST(Prediction, ADayWhoseMidnightIsSkippedStartsAtTheChange) {
  if (!std::filesystem::exists("/usr/share/zoneinfo/Asia/Beirut")) GTEST_SKIP() << "no tz database";
  auto beirut = TimeZone::Load("Asia/Beirut");
  ASSERT_TRUE(beirut.ok());
  // Lebanon springs forward at local midnight (last Sunday of March, 00:00 EET -> 01:00 EEST):
  // March 29 has no 00:00; it starts at the change, 22:00Z on the 28th, and has 23 hours.
  const int64_t day = LocalDay(kMar29 + 12 * 3600, *beirut);
  EXPECT_EQ(DayName(day), "2026-03-29");
  const DayWindow w = DayBounds(day, *beirut);
  EXPECT_EQ(w.start, kMar29 - 2 * 3600);
  EXPECT_EQ(LocalDay(w.start, *beirut), day);
  EXPECT_EQ(LocalDay(w.start - 1, *beirut), day - 1);
  EXPECT_EQ(w.end - w.start, 23 * 3600);
}

TEST(Prediction, RecentDaysWeighMore) {
  EXPECT_DOUBLE_EQ(DayWeight(0, 2 * 86400), 1);
  EXPECT_DOUBLE_EQ(DayWeight(2, 2 * 86400), 0.5);
  EXPECT_DOUBLE_EQ(DayWeight(4, 2 * 86400), 0.25);
  EXPECT_GT(DayWeight(1, 86400), DayWeight(3, 86400));
}

TEST(DayHistory, MissingDaysNewestFirst) {
  DayHistory h;
  h.Put(98, {S("a", 1)}, true);
  EXPECT_EQ(h.Missing(100, 4), (std::vector<int64_t>{100, 99, 97}));
  EXPECT_TRUE(h.Missing(98, 1).empty());
}

TEST(DayHistory, WeightedMeanOverTheDaysWithData) {
  PredictConfig cfg;
  cfg.days = 3;
  cfg.min_days = 1;
  cfg.half_life_seconds = 86400;  // weights 1, 0.5, 0.25 for days 10, 9, 8
  DayHistory h;
  h.Put(8, {S("a", 40), S("b", 10)}, true);
  h.Put(9, {S("a", 20)}, true);  // b has no data on day 9
  h.Put(10, {S("a", 10), S("b", 30)}, true);
  auto out = h.Combine(10, cfg);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(*FindLabel(*out[0].labels, "node"), "a");
  EXPECT_DOUBLE_EQ(out[0].value, (1 * 10 + 0.5 * 20 + 0.25 * 40) / 1.75);
  EXPECT_EQ(out[0].days, 3u);
  // b's missing day is left out, not read as 0: the weights of the other days are renormalised.
  EXPECT_EQ(*FindLabel(*out[1].labels, "node"), "b");
  EXPECT_DOUBLE_EQ(out[1].value, (1 * 30 + 0.25 * 10) / 1.25);
  EXPECT_EQ(out[1].days, 2u);
}

TEST(DayHistory, TooFewDaysOfDataIsNoValue) {
  PredictConfig cfg;
  cfg.days = 3;
  cfg.min_days = 2;
  DayHistory h;
  h.Put(8, {S("a", 40)}, true);
  h.Put(9, {S("a", 20), S("b", 90)}, true);
  h.Put(10, {S("b", std::numeric_limits<double>::quiet_NaN())}, true);  // NaN: no data
  auto out = h.Combine(10, cfg);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(*FindLabel(*out[0].labels, "node"), "a");
}

TEST(DayHistory, OnlyTheWindowsDaysCount) {
  PredictConfig cfg;
  cfg.days = 2;
  cfg.min_days = 1;
  DayHistory h;
  h.Put(7, {S("a", 1000)}, true);  // before the window of days 9-10
  h.Put(9, {S("a", 50)}, true);
  h.Put(10, {S("a", 50)}, true);
  h.Put(11, {S("a", 1000)}, true);  // after it (not finished at the time asked)
  auto out = h.Combine(10, cfg);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_DOUBLE_EQ(out[0].value, 50);
}

TEST(DayHistory, DayRolloverEvictsTheOldestAndNeedsOnlyTheNewDay) {
  PredictConfig cfg;
  cfg.days = 8;
  cfg.min_days = 1;
  DayHistory h;
  for (int64_t d = 93; d <= 100; ++d) h.Put(d, {S("old", 1), S("a", static_cast<double>(d))}, true);
  h.Put(92, {S("gone", 5)}, true);
  EXPECT_TRUE(h.Missing(100, 8).empty());
  // The next day is finished: the day that left the window goes, with the series only it named.
  h.EvictBefore(101 - 8 + 1);
  EXPECT_EQ(h.size(), 7u);
  EXPECT_EQ(h.Missing(101, 8), (std::vector<int64_t>{101}));
  h.Put(101, {S("a", 101)}, true);
  auto out = h.Combine(101, cfg);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(*FindLabel(*out[0].labels, "node"), "old");
  EXPECT_EQ(out[0].days, 7u);  // day 93 was evicted
  EXPECT_EQ(*FindLabel(*out[1].labels, "node"), "a");
  EXPECT_EQ(out[1].days, 8u);
  EXPECT_GT(out[1].value, 97);  // recent days (higher values here) weigh more than the plain mean
  for (const auto& p : out) EXPECT_NE(*FindLabel(*p.labels, "node"), "gone");
}

TEST(DayHistory, OneSeriesTwiceInADayKeepsTheMoreSevere) {
  PredictConfig cfg;
  cfg.days = 1;
  cfg.min_days = 1;
  DayHistory high, low;
  high.Put(5, {S("a", 10), S("a", 30)}, true);
  low.Put(5, {S("a", 10), S("a", 30)}, false);
  ASSERT_EQ(high.Combine(5, cfg).size(), 1u);
  EXPECT_EQ(high.Combine(5, cfg)[0].value, 30);
  EXPECT_EQ(high.Combine(5, cfg)[0].days, 1u);
  EXPECT_EQ(low.Combine(5, cfg)[0].value, 10);
}

}  // namespace
}  // namespace ds
