#include "controller/prediction_source.h"

#include <gtest/gtest.h>

#include <map>

#include "test/fakes/fake_clock.h"
#include "test/fakes/fake_prometheus.h"

namespace ds {
namespace {

// Collects what a query fed to its sink.
class Collect : public SampleSink {
 public:
  void Reset() override { values.clear(); }
  void Add(const LabelViews& labels, double value) override {
    values[std::string(*FindLabel(labels, "node"))] = value;
  }
  std::map<std::string, double> values;
};

Rule PredictRule(size_t days = 3) {
  Rule r;
  r.name = "cpu-peak";
  r.query = "node_cpu";
  r.threshold = 80;
  r.clear_threshold = 80;
  r.predict.enabled = true;
  r.predict.days = days;
  r.predict.min_days = 1;
  r.predict.half_life_seconds = 86400;
  return r;
}

class PredictionSourceTest : public ::testing::Test {
 protected:
  // The newest finished day at the fake clock's wall time.
  int64_t LastDay() const { return LastFinishedDay(clock_.WallSeconds(), TimeZone::Utc()); }
  DayQuery QueryOf(const Rule& r, int64_t day) const {
    return MakeDayQuery(r.query, r.predict, DayBounds(day, TimeZone::Utc()));
  }
  void Script(const Rule& r, int64_t day, double a, double b) {
    const DayQuery q = QueryOf(r, day);
    prom_.SetValuesAt(q.expr, q.eval_time, {{"a", a}, {"b", b}});
  }
  size_t Asked() { return prom_.queries_at().size(); }

