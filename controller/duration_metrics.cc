#include "controller/duration_metrics.h"

#include <algorithm>

namespace ds {

const std::vector<double>& DurationMetrics::Buckets() {
  static const std::vector<double> kBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                               1,     2.5,  5,     10,   20,  30};
  return kBuckets;
}

DurationMetrics::DurationMetrics()
    : cycle_(&prometheus::BuildHistogram()
                  .Name("dynamic_scheduler_cycle_duration_seconds")
                  .Help("Wall time of the evaluation cycles that ran (a standby's are not "
                        "observed).")
                  .Register(registry_)
                  .Add({}, Buckets())),
      query_(&prometheus::BuildHistogram()
                  .Name("dynamic_scheduler_query_duration_seconds")
                  .Help("Wall time of each rule's query (with its ageQuery), failed ones too, "
                        "by rule.")
                  .Register(registry_)) {}

void DurationMetrics::ObserveCycle(double seconds) { cycle_->Observe(seconds); }

void DurationMetrics::ObserveQuery(const std::string& rule, double seconds) {
  prometheus::Histogram* h;
  {
    MutexLock l(&mu_);
    auto [it, added] = by_rule_.emplace(rule, nullptr);
    // Add returns the rule's histogram, created on its first observation.
    if (added) it->second = &query_->Add({{"rule", rule}}, Buckets());
    h = it->second;
  }
  h->Observe(seconds);
}

void DurationMetrics::RetainQueries(const std::vector<std::string>& rules) {
  MutexLock l(&mu_);
  for (auto it = by_rule_.begin(); it != by_rule_.end();) {
    if (std::find(rules.begin(), rules.end(), it->first) != rules.end()) {
      ++it;
      continue;
    }
    query_->Remove(it->second);
    it = by_rule_.erase(it);
  }
}

std::vector<prometheus::MetricFamily> DurationMetrics::Collect() const {
  return registry_.Collect();
}

}  // namespace ds
