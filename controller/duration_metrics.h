// The metrics that are distributions, not snapshots: how long evaluation cycles and rule queries
// take, as Prometheus histograms. Everything else /metrics shows is a value the controller
// already keeps (counters, the last cycle's report) and is rendered from a ControllerView per
// scrape; a histogram's buckets must accumulate every observation between scrapes, so it lives
// here, for the life of the process, and the view carries a copy of it (Collect).
#pragma once

#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <map>
#include <string>
#include <vector>

#include "common/mutex.h"

namespace ds {

// Thread-safe: the cycle thread observes while web server threads collect (prometheus-cpp
// guards each histogram and each family with its own mutex).
class DurationMetrics {
 public:
  // Upper bounds in seconds, shared by both histograms: a cycle of a small cluster takes a few
  // milliseconds, a rule query is cut off at -query_timeout (30 s by default), and a cycle that
  // writes hundreds of marks through the client rate limit takes tens of seconds.
  static const std::vector<double>& Buckets();

  DurationMetrics();
  DurationMetrics(const DurationMetrics&) = delete;
  DurationMetrics& operator=(const DurationMetrics&) = delete;

  // One evaluation cycle that ran (wall time, start to end).
  void ObserveCycle(double seconds);
  // One rule's query in a cycle (wall time until its answer, or its error, was in), by rule name.
  void ObserveQuery(const std::string& rule, double seconds);
  // Drops the query histograms of the rules not named in `rules`: after a reload, so that a
  // removed (or renamed) rule's series do not stay until the process restarts, looking like a
  // rule that still runs. A rule that comes back starts from zero, as a counter after a restart.
  void RetainQueries(const std::vector<std::string>& rules);

  // A copy of both histograms now: dynamic_scheduler_cycle_duration_seconds and
  // dynamic_scheduler_query_duration_seconds{rule}.
  std::vector<prometheus::MetricFamily> Collect() const;

 private:
  prometheus::Registry registry_;
  // Both owned by registry_; constant after construction.
  prometheus::Histogram* cycle_;
  prometheus::Family<prometheus::Histogram>* query_;
  // The query histograms by rule (owned by query_), for RetainQueries.
  Mutex mu_;
  std::map<std::string, prometheus::Histogram*> by_rule_ GUARDED_BY(mu_);
};

}  // namespace ds