  FakeClock clock_;
  FakePrometheus prom_;
  PredictionSource source_{&prom_, &clock_};
  LabelFilter keep_{"node"};
};

TEST_F(PredictionSourceTest, ColdStartFillsAFewDaysPerCycleThenAnswersFromTheCache) {
  const Rule r = PredictRule(3);
  const int64_t last = LastDay();
  Script(r, last, 90, 40);
  Script(r, last - 1, 80, 40);
  Script(r, last - 2, 70, 40);
  Collect sink;
  // First cycle: the two newest days, and no answer yet ("not known" rather than "not busy").
  auto first = source_.Query(r, &keep_, &sink);
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(first.status().message().find("2 of 3 days"), std::string::npos)
      << first.status().ToString();
  ASSERT_EQ(Asked(), 2u);
  EXPECT_DOUBLE_EQ(prom_.queries_at()[0].second, QueryOf(r, last).eval_time);
  EXPECT_DOUBLE_EQ(prom_.queries_at()[1].second, QueryOf(r, last - 1).eval_time);
  // Second cycle: the last day, then the weighted mean (weights 1, 0.5, 0.25).
  auto second = source_.Query(r, &keep_, &sink);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(Asked(), 3u);
  EXPECT_EQ(second->sample_count, 2u);
  EXPECT_DOUBLE_EQ(sink.values["a"], (90 + 0.5 * 80 + 0.25 * 70) / 1.75);
  EXPECT_DOUBLE_EQ(sink.values["b"], 40);
  // Steady state: cycles through the rest of the day ask Prometheus nothing.
  const double rollover =
      DayBounds(last + 1, TimeZone::Utc()).end + kPredictSettleSeconds - clock_.WallSeconds();
  for (int i = 0; i < 50; ++i) {
    clock_.AdvanceSeconds((rollover - 1) / 50);
    sink.values.clear();
    ASSERT_TRUE(source_.Query(r, &keep_, &sink).ok());
    EXPECT_EQ(sink.values.size(), 2u);
  }
  EXPECT_EQ(LastDay(), last);
  EXPECT_EQ(Asked(), 3u);
  EXPECT_EQ(source_.days_fetched(), 3u);
}

TEST_F(PredictionSourceTest, ANewDayCostsOneQueryAndTheOldestLeaves) {
  const Rule r = PredictRule(2);
  const int64_t last = LastDay();
  Script(r, last, 50, 50);
  Script(r, last - 1, 50, 50);
  Collect sink;
  ASSERT_TRUE(source_.Query(r, &keep_, &sink).ok());
  ASSERT_EQ(Asked(), 2u);
  clock_.AdvanceSeconds(86400);  // the 15th is finished
  ASSERT_EQ(LastDay(), last + 1);
  Script(r, last + 1, 20, 100);
  ASSERT_TRUE(source_.Query(r, &keep_, &sink).ok());
  ASSERT_EQ(Asked(), 3u);
  EXPECT_DOUBLE_EQ(prom_.queries_at()[2].second, QueryOf(r, last + 1).eval_time);
  EXPECT_DOUBLE_EQ(sink.values["a"], (20 + 0.5 * 50) / 1.5);
  EXPECT_DOUBLE_EQ(sink.values["b"], (100 + 0.5 * 50) / 1.5);
  EXPECT_EQ(source_.DaysHeld(r.name), 2u);
}

TEST_F(PredictionSourceTest, AFailedDayIsAskedAgainNotKeptAsEmpty) {
  const Rule r = PredictRule(1);
  const int64_t last = LastDay();
  const DayQuery q = QueryOf(r, last);
  prom_.SetError(q.expr, Status::Unavailable("timeout"));
  Collect sink;
  auto failed = source_.Query(r, &keep_, &sink);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("timeout"), std::string::npos);
  EXPECT_EQ(source_.DaysHeld(r.name), 0u);
  prom_.SetValues(q.expr, {});  // Prometheus is back (clears the error)
  Script(r, last, 95, 10);
  auto ok = source_.Query(r, &keep_, &sink);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(Asked(), 2u);
  EXPECT_DOUBLE_EQ(sink.values["a"], 95);
}

TEST_F(PredictionSourceTest, AChangedRuleStartsOverAnUnchangedOneKeepsItsDays) {
  Rule r = PredictRule(1);
  const int64_t last = LastDay();
  Script(r, last, 95, 10);
  Collect sink;
  ASSERT_TRUE(source_.Query(r, &keep_, &sink).ok());
  source_.Retain({r});  // a reload that left the rule as it was
  ASSERT_TRUE(source_.Query(r, &keep_, &sink).ok());
  EXPECT_EQ(Asked(), 1u);
  // A new threshold changes no fetched day: the history stays.
  Rule stricter = r;
  stricter.threshold = r.threshold + 10;
  source_.Retain({stricter});
  ASSERT_TRUE(source_.Query(stricter, &keep_, &sink).ok());
  EXPECT_EQ(Asked(), 1u) << "no day fetched again for a threshold";

  Rule changed = r;
  changed.predict.quantile = 0.5;
  Script(changed, last, 60, 5);
  source_.Retain({changed});
  EXPECT_EQ(source_.DaysHeld(r.name), 0u);
  ASSERT_TRUE(source_.Query(changed, &keep_, &sink).ok());
  EXPECT_EQ(Asked(), 2u);
  EXPECT_DOUBLE_EQ(sink.values["a"], 60);
  // A definition that changed without a Retain (e.g. its query) is caught by the comparison too.
  changed.query = "other";
  Script(changed, last, 1, 2);
  ASSERT_TRUE(source_.Query(changed, &keep_, &sink).ok());
  EXPECT_EQ(Asked(), 3u);
  EXPECT_DOUBLE_EQ(sink.values["a"], 1);
}

TEST_F(PredictionSourceTest, AnUnknownTimeZoneFailsTheRuleAndSaysSo) {
  Rule r = PredictRule(1);
  r.predict.time_zone = "Nowhere/Atlantis";
  Collect sink;
  auto res = source_.Query(r, &keep_, &sink);
  ASSERT_FALSE(res.ok());
  EXPECT_NE(res.status().ToString().find("Nowhere/Atlantis"), std::string::npos);
  EXPECT_EQ(Asked(), 0u);
}

}  // namespace
}  // namespace ds
