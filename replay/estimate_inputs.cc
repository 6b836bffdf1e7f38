#include "replay/estimate_inputs.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace ds {

std::vector<PlacementNode> PlacementNodesOf(const std::vector<NodeInfo>& nodes,
                                            const std::vector<PodInfo>& pods) {
  std::vector<PlacementNode> out;
  out.reserve(nodes.size());
  std::unordered_map<std::string, size_t> index;
  for (const NodeInfo& n : nodes) {
    index[n.name] = out.size();
    PlacementNode p;
    p.name = n.name;
    p.labels = n.labels;
    p.unschedulable = n.unschedulable;
    p.taints = n.taints;
    p.allocatable_cpu = n.allocatable_cpu;
    p.allocatable_memory = n.allocatable_memory;
    p.allocatable_other = n.allocatable_other;
    out.push_back(std::move(p));
  }
  for (const PodInfo& pod : pods) {
    auto it = index.find(pod.node);
    // A finished pod holds no room (the scheduler does not count it either).
    if (it == index.end() || pod.phase == "Succeeded" || pod.phase == "Failed") continue;
    PlacementNode& p = out[it->second];
    p.requested_cpu += pod.cpu_request;
    p.requested_memory += pod.memory_request;
    AddOtherRequests(pod, &p.requested_other);
    p.host_ports.insert(p.host_ports.end(), pod.host_ports.begin(), pod.host_ports.end());
    p.pods.push_back(ResidentOf(pod));
  }
  return out;
}

NodeMarks HottestMarks(const ReplayResult& r) {
  NodeMarks marks;
  for (const ReplayNodeResult& n : r.nodes)
    for (const ReplayMark& m : n.marks)
      if (m.below_hottest == 0)
        marks[n.name].push_back(MarkSpan{m.start, std::isnan(m.end) ? r.to : m.end});
  return marks;
}

std::vector<HeldSince> HeldAtMark(const ReplayResult& r, const std::vector<Rule>& rules,
                                  const std::string& node, double start) {
  std::vector<HeldSince> out;
  for (const ReplayNodeResult& n : r.nodes) {
    if (n.name != node) continue;
    for (const ReplayMark& m : n.marks) {
      if (m.start != start || m.below_hottest != 0) continue;
      for (const std::string& name : m.rules)
        for (const Rule& rule : rules)
          if (rule.name == name && rule.below_hottest == 0)
            out.push_back(HeldSince{m.start, rule.relieve_after_seconds, rule.name});
    }
  }
  return out;
}

HoldingValues::HoldingValues(const std::vector<Rule>& rules) : rules_(rules) {
  for (size_t r = 0; r < rules.size(); ++r)
    if (rules[r].resource != Rule::Resource::kNone && rules[r].below_hottest == 0 &&
        rules[r].relative_to == Rule::Relative::kNone)
      asked_.push_back(r);
}

void HoldingValues::Add(size_t rule, double t, const std::vector<Sample>& samples,
                        const NodeMatcher& matcher, const std::vector<std::string>& names) {
  for (const Sample& s : samples) {
    if (!std::isfinite(s.value)) continue;
    const int i = matcher.Match(s.metric, rules_[rule].node_label);
    if (i < 0 || static_cast<size_t>(i) >= names.size()) continue;
    values_[{names[static_cast<size_t>(i)], t}].emplace(rule, s.value);  // the first counts
  }
}

const std::vector<std::string>* HoldingAt(const ReplayResult& r, const std::string& node,
                                          double t) {
  auto n =
      std::lower_bound(r.nodes.begin(), r.nodes.end(), node,
                       [](const ReplayNodeResult& a, const std::string& b) { return a.name < b; });
  if (n == r.nodes.end() || n->name != node) return nullptr;
  for (const ReplayMark& m : n->marks) {
    const double end = std::isnan(m.end) ? r.to : m.end;
    if (t < m.start || t >= end) continue;
    const std::vector<std::string>* now = nullptr;
    for (const auto& [since, rules] : m.held)
      if (since <= t) now = &rules;
    return now;
  }
  return nullptr;
}

std::vector<HoldingRule> HoldingValues::At(const std::string& node, double t,
                                           const std::vector<std::string>* held) const {
  std::vector<HoldingRule> out;
  auto it = values_.find({node, t});
  if (it == values_.end()) return out;
  for (const auto& [r, v] : it->second) {
    const Rule& rule = rules_[r];
    if (held != nullptr && std::find(held->begin(), held->end(), rule.name) == held->end())
      continue;  // in its band, perhaps, but it never crossed: it holds nothing (E4)
    if (!rule.Cleared(rule.clear_threshold, v))
      out.push_back(
          HoldingRule{rule.name, rule.resource, v, rule.clear_threshold, rule.AvailableBytes()});
  }
  return out;
}

}  // namespace ds
