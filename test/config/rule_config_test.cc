#include "config/rule_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

namespace ds {
namespace {

TEST(RuleConfig, LegacyFormatLoadsUnchanged) {
  const char* yaml = R"(PromJob:
  Name: "k8s-nodes"
Rulename:
  Node_cpu1:
    Promsql: "(1-(sum(increase(node_cpu_seconds_total{mode='idle'}[1m]))by(instance))/(sum(increase(node_cpu_seconds_total[1m]))by(instance)))*100"
    Threshold: 70
  Node_mem:
    Promsql: "k8_node_cgroups_mem_available"
    Threshold: 90
)";
  auto cfg = ParseRuleConfig(yaml, "rule.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_TRUE(cfg->legacy);
  EXPECT_EQ(cfg->job_name, "k8s-nodes");
  ASSERT_EQ(cfg->rules.size(), 2u);
  EXPECT_EQ(cfg->rules[0].name, "Node_cpu1");
  EXPECT_NE(cfg->rules[0].query.find("node_cpu_seconds_total{mode='idle'}"), std::string::npos);
  EXPECT_EQ(cfg->rules[0].threshold, 70);
  EXPECT_EQ(cfg->rules[0].clear_threshold, 70);
  EXPECT_TRUE(cfg->warnings.empty());
  EXPECT_EQ(cfg->rules[0].op, Comparison::kGreater);
  EXPECT_EQ(cfg->mark.key, "status");
  EXPECT_EQ(cfg->mark.value, "presure");
  EXPECT_EQ(cfg->node_selector, kDefaultNodeSelector);
}

TEST(RuleConfig, CurrentFormatAllFields) {
  const char* yaml = R"(prometheus:
  url: http://prom:9090
  timeout: 3s
interval: 15s
missingDataGrace: 1m
label: {key: example.com/pressure, value: "true"}
nodeSelector: "pool=general"
rules:
  - name: mem_available
    query: k8s_node_memory_available_bytes
    operator: "<"
    threshold: 500000000
    clearThreshold: 800000000
    for: 30s
    nodeLabel: ip
)";
  auto cfg = ParseRuleConfig(yaml, "r.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_FALSE(cfg->legacy);
  EXPECT_EQ(cfg->prometheus_url, "http://prom:9090");
  EXPECT_EQ(cfg->query_timeout_seconds, 3);
  EXPECT_EQ(cfg->interval_seconds, 15);
  EXPECT_EQ(cfg->missing_data_grace_seconds, 60);
  EXPECT_EQ(cfg->mark.key, "example.com/pressure");
  EXPECT_EQ(cfg->mark.value, "true");
  EXPECT_EQ(cfg->node_selector, "pool=general");
  const Rule& r = cfg->rules.at(0);
  EXPECT_EQ(r.op, Comparison::kLess);
  EXPECT_EQ(r.threshold, 5e8);
  EXPECT_EQ(r.clear_threshold, 8e8);
  EXPECT_EQ(r.for_seconds, 30);
  EXPECT_EQ(r.node_label, "ip");
  EXPECT_EQ(r.max_age_seconds, 0) << "no maxAge: a value counts however old it is";
  EXPECT_TRUE(r.age_query.empty());
}

TEST(RuleConfig, MaxAgeAndAgeQuery) {
  auto cfg = ParseRuleConfig(R"(rules:
  - name: memory_available
    query: k8s_node_memory_available_bytes
    operator: "<"
    threshold: 500000000
    maxAge: 2m30s
    ageQuery: push_time_seconds{job="CollectK8sCgroupsMem"}
  - {name: cpu, query: timestamp(up), threshold: 80, maxAge: 90}
)",
                             "r.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->rules[0].max_age_seconds, 150);
  EXPECT_EQ(cfg->rules[0].age_query, "push_time_seconds{job=\"CollectK8sCgroupsMem\"}");
  EXPECT_EQ(cfg->rules[1].max_age_seconds, 90) << "a bare number is seconds";
  EXPECT_TRUE(cfg->rules[1].age_query.empty()) << "the samples' own timestamps then";
}

TEST(RuleConfig, NodePoolsAndRuleIntervals) {
  auto cfg = ParseRuleConfig(R"y(interval: 10s
rules:
  - {name: gpu, query: up, threshold: 50, nodeSelector: "pool=gpu", interval: 1m}
  - {name: general, query: up, threshold: 80, nodeSelector: "pool in (general, batch)"}
  - {name: all, query: up, threshold: 90}
)y",
                             "r.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->rules[0].node_selector, "pool=gpu");
  EXPECT_EQ(cfg->rules[0].interval_seconds, 60);
  EXPECT_EQ(cfg->rules[1].node_selector, "pool in (general, batch)");
  EXPECT_EQ(cfg->rules[1].interval_seconds, 0) << "every cycle";
  EXPECT_TRUE(cfg->rules[2].node_selector.empty()) << "every managed node";
  // A rule differing only in its pool or its interval is a changed rule (a reload restarts it).
  Rule other = cfg->rules[0];
  other.node_selector = "pool=tpu";
  EXPECT_FALSE(other == cfg->rules[0]);
  other = cfg->rules[0];
  other.interval_seconds = 120;
  EXPECT_FALSE(other == cfg->rules[0]);
}

// Balance: a relative rule with a resource drives relief (rebalance/pool_mean.h), bytes
// available too (the mean less the offset), and the target and underused bounds, which are
// checked against absolute clear thresholds, are not checked against its moving one.
TEST(RuleConfig, RelativeRulesBalance) {
  auto cfg = ParseRuleConfig(R"(rules:
  - {name: skew, query: cpu_pct, threshold: 30, clearThreshold: 15, relativeTo: mean, resource: cpu}
  - name: avail
    query: mem_avail
    operator: "<"
    threshold: 4294967296
    clearThreshold: 2147483648
    relativeTo: mean
    resource: memory
  - {name: mem, query: mem_pct, threshold: 85, clearThreshold: 75, resource: memory}
rebalance:
  target: 20
  underused: {cpuBelow: 16, memoryBelow: 20, for: 1h}
)",
                             "r.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->rules[0].resource, Rule::Resource::kCpu);
  EXPECT_EQ(cfg->rules[0].relative_to, Rule::Relative::kMean);
  EXPECT_TRUE(cfg->rules[1].AvailableBytes());
  EXPECT_EQ(cfg->rules[1].relative_to, Rule::Relative::kMean);
  // The absolute rule beside them is still checked: the target under its clear threshold.
  auto bad = ParseRuleConfig(R"(rules:
  - {name: skew, query: cpu_pct, threshold: 30, clearThreshold: 15, relativeTo: mean, resource: cpu}
  - {name: mem, query: mem_pct, threshold: 85, clearThreshold: 75, resource: memory}
rebalance: {target: 80}
)",
                             "r.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("clear threshold of rule mem (75)"), std::string::npos)
      << bad.status().message();
  // An offset of 0 would keep half the pool hot for ever.
  auto zero = ParseRuleConfig(R"(rules:
  - {name: skew, query: cpu_pct, threshold: 0, relativeTo: mean, resource: cpu}
rebalance: {}
)",
                              "r.yaml");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("rule skew balances"), std::string::npos)
      << zero.status().message();
}

