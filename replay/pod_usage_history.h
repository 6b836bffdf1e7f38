// The pod usage history right-sizing and the rebalancer's estimate need: the rule file's
// `rebalance.podUsage` queries (cpu and memory, by namespace and pod) over the replayed window,
// through query_range in chunks within Prometheus' points-per-series limit (PlanRangeChunks).
// The I/O edge of replay/right_sizing.h and replay/rebalance_estimate.h: one request per chunk
// and resource, the folding into UsageSeries pure (FoldPodUsage).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/status.h"
#include "promql/prometheus_client.h"
#include "rebalance/rebalance_config.h"
#include "replay/right_sizing.h"

namespace ds {

struct PodUsageHistory {
  std::vector<UsageSeries> cpu, memory;  // one per pod (and node, when the series name one)
  size_t unlabelled = 0;                 // series without namespace or pod labels: left out
  size_t requests = 0;
};

// Adds one range answer to `out`. Series of the same pod (and `node` label) are summed at each
// time, as the rebalancer's PodUsageSink sums a query without `sum by` (one series per
// container); NaN points are left out. Points stay time-ascending across chunks added in order.
void FoldPodUsage(const RangeResult& result, std::vector<UsageSeries>* out, size_t* unlabelled);

// Runs both queries over [from, to] every `step` seconds. `$nodes` in a query is replaced by a
// regular expression matching `nodes` (pod_usage.h: ExpandNodes), normally every node replayed.
// Errors: the first failed request's, naming the resource and the chunk; nothing partial.
// REQUIRES: step > 0.
StatusOr<PodUsageHistory> FetchPodUsageHistory(PrometheusClient* prom, const RebalanceConfig& cfg,
                                               const std::vector<std::string>& nodes, double from,
                                               double to, double step,
                                               size_t max_steps = kMaxPointsPerSeries);

}  // namespace ds
