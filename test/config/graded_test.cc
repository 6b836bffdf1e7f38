// Graded marks (rules/mark.h): the levels in rule.yaml, the mark at each level, which level a node
// is at, and a node's path none -> warm -> hot -> warm -> none through the decider and planner.
#include <gtest/gtest.h>

#include <cmath>

#include "config/rule_config.h"
#include "rules/decider.h"
#include "rules/mark.h"
#include "rules/ownership.h"
#include "rules/planner.h"

namespace ds {
namespace {

constexpr const char* kGraded = R"(levels:
  - {name: warm, value: warm}
  - {name: hot}
rules:
  - name: cpu
    query: cpu_pct
    threshold: 90
    clearThreshold: 80
    resource: cpu
    levels: {warm: {threshold: 70, clearThreshold: 60}}
  - {name: mem, query: mem_pct, threshold: 95}
)";

TEST(GradedConfig, ARuleLoadsAsOneRulePerLevel) {
  auto cfg = ParseRuleConfig(kGraded, "rule.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  ASSERT_EQ(cfg->mark.levels.size(), 2u);
  EXPECT_EQ(cfg->mark.levels[0].name, "warm");
  EXPECT_EQ(cfg->mark.levels[0].value, "warm");
  EXPECT_EQ(cfg->mark.levels[1].name, "hot");
  EXPECT_EQ(cfg->mark.levels[1].value, "presure") << "the hottest level is the mark itself";
  ASSERT_EQ(cfg->rules.size(), 3u);
  EXPECT_EQ(cfg->rules[0].name, "cpu");
  EXPECT_EQ(cfg->rules[0].below_hottest, 0u);
  EXPECT_EQ(cfg->rules[0].threshold, 90);
  EXPECT_EQ(cfg->rules[0].resource, Rule::Resource::kCpu);
  const Rule& warm = cfg->rules[1];
  EXPECT_EQ(warm.name, "cpu@warm");
  EXPECT_EQ(warm.below_hottest, 1u);
  EXPECT_EQ(warm.query, "cpu_pct");
  EXPECT_EQ(warm.threshold, 70);
  EXPECT_EQ(warm.clear_threshold, 60);
  EXPECT_EQ(warm.resource, Rule::Resource::kNone) << "the rebalancer acts on the hottest only";
  EXPECT_EQ(cfg->rules[2].name, "mem");
  EXPECT_EQ(cfg->rules[2].below_hottest, 0u) << "a rule without levels marks the hottest";
  EXPECT_EQ(cfg->mark.MarkedSelector(), "status in (warm,presure)");
}

TEST(GradedConfig, WithoutLevelsNothingChanges) {
  auto cfg = ParseRuleConfig("rules: [{name: cpu, query: q, threshold: 9}]\n", "r.yaml");
  ASSERT_TRUE(cfg.ok());
  EXPECT_TRUE(cfg->mark.levels.empty());
  EXPECT_EQ(cfg->mark.LevelCount(), 1u);
  EXPECT_EQ(cfg->mark.MarkedSelector(), "status=presure");
  EXPECT_EQ(cfg->mark.Below(0).value, "presure");
}

TEST(GradedConfig, TheHottestValueAndDefaults) {
  auto cfg = ParseRuleConfig(
      "levels: [{name: warm}, {name: hot, value: busy}]\n"
      "rules: [{name: c, query: q, threshold: 9}]\n",
      "r.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->mark.value, "busy") << "the hottest level's value is the mark's";
  EXPECT_EQ(cfg->mark.levels[0].value, "warm") << "a value defaults to the level's name";
}

TEST(GradedConfig, ErrorsNameFileLineColumnAndField) {
  struct Case {
    const char* yaml;
    const char* error;
  } cases[] = {
      {"levels: [{name: hot}]\nrules: [{name: c, query: q, threshold: 9}]\n",
       "r.yaml:1:9: levels: must be a list of at least two levels"},
      {"levels: [{name: a}, {name: a}]\nrules: [{name: c, query: q, threshold: 9}]\n",
       "r.yaml:1:28: levels[1].name: duplicate level name \"a\""},
      {"levels: [{name: a, value: x}, {name: b, value: x}]\n"
       "rules: [{name: c, query: q, threshold: 9}]\n",
       "r.yaml:1:48: levels[1].value: \"x\" is level a's value too"},
      {"levels: [{name: a, value: \"no way\"}, {name: b}]\n"
       "rules: [{name: c, query: q, threshold: 9}]\n",
       "r.yaml:1:27: levels[0].value:"},
      {"label: {value: presure}\nlevels: [{name: a}, {name: b, value: hot}]\n"
       "rules: [{name: c, query: q, threshold: 9}]\n",
       "r.yaml:2:38: levels[1].value: the hottest level is the mark itself"},
      {"levels: [{name: a}, {name: b}]\n"
       "rules: [{name: c, query: q, threshold: 9, levels: {warm: {threshold: 5}}}]\n",
       "r.yaml:2:52: rule \"c\": levels.warm: unknown level (levels: a, b)"},
      {"levels: [{name: a}, {name: b}]\n"
       "rules: [{name: c, query: q, threshold: 9, levels: {b: {threshold: 5}}}]\n",
       "r.yaml:2:52: rule \"c\": levels.b: the hottest level's thresholds are the rule's own"},
      {"levels: [{name: a}, {name: b}]\n"
       "rules: [{name: c, query: q, threshold: 9, levels: {a: {threshold: 9}}}]\n",
       "r.yaml:2:67: rule \"c\": levels.a.threshold: must be below level b's threshold (9)"},
      {"levels: [{name: a}, {name: b}]\n"
       "rules: [{name: c, query: q, operator: \"<\", threshold: 9, levels: {a: {threshold: 5}}}]\n",
       "r.yaml:2:82: rule \"c\": levels.a.threshold: must be above level b's threshold (9)"},
      {"levels: [{name: a}, {name: b}, {name: c}]\n"
       "rules: [{name: r, query: q, threshold: 9, levels: {a: {threshold: 7}, b: {threshold: "
       "6}}}]\n",
       "r.yaml:2:67: rule \"r\": levels.a.threshold: must be below level b's threshold (6)"},
      {"levels: [{name: a}, {name: b}]\n"
       "rules: [{name: c, query: q, threshold: 9, levels: {a: {threshold: 5, clearThreshold: "
       "6}}}]\n",
       "r.yaml:2:86: rule \"c\": levels.a.clearThreshold: must be <= the level's threshold"},
      {"levels: [{name: a}, {name: b}]\n"
       "rules: [{name: c, query: q, threshold: 9, levels: {a: {threshold: 5, foo: 1}}}]\n",
       "r.yaml:2:70: rule \"c\": levels.a.foo: unknown field"},
      {"rules: [{name: c, query: q, threshold: 9, levels: {a: {threshold: 5}}}]\n",
       "r.yaml:1:51: rule \"c\": levels: needs the top-level levels list"},
      {"levels: [{name: a}, {name: b}]\n"
       "rules: [{name: c@a, query: q, threshold: 1}, "
       "{name: c, query: q, threshold: 9, levels: {a: {threshold: 5}}}]\n",
       "r.yaml:2:89: rule \"c\": levels.a: rule name \"c@a\" is taken by another rule"},
      {"mark: taint\ntaint: {value: warm}\nlevels: [{name: warm}, {name: hot}]\n"
       "rules: [{name: c, query: q, threshold: 9}]\n",
       "r.yaml:3:10: levels[0].value: \"warm\" is the taint's value"},
  };
  for (const Case& c : cases) {
    auto cfg = ParseRuleConfig(c.yaml, "r.yaml");
    ASSERT_FALSE(cfg.ok()) << c.yaml;
    EXPECT_EQ(cfg.status().message().rfind(c.error, 0), 0u)
        << c.yaml << "\n got: " << cfg.status().message() << "\nwant: " << c.error;
  }
}

TEST(GradedMark, EachLevelIsTheMarkWithItsValue) {
  Mark mark;
  mark.mode = Mark::Mode::kBoth;
  mark.levels = {{"warm", "warm"}, {"hot", "presure"}};
  EXPECT_EQ(mark.Below(0).ToString(),
            "status=presure and taint dynamic-scheduler.io/pressure="
            "presure:PreferNoSchedule");
  EXPECT_EQ(mark.Below(1).ToString(),
            "status=warm and taint dynamic-scheduler.io/pressure=warm:PreferNoSchedule");
  EXPECT_EQ(mark.LevelName(0), "hot");
  EXPECT_EQ(mark.LevelName(1), "warm");
  // A warm node moving hot: its taint takes the new value in its place.
  const std::vector<Taint> warm_taints = {{"other", "x", "NoSchedule"}, mark.Below(1).taint};
  const std::vector<Taint> hot_taints = mark.Below(0).WithTaint(warm_taints);
  ASSERT_EQ(hot_taints.size(), 2u);
  EXPECT_EQ(hot_taints[1].value, "presure");
  EXPECT_EQ(mark.LevelOn({{"status", "warm"}}, {}), 1u);
  EXPECT_EQ(mark.LevelOn({{"status", "presure"}}, {}), 0u);
  EXPECT_FALSE(mark.LevelOn({{"status", "maintenance"}}, {}).has_value());
  EXPECT_TRUE(mark.AnyLevelIsOn({{"status", "warm"}}, warm_taints));
  EXPECT_FALSE(mark.AnyLevelIsOn({{"status", "warm"}}, hot_taints)) << "taint of another level";
}

TEST(GradedOwnership, EachLevelValueIsOursAndTheRecordNamesIt) {
  Mark mark;
  mark.levels = {{"warm", "warm"}, {"hot", "presure"}};
  for (size_t below : {0u, 1u}) {
    const Mark m = mark.Below(below);
    const Labels labels = {{"status", m.value}};
    Ownership o;
    SetRecordedMark(m, &o);
    EXPECT_EQ(RecordedLevel(o, mark), below);
    EXPECT_EQ(NodeMarkLevel(mark, labels, {}, &o), below);
    EXPECT_EQ(NodeMarkLevel(mark, labels, {}, nullptr), below) << "the label alone says it";
    EXPECT_TRUE(OwnedMarkParts(m, labels, {}, &o).label);
    // The label removed by hand: the record still says which level's record it is.
    EXPECT_EQ(NodeMarkLevel(mark, {}, {}, &o), below);
  }
  Ownership other;
  other.label_key = "status";
  other.label_value = "maintenance";
  EXPECT_FALSE(RecordedLevel(other, mark).has_value());
  EXPECT_EQ(NodeMarkLevel(mark, {{"status", "maintenance"}}, {}, &other), 0u);
}

// The node's path through the levels, with hysteresis per level: the decider over the rules the
// config loads, the planner over what the node carries after each write.
TEST(GradedPlanner, NoneWarmHotWarmNoneWithHysteresisPerLevel) {
  auto cfg = ParseRuleConfig(kGraded, "rule.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  Decider decider(cfg->rules, std::chrono::seconds(30));
  TimePoint now{};
  PlanNode node{"n1"};
  std::vector<size_t> recorded;
  struct Step {
    double cpu;
    std::optional<ChangeKind> change;
    size_t level;  // below the hottest, after the step (when marked)
    bool marked;
  } steps[] = {
      {50, std::nullopt, 0, false},         // cool
      {75, ChangeKind::kMark, 1, true},     // past warm's 70: warm
      {65, std::nullopt, 1, true},          // in warm's band (60..70): stays warm
      {95, ChangeKind::kMark, 0, true},     // past hot's 90: one write to hot
      {85, std::nullopt, 0, true},          // in hot's band (80..90): stays hot
      {79, ChangeKind::kMark, 1, true},     // hot cleared at 80, warm still holds: back to warm
      {61, std::nullopt, 1, true},          // warm's band
      {60, ChangeKind::kUnmark, 0, false},  // warm cleared: unmarked
  };
  for (const Step& s : steps) {
    now += std::chrono::seconds(10);
    const std::vector<double> cpu = {s.cpu}, mem = {10};
    NodeInput in{"n1", node.marked, nullptr};
    auto d = decider.Decide(now, {in}, {{false, &cpu}, {false, &cpu}, {false, &mem}});
    node.recorded = node.marked ? &recorded : nullptr;
    auto changes = PlanChanges({node}, d);
    // A record write alone (the rules that hold changed within a level) is no level change.
    std::optional<ChangeKind> got;
    for (const LabelChange& c : changes)
      if (c.kind != ChangeKind::kRecord) got = c.kind;
    EXPECT_EQ(got, s.change) << "cpu " << s.cpu;
    // What the write leaves on the node.
    if (got == ChangeKind::kMark) {
      node.marked = true;
      node.below_hottest = d[0].below_hottest;
    } else if (got == ChangeKind::kUnmark) {
      node.marked = false;
      node.below_hottest = 0;
    }
    if (node.marked) recorded = HoldingRules(d[0]);
    EXPECT_EQ(node.marked, s.marked) << "cpu " << s.cpu;
    if (s.marked) {
      EXPECT_EQ(node.below_hottest, s.level) << "cpu " << s.cpu;
    }
  }
}

TEST(GradedPlanner, AMarkedNodeAtAnotherLevelMovesInOneMarkWrite) {
  PlanNode warm{"n"};
  warm.marked = true;
  warm.below_hottest = 1;
  std::vector<size_t> rules = {0, 1};
  warm.recorded = &rules;
  NodeDecision hot;
  hot.verdict = Verdict::kHot;
  hot.holds = {Hold{0, 95, {}, false}, Hold{1, 95, {}, false}};
  hot.below_hottest = 0;
  auto p = PlanChanges({warm}, {hot});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].kind, ChangeKind::kMark);
  hot.below_hottest = 1;  // the same level: the record is already true, nothing to write
  EXPECT_TRUE(PlanChanges({warm}, {hot}).empty());
}

}  // namespace
}  // namespace ds
