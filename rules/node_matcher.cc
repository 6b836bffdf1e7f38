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
  std::string key(StripPort(value));
  if (auto it = by_name_.find(key); it != by_name_.end()) return it->second;
  if (auto it = by_address_.find(key); it != by_address_.end()) return it->second >= 0 ? it->second : -1;
  return -1;
}

int NodeMatcher::Match(const Labels& metric, const std::string& node_label) const {
  if (!node_label.empty()) {
    const std::string* v = FindLabel(metric, node_label);
    return v == nullptr ? -1 : Lookup(*v);
  }
  for (const char* l : kDefaultNodeLabels) {
    const std::string* v = FindLabel(metric, l);
    if (v == nullptr) continue;
    int i = Lookup(*v);
    if (i >= 0) return i;
  }
  return -1;
}

MatchedValues MatchSamples(const NodeMatcher& matcher, const std::vector<Sample>& samples,
                           const Rule& rule) {
  MatchedValues out;
  out.values.assign(matcher.size(), std::numeric_limits<double>::quiet_NaN());
  for (const auto& s : samples) {
    int i = matcher.Match(s.metric, rule.node_label);
    if (i < 0) {
      ++out.unmatched;
      if (out.unmatched_names.size() < kMaxExamples) {
        std::string name;
        for (const auto& [k, v] : s.metric) {
          if (k == "__name__") continue;
          name += (name.empty() ? "" : ",") + k + "=" + v;
        }
        out.unmatched_names.push_back("{" + name + "}");
      }
      continue;
    }
    if (std::isnan(s.value)) continue;
    double& slot = out.values[static_cast<size_t>(i)];
    if (std::isnan(slot)) {
      slot = s.value;
    } else {
      ++out.duplicates;
      slot = rule.op == Comparison::kGreater ? std::max(slot, s.value) : std::min(slot, s.value);
    }
  }
  return out;
}

}  // namespace ds
