#include "controller/drainer.h"

#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/log_fields.h"
#include "rebalance/pod_choice.h"

namespace ds {

Drainer::Drainer(const RebalanceConfig& cfg, const Mark& mark,
                 const std::optional<LabelSelector>& selector, ClusterReads* reads,
                 Candidates* candidates, Evictor* evictor, const Clock* clock,
                 RebalanceTally* tally)
    : cfg_(cfg),
      mark_(mark),
      selector_(selector),
      reads_(reads),
      candidates_(candidates),
      evictor_(evictor),
      clock_(clock),
      tally_(tally) {}

// The mirror mode's view of each node this cycle, and where to find its input again.
struct Drainer::UnderuseCycle {
  std::vector<UnderuseNode> in;
  std::map<std::string, const ReliefInput*> by_name;
  std::map<std::string, bool> eligible;
  UnderusePlan plan;
  std::vector<UnderusedNodeReport> reports;

  // The report of `node` (each node the plan names has one; the last, were there two).
  UnderusedNodeReport* ReportOf(const std::string& node) {
    UnderusedNodeReport* found = nullptr;
    for (auto& r : reports)
      if (r.name == node) found = &r;
    return found;
  }
};

Drainer::UnderuseCycle Drainer::UnderuseInputs(const std::vector<ReliefInput>& nodes, double now) {
  const UnderusedConfig& uc = cfg_.underused;
  UnderuseCycle c;
  c.in.reserve(nodes.size());
  for (const ReliefInput& r : nodes) {
    UnderuseNode u;
    u.name = r.node->name;
    u.load[0] = r.load[0];
    u.load[1] = r.load[1];
    const std::string* v = FindLabel(r.node->labels, mark_.key);
    u.ours = v != nullptr && *v == uc.value;
    u.taken = v != nullptr && !u.ours;
    // Never a node the cycle calls hot: the two modes do not act on one node (the hot mark is
    // written this cycle, over the underused one, and the node is relieved, not drained).
    u.eligible = (!selector_ || selector_->Matches(r.node->labels)) && !r.node->unschedulable &&
                 !RefusesNewPods(*r.node) && !r.hot;
    u.drained = u.ours && drained_.count(u.name) > 0;
    u.balance_destination = r.balance_destination;
    c.by_name.emplace(u.name, &r);
    c.eligible.emplace(u.name, u.eligible);
    c.in.push_back(std::move(u));
  }
  c.plan = underuse_.Step(c.in, uc, now);
  return c;
}

void Drainer::WriteUnderusedMark(const UnderuseCycle& c, const std::string& node, bool set,
                                 double now, const ReliefWrites& io) {
  const UnderusedConfig& uc = cfg_.underused;
  NodeEdit edit;
  edit.label.op = set ? NodeEdit::Op::kSet : NodeEdit::Op::kRemove;
  edit.label.key = mark_.key;
  edit.label.value = uc.value;  // a removal only if the value is still ours
  // A set only if the node is as this cycle read it: a value an operator wrote meanwhile under
  // our key (the plan saw none) is not overwritten (409; the next cycle sees theirs).
  if (set) edit.resource_version = c.by_name.at(node)->node->resource_version;
  // The drain record goes with the mark it belongs to (in the same JSON Patch, which fails if the
  // node changed since it was read: then the next cycle looks again).
  if (!set && FindLabel(c.by_name.at(node)->node->annotations, kLastDrainAnnotation) != nullptr)
    edit.annotation = {NodeEdit::Op::kRemove, kLastDrainAnnotation, ""};
  if (cfg_.dry_run) {
    LOG(INFO) << "rebalance (dry run): would " << DescribeNodeEdit(edit) << Fields("node", node);
    return;
  }
  NodeWrite w{node, edit, set ? "below every bound of rebalance.underused" : "no longer underused"};
  const EditOutcome res = io.writer->WriteEdit(w, io.hooks, io.stop);
  if (res.end == WriteEnd::kRetryLater && res.status.code() == StatusCode::kCancelled) return;
  const bool written = res.end == WriteEnd::kWritten;
  if (res.end == WriteEnd::kChanged) {
    // Someone wrote the node since the cycle read it (perhaps a value under our key): nothing
    // was written, and the next cycle plans from what is there now.
    tally_->Count(&RebalanceCounters::underused_marks, "changed");
    LOG(INFO) << "rebalance: the node changed since it was read; " << DescribeNodeEdit(edit)
              << " waits for the next cycle" << Fields("node", node);
    return;
  }
  tally_->Count(&RebalanceCounters::underused_marks, !written ? "failed" : set ? "set" : "removed");
  if (!written) {
    if (throttle_.ShouldLog("underused-" + node, clock_->Now()))
      LOG(WARNING) << "rebalance: could not " << DescribeNodeEdit(edit)
                   << Fields("node", node, "err", res.status);
    return;
  }
  const ReliefInput* r = c.by_name.at(node);
  std::ostringstream msg;
  msg.precision(4);
  msg << (set ? "Marked " : "Unmarked ") << mark_.key << "=" << uc.value << ": ";
  const char* names[2] = {"CPU", "memory"};
  bool first = true;
  for (int k = 0; k < 2; ++k) {
    if (std::isnan(uc.below[k])) continue;
    msg << (first ? "" : ", ") << names[k] << " at " << r->load[k] << " % of allocatable"
        << (set ? " (below " : " (bound ") << uc.below[k] << " %)";
    first = false;
  }
  if (set)
    msg << " for " << uc.for_seconds << " s or more; its pods will be moved elsewhere so that "
        << "the node can be removed";
  else if (!c.eligible.at(node))
    msg << "; no longer a node to drain (hot, cordoned, tainted, or rebalance.nodeSelector)";
  LOG(INFO) << (set ? "rebalance: marked underused" : "rebalance: unmarked underused")
            << Fields("node", node, "reason", msg.str());
  EventInfo e;
  e.kind = "Node";
  e.name = node;
  e.uid = r->node->uid;
  e.reason = set ? "MarkedUnderused" : "UnmarkedUnderused";
  e.action = set ? "Mark" : "Unmark";
  e.at_wall = now;
  e.message = msg.str();
  evictor_->Post(e, io);
}

void Drainer::ForgetDrains(const std::vector<ReliefInput>& nodes, double now,
                           const ReliefWrites& io) {
  for (const ReliefInput& r : nodes) {
    const double drained = RecordedDrain(*r.node);
    if (drained <= 0 || now - drained < cfg_.limits.node_cooldown_seconds) continue;
    const std::string* v = FindLabel(r.node->labels, mark_.key);
    if (v != nullptr && *v == cfg_.underused.value) continue;  // still ours: it goes with the mark
    NodeEdit edit;
    edit.annotation = {NodeEdit::Op::kRemove, kLastDrainAnnotation, ""};
    if (cfg_.dry_run) {
      LOG(INFO) << "rebalance (dry run): would " << DescribeNodeEdit(edit)
                << Fields("node", r.node->name);
      continue;
    }
    const EditOutcome res = io.writer->WriteEdit(
        NodeWrite{r.node->name, edit, "its underused mark is gone", true}, io.hooks, io.stop);
    if (res.end != WriteEnd::kWritten && throttle_.ShouldLog("forget-drain", clock_->Now()))
      LOG(WARNING) << "rebalance: could not remove a drain record"
                   << Fields("node", r.node->name, "err", res.status);
  }
}

void Drainer::ReportUnderused(UnderuseCycle* c) {
  auto report = [&](const std::string& n, const char* state) {
    const ReliefInput* r = c->by_name.at(n);
    UnderusedNodeReport u;
    u.name = n;
    u.state = state;
    u.load[0] = r->load[0];
    u.load[1] = r->load[1];
    if (auto s = c->plan.below_since.find(n); s != c->plan.below_since.end())
      u.below_since_wall = s->second;
    c->reports.push_back(std::move(u));
  };
  for (const std::string& n : c->plan.drain) report(n, drained_.count(n) ? "drained" : "draining");
  for (const std::string& n : c->plan.mark) report(n, "marked");
  for (const std::string& n : c->plan.unmark) report(n, "unmarked");
  for (const std::string& n : c->plan.capped) report(n, "capped");
}

std::vector<std::string> Drainer::DrainOrder(UnderuseCycle* c, bool relieving, double now,
                                             const std::map<std::string, double>& retry_at) {
  // Draining: relief of hot nodes comes first; a drain waits for a cycle that relieved none.
  // In dry-run the nodes that would be marked are planned too (they are never marked there).
  std::vector<std::string> drain = c->plan.drain;
  if (cfg_.dry_run) drain.insert(drain.end(), c->plan.mark.begin(), c->plan.mark.end());
  std::vector<std::string> order;
  for (const std::string& n : drain) {
    UnderusedNodeReport* rep = c->ReportOf(n);
    if (relieving) {
      rep->limit = "hot_nodes_first";
    } else if (Limit lim = evictor_->NodeLimit(n, RecordedDrain(*c->by_name.at(n)->node), now);
               lim != Limit::kNone) {
      rep->limit = LimitName(lim);
      tally_->Count(&RebalanceCounters::skips, rep->limit);
    } else if (auto w = retry_at.find(n); w != retry_at.end() && now < w->second) {
      rep->limit = "retry_wait";
      // A drained node is looked at again now and then (pods may land on it); that is no skip.
      if (!drained_.count(n)) tally_->Count(&RebalanceCounters::skips, rep->limit);
    } else if (order.size() < cfg_.limits.per_cycle) {
      order.push_back(n);
    } else {
      rep->limit = LimitName(Limit::kCycle);  // more nodes than this cycle's evictions
    }
  }
  return order;
}

void Drainer::Drain(const std::vector<ReliefInput>& nodes, UnderuseCycle* c,
                    const std::vector<std::string>& order, double now, const ReliefWrites& io,
                    std::map<std::string, size_t>* acted, std::set<std::string>* tried) {
  const UnderusedConfig& uc = cfg_.underused;
  const int ri = std::isnan(uc.below[0]) ? 1 : 0;
  // Not onto nodes that idle too (waiting out `for`, capped, being marked): their pods would
  // only move again when their turn comes. Consolidation means the busier nodes take them.
  std::set<std::string> exclude(c->plan.mark.begin(), c->plan.mark.end());
  for (const auto& [name, since] : c->plan.below_since) exclude.insert(name);
  const std::vector<const ReliefInput*> dest = candidates_->Destinations(nodes, ri, exclude);
  std::vector<std::string> dest_names;
  for (const ReliefInput* d : dest) dest_names.push_back(d->node->name);
  auto cluster = reads_->ListNodes(order, dest_names, now);
  if (!cluster) return;
  Placement placement = Candidates::PlacementOn(dest, &*cluster);
  placement.RequireGuards();
  for (const std::string& n : order) {
    const size_t room = evictor_->RoomThisCycle();
    if (room == 0) return;
    tried->insert(n);
    const ReliefInput* r = c->by_name.at(n);
    Skipped skipped;
    // Read first, then decide on what was read. The underused mark has no taint; in a dry run it
    // is not on the node, but would be.
    candidates_->Read(&cluster->on[n], now, &*cluster, &placement);
    const std::vector<const PodInfo*> movable =
        candidates_->Filter(cluster->on[n], *r->node, Avoid{uc.value, nullptr}, now, io, *cluster,
                            &placement, &skipped);
    // Drained: nothing it may ever move is left. Pods a limit holds back for now still count, and
    // so do pods that would come back, fit nowhere, or whose fit is not judged: they are still on
    // the node, which is not empty, and a drained node would free its maxNodes place for the next
    // one.
    if (movable.empty() && skipped.limited == 0 && skipped.would_return == 0 &&
        skipped.constraint == 0 && skipped.no_fit == 0)
      drained_.insert(n);
    else
      drained_.erase(n);
    PodChoice choice = ChooseDrain(n, movable, room, &placement);
    if (choice.no_fit > 0) tally_->Count(&RebalanceCounters::skips, "no_fit", choice.no_fit);
    for (auto& rep : c->reports)
      if (rep.name == n) rep.picks = choice.picks.size();
    for (const PodChoice::Pick& pick : choice.picks) {
      EvictionRecord rec;
      rec.pod = pick.pod->Key();
      rec.node = n;
      rec.to = pick.to;
      rec.rule = Evictor::kUnderusedRule;
      rec.load = std::max(std::isfinite(r->load[0]) ? r->load[0] : 0,
                          std::isfinite(r->load[1]) ? r->load[1] : 0);
      rec.goal = uc.below[ri];
      rec.at_wall = now;
      rec.pod_uid = pick.pod->uid;
      rec.node_uid = r->node->uid;
      const Evictor::Outcome o = evictor_->Evict(*pick.pod, std::move(rec), pick.pod->cpu_request,
                                                 pick.pod->memory_request, io);
      if (o.moved) reads_->ExpectReplacement(*pick.pod, pick.to);
      if (o.evicted) ++(*acted)[n];
      if (!o.open) return;  // no longer the leader, or stopping: nothing more this cycle
    }
  }
}

void Drainer::Underuse(const std::vector<ReliefInput>& nodes, bool relieving, double now,
                       const std::map<std::string, double>& retry_at, const ReliefWrites& io,
                       std::map<std::string, size_t>* acted, std::set<std::string>* tried) {
  UnderuseCycle c = UnderuseInputs(nodes, now);
  // The marks first: a node is drained only once the node cache has seen its mark (a later
  // cycle), so the scheduler already steers the replacements elsewhere.
  for (const std::string& n : c.plan.unmark) {
    WriteUnderusedMark(c, n, false, now, io);
    drained_.erase(n);
  }
  // Only nodes that still carry the underused mark: one deleted, or whose mark the hot one
  // replaced, must count against maxNodes again if it is ever marked anew.
  std::set<std::string> ours;
  for (const UnderuseNode& u : c.in)
    if (u.ours) ours.insert(u.name);
  for (auto it = drained_.begin(); it != drained_.end();)
    it = ours.count(*it) ? std::next(it) : drained_.erase(it);
  for (const std::string& n : c.plan.mark) WriteUnderusedMark(c, n, true, now, io);
  ForgetDrains(nodes, now, io);

  ReportUnderused(&c);
  const std::vector<std::string> order = DrainOrder(&c, relieving, now, retry_at);
  if (!order.empty()) Drain(nodes, &c, order, now, io, acted, tried);
  tally_->Edit([&](RebalanceReport* r) { r->underused = std::move(c.reports); });
}

}  // namespace ds
