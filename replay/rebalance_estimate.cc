#include "replay/rebalance_estimate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "common/rfc3339.h"
#include "rebalance/evictable.h"
#include "rebalance/eviction_budget.h"
#include "rebalance/relief_plan.h"

namespace ds {
namespace {

bool MarkedAt(const NodeMarks& marks, const std::string& node, double t) {
  auto it = marks.find(node);
  if (it == marks.end()) return false;
  for (const MarkSpan& s : it->second)
    if (s.start <= t && t < s.end) return true;
  return false;
}

// The pod's last point at or before `t`, if it is at most two cycles old (a pod without a recent
// point has no usage then, and the rebalancer never picks a pod whose usage it does not know).
using UsageIndex = std::unordered_map<std::string, const UsageSeries*>;
std::optional<double> UsageAt(const UsageIndex& index, const PodInfo& pod, double t, double step) {
  auto it = index.find(pod.Key());
  if (it == index.end()) return std::nullopt;
  const auto& pts = it->second->points;
  auto after =
      std::upper_bound(pts.begin(), pts.end(), t,
                       [](double x, const std::pair<double, double>& p) { return x < p.first; });
  if (after == pts.begin()) return std::nullopt;
  const auto& p = *std::prev(after);
  if (t - p.first > 2 * step || std::isnan(p.second)) return std::nullopt;
  return p.second;
}

UsageIndex Index(const std::vector<UsageSeries>& series) {
  UsageIndex out;
  for (const UsageSeries& s : series) out[s.ns + "/" + s.pod] = &s;
  return out;
}

// One plan of an episode at a cycle: the relief as judged then. A follow-up (the cycle's limit cut
// the plan short) carries the load the earlier evictions leave, as the controller counts its pods
// in motion.
struct Plan {
  size_t episode;
  double at;
  Relief relief;
};

// A cycle's key: its time in whole milliseconds (-step is one). The grid's times are sums of
// steps, so two episodes' equal cycles may differ in their last bits as doubles.
int64_t CycleKey(double t) { return std::llround(t * 1000); }

std::vector<HeldSince> HeldOf(const EstimateInput& in, const std::string& node, double start) {
  return in.held ? in.held(node, start) : std::vector<HeldSince>{};
}

// Each episode (one mark) into `out->episodes`, with its first plan: the first cycle at which it
// qualifies and has something to relieve.
std::vector<Plan> FirstPlans(const EstimateInput& in, const RebalanceConfig& cfg, double step,
                             RebalanceEstimate* out) {
  std::map<std::string, const PlacementNode*> node_by_name;
  for (const PlacementNode& n : in.nodes) node_by_name[n.name] = &n;
  std::vector<Plan> plans;
  for (const auto& [node, spans] : in.marks) {
    const bool selected = in.selected.empty() || std::find(in.selected.begin(), in.selected.end(),
                                                           node) != in.selected.end();
    auto where = node_by_name.find(node);
    for (const MarkSpan& span : spans) {
      EpisodeEstimate e;
      e.node = node;
      e.start = span.start;
      e.end = span.end;
      e.qualification = QualificationName(Qualification::kNotLongEnough);
      RebalanceNode rn;
      rn.observed_marked = true;
      rn.marked_since_wall = span.start;
      rn.selected = selected;
      const std::vector<HeldSince> held = HeldOf(in, node, span.start);
      rn.due_wall = ReliefDueWall(held, cfg);
      // From the cycle after the one that set the mark: the controller relieves only a node that
      // carried the mark when its cycle began, so that the replacements are steered off it.
      for (double t = span.start + step; t < span.end; t += step) {
        Qualification q = Qualifies(rn, cfg, t);
        e.qualification = QualificationName(q);
        if (q == Qualification::kNotSelected) break;
        if (q != Qualification::kYes) continue;
        std::optional<Relief> relief;
        if (where != node_by_name.end() && in.holding)
          relief = ReliefGoal(node, in.holding(node, t), held, cfg, t, false,
                              where->second->allocatable_cpu, where->second->allocatable_memory);
        if (!relief) {
          e.qualification = "nothing_to_relieve";
          continue;
        }
        e.qualified_at = t;
        e.rule = relief->rule;
        // In the rule's terms: bytes available for a bytes rule, as the rebalancer reports.
        e.load = e.load_after = relief->Value(relief->load.load);
        e.goal = relief->Value(relief->load.goal);
        plans.push_back(Plan{out->episodes.size(), t, std::move(*relief)});
        break;
      }
      out->episodes.push_back(std::move(e));
    }
  }
  return plans;
}

// Runs the plans cycle by cycle with what they share: one eviction budget, the pods gone.
class PlanRunner {
 public:
  PlanRunner(const EstimateInput& in, const RebalanceConfig& cfg, const TimeZone& zone, double step)
      : in_(in), cfg_(cfg), zone_(zone), step_(step), budget_(cfg.limits) {
    usage_[0] = Index(in.cpu);
    usage_[1] = Index(in.memory);
    for (const PodInfo& p : in.pods) on_node_[p.node].push_back(&p);
  }

