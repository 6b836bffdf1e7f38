// Graded marks end to end in the controller, on fakes: the label value follows the level, a move
// between levels is one PATCH, a restart keeps the level without a write, `-cleanup` and /nodes
// know every level.
#include <gtest/gtest.h>

#include "app/cleanup.h"
#include "controller/reconciler.h"
#include "test/fakes/cycle_fixture.h"
#include "web/nodes_json.h"
#include "web/state_json.h"

namespace ds {
namespace {

constexpr const char* kRules = R"(levels: [{name: warm}, {name: hot}]
maxMarkedFraction: 1
rules:
  - name: cpu
    query: cpu_pct
    threshold: 90
    clearThreshold: 80
    levels: {warm: {threshold: 70, clearThreshold: 60}}
)";

class GradedReconcilerTest : public CycleFixture {
 protected:
  void SetUp() override {
    for (int i = 1; i <= 2; ++i) {
      NodeInfo n;
      n.name = "node-" + std::to_string(i);
      api_.AddNode(n);
    }
    auto cfg = ParseRuleConfig(kRules, "rule.yaml");
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    cfg_ = *cfg;
    opts_.mark = cfg_.mark;
    opts_.interval_seconds = 10;
    opts_.grace_seconds = 30;
    opts_.writes.qps = 0;
  }
  void Start() { Build(); }
  // One cycle with node-1 at `cpu` and node-2 cool; returns the patches it sent.
  std::vector<FakeKubeApi::PatchCall> Cycle(double cpu) {
    const size_t before = api_.patches().size();
    prom_.SetValues("cpu_pct", {{"node-1", cpu}, {"node-2", 10}});
    clock_.AdvanceSeconds(10);
    rec_->RunCycle(&stop_);
    auto all = api_.patches();
    return {all.begin() + static_cast<std::ptrdiff_t>(before), all.end()};
  }
  std::string Value(const std::string& node) {
    const NodeInfo n = api_.nodes()[node];
    const std::string* v = FindLabel(n.labels, "status");
    return v == nullptr ? "" : *v;
  }
  std::vector<std::string> RecordedRules(const std::string& node) {
    std::vector<std::string> names;
    const NodeInfo n = api_.nodes()[node];
    const std::string* text = FindLabel(n.annotations, kHeldByAnnotation);
    if (text == nullptr) return names;
    auto o = ParseOwnership(*text);
    EXPECT_TRUE(o.ok());
    if (o.ok()) {
      EXPECT_EQ(o->label_value, Value(node)) << "the record names the level's value";
      for (const auto& r : o->rules) names.push_back(r.rule);
    }
    return names;
  }
};

TEST_F(GradedReconcilerTest, TheLabelValueFollowsTheLevelOneWriteAStep) {
  Start();
  EXPECT_TRUE(Cycle(50).empty());
  auto p = Cycle(75);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(Value("node-1"), "warm");
  EXPECT_EQ(RecordedRules("node-1"), std::vector<std::string>{"cpu@warm"});
  EXPECT_TRUE(Cycle(65).empty()) << "in warm's band";
  p = Cycle(95);
  ASSERT_EQ(p.size(), 1u) << "warm to hot is one PATCH of the value";
  EXPECT_TRUE(p[0].set);
  EXPECT_EQ(p[0].value, "presure");
  EXPECT_EQ(Value("node-1"), "presure");
  EXPECT_EQ(RecordedRules("node-1"), (std::vector<std::string>{"cpu", "cpu@warm"}));
  EXPECT_TRUE(Cycle(85).empty()) << "in hot's band";
  p = Cycle(75);
  ASSERT_EQ(p.size(), 1u) << "hot to warm: never unmarked on the way";
  EXPECT_EQ(Value("node-1"), "warm");
  EXPECT_EQ(RecordedRules("node-1"), std::vector<std::string>{"cpu@warm"});
  p = Cycle(55);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(Value("node-1"), "");
  const NodeInfo after = api_.nodes()["node-1"];
  EXPECT_EQ(FindLabel(after.annotations, kHeldByAnnotation), nullptr);
  EXPECT_EQ(Value("node-2"), "");
  EXPECT_EQ(prom_.calls("cpu_pct"), 7) << "one query a cycle: the levels share the rule's answer";
  const auto changes = rec_->LastReport().recent_changes;
  ASSERT_NE(changes, nullptr);
  ASSERT_EQ(changes->size(), 4u);
  EXPECT_EQ((*changes)[0].level, "warm");
  EXPECT_EQ((*changes)[1].level, "hot");
}

TEST_F(GradedReconcilerTest, ARestartKeepsEachNodesLevelWithoutAWrite) {
  Start();
  Cycle(75);
  ASSERT_EQ(Value("node-1"), "warm");
  // node-2 hot, by hand through the same controller.
  prom_.SetValues("cpu_pct", {{"node-1", 75}, {"node-2", 95}});
  clock_.AdvanceSeconds(10);
  rec_->RunCycle(&stop_);
  ASSERT_EQ(Value("node-2"), "presure");
  // A new controller (a restart, or a new leader): both nodes' values sit in their level's band,
  // below the threshold that would mark them afresh.
  Start();
  const size_t before = api_.patches().size();
  for (int i = 0; i < 3; ++i) {
    prom_.SetValues("cpu_pct", {{"node-1", 65}, {"node-2", 85}});
    clock_.AdvanceSeconds(10);
    rec_->RunCycle(&stop_);
  }
  EXPECT_EQ(api_.patches().size(), before) << "no write: each node adopted at its level";
  EXPECT_EQ(Value("node-1"), "warm");
  EXPECT_EQ(Value("node-2"), "presure");
  EXPECT_EQ(rec_->LastReport().hot_nodes, 2u);
}

TEST_F(GradedReconcilerTest, AFailedQueryFailsEveryLevelAndKeepsTheLevel) {
  Start();
  Cycle(75);
  ASSERT_EQ(Value("node-1"), "warm");
  prom_.SetError("cpu_pct", Status::Unavailable("down"));
  const size_t before = api_.patches().size();
  clock_.AdvanceSeconds(10);
  rec_->RunCycle(&stop_);
  const CycleReport report = rec_->LastReport();
  ASSERT_EQ(report.rules.size(), 2u);
  EXPECT_FALSE(report.rules[0].ok);
  EXPECT_FALSE(report.rules[1].ok);
  EXPECT_EQ(report.rules[1].name, "cpu@warm");
  EXPECT_TRUE(report.all_queries_failed);
  EXPECT_EQ(api_.patches().size(), before);
  EXPECT_EQ(Value("node-1"), "warm");
}

TEST_F(GradedReconcilerTest, CleanupAndNodesKnowEveryLevel) {
  Start();
  Cycle(75);
  ASSERT_EQ(Value("node-1"), "warm");
  ControllerView view;
  view.mark = cfg_.mark;
  view.nodes = cache_->Snapshot();
  view.last_cycle = rec_->LastReport();
  const std::string nodes = RenderNodesJson(view);
  EXPECT_NE(nodes.find(R"("node_names":["node-1"])"), std::string::npos) << nodes;
  EXPECT_NE(nodes.find(R"("name":"node-1","level":"warm")"), std::string::npos) << nodes;
  const std::string state = RenderStateJson(view);
  EXPECT_NE(state.find(R"("markLevels":[{"name":"warm","value":"warm"},)"
                       R"({"name":"hot","value":"presure"}])"),
            std::string::npos)
      << state;
  EXPECT_NE(state.find(R"("markedNodes":1)"), std::string::npos) << state;

  const CleanupStep step = PlanCleanup(api_.nodes()["node-1"], cfg_.mark);
  ASSERT_TRUE(step.edit.has_value());
  EXPECT_EQ(step.edit->label.op, NodeEdit::Op::kRemove);
  EXPECT_EQ(step.edit->label.value, "warm") << "removed only while it is still warm";
  EXPECT_EQ(step.edit->annotation.op, NodeEdit::Op::kRemove);
  // Without a record (its annotation lost): a level's value under our key is ours, as the
  // single value is.
  NodeInfo bare;
  bare.name = "bare";
  bare.labels = {{"status", "warm"}};
  const CleanupStep bare_step = PlanCleanup(bare, cfg_.mark);
  ASSERT_TRUE(bare_step.edit.has_value());
  EXPECT_EQ(bare_step.edit->label.op, NodeEdit::Op::kRemove);
  EXPECT_EQ(bare_step.edit->label.value, "warm");
}

TEST_F(GradedReconcilerTest, TaintModeMovesTheTaintsValue) {
  auto cfg = ParseRuleConfig(std::string("mark: taint\n") + kRules, "rule.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  cfg_ = *cfg;
  opts_.mark = cfg_.mark;
  Start();
  auto taint_value = [&] {
    const NodeInfo n = api_.nodes()["node-1"];
    for (const Taint& t : n.taints)
      if (t.key == "dynamic-scheduler.io/pressure") return t.value + ":" + t.effect;
    return std::string();
  };
  Cycle(75);
  EXPECT_EQ(taint_value(), "warm:PreferNoSchedule");
  Cycle(95);
  EXPECT_EQ(taint_value(), "presure:PreferNoSchedule");
  EXPECT_EQ(api_.nodes()["node-1"].taints.size(), 1u) << "replaced in its place, not added";
  Cycle(75);
  EXPECT_EQ(taint_value(), "warm:PreferNoSchedule");
  Cycle(50);
  EXPECT_EQ(taint_value(), "");
  EXPECT_EQ(Value("node-1"), "") << "taint mode sets no label";
}

// A level shares the query of the rule it was made from, not of an earlier rule that only asks
// the same query: here gpu-cpu's values are masked to the GPU pool, and node-1 is not in it.
TEST_F(GradedReconcilerTest, ALevelTakesItsOwnRulesAnswerNotAnotherPoolsWithTheSameQuery) {
  auto cfg = ParseRuleConfig(R"(levels: [{name: warm}, {name: hot}]
maxMarkedFraction: 1
rules:
  - {name: gpu-cpu, query: cpu_pct, threshold: 95, nodeSelector: "pool=gpu"}
  - name: cpu
    query: cpu_pct
    threshold: 90
    clearThreshold: 80
    levels: {warm: {threshold: 70, clearThreshold: 60}}
)",
                             "rule.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  cfg_ = *cfg;
  Start();
  Cycle(75);
  EXPECT_EQ(Value("node-1"), "warm") << "cpu@warm judged node-1 by cpu's answer";
  EXPECT_EQ(prom_.calls("cpu_pct"), 2) << "gpu-cpu and cpu ask; cpu@warm shares cpu's";
}

}  // namespace
}  // namespace ds
