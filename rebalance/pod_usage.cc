#include "rebalance/pod_usage.h"

#include <cctype>
#include <cmath>

namespace ds {

std::string ExpandNodes(const std::string& query, const std::vector<std::string>& nodes) {
  // Node names are DNS subdomains ([a-z0-9.-]); anything else is escaped anyway, twice: once for
  // the regular expression, once for the PromQL string literal it sits in.
  std::string alt;
  for (const std::string& n : nodes) {
    if (!alt.empty()) alt += '|';
    for (char c : n) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') alt += "\\\\";
      alt += c;
    }
  }
  std::string out;
  const std::string key = kNodesPlaceholder;
  size_t from = 0;
  for (size_t at; (at = query.find(key, from)) != std::string::npos; from = at + key.size())
    out.append(query, from, at - from).append(alt);
  return out.append(query, from, std::string::npos);
}

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
