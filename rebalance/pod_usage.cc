#include "rebalance/pod_usage.h"

#include <cmath>

namespace ds {

void PodUsageSink::Reset() {
  usage_.clear();
  unlabelled_ = skipped_nan_ = 0;
}

void PodUsageSink::Add(const LabelViews& labels, double value) {
  const std::string_view* ns = FindLabel(labels, "namespace");
  const std::string_view* pod = FindLabel(labels, "pod");
  if (ns == nullptr || pod == nullptr || ns->empty() || pod->empty()) {
    ++unlabelled_;
    return;
  }
  std::string key;
  key.reserve(ns->size() + 1 + pod->size());
  key.append(*ns).append("/").append(*pod);
  if (wanted_ != nullptr && !wanted_->count(key)) return;
  if (!std::isfinite(value)) {
    ++skipped_nan_;  // no usable usage: the pod is treated as unknown, never as idle
    return;
  }
  usage_[key] += value;
}

}  // namespace ds
