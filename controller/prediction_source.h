// The I/O half of `predict:` rules (rules/prediction.h): keeps each such rule's history of
// finished days, asks Prometheus for the days it lacks (one instant query per day, evaluated at
// the day's end), and answers the cycle's query for the rule from that history, like a query
// for any other rule. In steady state a cycle sends no query for the rule; a new day costs one.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "common/time_zone.h"
#include "config/rule_config.h"
#include "promql/prometheus_client.h"
#include "rules/prediction.h"

namespace ds {

// At most this many days are fetched per rule and cycle, newest first, so that a cold start (8
// days, each a day-long subquery over every node) does not hold one cycle for all of them.
inline constexpr size_t kMaxDayFetchesPerCycle = 2;

class PredictionSource {
 public:
  // `prom` and `clock` must outlive this. The clock's wall time says which days are finished.
  PredictionSource(PrometheusClient* prom, const Clock* clock,
                   size_t max_fetches_per_cycle = kMaxDayFetchesPerCycle);

  // The rule's predicted value per series (labels as `keep` kept them), fed to `sink` like a
  // streamed query (the result's sample_count set, its fetch_seconds the days fetched now).
  // First fetches up to max_fetches_per_cycle missing days; a failed fetch is not kept and is
  // tried again next call. Fails (kUnavailable, saying how many days are in) while any of the
  // rule's days is missing: a partial history would favour the days fetched first, and "not
  // known yet" must not read as "not busy". kInvalidArgument: the rule's time zone is unknown.
  // A rule whose definition changed (any field) starts a new history.
  // REQUIRES: rule.predict.enabled. Thread-safe; calls for different rules run in parallel.
  StatusOr<QueryResult> Query(const Rule& rule, const LabelFilter* keep, SampleSink* sink);

  // Drops the histories of rules not in `rules` (by name and definition): after a reload.
  void Retain(const std::vector<Rule>& rules);

  // Days fetched successfully since start, over all rules (for tests and logs).
  uint64_t days_fetched() const;
  // How many days a rule's history holds (0 when it has none).
  size_t DaysHeld(const std::string& rule) const;

 private:
  struct History {
    Rule rule;                                    // the definition the days were fetched for
    Mutex mu;                                     // serialises calls for one rule
    std::optional<TimeZone> zone GUARDED_BY(mu);  // loaded on first use
    DayHistory days GUARDED_BY(mu);
    std::atomic<size_t> held{0};  // days.size(), readable without mu
  };
  History* Find(const Rule& rule);

  PrometheusClient* const prom_;
  const Clock* const clock_;
  const size_t max_fetches_;
  mutable Mutex mu_;
  std::map<std::string, std::unique_ptr<History>> histories_ GUARDED_BY(mu_);  // by rule name
  std::atomic<uint64_t> days_fetched_{0};
};

}  // namespace ds