  void StartCycle(double t) {
    int weekday = 0, minute = 0;
    zone_.LocalWeekdayMinute(t, &weekday, &minute);
    budget_.StartCycle(t, weekday, minute);
    placement_.reset();  // built at the cycle's first plan, shared by its plans, as live
  }

  // Evicts what `plan` picks within the limits into `e`; returns the plan for the next cycle
  // when a limit (perCycle, or one that held a pod back: the hour, the node's cool-down, a
  // window, a workload's allowance) kept it short of its goal and the mark is still on then: the
  // controller plans such a node again each cycle.
  std::optional<Plan> Run(const Plan& plan, EpisodeEstimate* e) {
    size_t limited = 0;
    std::vector<UsedPod> candidates = Candidates(plan, e, &limited);
    e->candidates = std::max(e->candidates, candidates.size());
    const size_t done = budget_.evicted_this_cycle();
    const size_t room = cfg_.limits.per_cycle > done ? cfg_.limits.per_cycle - done : 0;
    const double next = plan.at + step_;
    const bool again = cfg_.limits.per_cycle > 0 && next < e->end;
    auto follow = [&](double load) {
      Plan f{plan.episode, next, plan.relief};
      f.relief.load.load = load;
      return f;
    };
    if (room == 0) {
      if (again && (!candidates.empty() || limited > 0)) return follow(plan.relief.load.load);
      for (const UsedPod& c : candidates) HoldBack(c.pod, Limit::kCycle, e);
      return std::nullopt;
    }
    if (candidates.empty()) {  // nothing to plan: only a limit that lifts later may change that
      if (limited > 0 && again) return follow(plan.relief.load.load);
      return std::nullopt;
    }
    if (!placement_) placement_.emplace(Destinations(plan.at));
    PodChoice choice = PlanRelief(plan.relief, candidates, room, &*placement_);
    // The load the evictions leave: a pick a limit holds at its eviction stays on the node.
    double load = plan.relief.load.load;
    for (const PodChoice::Pick& pick : choice.picks) {
      // Checked again at the eviction, as the rebalancer does: an earlier pick of the same cycle
      // may have used up the hour's or the workload's allowance.
      if (Limit lim = budget_.Check(*pick.pod); lim != Limit::kNone) {
        HoldBack(pick.pod, lim, e);
        ++limited;
        continue;
      }
      budget_.Record(*pick.pod);
      evicted_.insert(pick.pod->Key());
      e->evictions.push_back({pick.pod, pick.usage, plan.at});
      load -= pick.usage;
    }
    e->load_after = plan.relief.Value(load);
    if (load <= choice.goal) {
      e->held_back.clear();  // the goal was met: what a limit delayed was not needed after all
      return std::nullopt;
    }
    // Cut short by the room: it picked as many as the cycle allowed, and more could go.
    const bool cut = choice.picks.size() == room && candidates.size() > room;
    if (!(cut || limited > 0) || !again) return std::nullopt;
    return follow(load);
  }