TEST(RuleConfig, RelativeThresholds) {
  auto cfg = ParseRuleConfig(R"(rules:
  - {name: cpu, query: up, threshold: 20, clearThreshold: 10, relativeTo: mean}
  - name: mem
    query: avail
    operator: "<"
    threshold: 200
    clearThreshold: 100
    relativeTo: mean
    minNodes: 5
  - {name: abs, query: up, threshold: 80}
)",
                             "r.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->rules[0].relative_to, Rule::Relative::kMean);
  EXPECT_EQ(cfg->rules[0].threshold, 20);
  EXPECT_EQ(cfg->rules[0].clear_threshold, 10);
  EXPECT_EQ(cfg->rules[0].min_nodes, 3u) << "the default";
  EXPECT_EQ(cfg->rules[1].relative_to, Rule::Relative::kMean);
  EXPECT_EQ(cfg->rules[1].clear_threshold, 100) << "'<' offsets: the clearing one is smaller";
  EXPECT_EQ(cfg->rules[1].min_nodes, 5u);
  EXPECT_EQ(cfg->rules[2].relative_to, Rule::Relative::kNone);
  // A reload that turns a rule relative is a changed rule (it starts afresh).
  EXPECT_FALSE(cfg->rules[2] == cfg->rules[0]);
  Rule a = cfg->rules[2], b = a;
  b.relative_to = Rule::Relative::kMean;
  EXPECT_FALSE(a == b);
  a = b;
  b.min_nodes = 4;
  EXPECT_FALSE(a == b);
}

// One valid rule, before a section under test.
#define R1 "rules:\n  - {name: cpu, query: up, threshold: 80}\n"
// One rule the rebalancer can relieve: its value is a percent of allocatable CPU.
#define R1C "rules:\n  - {name: cpu, query: up, threshold: 80, resource: cpu}\n"

