// Prediction: a rule's value per node from its history rather than from now (`predict:` in
// rule.yaml), so a node is marked ahead of its daily peak. The value is a weighted mean, over the
// last `days` finished local days, of each day's `quantile` of the rule's query (by default the
// daily P95 of the last 8 days, recent days weighing more).
//
// The pure part, no I/O and no clock reads: which days a time needs, the query that measures one
// day, the weights, and a per-rule history of finished days (day -> series -> value) that is
// combined into one value per series. A finished day's quantile never changes, so each day is
// asked of Prometheus once and kept (controller/prediction_source.h does the asking); today, which
// is not finished, is never used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/labels.h"
#include "common/sample.h"
#include "common/time_zone.h"

namespace ds {

// A rule's `predict:` block.
struct PredictConfig {
  bool enabled = false;
  size_t days = 8;                       // finished days looked back on
  double quantile = 0.95;                // of each day's values (0..1)
  double half_life_seconds = 2 * 86400;  // a day this much older weighs half as much
  size_t min_days = 3;             // a series with fewer days of data has no value (missing data)
  double resolution_seconds = 60;  // the subquery step each day's quantile is taken over
  std::string time_zone = "UTC";   // where a day starts and ends (IANA name)

  bool operator==(const PredictConfig&) const = default;
};

// A day is finished this long after its end: samples of its last minutes may still be on their
// way (a scrape interval, a pushgateway's push), so yesterday is asked for a little after midnight.
inline constexpr double kPredictSettleSeconds = 300;

// The local calendar day (days since 1970-01-01 in `zone`) that `epoch_seconds` falls in.
int64_t LocalDay(double epoch_seconds, const TimeZone& zone);

struct DayWindow {
  double start = 0, end = 0;  // epoch seconds: local midnight to the next (23-25 h with DST)
};
DayWindow DayBounds(int64_t day, const TimeZone& zone);

// The newest finished day at `now_epoch_seconds`: yesterday, once kPredictSettleSeconds have
// passed since midnight, else the day before.
int64_t LastFinishedDay(double now_epoch_seconds, const TimeZone& zone);

// "2026-11-25", for logs and errors.
std::string DayName(int64_t day);

// One day's instant query: `quantile_over_time(q, (<query>)[<day length>s:<resolution>s])`
// evaluated a millisecond before the day's end, so that the subquery's steps are the day's own
// (its midnight in, the next midnight out) whether Prometheus's range is closed or half-open.
struct DayQuery {
  std::string expr;
  double eval_time = 0;  // epoch seconds
};
DayQuery MakeDayQuery(const std::string& query, const PredictConfig& cfg, const DayWindow& w);

// The weight of a day `age` days before the newest finished day (age 0): 0.5^(age d / halfLife).
double DayWeight(int64_t age, double half_life_seconds);

// A rule's finished days: per day, each series' (kept labels') value. Series labels are stored
// once however many days name them. Thread-compatible.
class DayHistory {
 public:
  bool Has(int64_t day) const { return days_.count(day) > 0; }
  size_t size() const { return days_.size(); }
  // The days of [last - days + 1, last] not held, newest first (they weigh most).
  std::vector<int64_t> Missing(int64_t last, size_t days) const;
  // Stores a day's answer (replacing one held). NaN and infinite values are left out: such a
  // sample says nothing about the day's level. An empty answer is a day without data. Two
  // samples of one series (labels the decoder did not keep told them apart) keep the more severe,
  // as node matching does: the higher with `keep_highest` (operator '>'), else the lower.
  void Put(int64_t day, const std::vector<Sample>& samples, bool keep_highest);
  // Forgets the days before `oldest` and the series no remaining day names.
  void EvictBefore(int64_t oldest);

  struct Predicted {
    const Labels* labels = nullptr;  // valid until the next Put or EvictBefore
    double value = 0;
    size_t days = 0;  // how many days had a value
  };
  // Per series, the weighted mean of its values on the held days of [last - cfg.days + 1, last]
  // (weights DayWeight(last - day), renormalised over the days that have a value); a series with
  // values on fewer than cfg.min_days days is left out. In the order series were first seen.
  std::vector<Predicted> Combine(int64_t last, const PredictConfig& cfg) const;

 private:
  std::map<std::string, uint32_t> index_;  // series key (sorted labels) -> series_ index
  std::vector<Labels> series_;
  std::map<int64_t, std::vector<std::pair<uint32_t, double>>> days_;  // day -> (series, value)
};

}  // namespace ds