 private:
  // The pods on the node then that the rebalancer could evict, with their usage; those a limit
  // forbids now are said in `e->held_back`, not hidden, and counted in `limited`.
  std::vector<UsedPod> Candidates(const Plan& plan, EpisodeEstimate* e, size_t* limited) const {
    const UsageIndex& used = usage_[plan.relief.resource == Rule::Resource::kCpu ? 0 : 1];
    std::vector<UsedPod> candidates;
    auto pods = on_node_.find(e->node);
    if (pods == on_node_.end()) return candidates;
    for (const PodInfo* pp : pods->second) {
      const PodInfo& p = *pp;
      // An evicted pod is gone: its replacement runs elsewhere (where is not replayed).
      if (evicted_.count(p.Key())) continue;
      // A pod created after the cycle did not exist then: its age is negative, below any
      // minPodAge, so CheckEvictable keeps it out too.
      if (CheckEvictable(p, cfg_.pods, plan.at) != Keep::kNone) continue;
      std::optional<double> u = UsageAt(used, p, plan.at, step_);
      if (!u) continue;
      if (Limit lim = budget_.Check(p); lim != Limit::kNone) {
        HoldBack(&p, lim, e);
        ++*limited;
        continue;
      }
      candidates.push_back(UsedPod{&p, *u});
    }
    return candidates;
  }

  // Every node as a destination, marked as the replay's marks say at `t`.
  std::vector<PlacementNode> Destinations(double t) const {
    std::vector<PlacementNode> dest = in_.nodes;
    for (PlacementNode& n : dest) n.marked = MarkedAt(in_.marks, n.name, t);
    return dest;
  }

  // Once per pod and episode, its first limit: a follow-up cycle meets the same limit again.
  static void HoldBack(const PodInfo* pod, Limit limit, EpisodeEstimate* e) {
    for (const EpisodeEstimate::Held& h : e->held_back)
      if (h.pod == pod) return;
    e->held_back.push_back({pod, LimitName(limit)});
  }

  const EstimateInput& in_;
  const RebalanceConfig& cfg_;
  const TimeZone& zone_;
  const double step_;
  EvictionBudget budget_;
  UsageIndex usage_[2];
  std::unordered_map<std::string, std::vector<const PodInfo*>> on_node_;
  std::set<std::string> evicted_;
  std::optional<Placement> placement_;  // this cycle's
};

}  // namespace

std::vector<std::pair<std::string, double>> FirstQualifyingCycles(
    const NodeMarks& marks, const RebalanceConfig& cfg, double step_seconds,
    const std::vector<std::string>& selected,
    const std::function<std::vector<HeldSince>(const std::string&, double)>& held) {
  const double step = step_seconds > 0 ? step_seconds : 60;
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [node, spans] : marks) {
    RebalanceNode rn;
    rn.observed_marked = true;
    rn.selected =
        selected.empty() || std::find(selected.begin(), selected.end(), node) != selected.end();
    for (const MarkSpan& span : spans) {
      rn.marked_since_wall = span.start;
      rn.due_wall = held ? ReliefDueWall(held(node, span.start), cfg) : 0;
      // The same walk as FirstPlans', so both name the same cycle.
      for (double t = span.start + step; t < span.end; t += step) {
        Qualification q = Qualifies(rn, cfg, t);
        if (q == Qualification::kNotSelected) break;
        if (q != Qualification::kYes) continue;
        out.emplace_back(node, t);
        break;
      }
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second < b.second; });
  return out;
}

