#include "rules/cycle_judge.h"

#include <utility>

namespace ds {

CycleJudge::CycleJudge(std::vector<Rule> rules, Duration grace, HerdCap cap, OutagePolicy outage)
    : decider_(std::move(rules), grace), cap_(cap), policy_(outage) {}

CycleJudgement CycleJudge::Judge(TimePoint now, const std::vector<NodeInput>& nodes,
                                 const std::vector<PlanNode>& plan,
                                 const std::vector<RuleInput>& inputs, bool every_query_failed,
                                 const Hold& hold) {
  CycleJudgement j;
  j.decisions = decider_.Decide(now, nodes, inputs);
  j.cold.resize(j.decisions.size());
  for (size_t i = 0; i < j.decisions.size(); ++i)
    j.cold[i] = j.decisions[i].verdict == Verdict::kCold;
  outage_.Observe(every_query_failed, now);
  j.outage_seconds = outage_.DownSeconds(now);
  j.releasing = outage_.Releasing(policy_, now);
  if (j.releasing)
    j.released = ReleaseVerdicts(&j.decisions);
  else if (hold)
    hold(&j.decisions);
  std::vector<bool> marked(plan.size());
  for (size_t i = 0; i < plan.size(); ++i) marked[i] = plan[i].marked;
  j.cap = ApplyHerdCap(cap_, decider_.rules(), marked, &j.decisions);
  j.changes = PlanChanges(plan, j.decisions);
  return j;
}

void CycleJudge::Rebase(std::vector<Rule> rules, Duration grace, HerdCap cap, OutagePolicy outage) {
  decider_.Rebase(std::move(rules), grace);
  cap_ = cap;
  policy_ = outage;
}

}  // namespace ds
