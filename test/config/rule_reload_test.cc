#include "config/rule_reload.h"

#include <gtest/gtest.h>

#include <set>

namespace ds {
namespace {

const char* kRunning = R"(# running
interval: 10s
label: {key: status, value: presure}
rebalance:
  after: 2m
rules:
  - {name: cpu, query: cpu_pct, threshold: 80, clearThreshold: 60, resource: cpu}
)";

TEST(RuleReload, RulesAndTheDecisionsKeysAreReloaded) {
  const std::string next = std::string(kRunning) +
                           "  - {name: mem, query: mem_pct, threshold: 90}\n"
                           "maxMarkedFraction: 0.3\nmissingDataGrace: 1m\n"
                           "onPrometheusDown: release\n";
  auto cfg = ParseReload(kRunning, next, "r.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->rules.size(), 2u);
  EXPECT_EQ(cfg->max_marked_fraction, 0.3);
  EXPECT_TRUE(cfg->release_on_outage);
}

TEST(RuleReload, ARuleTurnedRelativeIsReloadedLikeAnyRuleField) {
  const std::string next = std::string(kRunning) +
                           "  - {name: skew, query: cpu_pct, threshold: 20, relativeTo: mean, "
                           "minNodes: 4}\n";
  auto cfg = ParseReload(kRunning, next, "r.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  ASSERT_EQ(cfg->rules.size(), 2u);
  EXPECT_EQ(cfg->rules[1].relative_to, Rule::Relative::kMean);
  EXPECT_EQ(cfg->rules[1].min_nodes, 4u);
  // An invalid relative rule is refused with its line; the running rules stay.
  auto bad = ParseReload(
      kRunning,
      std::string(kRunning) + "  - {name: skew, query: q, threshold: -1, relativeTo: mean}\n",
      "r.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("r.yaml:8:"), std::string::npos) << bad.status().message();
}

TEST(RuleReload, LayoutAndCommentsAreNoChange) {
  const char* same = R"(interval: "10s"   # the same, quoted
label:
  key: status
  value: presure
rebalance: {after: 2m}
rules:
  - {name: cpu, query: cpu_pct, threshold: 75, clearThreshold: 60, resource: cpu}
)";
  auto cfg = ParseReload(kRunning, same, "r.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->rules.at(0).threshold, 75);
}

TEST(RuleReload, WhatWasBuiltAtStartUpTakesARestart) {
  std::string next = kRunning;
  next.replace(next.find("presure"), 7, "busy");
  next.replace(next.find("2m"), 2, "5m");
  next += "nodeSelector: pool=gpu\n";
  auto cfg = ParseReload(kRunning, next, "r.yaml");
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().message(),
            "r.yaml: label, nodeSelector, rebalance changed: that takes a restart (only rules, "
            "missingDataGrace, maxMarkedFraction, maxMarked, onPrometheusDown and releaseAfter "
            "are reloaded); the running rules are kept");
}

// The mark's mode and taint shape the mark itself, as the label does: switching to taint mode
// while marks are set would strand them.
TEST(RuleReload, TaintModeTakesARestart) {
  auto cfg = ParseReload(kRunning, std::string(kRunning) + "mark: both\ntaint: {key: a.io/hot}\n",
                         "r.yaml");
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().message().rfind("r.yaml: mark, taint changed: that takes a restart", 0),
            0u)
      << cfg.status().message();
}

TEST(RuleReload, ALegacyFileReloadsEvenWhereItsIgnoredKeysChange) {
  const char* was = "PromJob: {Name: a}\nRulename:\n  c: {Promsql: up, Threshold: 70}\nExtra: 1\n";
  const char* now = "PromJob: {Name: b}\nRulename:\n  c: {Promsql: up, Threshold: 60}\nExtra: 2\n";
  auto cfg = ParseReload(was, now, "r.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->rules.at(0).threshold, 60);
}

TEST(RuleReload, ANewKeyOfTheFormatIsDecidedOn) {
  // A key added to the format takes a restart until rule_reload.cc's kReloadable lists it: this
  // list changes with the format, so the one who adds a key decides whether it reloads.
  EXPECT_EQ(CurrentFormatKeys(),
            (std::set<std::string>{"interval", "label", "levels", "mark", "maxMarked",
                                   "maxMarkedFraction", "missingDataGrace", "nodeSelector",
                                   "onPrometheusDown", "prometheus", "rebalance", "releaseAfter",
                                   "rules", "taint"}));
}

TEST(RuleReload, AnInvalidFileIsRefusedWithItsLine) {
  const std::string next = std::string(kRunning) + "  - {name: cpu, query: other, threshold: 1}\n";
  auto cfg = ParseReload(kRunning, next, "r.yaml");
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.status().message().find("r.yaml:8:"), std::string::npos) << cfg.status().message();
}

}  // namespace
}  // namespace ds

namespace ds {
namespace {

// The node cache keeps only the label keys of the start-up rules' pools (rules/rule_scope.h).
TEST(RuleReload, APoolByALabelKeyTheCacheDoesNotKeepTakesARestart) {
  const std::string running =
      "rules:\n  - {name: gpu, query: cpu_pct, threshold: 50, nodeSelector: pool=gpu}\n";
  auto same_key = ParseReload(
      running, "rules:\n  - {name: gpu, query: cpu_pct, threshold: 50, nodeSelector: pool=tpu}\n",
      "r.yaml");
  ASSERT_TRUE(same_key.ok()) << same_key.status().ToString();
  EXPECT_EQ(same_key->rules[0].node_selector, "pool=tpu");
  auto new_key = ParseReload(
      running, "rules:\n  - {name: gpu, query: cpu_pct, threshold: 50, nodeSelector: zone=a}\n",
      "r.yaml");
  ASSERT_FALSE(new_key.ok());
  EXPECT_NE(new_key.status().message().find("reads the label key zone"), std::string::npos)
      << new_key.status().message();
  EXPECT_NE(new_key.status().message().find("takes a restart"), std::string::npos);
}

}  // namespace
}  // namespace ds