RebalanceEstimate EstimateRebalance(const EstimateInput& in, const RebalanceConfig& cfg,
                                    const TimeZone& zone) {
  RebalanceEstimate out;
  const double step = in.step_seconds > 0 ? in.step_seconds : 60;
  std::map<int64_t, std::vector<Plan>> cycles;
  for (Plan& p : FirstPlans(in, cfg, step, &out)) cycles[CycleKey(p.at)].push_back(std::move(p));
  PlanRunner runner(in, cfg, zone, step);
  // Cycle by cycle, and within a cycle in the controller's order (perCycle takes the first).
  while (!cycles.empty()) {
    std::vector<Plan> plans = std::move(cycles.begin()->second);
    cycles.erase(cycles.begin());
    std::stable_sort(plans.begin(), plans.end(), [](const Plan& a, const Plan& b) {
      return RelievedBefore(a.relief, b.relief);
    });
    runner.StartCycle(plans.front().at);
    for (const Plan& p : plans)
      if (std::optional<Plan> next = runner.Run(p, &out.episodes[p.episode]))
        cycles[CycleKey(next->at)].push_back(std::move(*next));
  }
  for (EpisodeEstimate& e : out.episodes) {
    out.evictions += e.evictions.size();
    // Held back is what a limit kept from going for good: a pod a later cycle of the episode
    // evicted was only delayed.
    std::erase_if(e.held_back, [&e](const EpisodeEstimate::Held& h) {
      return std::any_of(e.evictions.begin(), e.evictions.end(),
                         [&h](const EpisodeEstimate::Eviction& ev) { return ev.pod == h.pod; });
    });
  }
  return out;
}

void WriteRebalanceEstimate(JsonWriter& w, const RebalanceEstimate& e) {
  auto number = [&](double v) {
    if (std::isfinite(v))
      w.Double(v);
    else
      w.Null();
  };
  w.StartObject();
  w.Key("note");
  w.String(kEstimateNote);
  w.Key("evictions");
  w.Uint64(e.evictions);
  w.Key("episodes");
  w.StartArray();
  for (const EpisodeEstimate& ep : e.episodes) {
    w.StartObject();
    w.Key("node");
    WriteString(w, ep.node);
    w.Key("start");
    WriteString(w, FormatRfc3339(ep.start));
    w.Key("end");
    WriteString(w, FormatRfc3339(ep.end));
    w.Key("qualified_at");
    if (ep.qualified_at >= 0)
      WriteString(w, FormatRfc3339(ep.qualified_at));
    else
      w.Null();
    w.Key("qualification");
    WriteString(w, ep.qualification);
    w.Key("rule");
    WriteString(w, ep.rule);
    w.Key("load");
    number(ep.load);
    w.Key("goal");
    number(ep.goal);
    w.Key("load_after");
    number(ep.load_after);
    w.Key("candidates");
    w.Uint64(ep.candidates);
    w.Key("evictions");
    w.StartArray();
    for (const auto& ev : ep.evictions) {
      w.StartObject();
      w.Key("namespace");
      WriteString(w, ev.pod->ns);
      w.Key("pod");
      WriteString(w, ev.pod->name);
      w.Key("workload");
      WriteString(w, ev.pod->Workload());
      w.Key("usage");
      number(ev.usage);
      w.Key("at");
      WriteString(w, FormatRfc3339(ev.at));
      w.EndObject();
    }
    w.EndArray();
    w.Key("held_back");
    w.StartArray();
    for (const auto& h : ep.held_back) {
      w.StartObject();
      w.Key("namespace");
      WriteString(w, h.pod->ns);
      w.Key("pod");
      WriteString(w, h.pod->name);
      w.Key("limit");
      WriteString(w, h.limit);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

void WriteEstimateMissing(JsonWriter& w, const std::string& why) {
  w.StartObject();
  w.Key("note");
  w.String(kEstimateNote);
  w.Key("missing");
  WriteString(w, why);
  w.EndObject();
}

std::string EstimateSummary(const RebalanceEstimate& e) {
  size_t qualified = 0;
  for (const EpisodeEstimate& ep : e.episodes) qualified += ep.qualified_at >= 0 ? 1 : 0;
  return "rebalancer (estimated): " + std::to_string(qualified) + " of " +
         std::to_string(e.episodes.size()) + " hot episodes qualified, " +
         std::to_string(e.evictions) +
         " evictions (the scheduler is not replayed: where replacements would have gone is not "
         "claimed)\n";
}

}  // namespace ds
