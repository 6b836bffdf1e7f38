// The pod usage history right-sizing and the rebalancer's estimate need: the rule file's
// `rebalance.podUsage` queries (cpu and memory, by namespace and pod) over the replayed window,
// through query_range in chunks (PlanRangeChunks). The I/O edge of replay/right_sizing.h and
// replay/rebalance_estimate.h: one request per chunk and resource; the folding is pure
// (FoldPodUsage). Each chunk goes to the RightSizer as it arrives and only the points the estimate
// needs are kept (MarkedPoints), so a week of every pod costs the figures, not the points.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/status.h"
#include "kube/pod_object.h"
#include "promql/prometheus_client.h"
#include "rebalance/rebalance_config.h"
#include "replay/right_sizing.h"

namespace ds {

// Points per range request, over all its series: a chunk of a query over 30,000 pods gets
// 30,000 times fewer steps than one series could have. Below Prometheus' default
// query.max-samples (50 million), and one decoded chunk stays near 30 MB.
inline constexpr size_t kMaxPointsPerRequest = 2000000;

struct PodUsageHistory {
  std::vector<UsageSeries> cpu, memory;  // the kept pods' points, time ascending
  size_t unlabelled = 0;                 // series without namespace or pod labels: left out
  size_t requests = 0;
};

// Adds one range answer to `out`. Series of the same pod (and `node` label) are summed at each
// time, as the rebalancer's PodUsageSink sums a query without `sum by` (one series per
// container); NaN points are left out. Points stay time-ascending across chunks added in order.
void FoldPodUsage(const RangeResult& result, std::vector<UsageSeries>* out, size_t* unlabelled);

// The points the rebalancer's estimate needs: a pod's while its node (the series' `node` label,
// else the pod list's) carries a mark; the estimate looks at no other (rebalance_estimate.h). A
// week of every pod at a minute's step would be gigabytes; a mark's share of it is not.
class MarkedPoints {
 public:
  // Both must outlive it.
  MarkedPoints(const std::vector<PodInfo>& pods, const NodeMarks& marks);
  // Drops the points of `s` the estimate does not need (all of them for a pod not listed).
  void Filter(UsageSeries* s) const;

 private:
  const NodeMarks& marks_;
  std::unordered_map<std::string, const PodInfo*> by_key_;
};

struct PodUsageFetch {
  double from = 0, to = 0, step = 60;  // REQUIRES: step > 0
  // `$nodes` in a query is replaced by a regular expression matching these (pod_usage.h:
  // ExpandNodes), normally every node replayed.
  std::vector<std::string> nodes;
  size_t expected_series = 0;  // about how many pods: sizes the chunks; 0: one series' limit
  size_t max_points_per_request = kMaxPointsPerRequest;
  size_t max_steps = kMaxPointsPerSeries;
};

// Runs both queries. Every chunk's series go to `sizer` (when not null). Kept in the result: the
// pods in `wanted` ("namespace/pod"; null: every pod; an empty set: none, for right-sizing
// alone), and of those, with `only_marked`, only the points it leaves (the estimate's). Errors:
// the first failed request's, naming the resource and the chunk; nothing partial.
StatusOr<PodUsageHistory> FetchPodUsageHistory(PrometheusClient* prom, const RebalanceConfig& cfg,
                                               const PodUsageFetch& f, RightSizer* sizer,
                                               const std::unordered_set<std::string>* wanted,
                                               const MarkedPoints* only_marked = nullptr);

}  // namespace ds
