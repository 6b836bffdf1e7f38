// -once: one pass with the controller's own parts (app/once.h). Each sentence of issue 39 item 4
// has a test: marks and exit 0; nothing written on a second pass; hysteresis across passes; a node
// hot for 4 s not marked by a `for: 60s` rule (and one hot over the whole window marked);
// Prometheus down -> non-zero and nothing removed; -dry_run names the node and writes nothing. Time
// comes from a FakeClock; each pass is a fresh process's worth of parts over the same fake cluster.
#include "app/once.h"

#include <gflags/gflags.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "app/options.h"
#include "config/rule_config.h"
#include "kube/lease.h"
#include "rules/ownership.h"
#include "test/fakes/fake_clock.h"
#include "test/fakes/fake_kube_api.h"
#include "test/fakes/fake_prometheus.h"

namespace ds {
namespace {

constexpr char kRules[] =
    "rules:\n"
    "  - {name: cpu, query: cpu_pct, threshold: 80, clearThreshold: 70}\n"
    "maxMarkedFraction: 1\n";

class OnceTest : public ::testing::Test {
 protected:
  // The options as ParseOptions makes them for `-once` with this rule file (and -dry_run): the
  // production flags, rule file and kubeconfig path, nothing set by hand.
  void Configure(const std::string& rules, bool dry_run = false) {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("once-" + std::to_string(getpid()) + "-" +
                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir);
    const std::string rule_file = (dir / "rule.yaml").string();
    const std::string kubeconfig = (dir / "kubeconfig").string();
    std::ofstream(rule_file) << rules;
    std::ofstream(kubeconfig)
        << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: "
           "'https://127.0.0.1:1'}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n"
           "- name: ctx\n  context: {cluster: c, user: u, namespace: dynamic-scheduler}\n"
           "current-context: ctx\n";
    std::vector<std::string> args = {
        "dynamic-scheduler", "-once", "-prom", "http://prom:9090/", "-r", rule_file, "-kubeconfig",
        kubeconfig,          "-s",    "10"};
    if (dry_run) args.push_back("-dry_run");
    gflags::FlagSaver restore;  // the next test starts from the defaults
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int argc = static_cast<int>(args.size());
    char** p = argv.data();
    auto o = ParseOptions(&argc, &p, [](const char*) -> const char* { return nullptr; });
    std::filesystem::remove_all(dir);
    ASSERT_TRUE(o.ok()) << o.status().ToString();
    o_ = std::move(*o);
    ASSERT_TRUE(o_.once);
    ASSERT_TRUE(o_.reconciler.one_pass);
  }
  // node-1..3: 4 cores, 16 GB, 110 pods each, for relief.
  void AddWorkers() {
    for (int i = 1; i <= 3; ++i) {
      NodeInfo n;
      n.name = "node-" + std::to_string(i);
      n.allocatable_cpu = 4;
      n.allocatable_memory = 16e9;
      n.allocatable_other = {{"pods", 110}};
      n.uid = "uid-" + n.name;
      api_.AddNode(n);
    }
  }
  void AddNodes(std::initializer_list<const char*> names) {
    for (const char* name : names) {
      NodeInfo n;
      n.name = name;
      api_.AddNode(n);
    }
  }
  OnceSummary Pass() { return RunOnce(o_, &api_, &prom_, &clock_); }
  bool Marked(const std::string& node) {
    const NodeInfo n = api_.nodes()[node];
    const std::string* v = FindLabel(n.labels, "status");
    return v != nullptr && *v == "presure";
  }
  bool HasRecord(const std::string& node) {
    const NodeInfo n = api_.nodes()[node];
    return FindLabel(n.annotations, kHeldByAnnotation) != nullptr;
  }