TEST(RuleConfig, TheMarkIsTheLabelUnlessTaintModeIsAsked) {
  auto cfg = ParseRuleConfig(R1, "rules.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->mark.mode, Mark::Mode::kLabel);
  cfg = ParseRuleConfig(R1 "mark: taint\n", "rules.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->mark.mode, Mark::Mode::kTaint);
  EXPECT_EQ(cfg->mark.taint,
            (Taint{"dynamic-scheduler.io/pressure", "presure", "PreferNoSchedule"}));
  cfg = ParseRuleConfig(R1
                        "mark: both\ntaint: {key: example.com/hot, value: '', effect: "
                        "PreferNoSchedule}\n",
                        "rules.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->mark.mode, Mark::Mode::kBoth);
  EXPECT_EQ(cfg->mark.taint, (Taint{"example.com/hot", "", "PreferNoSchedule"}));
  EXPECT_EQ(cfg->mark.key, "status");
}

// What is already moving (issue 38): the settle time (default: from each rule's query) and
// whether memory relief may move pods within their requests (default: no).
TEST(RuleConfig, SettleAndEvictWithinRequests) {
  auto cfg = ParseRuleConfig(R1C "rebalance: {}\n", "rules.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_LT(cfg->rebalance.settle_seconds, 0) << "derived from the rules' queries";
  EXPECT_FALSE(cfg->rebalance.evict_within_requests);
  cfg =
      ParseRuleConfig(R1C "rebalance: {settle: 1m10s, evictWithinRequests: true}\n", "rules.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->rebalance.settle_seconds, 70);
  EXPECT_TRUE(cfg->rebalance.evict_within_requests);
}

TEST(RuleConfig, TheHerdCapDefaultsToHalfTheNodes) {
  auto cfg = ParseRuleConfig(R1, "r.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->max_marked_fraction, 0.5);
  EXPECT_EQ(cfg->max_marked, 0u);
  cfg = ParseRuleConfig(R1 "maxMarkedFraction: 0.3\nmaxMarked: 12\n", "r.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->max_marked_fraction, 0.3);
  EXPECT_EQ(cfg->max_marked, 12u);
}

TEST(RuleConfig, MarksAreHeldThroughAnOutageUnlessReleaseIsAsked) {
  auto cfg = ParseRuleConfig(R1, "r.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_FALSE(cfg->release_on_outage);
  cfg = ParseRuleConfig(R1 "onPrometheusDown: release\n", "r.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_TRUE(cfg->release_on_outage);
  EXPECT_EQ(cfg->release_after_seconds, 600);
  cfg = ParseRuleConfig(R1 "onPrometheusDown: release\nreleaseAfter: 90s\n", "r.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->release_after_seconds, 90);
}

// The original ignored keys it did not know (Go's YAML decoding): such files still load, with a
// warning naming each key; a key of the current format is an error (a file mixing the two).
TEST(RuleConfig, LegacyUnknownKeysAreIgnoredWithAWarning) {
  auto cfg = ParseRuleConfig(
      "PromJob: {Name: k8s, Port: 9090}\nRulename:\n  cpu:\n    Promsql: up\n    Threshold: 5\n"
      "    Op: '<'\nVersion: 2\n",
      "rule.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  ASSERT_EQ(cfg->rules.size(), 1u);
  EXPECT_EQ(cfg->rules[0].op, Comparison::kGreater) << "Op was not a key of the original";
  EXPECT_EQ(
      cfg->warnings,
      (std::vector<std::string>{
          "rule.yaml:7:1: Version: unknown field, ignored (as the original project did)",
          "rule.yaml:1:22: PromJob.Port: unknown field, ignored (as the original project did)",
          "rule.yaml:6:5: Rulename.cpu.Op: unknown field, ignored (as the original project did)"}));
}

// The current format's sections are checked in one order, later ones reading what earlier ones
// set (the taint the mark, the rules the intervals, the rebalancer the rules; each section is
// parsed in its own file, config/rule_config_parse.h): with errors in several sections, the one
// reported is the first in that order, wherever the sections stand in the file.
TEST(RuleConfig, SectionsReportTheirErrorsInOrder) {
  // In that order: a section's bad line, and the error it gives.
  const std::vector<std::pair<std::string, std::string>> sections = {
      {"prometheus: {timeout: 0s}", ": prometheus.timeout: must be > 0"},
      {"interval: soon", ": interval: \"soon\" is not a duration"},
      {"label: {key: 'bad key'}", ": label.key: "},
      {"mark: taints", ": mark: \"taints\" is not label, taint or both"},
      {"taint: {key: a/b}", ": taint: only with mark: taint or both"},
      {"nodeSelector: 'a in (b'", ": nodeSelector: "},
      {"maxMarkedFraction: 2", ": maxMarkedFraction: must be a share"},
      {"onPrometheusDown: drop", ": onPrometheusDown: \"drop\" is neither hold nor release"},
      {"levels: [{name: hot}]", ": levels: must be a list of at least two levels"},
      {"rules: []", ": rules: must be a non-empty list of rules"},
      {"rebalance: {afterr: 1m}", ": rebalance.afterr: unknown field"},
  };
  for (size_t first = 0; first < sections.size(); ++first) {
    // The bad sections from `first` on, in the file in reverse order; valid rules once theirs
    // is left out, so that the rebalancer's section is reached.
    std::string yaml;
    for (size_t k = sections.size(); k-- > first;) yaml += sections[k].first + "\n";
    if (first == sections.size() - 1) yaml += R1C;
    auto cfg = ParseRuleConfig(yaml, "rules.yaml");
    ASSERT_FALSE(cfg.ok()) << yaml;
    EXPECT_NE(cfg.status().message().find(sections[first].second), std::string::npos)
        << yaml << cfg.status().message();
  }
}

struct BadCase {
  const char* name;
  const char* yaml;
  const char* want;  // substring of the error
};

class RuleConfigErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(RuleConfigErrors, NamesFileFieldAndLine) {
  auto cfg = ParseRuleConfig(GetParam().yaml, "rules.yaml");
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(cfg.status().message().find(GetParam().want), std::string::npos)
      << cfg.status().message();
  EXPECT_EQ(cfg.status().message().rfind("rules.yaml", 0), 0u) << cfg.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Table, RuleConfigErrors,
    ::testing::Values(
        BadCase{"empty", "", "empty rule file"},
        BadCase{"not_yaml", "rules: [a, b\n", "not valid YAML"},
        BadCase{"not_mapping", "- a\n- b\n", "top level must be a mapping"},
        BadCase{"unknown_top", "rules: []\nfoo: 1\n", "foo: unknown field"},
        BadCase{"no_rules", "interval: 5s\n", "rules: missing"},
        BadCase{"herd_fraction_zero", R1 "maxMarkedFraction: 0\n",
                "rules.yaml:3:20: maxMarkedFraction: must be a share of the managed nodes"},
        BadCase{"herd_fraction_over_one", R1 "maxMarkedFraction: 1.5\n",
                "maxMarkedFraction: must be a share"},
        BadCase{"herd_fraction_text", R1 "maxMarkedFraction: half\n",
                "maxMarkedFraction: \"half\" is not a number"},
        BadCase{"outage_action", R1 "onPrometheusDown: drop\n",
                "rules.yaml:3:19: onPrometheusDown: \"drop\" is neither hold nor release"},
        BadCase{"outage_after_with_hold", R1 "releaseAfter: 5m\n",
                "rules.yaml:3:15: releaseAfter: only with onPrometheusDown: release"},
        BadCase{"outage_after_zero", R1 "onPrometheusDown: release\nreleaseAfter: 0s\n",
                "releaseAfter: must be > 0"},
        BadCase{"outage_after_bad", R1 "onPrometheusDown: release\nreleaseAfter: soon\n",
                "releaseAfter:"},
        BadCase{"herd_max_zero", R1 "maxMarked: 0\n",
                "rules.yaml:3:12: maxMarked: must be at least 1"},
        BadCase{"herd_max_fraction", R1 "maxMarked: 2.5\n", "maxMarked: must be a whole number"},
        BadCase{"pool_selector_bad",
                "rules:\n  - {name: a, query: up, threshold: 1, nodeSelector: 'a in b'}\n",
                "rules.yaml:2:54: rule \"a\": nodeSelector:"},
        BadCase{"pool_selector_empty",
                "rules:\n  - {name: a, query: up, threshold: 1, nodeSelector: ''}\n",
                "rules.yaml:2:54: rule \"a\": nodeSelector: must not be empty"},
        BadCase{"pool_selector_list",
                "rules:\n  - {name: a, query: up, threshold: 1, nodeSelector: [a]}\n",
                "rules.yaml:2:54: rule \"a\": nodeSelector: must be a string"},
        BadCase{"rule_interval_zero",
                "rules:\n  - {name: a, query: up, threshold: 1, interval: 0s}\n",
                "rules.yaml:2:50: rule \"a\": interval: must be > 0"},
        BadCase{"rule_interval_bad",
                "rules:\n  - {name: a, query: up, threshold: 1, interval: often}\n",
                "rules.yaml:2:50: rule \"a\": interval: \"often\""},
        BadCase{"rule_interval_short",
                "interval: 10s\nrules:\n  - {name: a, query: up, threshold: 1, interval: 5s}\n",
                "rules.yaml:3:50: rule \"a\": interval: must be at least the evaluation interval "
                "(10 s)"},
        BadCase{
            "rule_interval_grace",
            "missingDataGrace: 1m\nrules:\n  - {name: a, query: up, threshold: 1, interval: 30s}\n",
            "rules.yaml:3:50: rule \"a\": interval: at most a third of missingDataGrace (60 s)"},
        BadCase{"empty_rules", "rules: []\n", "non-empty list"},
        BadCase{"missing_query", "rules:\n  - name: a\n    threshold: 1\n",
                "rules.yaml:2:5: rule \"a\": query: missing query"},
        BadCase{"empty_query", "rules:\n  - {name: a, query: '  ', threshold: 1}\n", "empty query"},
        BadCase{"nonnumeric", "rules:\n  - name: a\n    query: up\n    threshold: high\n",
                "rules.yaml:4:16: rule \"a\": threshold: \"high\" is not a number"},
        BadCase{"nan", "rules:\n  - {name: a, query: up, threshold: .nan}\n", "not a number"},
        BadCase{"inf", "rules:\n  - {name: a, query: up, threshold: 1e999}\n",
                "not a finite number"},
        BadCase{"relative_unknown_mode",
                "rules:\n  - {name: a, query: up, threshold: 5, relativeTo: median}\n",
                "rules.yaml:2:52: rule \"a\": relativeTo: unknown \"median\" (use mean"},
        BadCase{"relative_negative_offset",
                "rules:\n  - {name: a, query: up, threshold: -5, relativeTo: mean}\n",
                "rules.yaml:2:37: rule \"a\": threshold: must be >= 0 with relativeTo: mean"},
        BadCase{"relative_negative_clear",
                "rules:\n  - name: a\n    query: up\n    operator: '<'\n    threshold: 5\n"
                "    clearThreshold: -1\n    relativeTo: mean\n",
                "rules.yaml:6:21: rule \"a\": clearThreshold: must be >= 0 with relativeTo"},
        BadCase{"relative_clear_past_offset",
                "rules:\n  - {name: a, query: up, operator: '<', threshold: 5, clearThreshold: 7, "
                "relativeTo: mean}\n",
                "clearThreshold: must be <= threshold with relativeTo: mean"},
        BadCase{"min_nodes_without_relative",
                "rules:\n  - {name: a, query: up, threshold: 5, minNodes: 4}\n",
                "rules.yaml:2:50: rule \"a\": minNodes: only with relativeTo: mean"},
        BadCase{"min_nodes_one",
                "rules:\n  - {name: a, query: up, threshold: 5, relativeTo: mean, minNodes: 1}\n",
                "minNodes: must be a whole number >= 2"},
        BadCase{"min_nodes_fraction",
                "rules:\n  - {name: a, query: up, threshold: 5, relativeTo: mean, minNodes: 2.5}\n",
                "minNodes: must be a whole number >= 2"},
        BadCase{"clear_wrong_side_gt",
                "rules:\n  - {name: a, query: up, threshold: 5, clearThreshold: 7}\n",
                "clearThreshold: must be <= threshold"},
        BadCase{
            "clear_wrong_side_lt",
            "rules:\n  - {name: a, query: up, operator: '<', threshold: 5, clearThreshold: 3}\n",
            "clearThreshold: must be >= threshold"},
        BadCase{"bad_operator", "rules:\n  - {name: a, query: up, operator: '>=', threshold: 5}\n",
                "unknown operator \">=\""},
        BadCase{"unknown_rule_field",
                "rules:\n  - {name: a, query: up, threshold: 5, treshold: 4}\n",
                "rules[0].treshold: unknown field"},
        BadCase{"duplicate_names",
                "rules:\n  - {name: a, query: up, threshold: 5}\n  - {name: a, query: up, "
                "threshold: 6}\n",
                "duplicate rule name"},
        BadCase{"bad_duration", "rules:\n  - {name: a, query: up, threshold: 5, for: 5 minutes}\n",
                "for:"},
        BadCase{"negative_interval",
                "interval: -5\nrules:\n  - {name: a, query: up, threshold: 5}\n", "interval"},
        BadCase{"mark_mode", R1 "mark: taints\n",
                "rules.yaml:3:7: mark: \"taints\" is not label, taint or both"},
        BadCase{"taint_without_mode", R1 "taint: {key: a/b}\n",
                "rules.yaml:3:8: taint: only with mark: taint or both"},
        BadCase{"taint_bad_key", R1 "mark: taint\ntaint: {key: 'bad key'}\n",
                "rules.yaml:4:14: taint.key:"},
        BadCase{"taint_bad_value", R1 "mark: both\ntaint:\n  value: 'x/y'\n",
                "rules.yaml:5:10: taint.value:"},
        BadCase{"taint_no_schedule", R1 "mark: taint\ntaint: {effect: NoSchedule}\n",
                "rules.yaml:4:17: taint.effect: \"NoSchedule\": only PreferNoSchedule"},
        BadCase{"taint_unknown", R1 "mark: taint\ntaint: {key: a, operator: Exists}\n",
                "taint.operator: unknown field"},
        BadCase{"bad_unit", "rules:\n  - {name: a, query: up, threshold: 5, unit: MiB}\n",
                "rules.yaml:2:46: rule \"a\": unit: \"MiB\" is not percent, bytes, cores, seconds "
                "or none"},
        BadCase{"taint_underused", R1C "mark: taint\nrebalance: {underused: {cpuBelow: 20}}\n",
                "rules.yaml:4:24: rebalance.underused: needs the label: mark: label or both"},
        BadCase{"bad_label_key",
                "label: {key: 'bad key'}\nrules:\n  - {name: a, query: up, threshold: 5}\n",
                "label.key"},
        BadCase{"bad_label_value",
                "label: {value: 'x/y'}\nrules:\n  - {name: a, query: up, threshold: 5}\n",
                "label.value"},
        BadCase{"bad_selector",
                "nodeSelector: 'a in (b'\nrules:\n  - {name: a, query: up, threshold: 5}\n",
                "nodeSelector"},
        BadCase{"legacy_missing_threshold", "Rulename:\n  cpu:\n    Promsql: up\n",
                "Rulename.cpu.Threshold: missing"},
        BadCase{"legacy_mixed", "Rulename:\n  cpu: {Promsql: up, Threshold: 5}\nrules: []\n",
                "rules: unknown field"},
        BadCase{"rebalance_unknown", R1 "rebalance:\n  afterr: 2m\n",
                "rules.yaml:4:3: rebalance.afterr: unknown field"},
        BadCase{"rebalance_bool", R1 "rebalance:\n  dryRun: yes please\n",
                "rules.yaml:4:11: rebalance.dryRun: must be true or false"},
        BadCase{"rebalance_settle", R1C "rebalance:\n  settle: soon\n", "rebalance.settle"},
        BadCase{"rebalance_within", R1C "rebalance:\n  evictWithinRequests: 1x\n",
                "rebalance.evictWithinRequests: must be true or false"},
        BadCase{"rebalance_count", R1 "rebalance:\n  limits: {perHour: 2.5}\n",
                "rebalance.limits.perHour: must be a whole number"},
        BadCase{"rebalance_negative", R1 "rebalance:\n  limits: {perCycle: -1}\n",
                "rebalance.limits.perCycle: must be a whole number"},
        BadCase{"rebalance_day",
                R1 "rebalance:\n  windows: [{days: [Mon, Funday], start: '22:00', end: "
                   "'06:00'}]\n",
                "rebalance.windows[0].days[1]: \"Funday\" is not one of"},
        BadCase{"rebalance_time", R1 "rebalance:\n  windows: [{start: '25:00', end: '06:00'}]\n",
                "rebalance.windows[0].start: must be a time of day"},
        BadCase{"rebalance_empty_window",
                R1 "rebalance:\n  windows: [{start: '06:00', end: '06:00'}]\n",
                "rebalance.windows[0].end: must differ from start"},
        BadCase{"rebalance_no_end", R1 "rebalance:\n  windows: [{start: '06:00'}]\n",
                "rebalance.windows[0]: needs start and end"},
        BadCase{"rebalance_zone", R1 "rebalance:\n  timeZone: ../../etc/passwd\n",
                "rebalance.timeZone: \"../../etc/passwd\" is not a time zone name"},
        BadCase{"rebalance_priority", R1 "rebalance:\n  priorityThreshold: 3000000000\n",
                "rebalance.priorityThreshold: must be a whole number within"},
        BadCase{"rebalance_selector", R1 "rebalance:\n  nodeSelector: 'a in (b'\n",
                "rebalance.nodeSelector"},
        BadCase{"rebalance_namespaces", R1 "rebalance:\n  namespaces: {exclude: kube-system}\n",
                "rebalance.namespaces.exclude: must be a list of strings"},
        BadCase{"rebalance_no_resource", R1 "rebalance: {}\n",
                "rules.yaml:3:12: rebalance: no rule says which resource it measures"},
        BadCase{"resource_unknown",
                "rules:\n  - {name: cpu, query: up, threshold: 80, resource: disk}\n",
                "rules.yaml:2:53: rule \"cpu\": resource: unknown resource \"disk\""},
        BadCase{"resource_cpu_needs_greater",
                "rules:\n  - {name: c, query: up, operator: '<', threshold: 1, resource: cpu}\n",
                "rules.yaml:2:65: rule \"c\": resource: needs operator \">\" (a percent in use); "
                "\"<\" only with resource: memory"},
        BadCase{"available_bytes_positive",
                "rules:\n  - {name: m, query: up, operator: '<', threshold: 0, resource: memory}\n",
                "rule \"m\": resource: with operator \"<\" the threshold is bytes available"},
        BadCase{
            "available_bytes_not_a_percent",
            "rules:\n  - {name: m, query: up, operator: '<', threshold: 10, resource: memory}\n",
            "rule \"m\": resource: with operator \"<\" the threshold is bytes available and must "
            "be at least 1Mi (1048576); for a percent of memory, use operator \">\""},
        BadCase{"available_bytes_unit",
                "rules:\n  - {name: m, query: up, operator: '<', threshold: 1e9, resource: memory, "
                "unit: percent}\n",
                "rule \"m\": unit: must be bytes for resource: memory with operator \"<\""},
        BadCase{
            "available_bytes_needs_usage",
            "rules:\n  - {name: m, query: up, operator: '<', threshold: 1e9, resource: memory}\n"
            "rebalance:\n  podUsage: {memory: ''}\n",
            "rules.yaml:4:22: rebalance.podUsage.memory: must not be empty: rule m"},
        BadCase{"relieve_after_needs_resource",
                "rules:\n  - {name: a, query: up, threshold: 5, relieveAfter: 0s}\n",
                "rules.yaml:2:54: rule \"a\": relieveAfter: needs resource: cpu or memory"},
        BadCase{
            "relieve_after_negative",
            "rules:\n  - {name: a, query: up, threshold: 5, resource: cpu, relieveAfter: -1s}\n",
            "rule \"a\": relieveAfter"},
        BadCase{"effect_window", R1C "rebalance: {effectWindow: 0s}\n",
                "rebalance.effectWindow: must be longer than 0 s"},
        BadCase{"keep_decisions_too_many", R1C "rebalance: {keepDecisions: 201}\n",
                "rebalance.keepDecisions: must be at most 200"},
        BadCase{"keep_decisions_negative", R1C "rebalance: {keepDecisions: -1}\n",
                "rebalance.keepDecisions"},
        BadCase{
            "target_over_100",
            "rules:\n  - {name: cpu, query: q, threshold: 20, relativeTo: mean, resource: cpu}\n"
            "rebalance: {target: 500}\n",
            "rules.yaml:3:21: rebalance.target: must be a percent of allocatable in use, at "
            "least 0 and below 100"},
        BadCase{"target_negative", R1C "rebalance: {target: -5}\n",
                "rules.yaml:3:21: rebalance.target: must be a percent of allocatable in use, at "
                "least 0 and below 100"},
        BadCase{"target_over_clear", R1C "rebalance: {target: 80}\n",
                "rules.yaml:3:21: rebalance.target: must be below the clear threshold of rule cpu "
                "(80)"},
        BadCase{"underused_no_bound", R1C "rebalance:\n  underused: {for: 1h}\n",
                "rules.yaml:4:14: rebalance.underused: needs cpuBelow, memoryBelow or both"},
        BadCase{"underused_unmeasured", R1C "rebalance:\n  underused: {memoryBelow: 20}\n",
                "rebalance.underused.memoryBelow: no rule measures memory"},
        BadCase{"underused_over_clear",
                "rules:\n  - {name: cpu, query: up, threshold: 80, clearThreshold: 30, resource: "
                "cpu}\nrebalance:\n  underused: {cpuBelow: 30}\n",
                "rebalance.underused.cpuBelow: must be below the clear threshold of rule cpu (30)"},
        BadCase{"underused_percent", R1C "rebalance:\n  underused: {cpuBelow: 0}\n",
                "rebalance.underused.cpuBelow: must be a percent between 0 and 100"},
        BadCase{"underused_same_value",
                R1C "rebalance:\n  underused: {cpuBelow: 10, value: presure}\n",
                "rebalance.underused.value: must differ from the mark's value \"presure\""},
        BadCase{"underused_bad_value",
                R1C "rebalance:\n  underused: {cpuBelow: 10, value: 'not ok'}\n",
                "rebalance.underused.value"},
        BadCase{"underused_max_nodes", R1C "rebalance:\n  underused: {cpuBelow: 10, maxNodes: 0}\n",
                "rebalance.underused.maxNodes: must be at least 1"},
        BadCase{"underused_unknown", R1C "rebalance:\n  underused: {cpuBelow: 10, below: 3}\n",
                "rebalance.underused.below: unknown field"},
        BadCase{"max_age_zero", "rules:\n  - {name: m, query: up, threshold: 5, maxAge: 0s}\n",
                "rules.yaml:2:48: rule \"m\": maxAge: must be longer than 0 s"},
        BadCase{"max_age_negative", "rules:\n  - {name: m, query: up, threshold: 5, maxAge: -1m}\n",
                "rules.yaml:2:48: rule \"m\": maxAge: \"-1m\" is not a duration"},
        BadCase{"max_age_not_duration",
                "rules:\n  - {name: m, query: up, threshold: 5, maxAge: [2m]}\n",
                "rule \"m\": maxAge: must be a duration"},
        BadCase{"age_query_without_max_age",
                "rules:\n  - {name: m, query: up, threshold: 5, ageQuery: push_time_seconds}\n",
                "rules.yaml:2:50: rule \"m\": ageQuery: needs maxAge"},
        BadCase{"age_query_empty",
                "rules:\n  - {name: m, query: up, threshold: 5, maxAge: 2m, ageQuery: ' '}\n",
                "rules.yaml:2:62: rule \"m\": ageQuery: empty query"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(RuleConfig, RebalanceSection) {
  auto off = ParseRuleConfig(R1, "r.yaml");
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->rebalance.enabled) << "absent: off";
  auto cfg = ParseRuleConfig(R1C R"(rebalance:
  after: 2m
  holdAfterEviction: 10m
  dryRun: true
  target: 40
  podUsage: {cpu: 'sum by (namespace, pod) (x)', memory: 'sum by (namespace, pod) (y)'}
  minPodAge: 1m
  evictBarePods: true
  evictLocalStorage: true
  priorityThreshold: 1000
  namespaces: {include: [shop], exclude: [kube-system, monitoring]}
  nodeSelector: pool=general
  limits: {perCycle: 3, perHour: 30, perNodePerHour: 4, nodeCooldown: 5m, perNamespacePerHour: 6,
           perWorkload: 2}
  windows:
    - {days: [Mon, Fri], start: "22:00", end: "06:00"}
    - {start: "12:00", end: "24:00"}
  timeZone: Europe/Berlin
  effectWindow: 15m
  referenceQuery: 'node_cpu_pct > 90'
  keepDecisions: 150
)",
                             "r.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  const RebalanceConfig& r = cfg->rebalance;
  EXPECT_TRUE(r.enabled);
  EXPECT_EQ(r.after_seconds, 120);
  EXPECT_EQ(r.hold_after_eviction_seconds, 600);
  EXPECT_TRUE(r.dry_run);
  EXPECT_EQ(r.target, 40);
  EXPECT_EQ(r.cpu_usage_query, "sum by (namespace, pod) (x)");
  EXPECT_EQ(r.memory_usage_query, "sum by (namespace, pod) (y)");
  EXPECT_EQ(r.pods.min_pod_age_seconds, 60);
  EXPECT_TRUE(r.pods.evict_bare_pods);
  EXPECT_TRUE(r.pods.evict_local_storage);
  EXPECT_EQ(r.pods.priority_threshold, 1000);
  EXPECT_EQ(r.pods.include_namespaces, std::vector<std::string>{"shop"});
  EXPECT_EQ(r.pods.exclude_namespaces, (std::vector<std::string>{"kube-system", "monitoring"}));
  EXPECT_EQ(r.node_selector, "pool=general");
  EXPECT_EQ(r.limits.per_cycle, 3u);
  EXPECT_EQ(r.limits.per_hour, 30u);
  EXPECT_EQ(r.limits.per_node_per_hour, 4u);
  EXPECT_EQ(r.limits.node_cooldown_seconds, 300);
  EXPECT_EQ(r.limits.per_namespace_per_hour, 6u);
  EXPECT_EQ(r.limits.per_workload_unreplaced, 2u);
  ASSERT_EQ(r.limits.windows.size(), 2u);
  EXPECT_EQ(r.limits.windows[0].days, 0b0100010);
  EXPECT_EQ(r.limits.windows[0].start_minute, 22 * 60);
  EXPECT_EQ(r.limits.windows[0].end_minute, 6 * 60);
  EXPECT_EQ(r.limits.windows[1].days, 0x7f) << "no days: every day";
  EXPECT_EQ(r.limits.windows[1].end_minute, 24 * 60);
  EXPECT_EQ(r.time_zone, "Europe/Berlin");
  EXPECT_EQ(r.effect_window_seconds, 900);
  EXPECT_EQ(r.keep_decisions, 150u);
  EXPECT_FALSE(r.underused.enabled) << "the mirror mode is off unless asked for";
  auto mirror = ParseRuleConfig(
      R1C "rebalance:\n  underused: {cpuBelow: 15, for: 2h, value: idle, maxNodes: 2}\n", "r.yaml");
  ASSERT_TRUE(mirror.ok()) << mirror.status().ToString();
  const UnderusedConfig& u = mirror->rebalance.underused;
  EXPECT_TRUE(u.enabled);
  EXPECT_EQ(u.below[0], 15);
  EXPECT_TRUE(std::isnan(u.below[1])) << "no memory bound";
  EXPECT_EQ(u.for_seconds, 7200);
  EXPECT_EQ(u.value, "idle");
  EXPECT_EQ(u.max_nodes, 2u);
  EXPECT_EQ(r.reference_query, "node_cpu_pct > 90");
  EXPECT_EQ(cfg->rules[0].resource, Rule::Resource::kCpu);
  EXPECT_EQ(off->rules[0].resource, Rule::Resource::kNone) << "no resource: marks only";
  auto defaults = ParseRuleConfig(R1C "rebalance: {}\n", "r.yaml");
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_TRUE(defaults->rebalance.enabled);
  EXPECT_FALSE(defaults->rebalance.dry_run);
  EXPECT_EQ(defaults->rebalance.limits.per_cycle, 2u);
}

// A memory rule on bytes available (the kubelet's memory.available): '<', bytes, its own urgency;
// the percent bounds (target, underused) leave it alone.
TEST(RuleConfig, AvailableBytesRule) {
  auto cfg = ParseRuleConfig(
      "rules:\n"
      "  - {name: mem, query: up, operator: '<', threshold: 300e6, clearThreshold: 500e6,\n"
      "     resource: memory, relieveAfter: 0s}\n"
      "  - {name: cpu, query: up, threshold: 80, resource: cpu}\n"
      "rebalance: {after: 5m, target: 60}\n",
      "r.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  const Rule& mem = cfg->rules[0];
  EXPECT_TRUE(mem.AvailableBytes());
  EXPECT_EQ(mem.unit, ValueUnit::kBytes) << "bytes unless it says otherwise";
  EXPECT_EQ(mem.clear_threshold, 500e6);
  EXPECT_EQ(mem.relieve_after_seconds, 0) << "acts at once";
  EXPECT_FALSE(cfg->rules[1].AvailableBytes());
  EXPECT_EQ(cfg->rules[1].unit, ValueUnit::kPercent);
  EXPECT_LT(cfg->rules[1].relieve_after_seconds, 0) << "not set: rebalance.after";
  EXPECT_EQ(cfg->rebalance.after_seconds, 300);
  auto underused = ParseRuleConfig(
      "rules:\n  - {name: mem, query: up, operator: '<', threshold: 3e8, resource: memory}\n"
      "rebalance:\n  underused: {memoryBelow: 20}\n",
      "r.yaml");
  ASSERT_FALSE(underused.ok()) << "a bytes rule measures no percent in use";
  EXPECT_NE(underused.status().message().find("no rule measures memory"), std::string::npos)
      << underused.status().ToString();
}

TEST(RuleConfig, MissingFileIsNamed) {
  auto cfg = LoadRuleConfigFile("/nonexistent/rule.yaml");
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.status().message().find("/nonexistent/rule.yaml"), std::string::npos);
}

TEST(ParseDuration, Forms) {
  EXPECT_EQ(*ParseDuration("30s"), 30);
  EXPECT_EQ(*ParseDuration("1m30s"), 90);
  EXPECT_EQ(*ParseDuration("500ms"), 0.5);
  EXPECT_EQ(*ParseDuration("2h"), 7200);
  EXPECT_EQ(*ParseDuration("12"), 12);
  EXPECT_EQ(*ParseDuration("0"), 0);
  EXPECT_FALSE(ParseDuration("").ok());
  EXPECT_FALSE(ParseDuration("-3").ok());
  EXPECT_FALSE(ParseDuration("3w").ok());
  EXPECT_FALSE(ParseDuration("s").ok());
}

}  // namespace
}  // namespace ds

namespace ds {
namespace {

TEST(RuleConfig, HostileInputs) {
  // Deep nesting is rejected before yaml-cpp recurses into it.
  auto deep = ParseRuleConfig("rules: " + std::string(100000, '[') + "\n", "deep.yaml");
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("deep.yaml: line 1: nested more than"), std::string::npos)
      << deep.status().message();
  std::string blocks = "rules:\n";
  for (int i = 0; i < 200; ++i) blocks += std::string(2 * i + 2, ' ') + "- a:\n";
  EXPECT_FALSE(ParseRuleConfig(blocks, "deep2.yaml").ok());
  // Ordinary files are not affected.
  std::string ok = "rules:\n  - name: a\n    query: 'sum by (x) ({a=\"[{\"})'\n    threshold: 1\n";
  EXPECT_TRUE(ParseRuleConfig(ok, "ok.yaml").ok())
      << ParseRuleConfig(ok, "ok.yaml").status().ToString();
  // Wrong types in every position give an error, never an exception.
  for (std::string bad : std::vector<std::string>{
           "rules: {a: 1}", "rules: [1, 2]", "rules: [[1]]", "label: [1]\nrules: []",
           "rules:\n  - name: [a]\n    query: up\n    threshold: 1", "prometheus: 5\nrules: []",
           "Rulename: [1]", "PromJob: [x]\nRulename: {a: {Promsql: up, Threshold: 1}}",
           "? [a]\n: b", "rules:\n  - {name: a, query: {x: 1}, threshold: 1}",
           std::string("\xff\xfe", 2) + "bad", "rules: !!binary aGVsbG8="}) {
    auto r = ParseRuleConfig(bad, "bad.yaml");
    EXPECT_FALSE(r.ok()) << bad;
  }
}

TEST(RuleConfig, TenMegabyteFileIsRefused) {
  std::string path = ::testing::TempDir() + "/big-rule.yaml";
  {
    std::ofstream out(path);
    out << "rules:\n  - {name: a, query: up, threshold: 1}\n# " << std::string(10 << 20, 'x')
        << "\n";
  }
  auto r = LoadRuleConfigFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("larger than 1 MiB"), std::string::npos);
}

TEST(RuleConfig, PrometheusCredentialsHeadersAndTls) {
  auto cfg = ParseRuleConfig(
      "prometheus:\n"
      "  url: https://mimir:8080/prometheus\n"
      "  basicAuth: {username: ds, passwordFile: /secrets/password}\n"
      "  headers: {X-Scope-OrgID: team-a}\n"
      "  tls: {caFile: ca.crt, certFile: tls.crt, keyFile: tls.key}\n"
      "rules:\n  - {name: cpu, query: q, threshold: 80}\n",
      "r.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  const HttpAuthConfig& a = cfg->prometheus_auth;
  EXPECT_EQ(a.basic_auth_user, "ds");
  EXPECT_EQ(a.basic_auth_password_file, "/secrets/password");
  EXPECT_EQ(a.headers, std::vector<std::string>{"X-Scope-OrgID: team-a"});
  EXPECT_EQ(a.ca_file, "ca.crt") << "paths as written; the options resolve them";
  EXPECT_EQ(a.cert_file, "tls.crt");
  EXPECT_EQ(a.key_file, "tls.key");
  EXPECT_FALSE(a.insecure_skip_verify);
  auto token = ParseRuleConfig(
      "prometheus: {bearerTokenFile: /t, tls: {insecureSkipVerify: true}}\n"
      "rules:\n  - {name: cpu, query: q, threshold: 80}\n",
      "r.yaml");
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(token->prometheus_auth.bearer_token_file, "/t");
  EXPECT_TRUE(token->prometheus_auth.insecure_skip_verify);
}

INSTANTIATE_TEST_SUITE_P(
    PrometheusAuth, RuleConfigErrors,
    ::testing::Values(
        BadCase{"token_and_basic",
                "prometheus:\n  bearerTokenFile: /t\n  basicAuth: {username: u, passwordFile: /p}\n"
                "rules:\n  - {name: a, query: q, threshold: 1}\n",
                "rules.yaml:3:14: prometheus.basicAuth: give either bearerTokenFile or basicAuth"},
        BadCase{"basic_without_password",
                "prometheus:\n  basicAuth: {username: u}\nrules:\n  - {name: a, query: q, "
                "threshold: 1}\n",
                "rules.yaml:2:14: prometheus.basicAuth: needs both username and passwordFile"},
        BadCase{
            "empty_token_file",
            "prometheus: {bearerTokenFile: ''}\nrules:\n  - {name: a, query: q, threshold: 1}\n",
            "prometheus.bearerTokenFile: must not be empty"},
        BadCase{"bad_header",
                "prometheus:\n  headers: {Bad Name: v}\nrules:\n  - {name: a, query: q, threshold: "
                "1}\n",
                "rules.yaml:2:13: prometheus.headers.Bad Name: header name"},
        BadCase{"authorization_header",
                "prometheus:\n  headers:\n    Authorization: Bearer x\n"
                "rules:\n  - {name: a, query: q, threshold: 1}\n",
                "rules.yaml:3:5: prometheus.headers.Authorization: header Authorization"},
        BadCase{"headers_not_map",
                "prometheus:\n  headers: [a]\nrules:\n  - {name: a, query: q, threshold: 1}\n",
                "prometheus.headers: must be a mapping"},
        BadCase{
            "cert_without_key",
            "prometheus:\n  tls: {certFile: c}\nrules:\n  - {name: a, query: q, threshold: 1}\n",
            "rules.yaml:2:8: prometheus.tls: certFile and keyFile go together"},
        BadCase{"insecure_with_ca",
                "prometheus:\n  tls: {caFile: c, insecureSkipVerify: true}\n"
                "rules:\n  - {name: a, query: q, threshold: 1}\n",
                "prometheus.tls.insecureSkipVerify: true with caFile"},
        BadCase{"unknown_tls_key",
                "prometheus:\n  tls: {ca: c}\nrules:\n  - {name: a, query: q, threshold: 1}\n",
                "prometheus.tls.ca: unknown field"}),
    [](const ::testing::TestParamInfo<BadCase>& i) { return std::string(i.param.name); });

TEST(RuleConfig, PredictBlock) {
  auto cfg = ParseRuleConfig(R"(rules:
  - name: cpu-peak
    query: node_cpu_percent
    threshold: 80
    predict: {days: 14, quantile: 0.99, halfLife: 3d12h, minDays: 5, resolution: 5m,
              timeZone: Europe/Berlin}
  - {name: mem-peak, query: mem, threshold: 90, predict: {}}
  - {name: cpu, query: node_cpu_percent, threshold: 80}
)",
                             "r.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  const PredictConfig& p = cfg->rules[0].predict;
  EXPECT_TRUE(p.enabled);
  EXPECT_EQ(p.days, 14u);
  EXPECT_EQ(p.quantile, 0.99);
  EXPECT_EQ(p.half_life_seconds, 3.5 * 86400);
  EXPECT_EQ(p.min_days, 5u);
  EXPECT_EQ(p.resolution_seconds, 300);
  EXPECT_EQ(p.time_zone, "Europe/Berlin");
  // The defaults: the daily P95 of the last 8 days, half weight two days back.
  const PredictConfig& d = cfg->rules[1].predict;
  EXPECT_TRUE(d.enabled);
  EXPECT_EQ(d.days, 8u);
  EXPECT_EQ(d.quantile, 0.95);
  EXPECT_EQ(d.half_life_seconds, 2 * 86400);
  EXPECT_EQ(d.min_days, 3u);
  EXPECT_EQ(d.resolution_seconds, 60);
  EXPECT_EQ(d.time_zone, "UTC");
  EXPECT_FALSE(cfg->rules[2].predict.enabled);
  // A reload that changes the prediction is a changed rule (its history starts afresh).
  Rule a = cfg->rules[1], b = a;
  b.predict.days = 7;
  EXPECT_FALSE(a == b);
}

TEST(ParseDuration, DaysAsInPromQL) {
  EXPECT_EQ(*ParseDuration("2d"), 2 * 86400);
  EXPECT_EQ(*ParseDuration("1d12h"), 1.5 * 86400);
}

#define P1 "rules:\n  - name: a\n    query: up\n    threshold: 5\n"
INSTANTIATE_TEST_SUITE_P(
    Predict, RuleConfigErrors,
    ::testing::Values(
        BadCase{"predict_not_map", P1 "    predict: yes\n",
                "rules.yaml:5:14: rule \"a\": predict: must be a mapping"},
        BadCase{"predict_unknown_key", P1 "    predict: {day: 8}\n",
                "rules.yaml:5:15: rule \"a\": predict.day: unknown field"},
        BadCase{"predict_days_zero", P1 "    predict: {days: 0}\n",
                "rules.yaml:5:21: rule \"a\": predict.days: must be a whole number from 1 to 90"},
        BadCase{"predict_days_fraction", P1 "    predict: {days: 2.5}\n",
                "predict.days: must be a whole number"},
        BadCase{"predict_quantile", P1 "    predict: {quantile: 95}\n",
                "rules.yaml:5:25: rule \"a\": predict.quantile: must be from 0 to 1"},
        BadCase{"predict_half_life", P1 "    predict: {halfLife: 10m}\n",
                "rules.yaml:5:25: rule \"a\": predict.halfLife: must be at least 1h"},
        BadCase{"predict_half_life_unit", P1 "    predict: {halfLife: 2w}\n",
                "predict.halfLife: \"2w\": unknown unit"},
        BadCase{"predict_min_days", P1 "    predict: {days: 3, minDays: 4}\n",
                "rules.yaml:5:33: rule \"a\": predict.minDays: must not exceed days (3)"},
        BadCase{"predict_min_days_default", P1 "    predict: {days: 2}\n",
                "rules.yaml:5:14: rule \"a\": predict.minDays: must not exceed days (2)"},
        BadCase{"predict_resolution", P1 "    predict: {resolution: 1500ms}\n",
                "rules.yaml:5:27: rule \"a\": predict.resolution: must be whole seconds"},
        BadCase{"predict_zone", P1 "    predict: {timeZone: ../../etc/passwd}\n",
                "rules.yaml:5:25: rule \"a\": predict.timeZone: \"../../etc/passwd\" is not a "
                "time zone name"},
        BadCase{"predict_max_age", P1 "    maxAge: 1m\n    predict: {}\n",
                "rules.yaml:5:13: rule \"a\": maxAge: not with predict"}),
    [](const ::testing::TestParamInfo<BadCase>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace ds
