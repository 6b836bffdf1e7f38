// Per-pod real usage from one PromQL answer (by namespace and pod, e.g. cAdvisor's
// container_cpu_usage_seconds_total summed by namespace and pod), folded while it is decoded:
// only the pods of nodes that qualify for relief are kept, so 300,000 series cost no more memory
// than the few hundred pods the rebalancer looks at.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/sample.h"

namespace ds {

// A podUsage query may name `$nodes`: it is replaced by a regular expression matching exactly
// the nodes being relieved (e.g. `{node=~"$nodes"}` where the usage series carry the node), so
// Prometheus answers their pods' series instead of every pod's. Pure.
inline constexpr const char* kNodesPlaceholder = "$nodes";
std::string ExpandNodes(const std::string& query, const std::vector<std::string>& nodes);

class PodUsageSink : public SampleSink {
 public:
  // `wanted`: "namespace/pod" keys to keep; null keeps every pod. Must outlive the sink.
  explicit PodUsageSink(const std::unordered_set<std::string>* wanted) : wanted_(wanted) {}

  void Reset() override;
  void Add(const LabelViews& labels, double value) override;

  // "namespace/pod" -> usage. A pod with several series (a query without `sum by`) gets their
  // sum: each series is a part of the pod, e.g. one container.
  const std::unordered_map<std::string, double>& usage() const { return usage_; }
  size_t unlabelled() const { return unlabelled_; }  // series without namespace or pod labels
  size_t skipped_nan() const { return skipped_nan_; }

 private:
  const std::unordered_set<std::string>* const wanted_;
  std::unordered_map<std::string, double> usage_;
  size_t unlabelled_ = 0, skipped_nan_ = 0;
};

}  // namespace ds
