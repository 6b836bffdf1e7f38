#include "rebalance/pod_choice.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "rebalance/kubelet_order.h"

namespace ds {

PodChoice ChoosePods(const NodeLoad& node, std::vector<Candidate> candidates, size_t max_pods,
                     Placement* placement, const UsageCeiling& ceiling) {
  // A usage that is not a number (a sum of infinities) is unknown: such a pod is not chosen, and
  // it must not reach the sort, whose ordering NaN would break.
  PodChoice out;
  for (const Candidate& c : candidates)
    if (!std::isfinite(c.usage)) out.left.emplace_back(c.pod, "no_usage");
  candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                  [](const Candidate& c) { return !std::isfinite(c.usage); }),
                   candidates.end());
  if (ceiling.resource == Rule::Resource::kMemory && ceiling.per_unit > 0) {
    // Memory: the kubelet's order (kubelet_order.h), so that the pod moved gracefully is the one
    // the kubelet would kill next, at once and without a PodDisruptionBudget, if the node ran out.
    auto rank = [&](const Candidate& c) {
      return KubeletMemoryRank{c.usage / ceiling.per_unit, c.pod->KubeletMemoryRequest(),
                               c.pod->priority};
    };
    std::sort(candidates.begin(), candidates.end(), [&](const Candidate& a, const Candidate& b) {
      const KubeletMemoryRank ra = rank(a), rb = rank(b);
      if (KubeletEvictsBefore(ra, rb)) return true;
      if (KubeletEvictsBefore(rb, ra)) return false;
      return a.pod->Key() < b.pod->Key();
    });
  } else {
    // CPU (the kubelet evicts nothing for it): largest first, the fewest evictions for the
    // relief. Ties by name, so a run is reproducible.
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
      if (a.usage != b.usage) return a.usage > b.usage;
      return a.pod->Key() < b.pod->Key();
    });
  }
  for (const Candidate& c : candidates) out.ranked.push_back(c.pod);
  double load = node.load;
  std::optional<MovingMean> mean;
  if (ceiling.pool != nullptr && ceiling.pool->count > 0)
    mean.emplace(ceiling.pool, ceiling.negated);
  // A relative rule's goal moves with the mean, and `target` (the floor) may be above it: the
  // plan stops at the floor then, as an absolute rule's cannot (config/rule_config_rebalance.cc).
  auto relative_goal = [&] { return std::max(mean->Goal(), node.floor); };
  double goal = mean ? relative_goal() : node.goal;
  size_t i = 0;
  // Why the plan stopped before the candidates from `i` on.
  const char* stopped = nullptr;
  for (; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    if (load <= goal) {
      stopped = "goal_reached";
      break;
    }
    if (out.picks.size() >= max_pods) {
      stopped = "no_room";
      break;
    }
    if (!(c.usage > 0)) {  // moving it would not relieve the node
      out.left.emplace_back(c.pod, "no_relief");
      continue;
    }
    // Balance: kube-scheduler binds the replacement by requests, not where this plan reserves
    // room, so what counts is the node it is likely to land on, one near the mean. A pod whose
    // share alone is over the threshold offset makes such a node stand out in its turn: moving
    // it moves the hot spot (bench/EFFECT.md, "A new worker joins").
    const char* why = nullptr;
    if (mean && c.usage > ceiling.pool->threshold_offset) {
      ++out.stands_out;
      why = "stands_out";
    } else if (load - c.usage < node.floor) {
      ++out.over_floor;  // a smaller one may still fit between the goal and the floor
      why = "over_floor";
    }
    std::string to;
    if (why == nullptr) {
      UsageFit fit;
      if (ceiling.resource != Rule::Resource::kNone && ceiling.per_unit > 0)
        fit = UsageFit{ceiling.resource, c.usage / ceiling.per_unit,
                       mean && !ceiling.negated ? mean->Ceiling() : ceiling.ceiling_percent};
      to = placement->Reserve(*c.pod, node.node, fit);
      if (to.empty()) {
        ++out.no_fit;
        why = "no_fit";
      }
    }
    if (why != nullptr) {
      out.left.emplace_back(c.pod, why);
      if (ceiling.in_order_only) {
        stopped = "kubelet_victim_stays";  // the pods after the kubelet's next victim stay
        ++i;
        break;
      }
      continue;
    }
    load -= c.usage;
    if (mean && ceiling.per_unit > 0) {
      mean->Move(c.usage, c.usage / ceiling.per_unit, to);
      goal = relative_goal();
    }
    out.picks.push_back(PodChoice::Pick{c.pod, c.usage, std::move(to)});
  }
  for (; i < candidates.size(); ++i) out.left.emplace_back(candidates[i].pod, stopped);
  out.load_after = load;
  out.goal = goal;
  out.reached = load <= goal;
  return out;
}

PodChoice ChooseDrain(const std::string& node, const std::vector<const PodInfo*>& candidates,
                      size_t max_pods, Placement* placement) {
  std::vector<const PodInfo*> order = candidates;
  std::sort(order.begin(), order.end(), [](const PodInfo* a, const PodInfo* b) {
    if (a->cpu_request != b->cpu_request) return a->cpu_request > b->cpu_request;
    if (a->memory_request != b->memory_request) return a->memory_request > b->memory_request;
    return a->Key() < b->Key();
  });
  PodChoice out;
  for (const PodInfo* p : order) {
    if (out.picks.size() >= max_pods) break;
    std::string to = placement->Reserve(*p, node);
    if (to.empty()) {
      ++out.no_fit;
      continue;
    }
    out.picks.push_back(PodChoice::Pick{p, 0, std::move(to)});
  }
  return out;
}

}  // namespace ds