  Options o_;
  FakeKubeApi api_;
  FakePrometheus prom_;
  FakeClock clock_;
};

TEST_F(OnceTest, MarksTheHotNodeAndExitsZero) {
  Configure(kRules);
  AddNodes({"node-a", "node-b"});
  prom_.SetValues("cpu_pct", {{"node-a", 91}, {"node-b", 20}});
  const OnceSummary s = Pass();
  EXPECT_EQ(s.exit_code, kOnceDone);
  EXPECT_TRUE(s.errors.empty());
  EXPECT_TRUE(Marked("node-a"));
  EXPECT_TRUE(HasRecord("node-a")) << "the record the next pass adopts from";
  EXPECT_FALSE(Marked("node-b"));
  EXPECT_EQ(s.nodes, 2u);
  EXPECT_EQ(s.hot, 1u);
  ASSERT_EQ(s.changes.size(), 1u);
  EXPECT_EQ(s.changes[0].node, "node-a");
  EXPECT_TRUE(s.changes[0].mark);
  EXPECT_TRUE(s.changes[0].written);
  ASSERT_EQ(s.changes[0].rules.size(), 1u);
  EXPECT_EQ(s.changes[0].rules[0].rule, "cpu");
  EXPECT_EQ(s.changes[0].rules[0].value, 91);
  EXPECT_EQ(s.changes[0].rules[0].threshold, 80);
  const std::string text = FormatOnceText(s);
  EXPECT_NE(text.find("marked node-a (cpu 91 > 80)"), std::string::npos) << text;
  EXPECT_NE(text.find("2 nodes judged, 1 hot; 1 marked, 0 unmarked"), std::string::npos) << text;
  EXPECT_NE(text.find("exit 0"), std::string::npos) << text;
  EXPECT_TRUE(prom_.range_queries().empty()) << "no `for`: no history needed";
}

TEST_F(OnceTest, ASecondPassWithNothingChangedWritesNothing) {
  Configure(kRules);
  AddNodes({"node-a", "node-b"});
  prom_.SetValues("cpu_pct", {{"node-a", 91}, {"node-b", 20}});
  ASSERT_EQ(Pass().exit_code, kOnceDone);
  const size_t patches = api_.patches().size();
  ASSERT_GT(patches, 0u);
  clock_.AdvanceSeconds(120);  // the CronJob's next run
  const OnceSummary second = Pass();
  EXPECT_EQ(second.exit_code, kOnceDone);
  EXPECT_EQ(api_.patches().size(), patches) << "the mark and its record are as they should be";
  EXPECT_TRUE(second.changes.empty());
  EXPECT_EQ(second.writes_ok, 0u);
  EXPECT_TRUE(Marked("node-a"));
}

TEST_F(OnceTest, HysteresisHoldsAcrossPasses) {
  Configure(kRules);
  AddNodes({"node-a", "node-b"});
  prom_.SetValues("cpu_pct", {{"node-a", 91}, {"node-b", 20}});
  ASSERT_EQ(Pass().exit_code, kOnceDone);
  ASSERT_TRUE(Marked("node-a"));
  // Both in the band (70, 80]: the marked node keeps its mark (adopted from its record), the
  // other is not marked.
  clock_.AdvanceSeconds(120);
  prom_.SetValues("cpu_pct", {{"node-a", 75}, {"node-b", 75}});
  const size_t patches = api_.patches().size();
  OnceSummary s = Pass();
  EXPECT_EQ(s.exit_code, kOnceDone);
  EXPECT_TRUE(Marked("node-a")) << "in its band: held by the rule its record names";
  EXPECT_FALSE(Marked("node-b")) << "never over the threshold";
  EXPECT_EQ(api_.patches().size(), patches);
  // At the clear threshold it goes.
  clock_.AdvanceSeconds(120);
  prom_.SetValues("cpu_pct", {{"node-a", 70}, {"node-b", 75}});
  s = Pass();
  EXPECT_EQ(s.exit_code, kOnceDone);
  EXPECT_FALSE(Marked("node-a"));
  EXPECT_FALSE(HasRecord("node-a"));
  ASSERT_EQ(s.changes.size(), 1u);
  EXPECT_FALSE(s.changes[0].mark);
  const std::string text = FormatOnceText(s);
  EXPECT_NE(text.find("unmarked node-a (cpu 70 <= 70)"), std::string::npos) << text;
}

TEST_F(OnceTest, ForIsJudgedOnPrometheusHistory) {
  Configure(
      "rules:\n"
      "  - {name: cpu, query: cpu_pct, threshold: 80, clearThreshold: 70, for: 60s}\n"
      "maxMarkedFraction: 1\n");
  AddNodes({"hot-long", "hot-4s"});
  const double now = clock_.WallSeconds();
  prom_.SetValues("cpu_pct", {{"hot-long", 91}, {"hot-4s", 91}});
  prom_.SetHistory("cpu_pct", "hot-long", 91, now - 3600, now);
  prom_.SetHistory("cpu_pct", "hot-4s", 20, now - 3600, now - 5);
  prom_.SetHistory("cpu_pct", "hot-4s", 91, now - 4, now);
  const OnceSummary s = Pass();
  EXPECT_EQ(s.exit_code, kOnceDone);
  EXPECT_TRUE(Marked("hot-long")) << "over the threshold for the whole `for` window";
  EXPECT_FALSE(Marked("hot-4s")) << "hot for 4 s: its `for` has only begun";
  // The window: `for` and one interval back, a step each interval, up to the cycle before now.
  const auto q = prom_.range_queries();
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(std::get<0>(q[0]), "cpu_pct");
  EXPECT_DOUBLE_EQ(std::get<1>(q[0]), now - 70);
  EXPECT_DOUBLE_EQ(std::get<2>(q[0]), now - 10);
  EXPECT_DOUBLE_EQ(std::get<3>(q[0]), 10);
  EXPECT_EQ(s.primed_steps, 7u);
}

TEST_F(OnceTest, PrometheusDownExitsNonZeroAndRemovesNothing) {
  Configure(kRules);
  AddNodes({"node-a"});
  prom_.SetValues("cpu_pct", {{"node-a", 91}});
  ASSERT_EQ(Pass().exit_code, kOnceDone);
  ASSERT_TRUE(Marked("node-a"));
  const size_t patches = api_.patches().size();
  prom_.SetError("cpu_pct", Status::Unavailable("connection refused"));
  const OnceSummary s = Pass();
  EXPECT_EQ(s.exit_code, kOnceFailed);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_NE(s.errors[0].find("rule cpu"), std::string::npos) << s.errors[0];
  EXPECT_NE(s.errors[0].find("connection refused"), std::string::npos) << s.errors[0];
  EXPECT_TRUE(Marked("node-a"));
  EXPECT_EQ(api_.patches().size(), patches);
  EXPECT_NE(FormatOnceText(s).find("error: Prometheus: rule cpu"), std::string::npos);
}

// Graded marks: the hottest rule's query fails while a warm level's rule holds the hot node. The
// decider calls it warm (the failed rule has no value to adopt it by); a pass must not move the
// hot mark down to warm, nor rewrite its record, on that.
TEST_F(OnceTest, AFailedRuleNeverMovesAMarkDownALevel) {
  Configure(
      "levels:\n"
      "  - {name: warm, value: warm}\n"
      "  - {name: hot}\n"
      "maxMarkedFraction: 1\n"
      "rules:\n"
      "  - {name: cpu, query: cpu_pct, threshold: 90, clearThreshold: 80}\n"
      "  - name: mem\n"
      "    query: mem_pct\n"
      "    threshold: 95\n"
      "    clearThreshold: 90\n"
      "    levels: {warm: {threshold: 70, clearThreshold: 60}}\n");
  AddNodes({"node-a", "node-b"});
  prom_.SetValues("cpu_pct", {{"node-a", 93}, {"node-b", 20}});
  prom_.SetValues("mem_pct", {{"node-a", 75}, {"node-b", 20}});
  ASSERT_EQ(Pass().exit_code, kOnceDone);
  ASSERT_TRUE(Marked("node-a")) << "hot by cpu";
  const size_t patches = api_.patches().size();
  prom_.SetError("cpu_pct", Status::Unavailable("connection refused"));
  prom_.SetValues("mem_pct", {{"node-a", 75}, {"node-b", 75}});
  const OnceSummary s = Pass();
  EXPECT_EQ(s.exit_code, kOnceFailed);
  EXPECT_TRUE(Marked("node-a")) << "still hot, not moved down to warm";
  const NodeInfo b = api_.nodes()["node-b"];
  const std::string* v = FindLabel(b.labels, "status");
  EXPECT_TRUE(v != nullptr && *v == "warm") << "an unmarked node may still be marked";
  EXPECT_EQ(api_.patches().size(), patches + 1) << "node-b's mark only";
}

// A pass beside a running controller would be a second writer of the same marks: while the leader
// lease is held and fresh, the pass refuses (exit 2, nothing written); once it has expired (the
// Deployment is gone), it runs.
TEST_F(OnceTest, NeverBesideARunningController) {
  Configure(kRules);
  AddNodes({"node-a"});
  prom_.SetValues("cpu_pct", {{"node-a", 91}});
  LeaseRecord held;
  held.holder_identity = "dynamic-scheduler-7d9f-abcde";
  held.lease_duration_seconds = 15;
  held.acquire_time = held.renew_time = FormatMicroTime(clock_.WallSeconds() - 5);
  ASSERT_TRUE(api_.WriteLease("dynamic-scheduler", "dynamic-scheduler", held, 5).ok());
  OnceSummary s = Pass();
  EXPECT_EQ(s.exit_code, kOnceFailed);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_NE(s.errors[0].find("dynamic-scheduler-7d9f-abcde"), std::string::npos) << s.errors[0];
  EXPECT_FALSE(Marked("node-a"));
  EXPECT_TRUE(api_.patches().empty());
  clock_.AdvanceSeconds(20);  // 25 s since the last renewal: expired
  s = Pass();
  EXPECT_EQ(s.exit_code, kOnceDone);
  EXPECT_TRUE(Marked("node-a"));
  EXPECT_EQ(LeaderRunning(LeaseRecord{}, clock_.WallSeconds()), "") << "nobody holds it";
}

// A relief that fails (here its pod LIST) is no success: the pass exits 1 and says why.
TEST_F(OnceTest, AFailedReliefExitsOne) {
  Configure(
      "rules:\n"
      "  - {name: cpu, query: cpu_pct, threshold: 80, clearThreshold: 70, resource: cpu}\n"
      "maxMarkedFraction: 1\n"
      "rebalance: {after: 0s, podUsage: {cpu: pod_cpu}, minPodAge: 0s}\n");
  AddWorkers();
  prom_.SetValues("cpu_pct", {{"node-1", 95}, {"node-2", 10}, {"node-3", 10}});
  prom_.SetSamples("pod_cpu", {});
  ASSERT_EQ(Pass().exit_code, kOnceDone);
  ASSERT_TRUE(Marked("node-1"));
  api_.FailNextPodLists(10);
  clock_.AdvanceSeconds(120);
  const OnceSummary s = Pass();
  EXPECT_EQ(s.exit_code, kOnceWriteFailed);
  ASSERT_FALSE(s.errors.empty());
  EXPECT_NE(s.errors.back().find("the rebalancer"), std::string::npos) << s.errors.back();
}

// One rule failing while another says cold: the loop would remove the mark the answering rule
// holds; one pass removes nothing until every rule has answered.
TEST_F(OnceTest, OneFailedRuleKeepsEveryMark) {
  Configure(
      "rules:\n"
      "  - {name: cpu, query: cpu_pct, threshold: 80, clearThreshold: 70}\n"
      "  - {name: mem, query: mem_pct, threshold: 80, clearThreshold: 70}\n"
      "maxMarkedFraction: 1\n");
  AddNodes({"node-a", "node-b"});
  prom_.SetValues("cpu_pct", {{"node-a", 91}, {"node-b", 20}});
  prom_.SetValues("mem_pct", {{"node-a", 20}, {"node-b", 20}});
  ASSERT_EQ(Pass().exit_code, kOnceDone);
  ASSERT_TRUE(Marked("node-a"));
  const size_t patches = api_.patches().size();
  prom_.SetValues("cpu_pct", {{"node-a", 20}, {"node-b", 95}});
  prom_.SetError("mem_pct", Status::Unavailable("timeout"));
  const OnceSummary s = Pass();
  EXPECT_EQ(s.exit_code, kOnceFailed);
  EXPECT_TRUE(Marked("node-a")) << "no removal while a rule's query fails";
  EXPECT_TRUE(Marked("node-b")) << "a mark on the answering rule's evidence is still set";
  EXPECT_EQ(api_.patches().size(), patches + 1);
}

// A record rewritten without the failed rule would keep that rule from adopting the mark in the
// next pass: with a rule's query failing, records stay as they are.
TEST_F(OnceTest, OneFailedRuleLeavesTheRecordAlone) {
  Configure(
      "rules:\n"
      "  - {name: cpu, query: cpu_pct, threshold: 80, clearThreshold: 70}\n"
      "  - {name: mem, query: mem_pct, threshold: 80, clearThreshold: 70}\n"
      "maxMarkedFraction: 1\n");
  AddNodes({"node-a"});
  prom_.SetValues("cpu_pct", {{"node-a", 91}});
  prom_.SetValues("mem_pct", {{"node-a", 91}});
  ASSERT_EQ(Pass().exit_code, kOnceDone);
  auto owners = [&] {
    std::vector<std::string> names;
    const NodeInfo n = api_.nodes()["node-a"];
    if (const std::string* text = FindLabel(n.annotations, kHeldByAnnotation))
      if (auto o = ParseOwnership(*text); o.ok())
        for (const OwnerRule& r : o->rules) names.push_back(r.rule);
    return names;
  };
  ASSERT_EQ(owners(), (std::vector<std::string>{"cpu", "mem"}));
  const size_t patches = api_.patches().size();
  prom_.SetError("mem_pct", Status::Unavailable("timeout"));
  EXPECT_EQ(Pass().exit_code, kOnceFailed);
  EXPECT_EQ(owners(), (std::vector<std::string>{"cpu", "mem"}));
  EXPECT_EQ(api_.patches().size(), patches);
  // mem answers again, in its band, while cpu has cooled: mem's record keeps the mark.
  prom_.SetValues("cpu_pct", {{"node-a", 20}});
  prom_.SetValues("mem_pct", {{"node-a", 75}});
  EXPECT_EQ(Pass().exit_code, kOnceDone);
  EXPECT_TRUE(Marked("node-a"));
}

TEST_F(OnceTest, PrometheusDownForTheHistoryWritesNothing) {
  Configure(
      "rules:\n"
      "  - {name: cpu, query: cpu_pct, threshold: 80, clearThreshold: 70, for: 60s}\n"
      "maxMarkedFraction: 1\n");
  AddNodes({"node-a"});
  prom_.SetError("cpu_pct", Status::Unavailable("connection refused"));
  const OnceSummary s = Pass();
  EXPECT_EQ(s.exit_code, kOnceFailed);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_NE(s.errors[0].find("rule cpu: the history"), std::string::npos) << s.errors[0];
  EXPECT_EQ(prom_.calls("cpu_pct"), 1) << "no cycle after the history failed";
  EXPECT_TRUE(api_.patches().empty());
}

TEST_F(OnceTest, TheApiServerDownExitsNonZeroAndNamesIt) {
  Configure(kRules);
  AddNodes({"node-a"});
  prom_.SetValues("cpu_pct", {{"node-a", 91}});
  api_.FailNextLists({Status::Unavailable("503 Service Unavailable")});
  const OnceSummary s = Pass();
  EXPECT_EQ(s.exit_code, kOnceFailed);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_NE(s.errors[0].find("the API server"), std::string::npos) << s.errors[0];
  EXPECT_NE(s.errors[0].find("503"), std::string::npos) << s.errors[0];
  EXPECT_EQ(prom_.calls("cpu_pct"), 0);
  EXPECT_TRUE(api_.patches().empty());
}

TEST_F(OnceTest, DryRunNamesTheNodeAndWritesNothing) {
  Configure(kRules, /*dry_run=*/true);
  AddNodes({"node-a", "node-b"});
  prom_.SetValues("cpu_pct", {{"node-a", 91}, {"node-b", 20}});
  const OnceSummary s = Pass();
  EXPECT_EQ(s.exit_code, kOnceDone);
  EXPECT_TRUE(api_.patches().empty());
  EXPECT_FALSE(Marked("node-a"));
  const std::string text = FormatOnceText(s);
  EXPECT_NE(text.find("would mark node-a (cpu 91 > 80)"), std::string::npos) << text;
  EXPECT_NE(text.find("none written (dry run)"), std::string::npos) << text;
  EXPECT_EQ(text.find("node-b"), std::string::npos) << text;
}

TEST_F(OnceTest, TheJsonSummaryIsOneObjectForScripts) {
  Configure(kRules);
  AddNodes({"node-a", "node-b"});
  prom_.SetValues("cpu_pct", {{"node-a", 91}, {"node-b", 20}});
  const std::string json = FormatOnceJson(Pass());
  rapidjson::Document d;
  ASSERT_FALSE(d.Parse(json.c_str()).HasParseError()) << json;
  EXPECT_EQ(d["exit_code"].GetInt(), 0);
  EXPECT_FALSE(d["dry_run"].GetBool());
  EXPECT_EQ(d["nodes"].GetUint(), 2u);
  EXPECT_EQ(d["hot"].GetUint(), 1u);
  EXPECT_EQ(d["writes"]["ok"].GetUint(), 1u);
  ASSERT_EQ(d["changes"].Size(), 1u);
  const auto& c = d["changes"][0];
  EXPECT_STREQ(c["node"].GetString(), "node-a");
  EXPECT_STREQ(c["action"].GetString(), "mark");
  EXPECT_TRUE(c["written"].GetBool());
  EXPECT_STREQ(c["rules"][0]["rule"].GetString(), "cpu");
  EXPECT_EQ(c["rules"][0]["value"].GetDouble(), 91);
  EXPECT_STREQ(c["rules"][0]["op"].GetString(), ">");
  EXPECT_EQ(c["rules"][0]["threshold"].GetDouble(), 80);
  EXPECT_TRUE(d["evictions"].IsArray());
  EXPECT_EQ(d["errors"].Size(), 0u);
}

// With rebalance: a pass relieves a marked node through the same rebalancer as the loop, and its
// eviction limits survive between passes (the ledger in the namespace, issue 38): perHour 1 holds
// across runs, each run a fresh process.
TEST_F(OnceTest, RelievesWithLimitsThatHoldBetweenRuns) {
  Configure(
      "rules:\n"
      "  - {name: cpu, query: cpu_pct, threshold: 80, clearThreshold: 70, resource: cpu}\n"
      "maxMarkedFraction: 1\n"
      "rebalance:\n"
      "  after: 0s\n"
      "  podUsage: {cpu: pod_cpu}\n"
      "  minPodAge: 0s\n"
      "  settle: 0s\n"
      "  limits: {perHour: 1}\n");
  AddWorkers();
  std::vector<Sample> usage;
  for (auto [name, cores] : {std::pair{"big", 2.0}, std::pair{"small", 0.4}}) {
    PodInfo p;
    p.ns = "shop";
    p.name = name;
    p.node = "node-1";
    p.owner_kind = "ReplicaSet";
    p.owner_name = std::string(name) + "-rs";
    p.phase = "Running";
    p.ready = true;
    p.cpu_request = 0.5;
    p.memory_request = 1e9;
    p.created_wall = clock_.WallSeconds() - 3600;
    p.uid = std::string("uid-") + name;
    p.labels = {{"app", name}, {"pod-template-hash", "5d8f"}};
    p.preferred_affinity = {
        PreferredSchedulingTerm{100, NodeSelectorTerm{{{"status", "NotIn", {"presure"}}}, {}}}};
    api_.AddPod(p);
    usage.push_back(Sample{{{"namespace", "shop"}, {"pod", name}}, cores, 0});
  }
  prom_.SetSamples("pod_cpu", usage);
  prom_.SetValues("cpu_pct", {{"node-1", 95}, {"node-2", 10}, {"node-3", 10}});
  OnceSummary s = Pass();
  ASSERT_EQ(s.exit_code, kOnceDone);
  ASSERT_TRUE(Marked("node-1"));
  EXPECT_TRUE(api_.evictions().empty()) << "the pass that marks relieves nothing yet";
  clock_.AdvanceSeconds(120);
  s = Pass();
  EXPECT_EQ(s.exit_code, kOnceDone);
  EXPECT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
  ASSERT_EQ(s.evictions.size(), 1u);
  EXPECT_EQ(s.evictions[0].pod, "shop/big");
  EXPECT_EQ(s.evictions[0].result, "evicted");
  EXPECT_NE(FormatOnceText(s).find("eviction of shop/big from node-1 (rule cpu): evicted"),
            std::string::npos)
      << FormatOnceText(s);
  api_.RemovePod("shop/big");
  clock_.AdvanceSeconds(120);  // past the cool-down and the hold
  s = Pass();
  EXPECT_EQ(s.exit_code, kOnceDone);
  EXPECT_EQ(api_.evictions().size(), 1u) << "one eviction an hour, whichever run made it";
  clock_.AdvanceSeconds(3600);
  s = Pass();
  EXPECT_EQ(api_.evictions().size(), 2u) << "the next hour";
}

TEST(PrimeSteps, ForAndUpToOneIntervalBackOnMultiplesOfTheInterval) {
  auto rule = [](double for_s, bool predict = false) {
    Rule r;
    r.for_seconds = for_s;
    r.predict.enabled = predict;
    return r;
  };
  struct Case {
    std::vector<Rule> rules;
    double interval;
    double now;
    std::vector<double> want;  // offsets from now
  } cases[] = {
      {{rule(0)}, 10, 1000, {}},
      {{rule(60)}, 10, 1000, {-70, -60, -50, -40, -30, -20, -10}},
      // VictoriaMetrics answers a range query from 1005 at 1000, 1010, ...: the first version
      // asked for 935, 945, ... and read no point at all (a node hot for 12 minutes not marked).
      {{rule(60)}, 10, 1005, {-65, -55, -45, -35, -25, -15, -5}},
      {{rule(60), rule(15)}, 30, 1000, {-70, -40, -10}},
      {{rule(5)}, 10, 1000, {-20, -10}},
      {{rule(0), rule(25)}, 10, 1000, {-40, -30, -20, -10}},
      {{rule(2)}, 0.5, 1000.2, {-2.2, -1.7, -1.2, -0.7, -0.2}},
      {{rule(300, /*predict=*/true)}, 10, 1000, {}},
  };
  for (const Case& c : cases) {
    std::vector<double> got = PrimeSteps(c.rules, c.now, c.interval);
    ASSERT_EQ(got.size(), c.want.size()) << c.interval << " " << c.now;
    for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k] - c.now, c.want[k], 1e-9) << k;
  }
}

}  // namespace
}  // namespace ds
