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

struct Plan {
  size_t episode;
  double at;
  Relief relief;
};

std::vector<HeldSince> HeldOf(const EstimateInput& in, const std::string& node, double start) {
  return in.held ? in.held(node, start) : std::vector<HeldSince>{};
}

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
      // The same walk as EstimateRebalance's, so both name the same cycle.
      for (double t = span.start; t < span.end; t += step) {
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
  std::map<std::string, const PlacementNode*> node_by_name;
  for (const PlacementNode& n : in.nodes) node_by_name[n.name] = &n;

  // Each episode's first cycle at which it qualifies and has something to relieve.
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
      for (double t = span.start; t < span.end; t += step) {
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
        plans.push_back(Plan{out.episodes.size(), t, std::move(*relief)});
        break;
      }
      out.episodes.push_back(std::move(e));
    }
  }
  // Cycle by cycle, and within a cycle in the controller's order (perCycle takes the first).
  std::stable_sort(plans.begin(), plans.end(), [](const Plan& a, const Plan& b) {
    if (a.at != b.at) return a.at < b.at;
    return RelievedBefore(a.relief, b.relief);
  });

  const UsageIndex usage[2] = {Index(in.cpu), Index(in.memory)};
  std::unordered_map<std::string, std::vector<const PodInfo*>> on_node;
  for (const PodInfo& p : in.pods) on_node[p.node].push_back(&p);
  EvictionBudget budget(cfg.limits);
  std::set<std::string> evicted;
  double cycle = -1;
  for (const Plan& plan : plans) {
    EpisodeEstimate& e = out.episodes[plan.episode];
    if (plan.at != cycle) {
      cycle = plan.at;
      int weekday = 0, minute = 0;
      zone.LocalWeekdayMinute(cycle, &weekday, &minute);
      budget.StartCycle(cycle, weekday, minute);
    }
    const UsageIndex& used = usage[plan.relief.resource == Rule::Resource::kCpu ? 0 : 1];
    std::vector<UsedPod> candidates;
    for (const PodInfo* pp : on_node[e.node]) {
      const PodInfo& p = *pp;
      // An evicted pod is gone: its replacement runs elsewhere (where is not replayed).
      if (evicted.count(p.Key())) continue;
      // A pod created after the cycle did not exist then: its age is negative, below any
      // minPodAge, so CheckEvictable keeps it out too.
      if (CheckEvictable(p, cfg.pods, plan.at) != Keep::kNone) continue;
      std::optional<double> u = UsageAt(used, p, plan.at, step);
      if (!u) continue;
      // A pod a limit forbids now is no candidate (as in the rebalancer): said, not hidden.
      if (Limit lim = budget.Check(p); lim != Limit::kNone) {
        e.held_back.push_back({&p, LimitName(lim)});
        continue;
      }
      candidates.push_back(UsedPod{&p, *u});
    }
    e.candidates = candidates.size();
    const size_t done = budget.evicted_this_cycle();
    const size_t room = cfg.limits.per_cycle > done ? cfg.limits.per_cycle - done : 0;
    if (room == 0) {
      for (const UsedPod& c : candidates) e.held_back.push_back({c.pod, LimitName(Limit::kCycle)});
      continue;
    }
    std::vector<PlacementNode> dest = in.nodes;
    for (PlacementNode& n : dest) n.marked = MarkedAt(in.marks, n.name, plan.at);
    Placement placement(std::move(dest));
    PodChoice choice = PlanRelief(plan.relief, candidates, room, &placement);
    e.load_after = plan.relief.Value(choice.load_after);
    for (const PodChoice::Pick& pick : choice.picks) {
      // Checked again at the eviction, as the rebalancer does: an earlier pick of the same cycle
      // may have used up the hour's or the workload's allowance.
      if (Limit lim = budget.Check(*pick.pod); lim != Limit::kNone) {
        e.held_back.push_back({pick.pod, LimitName(lim)});
        continue;
      }
      budget.Record(*pick.pod);
      evicted.insert(pick.pod->Key());
      e.evictions.push_back({pick.pod, pick.usage});
      ++out.evictions;
    }
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
