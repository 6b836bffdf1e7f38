#include "controller/duration_metrics.h"

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
  // Add returns the rule's histogram, created on its first observation.
  query_->Add({{"rule", rule}}, Buckets()).Observe(seconds);
}

std::vector<prometheus::MetricFamily> DurationMetrics::Collect() const {
  return registry_.Collect();
}

}  // namespace ds
