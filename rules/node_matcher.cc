#include "rules/node_matcher.h"

#include <cmath>
#include <limits>

namespace ds {

namespace {
constexpr const char* kDefaultNodeLabels[] = {"node", "instance", "ip", "nodename"};
constexpr size_t kMaxExamples = 5;
}  // namespace

std::string_view StripPort(std::string_view s) {
  if (!s.empty() && s.front() == '[') {
    auto close = s.find(']');
    if (close != std::string_view::npos) return s.substr(1, close - 1);
    return s;
  }
  auto colon = s.rfind(':');
  if (colon == std::string_view::npos) return s;
  // More than one colon without brackets: a bare IPv6 address, no port.
  if (s.find(':') != colon) return s;
  std::string_view port = s.substr(colon + 1);
  if (port.empty()) return s.substr(0, colon);
  for (char c : port)
    if (c < '0' || c > '9') return s;
  return s.substr(0, colon);
}

NodeMatcher::NodeMatcher(const std::vector<NodeIdentity>& nodes) : size_(nodes.size()) {
  by_name_.reserve(nodes.size());
  by_address_.reserve(nodes.size() * 2);
  for (size_t i = 0; i < nodes.size(); ++i) {
    by_name_.emplace(nodes[i].name, static_cast<int>(i));
    for (const auto& a : nodes[i].addresses) {
      auto [it, inserted] = by_address_.emplace(a, static_cast<int>(i));
      if (!inserted && it->second != static_cast<int>(i)) it->second = -2;  // ambiguous
    }
  }
}

int NodeMatcher::Lookup(std::string_view value) const {
  std::string_view key = StripPort(value);
  if (auto it = by_name_.find(key); it != by_name_.end()) return it->second;
  if (auto it = by_address_.find(key); it != by_address_.end())
    return it->second >= 0 ? it->second : -1;
  return -1;
}

int NodeMatcher::Match(const Labels& metric, const std::string& node_label) const {
  return MatchImpl(metric, node_label);
}

int NodeMatcher::Match(const LabelViews& metric, const std::string& node_label) const {
  return MatchImpl(metric, node_label);
}

template <typename L>
int NodeMatcher::MatchImpl(const L& metric, const std::string& node_label) const {
  if (!node_label.empty()) {
    const auto* v = FindLabel(metric, node_label);
    return v == nullptr ? -1 : Lookup(*v);
  }
  // The first label present decides, even when it names no managed node: a later label (often
  // `instance`, the exporter's address) may name a different node than the one measured.
  for (const char* l : kDefaultNodeLabels) {
    const auto* v = FindLabel(metric, l);
    if (v == nullptr || v->empty()) continue;  // Prometheus: an empty value is no label
    return Lookup(*v);
  }
  return -1;
}

std::vector<std::string> MatchLabels(const Rule& rule) {
  if (!rule.node_label.empty()) return {rule.node_label};
  return std::vector<std::string>(std::begin(kDefaultNodeLabels), std::end(kDefaultNodeLabels));
}

void MatchAccumulator::Reset() {
  out_ = MatchedValues{};
  out_.values.assign(matcher_->size(), std::numeric_limits<double>::quiet_NaN());
}

void MatchAccumulator::Add(const LabelViews& labels, double value) {
  int i = matcher_->Match(labels, rule_->node_label);
  if (i < 0) {
    ++out_.unmatched;
    if (out_.unmatched_names.size() < kMaxExamples) {
      std::string name;
      for (const auto& [k, v] : labels) {  // only the matching labels are decoded
        if (k == "__name__") continue;
        // Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict for the
        // equivalent chain of operator+ on temporaries.
        if (!name.empty()) name += ',';
        name.append(k).append("=").append(v);
      }
      out_.unmatched_names.push_back("{" + name + "}");
    }
    return;
  }
  if (std::isnan(value)) return;
  double& slot = out_.values[static_cast<size_t>(i)];
  if (std::isnan(slot)) {
    slot = value;
  } else {
    ++out_.duplicates;
    slot = rule_->op == Comparison::kGreater ? std::max(slot, value) : std::min(slot, value);
  }
}

MatchedValues MatchSamples(const NodeMatcher& matcher, const std::vector<Sample>& samples,
                           const Rule& rule) {
  MatchAccumulator acc(&matcher, &rule);
  LabelViews views;
  for (const auto& s : samples) {
    views.clear();
    for (const auto& [k, v] : s.metric) views.emplace_back(k, v);
    acc.Add(views, s.value);
  }
  return std::move(acc.result());
}

}  // namespace ds
