// One cycle's judgement, the same code for the live controller (Reconciler::RunCycle) and the
// replay (ReplayEngine): the decider's verdicts, the outage policy, the rebalancer's hold, the
// herd cap, and the changes they plan. The replay's promise is "the controller's own decisions";
// two copies of this order drifted before (issue 40), so there is one.
//
// Pure but for the Hold it is given (the live one asks the rebalancer, which reads the clock and
// its evictions): evidence and the marks the nodes carry in, decisions and changes out. The live
// cycle reports and writes what comes out; the replay takes the changes as written.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "common/clock.h"
#include "rules/decider.h"
#include "rules/herd_cap.h"
#include "rules/outage.h"
#include "rules/planner.h"
#include "rules/rule.h"

namespace ds {

struct CycleJudgement {
  std::vector<NodeDecision> decisions;  // after the outage release, the hold and the herd cap
  // Per node, whether its rules found it cold before the release and the hold: the effect
  // figures and the rebalancer judge a node's load, not its mark (which the hold keeps).
  std::vector<bool> cold;
  bool releasing = false;     // onPrometheusDown: release is taking the marks off
  size_t released = 0;        // verdicts the release turned cold
  double outage_seconds = 0;  // how long every query has failed (0 while Prometheus answers)
  CapOutcome cap;
  std::vector<LabelChange> changes;
};

class CycleJudge {
 public:
  CycleJudge(std::vector<Rule> rules, Duration grace, HerdCap cap, OutagePolicy outage);

  // The rebalancer's hold: turns the verdicts of nodes it is relieving unknown, so that their
  // marks stay while the evicted pods settle. Not called while releasing (an outage release
  // takes every mark off, the rebalancer's too). The replay has none: it does not replay the
  // scheduler, so its evictions' effect is unknown.
  using Hold = std::function<void(std::vector<NodeDecision>*)>;

  // `nodes` and `plan`: the marks the nodes carry now, one entry per node in the same order;
  // `inputs`: one per rule; `every_query_failed`: no rule's query answered this cycle.
  CycleJudgement Judge(TimePoint now, const std::vector<NodeInput>& nodes,
                       const std::vector<PlanNode>& plan, const std::vector<RuleInput>& inputs,
                       bool every_query_failed, const Hold& hold = {});

  // A reload: the decider keeps the state of unchanged rules (Decider::Rebase).
  void Rebase(std::vector<Rule> rules, Duration grace, HerdCap cap, OutagePolicy outage);
  // A new leadership term: the timers and the outage of an earlier term are another replica's.
  void Reset() {
    decider_.Reset();
    outage_.Reset();
  }

  const Decider& decider() const { return decider_; }
  // For priming the decider's `for` timers from history (-once): Decide on past steps only.
  Decider& decider() { return decider_; }
  const HerdCap& herd_cap() const { return cap_; }
  const OutagePolicy& outage_policy() const { return policy_; }

 private:
  Decider decider_;
  HerdCap cap_;
  OutagePolicy policy_;
  OutageClock outage_;
};

}  // namespace ds
