#include "replay/pod_usage_history.h"

#include <algorithm>
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

MarkedPoints::MarkedPoints(const std::vector<PodInfo>& pods, const NodeMarks& marks)
    : marks_(marks) {
  for (const PodInfo& p : pods) by_key_[p.Key()] = &p;
}

void MarkedPoints::Filter(UsageSeries* s) const {
  auto pod = by_key_.find(s->ns + "/" + s->pod);
  auto node = pod == by_key_.end() ? marks_.end()
                                   : marks_.find(!s->node.empty() ? s->node : pod->second->node);
  if (node == marks_.end()) {
    s->points.clear();
    return;
  }
  const std::vector<MarkSpan>& spans = node->second;
  std::erase_if(s->points, [&](const std::pair<double, double>& p) {
    auto after = std::upper_bound(spans.begin(), spans.end(), p.first,
                                  [](double x, const MarkSpan& m) { return x < m.start; });
    return after == spans.begin() || p.first >= std::prev(after)->end;
  });
}

StatusOr<PodUsageHistory> FetchPodUsageHistory(PrometheusClient* prom, const RebalanceConfig& cfg,
                                               const PodUsageFetch& f, RightSizer* sizer,
                                               const std::unordered_set<std::string>* wanted,
                                               const MarkedPoints* only_marked) {
  PodUsageHistory out;
  const LabelFilter labels = {"namespace", "pod", "node"};
  const size_t per_request =
      std::max<size_t>(1, f.max_points_per_request / std::max<size_t>(1, f.expected_series));
  const size_t max_steps = std::max<size_t>(1, std::min(f.max_steps, per_request));
  for (int resource = 0; resource < 2; ++resource) {
    const std::string& query = resource == 0 ? cfg.cpu_usage_query : cfg.memory_usage_query;
    const std::string expr = ExpandNodes(query, f.nodes);
    std::vector<UsageSeries>* kept = resource == 0 ? &out.cpu : &out.memory;
    std::map<std::tuple<std::string, std::string, std::string>, size_t> index;
    for (const RangeChunk& chunk : PlanRangeChunks(f.from, f.to, f.step, max_steps)) {
      ++out.requests;
      std::vector<UsageSeries> series;
      {  // the decoded answer is freed once folded, before the next chunk is asked for
        auto r = prom->QueryRange(expr, chunk.start, chunk.end, f.step, &labels);
        if (!r.ok())
          return r.status().Prepend(std::string("podUsage ") + (resource == 0 ? "cpu" : "memory") +
                                    " from " + FormatRfc3339(chunk.start) + " to " +
                                    FormatRfc3339(chunk.end));
        FoldPodUsage(*r, &series, &out.unlabelled);
      }
      for (UsageSeries& s : series) {
        if (sizer) resource == 0 ? sizer->AddCpu(s) : sizer->AddMemory(s);
        if (wanted && !wanted->count(s.ns + "/" + s.pod)) continue;
        if (only_marked) only_marked->Filter(&s);
        if (s.points.empty()) continue;
        auto [it, fresh] = index.try_emplace({s.ns, s.pod, s.node}, kept->size());
        if (fresh)
          kept->push_back(std::move(s));
        else
          (*kept)[it->second].points.insert((*kept)[it->second].points.end(), s.points.begin(),
                                            s.points.end());
      }
    }
  }
  return out;
}

}  // namespace ds
