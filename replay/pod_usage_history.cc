#include "replay/pod_usage_history.h"

#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>

#include "common/rfc3339.h"
#include "rebalance/pod_usage.h"

namespace ds {

void FoldPodUsage(const RangeResult& result, std::vector<UsageSeries>* out, size_t* unlabelled) {
  std::map<std::tuple<std::string, std::string, std::string>, size_t> index;
  for (size_t i = 0; i < out->size(); ++i) {
    const UsageSeries& s = (*out)[i];
    index[{s.ns, s.pod, s.node}] = i;
  }
  for (const RangeSeries& rs : result.series) {
    const std::string* ns = FindLabel(rs.metric, "namespace");
    const std::string* pod = FindLabel(rs.metric, "pod");
    if (!ns || !pod || ns->empty() || pod->empty()) {
      ++*unlabelled;
      continue;
    }
    const std::string* node = FindLabel(rs.metric, "node");
    auto [it, fresh] = index.try_emplace({*ns, *pod, node ? *node : ""}, out->size());
    if (fresh) out->push_back(UsageSeries{*ns, *pod, node ? *node : "", {}});
    auto& points = (*out)[it->second].points;
    // A second series of the pod (another container) adds to the points at the same times.
    std::map<double, double> merged(points.begin(), points.end());
    for (size_t k = 0; k < rs.times.size() && k < rs.values.size(); ++k) {
      if (std::isnan(rs.values[k])) continue;
      merged[rs.times[k]] += rs.values[k];
    }
    points.assign(merged.begin(), merged.end());
  }
}

StatusOr<PodUsageHistory> FetchPodUsageHistory(PrometheusClient* prom, const RebalanceConfig& cfg,
                                               const std::vector<std::string>& nodes, double from,
                                               double to, double step, size_t max_steps) {
  PodUsageHistory out;
  const LabelFilter keep = {"namespace", "pod", "node"};
  const std::pair<const char*, const std::string*> queries[] = {
      {"cpu", &cfg.cpu_usage_query}, {"memory", &cfg.memory_usage_query}};
  for (const auto& [resource, query] : queries) {
    const std::string expr = ExpandNodes(*query, nodes);
    std::vector<UsageSeries>* series = std::string(resource) == "cpu" ? &out.cpu : &out.memory;
    for (const RangeChunk& chunk : PlanRangeChunks(from, to, step, max_steps)) {
      ++out.requests;
      auto r = prom->QueryRange(expr, chunk.start, chunk.end, step, &keep);
      if (!r.ok())
        return r.status().Prepend(std::string("podUsage ") + resource + " from " +
                                  FormatRfc3339(chunk.start) + " to " + FormatRfc3339(chunk.end));
      FoldPodUsage(*r, series, &out.unlabelled);
    }
  }
  return out;
}

}  // namespace ds
