#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "controller/duration_metrics.h"
#include "web/metrics.h"
#include "web/nodes_json.h"
#include "web/rebalance_json.h"
#include "web/routes.h"
#include "web/state_json.h"

namespace ds {
namespace {

// ---- The views the tests share ----

ControllerView ReadyView() {
  ControllerView v;
  v.cache_synced = true;
  v.seconds_since_cycle = 1;
  v.interval_seconds = 10;
  v.mark = Mark{"status", "presure"};
  auto snap = std::make_shared<NodeSnapshot>();
  for (auto [name, label] : std::vector<std::pair<std::string, std::string>>{
           {"node-3", "presure"}, {"node-5", ""}, {"node-7", "presure"}, {"node-9", "other"}}) {
    auto n = std::make_shared<NodeInfo>();
    n->name = name;
    if (!label.empty()) n->labels.emplace_back("status", label);
    snap->nodes.push_back(n);
  }
  v.nodes = snap;
  v.last_cycle.cycle = 12;
  v.last_cycle.started_wall = 1795303219;
  v.last_cycle.holds["node-3"] = {HoldReport{"cpu", ">", 91.5, 80, 60, 1795303200, false}};
  return v;
}

WebRequest Get(const std::string& path) { return WebRequest{"GET", path, -1, "", ""}; }

// A view with every field the renderers show set, for the golden files.
ControllerView FullView() {
  ControllerView v = ReadyView();
  v.cache_stats = NodeCacheStats{4, 1, 9, 1234, 56, 0.75};
  v.version = "0.2.0";
  v.commit = "0123456789ab";
  v.compiler = "gcc 12.2.0";
  v.last_cycle.duration_seconds = 0.125;
  v.last_cycle.cpu_seconds = 0.0625;
  v.last_cycle.rebalance_cpu_seconds = 0.0078125;
  v.last_cycle.rebalance_cpu_seconds_total = 0.25;
  v.last_cycle.phases = CyclePhases{0.1, 0.01, 0.002, 0.001, 0.012};
  v.last_cycle.managed_nodes = 4;
  v.last_cycle.hot_nodes = 2;
  v.last_cycle.writes_ok = 2;
  v.last_cycle.writes_failed = 1;
  v.last_cycle.deferred = 3;
  v.last_cycle.held_back = 1;
  v.last_cycle.rules = {RuleReport{"cpu", true, "", 4, 3, 1, 0, 0.1, {}, 2},
                        RuleReport{"mem", false, "Unavailable: timeout", 0, 0, 0, 0, 5, {}, 0}};
  v.last_cycle.holds["node-7"] = {HoldReport{"cpu", ">", 85, 80, 60, 1795303100, false},
                                  HoldReport{"mem", "<", 1e8, 2e8, 3e8, 1795303150, true}};
  v.last_cycle.holds["node-7"][0].unit = ValueUnit::kPercent;  // shown "85 % > 80 %"
  v.last_cycle.holds["node-7"][1].unit = ValueUnit::kBytes;    // shown "95.37 MiB < 190.7 MiB"
  // Hot, left unmarked by the herd cap.
  v.last_cycle.mark_limit = 2;
  v.last_cycle.capped = {"node-9"};
  v.last_cycle.holds["node-9"] = {HoldReport{"cpu", ">", 82, 80, 60, 1795303160, false}};
  v.counters.cycles = 12;
  v.counters.label_sets = 5;
  v.counters.label_removals = 2;
  v.counters.write_errors = 1;
  v.counters.write_retries = 4;
  v.counters.record_writes = 6;
  v.counters.removals_changed = 7;
  v.counters.events_posted = 8;
  v.counters.events_suppressed = 2;
  v.counters.query_errors["mem"] = 3;
  v.rss_bytes = 12345678;
  v.leader_election = true;
  v.is_leader = true;
  v.identity = "pod-a_1";
  v.leader_holder = "pod-a_1";
  v.leader_terms = 2;
  return v;
}

// Compares rendered output with test/testdata/golden/<name>. DS_UPDATE_GOLDEN=1 rewrites the file
// instead (then review the diff: it is the change users see).
void ExpectGolden(const std::string& name, const std::string& got) {
  const std::string path = std::string(TESTDATA_DIR) + "/golden/" + name;
  if (const char* update = std::getenv("DS_UPDATE_GOLDEN"); update != nullptr && *update == '1') {
    std::ofstream(path) << got;
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing " << path << " (DS_UPDATE_GOLDEN=1 writes it)";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(got, want.str()) << "rendered output differs from " << path;
}

// FullView with what only some configurations show: a relative rule's mean, the rebalancer's
// metrics, the duration histograms. The golden file has every family /metrics can export
// (test_deploy.py checks the names, types and labels docs/reference.md lists against it).
ControllerView MetricsView() {
  ControllerView v = FullView();
  WebServerStats web;
  web.connections = 3;
  web.accepted_total = 120;
  web.refused_total = 7;
  web.busy_total = 1;
  web.timed_out_total = 4;
  web.bad_requests_total = 2;
  web.tls_failures_total = 5;
  v.listeners = {{"web", web}, {"probes", WebServerStats{1, 40, 0, 0, 0, 0, 0}}};
  RuleReport skew{"cpu-skew", true, "", 4, 4, 0, 0, 0.05, {}, 0};
  skew.relative = skew.mean_known = true;
  skew.mean = 65;
  v.last_cycle.rules.push_back(skew);
  RebalanceReport rep;
  rep.enabled = true;
  rep.underused = {UnderusedNodeReport{"node-5", "draining", "", {10, 20}, 1795303000, 1}};
  rep.figures.evictions = 3;
  rep.figures.replacements = 2;
  rep.figures.bounce_backs = 1;
  rep.figures.episodes = 4;
  rep.figures.episodes_evicted = 2;
  rep.figures.episodes_judged = 2;
  rep.figures.episodes_relieved = 2;
  rep.figures.relieved_evictions = 3;
  rep.figures.time_to_relief = {0, 0, 0, 1, 0, 0, 0, 0, 1};  // 250 s and 4000 s
  rep.figures.time_to_relief_sum = 4250;
  rep.figures.hot_node_seconds = 1230;
  rep.pod_lists = 9;
  v.rebalance = rep;
  v.rebalance_counters.evictions = {{"evicted", 3}, {"blocked_by_pdb", 1}};
  v.rebalance_counters.skips = {{"no_fit", 4}, {"node_cooldown", 2}};
  v.rebalance_counters.kept = {{"daemonset", 6}};
  v.rebalance_counters.underused_marks = {{"set", 1}};
  v.rebalance_counters.list_errors = 1;
  DurationMetrics d;
  for (double s : {0.003, 0.2, 0.2, 12.0}) d.ObserveCycle(s);
  d.ObserveQuery("cpu", 0.02);
  d.ObserveQuery("mem", 5);
  v.durations = d.Collect();
  return v;
}

// The last cycle's table for FullView's nodes (node-3, node-5, node-7, node-9).
std::shared_ptr<NodeTable> TableFor(const std::vector<std::string>& names) {
  auto t = std::make_shared<NodeTable>();
  t->rules = {NodeTable::Column{"cpu", ">", 80, 60}, NodeTable::Column{"mem", "<", 2e8, 3e8}};
  t->rules[0].unit = ValueUnit::kPercent;
  t->rules[1].unit = ValueUnit::kBytes;
  t->names = names;
  t->values.assign(names.size() * 2, std::nan(""));
  t->states.assign(names.size(), NodeTable::State::kCold);
  t->since_wall.assign(names.size(), 0);
  return t;
}

ControllerView StateView() {
  ControllerView v = FullView();
  // node-1 left since the cycle; node-5 is new in the cache (the cycle did not see it).
  auto t = TableFor({"node-1", "node-3", "node-7", "node-9"});
  t->values = {10, 4e8, 91.5, 2.5e8, 85, 1e8, 82, std::nan("")};
  t->states = {NodeTable::State::kCold, NodeTable::State::kHot, NodeTable::State::kHeld,
               NodeTable::State::kCapped};
  t->since_wall = {0, 1795303200, 1795303100, 1795303160};
  v.last_cycle.table = t;
  v.last_cycle.recent_changes = std::make_shared<std::vector<MarkChange>>(
      std::vector<MarkChange>{{1795303100, "node-7", true, "rule cpu value 85 > 80"},
                              {1795303200, "node-3", true, "rule cpu value 91.5 > 80"}});
  return v;
}

// ---- Routes (web/routes.h) ----

TEST(Routes, StatusReadyAndReasons) {
  auto noop = [] {};
  ControllerView v = ReadyView();
  auto r = HandleRequest(Get("/status"), v, noop);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok\n");
  v.cache_synced = false;
  v.cache_error = "Unavailable: connection refused";
  r = HandleRequest(Get("/status"), v, noop);
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(r.body.find("node cache not synced: Unavailable"), std::string::npos);
  v = ReadyView();
  v.last_cycle.all_queries_failed = true;
  v.last_cycle.rules.push_back(
      RuleReport{"cpu", false, "Unavailable: refused", 0, 0, 0, 0, 0, {}, 0});
  r = HandleRequest(Get("/status"), v, noop);
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(r.body.find("Prometheus"), std::string::npos);
  EXPECT_EQ(HandleRequest(Get("/healthz"), v, noop).status, 200) << "liveness ignores Prometheus";
  v = ReadyView();
  v.cache_seconds_since_progress = 299;
  EXPECT_EQ(HandleRequest(Get("/status"), v, noop).status, 200);
  v.cache_stale = true;
  v.cache_seconds_since_progress = 420;
  v.cache_error = "TooManyRequests (HTTP 429): list nodes";
  r = HandleRequest(Get("/status"), v, noop);
  EXPECT_EQ(r.status, 503) << "a frozen cache is not ready, even while cycles run";
  EXPECT_EQ(r.body,
            "node cache stale: no successful list or watch event for 420 s: TooManyRequests "
            "(HTTP 429): list nodes\n");
  v = ReadyView();
  v.seconds_since_cycle = 500;
  r = HandleRequest(Get("/status"), v, noop);
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(r.body.find("evaluation loop stalled"), std::string::npos) << r.body;
  v.seconds_since_progress = 2;
  EXPECT_EQ(HandleRequest(Get("/healthz"), v, noop).status, 200)
      << "a long cycle that keeps writing is alive: liveness follows the loop's progress";
  v.seconds_since_progress = 500;
  auto stalled = HandleRequest(Get("/healthz"), v, noop);
  EXPECT_EQ(stalled.status, 503);
  EXPECT_EQ(stalled.body, "evaluation loop stalled: no progress for 500 s\n");
}

TEST(Routes, ARefusedRuleFileChangeIsSaidButStaysReady) {
  ControllerView v = ReadyView();
  v.reload.last_ok = false;
  v.reload.last_error = "r.yaml:2:5: rule \"cpu\": threshold: \"high\" is not a number";
  auto r = HandleRequest(Get("/status"), v, [] {});
  EXPECT_EQ(r.status, 200) << "the running rules still work: no restart, no rollout stuck";
  EXPECT_EQ(r.body,
            "ok; rule file change refused (the running rules are kept): r.yaml:2:5: rule \"cpu\": "
            "threshold: \"high\" is not a number\n");
  EXPECT_NE(RenderMetrics(v).find("dynamic_scheduler_rule_reload_last_success 0\n"),
            std::string::npos);
}

TEST(Routes, ForbiddenEvictionsAreSaidButStayReady) {
  ControllerView v = ReadyView();
  v.rebalance = RebalanceReport{};
  v.rebalance->problem = "evictions are forbidden (403): the rebalancer needs RBAC";
  auto r = HandleRequest(Get("/status"), v, [] {});
  EXPECT_EQ(r.status, 200) << "labelling goes on";
  EXPECT_EQ(r.body, "ok; rebalancer: evictions are forbidden (403): the rebalancer needs RBAC\n");
}

TEST(Routes, LeaderElectionStandbyIsReadyAndSaysWhoLeads) {
  auto noop = [] {};
  ControllerView v = ReadyView();
  v.leader_election = true;
  v.identity = "pod-b_1";
  v.leader_holder = "pod-a_2";
  v.last_cycle = CycleReport();
  v.last_cycle.skipped = v.last_cycle.standby = true;
  auto r = HandleRequest(Get("/status"), v, noop);
  EXPECT_EQ(r.status, 200) << "a standby is healthy: it must not be restarted or block a rollout";
  EXPECT_EQ(r.body, "ok: standby, the lease is held by pod-a_2\n");
  std::string m = RenderMetrics(v);
  EXPECT_NE(m.find("dynamic_scheduler_leader 0\n"), std::string::npos);
  v.is_leader = true;
  v.leader_terms = 3;
  v.last_cycle.standby = false;
  r = HandleRequest(Get("/status"), v, noop);
  EXPECT_EQ(r.body, "ok\n");
  m = RenderMetrics(v);
  EXPECT_NE(m.find("dynamic_scheduler_leader 1\n"), std::string::npos);
  EXPECT_NE(m.find("dynamic_scheduler_leader_terms_total 3\n"), std::string::npos);
  // Standby still reports a broken cache.
  v.is_leader = false;
  v.last_cycle.standby = true;
  v.cache_synced = false;
  EXPECT_EQ(HandleRequest(Get("/status"), v, noop).status, 503);
  // Without leader election the gauge says the replica writes.
  EXPECT_NE(RenderMetrics(ReadyView()).find("dynamic_scheduler_leader 1\n"), std::string::npos);
}

TEST(Routes, MethodsPathsAndWebhook) {
  int triggered = 0;
  auto trig = [&] { ++triggered; };
  ControllerView v = ReadyView();
  EXPECT_EQ(HandleRequest(Get("/nope"), v, trig).status, 404);
  auto post = HandleRequest(WebRequest{"POST", "/nodes", 2, "{}", ""}, v, trig);
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(post.headers[0], "Allow: GET, HEAD");
  EXPECT_EQ(HandleRequest(WebRequest{"DELETE", "/status", -1, "", ""}, v, trig).status, 405);
  EXPECT_EQ(HandleRequest(Get("/webhook"), v, trig).status, 405);
  EXPECT_EQ(triggered, 0);
  EXPECT_EQ(
      HandleRequest(WebRequest{"POST", "/webhook", 10, "{\"alerts\":[]}", ""}, v, trig).status,
      202);
  EXPECT_EQ(triggered, 1);
  EXPECT_EQ(HandleRequest(WebRequest{"POST", "/webhook", 2 << 20, "", ""}, v, trig).status, 413);
  EXPECT_EQ(triggered, 1);
}

TEST(Routes, WebhookTokenWhenConfigured) {
  int triggered = 0;
  auto trig = [&] { ++triggered; };
  ControllerView v = ReadyView();
  WebRequest post{"POST", "/webhook", 2, "{}", ""};
  auto r = HandleRequest(post, v, trig, "s3cret");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.headers[0], "WWW-Authenticate: Bearer");
  post.authorization = "Bearer wrong";
  EXPECT_EQ(HandleRequest(post, v, trig, "s3cret").status, 401);
  post.authorization = "Bearer s3cre";
  EXPECT_EQ(HandleRequest(post, v, trig, "s3cret").status, 401) << "a prefix is not the token";
  EXPECT_EQ(triggered, 0);
  post.authorization = "Bearer s3cret";
  EXPECT_EQ(HandleRequest(post, v, trig, "s3cret").status, 202);
  EXPECT_EQ(triggered, 1);
  EXPECT_EQ(HandleRequest(Get("/status"), v, trig, "s3cret").status, 200) << "only the webhook";
}

TEST(Routes, WebhookHandsTheFiringAlertsOver) {
  std::vector<Labels> got;
  int triggered = 0;
  const std::string body =
      R"({"version":"4","status":"firing","alerts":[)"
      R"({"status":"firing","labels":{"alertname":"NodeHot","node":"node-3"}},)"
      R"({"status":"resolved","labels":{"alertname":"NodeHot","node":"node-5"}},)"
      R"({"status":"firing","labels":{"instance":"10.0.0.7:9100","n":1}}]})";
  WebRequest post{"POST", "/webhook", static_cast<long long>(body.size()), body, ""};
  auto take = [&](std::vector<Labels> a) { got = std::move(a); };
  // Without a token the webhook triggers a cycle but names no node: anyone could send it.
  auto r = HandleRequest(
      post, ReadyView(), [&] { ++triggered; }, "", take);
  EXPECT_EQ(r.status, 202);
  EXPECT_EQ(triggered, 1);
  EXPECT_TRUE(got.empty()) << "an unauthenticated alert must not make a node evictable at once";
  post.authorization = "Bearer s3cret";
  r = HandleRequest(
      post, ReadyView(), [&] { ++triggered; }, "s3cret", take);
  EXPECT_EQ(r.status, 202);
  EXPECT_EQ(triggered, 2);
  ASSERT_EQ(got.size(), 2u) << "resolved alerts name nothing to relieve";
  EXPECT_EQ(got[0], (Labels{{"alertname", "NodeHot"}, {"node", "node-3"}}));
  EXPECT_EQ(got[1], (Labels{{"instance", "10.0.0.7:9100"}})) << "non-string labels are dropped";
  for (const char* bad : {"", "not json", "[]", R"({"alerts":{}})", R"({"alerts":[1,"x",{}]})"})
    EXPECT_TRUE(FiringAlerts(bad).empty()) << bad;
  std::string many = R"({"alerts":[)";
  for (int i = 0; i < 1500; ++i) many += std::string(i ? "," : "") + R"({"labels":{"node":"n"}})";
  EXPECT_EQ(FiringAlerts(many + "]}").size(), kMaxAlerts);
}

// The page: HTML, script and style, served from the binary with a policy that allows nothing
// from elsewhere.
TEST(Routes, ServesThePageAndItsFiles) {
  const ControllerView v = ReadyView();
  auto page = HandleRequest(Get("/"), v, [] {});
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_NE(page.body.find("<script src=\"/ui/app.js\"></script>"), std::string::npos);
  EXPECT_NE(page.body.find("href=\"/ui/app.css\""), std::string::npos);
  ASSERT_FALSE(page.headers.empty());
  EXPECT_EQ(
      page.headers[0].rfind("Content-Security-Policy: default-src 'none'; script-src 'self'", 0),
      0u)
      << page.headers[0];
  auto js = HandleRequest(Get("/ui/app.js"), v, [] {});
  ASSERT_EQ(js.status, 200);
  EXPECT_EQ(js.content_type, "text/javascript; charset=utf-8");
  EXPECT_NE(js.body.find("'/api/v1/state'"), std::string::npos);
  auto css = HandleRequest(Get("/ui/app.css"), v, [] {});
  ASSERT_EQ(css.status, 200);
  EXPECT_EQ(css.content_type, "text/css; charset=utf-8");
  EXPECT_EQ(HandleRequest(WebRequest{"HEAD", "/", -1, "", ""}, v, [] {}).status, 200);
  EXPECT_EQ(HandleRequest(WebRequest{"POST", "/", 0, "", ""}, v, [] {}).status, 405);
  EXPECT_EQ(HandleRequest(Get("/ui/other.js"), v, [] {}).status, 404);
  for (const auto* body : {&page.body, &js.body, &css.body}) {
    // Air-gapped: nothing is loaded from another host. (SVG's namespace is a name, not a load.)
    const std::string svg_ns = "'http://www.w3.org/2000/svg'";
    std::string text = *body;
    for (size_t at; (at = text.find(svg_ns)) != std::string::npos;) text.erase(at, svg_ns.size());
    EXPECT_EQ(text.find("http://"), std::string::npos);
    EXPECT_EQ(body->find("https://"), std::string::npos);
    EXPECT_EQ(body->find("//cdn"), std::string::npos);
    // Text from the cluster never becomes HTML.
    for (const char* sink : {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write"})
      EXPECT_EQ(body->find(sink), std::string::npos) << sink;
  }
}

// ---- /nodes (web/nodes_json.h) ----

TEST(NodesJson, ListsTheMarkedNodesWithTheirRules) {
  auto r = HandleRequest(Get("/nodes"), ReadyView(), [] {});
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  rapidjson::Document d;
  d.Parse(r.body.c_str());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_STREQ(d["type"].GetString(), "Label status=presure Nodes");
  EXPECT_EQ(d["num"].GetInt(), 2);
  ASSERT_EQ(d["node_names"].Size(), 2u);
  EXPECT_STREQ(d["node_names"][0].GetString(), "node-3");
  EXPECT_STREQ(d["node_names"][1].GetString(), "node-7");
  const auto& rules = d["nodes"][0]["rules"];
  ASSERT_EQ(rules.Size(), 1u);
  EXPECT_STREQ(rules[0]["rule"].GetString(), "cpu");
  EXPECT_EQ(rules[0]["value"].GetDouble(), 91.5);
  EXPECT_EQ(rules[0]["threshold"].GetDouble(), 80);
  EXPECT_STREQ(rules[0]["since"].GetString(), "2026-11-21T23:20:00Z");
}

TEST(NodesJson, ListsUnmanagedNodesCarryingTheLabel) {
  ControllerView v = ReadyView();
  // The second watch (key=value) sees node-7 (managed: listed once), a control-plane node and a
  // node whose label lost our value meanwhile (the watch had not said so yet).
  auto marked = std::make_shared<NodeSnapshot>();
  for (auto [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"cp-1", "presure"}, {"node-7", "presure"}, {"old-8", "other"}}) {
    auto n = std::make_shared<NodeInfo>();
    n->name = name;
    n->labels.emplace_back("status", value);
    marked->nodes.push_back(n);
  }
  v.marked_nodes = marked;
  rapidjson::Document d;
  d.Parse(RenderNodesJson(v).c_str());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_EQ(d["num"].GetInt(), 3);
  std::vector<std::string> names;
  for (const auto& n : d["node_names"].GetArray()) names.push_back(n.GetString());
  EXPECT_EQ(names, (std::vector<std::string>{"cp-1", "node-3", "node-7"}));
  EXPECT_FALSE(d["nodes"][0]["managed"].GetBool());
  EXPECT_EQ(d["nodes"][0]["rules"].Size(), 0u);
  EXPECT_FALSE(d["nodes"][1].HasMember("managed")) << "managed nodes look as before";
}

// Taint mode: the second watch keeps the nodes carrying our taint (by key and effect); one
// outside the managed set is listed as unmanaged, like a label in label mode.
TEST(NodesJson, ListsUnmanagedNodesCarryingOurTaintInTaintMode) {
  ControllerView v = ReadyView();
  v.mark.mode = Mark::Mode::kTaint;
  auto managed = std::make_shared<NodeSnapshot>();
  for (const char* name : {"node-3", "node-7"}) {
    auto n = std::make_shared<NodeInfo>();
    n->name = name;
    n->taints = {v.mark.taint};
    managed->nodes.push_back(n);
  }
  v.nodes = managed;
  auto marked = std::make_shared<NodeSnapshot>();
  for (const char* name : {"cp-1", "node-7"}) {
    auto n = std::make_shared<NodeInfo>();
    n->name = name;
    n->labels.emplace_back("status", "presure");  // our label key means nothing in taint mode
    n->taints = {Taint{"gpu", "yes", "NoSchedule"}, v.mark.taint};
    marked->nodes.push_back(n);
  }
  v.marked_nodes = marked;
  rapidjson::Document d;
  d.Parse(RenderNodesJson(v).c_str());
  ASSERT_FALSE(d.HasParseError());
  std::vector<std::string> names;
  for (const auto& n : d["node_names"].GetArray()) names.push_back(n.GetString());
  ASSERT_EQ(names, (std::vector<std::string>{"cp-1", "node-3", "node-7"}));
  EXPECT_FALSE(d["nodes"][0]["managed"].GetBool());
  EXPECT_FALSE(d["nodes"][2].HasMember("managed")) << "managed: listed once, as managed";
}

// relativeTo: mean: /nodes gives the thresholds the value was judged by and the mean they came
// from; /metrics the mean per relative rule (none while too few nodes report).
TEST(NodesJson, RelativeRulesShowTheirMean) {
  ControllerView v = ReadyView();
  HoldReport h{"cpu-skew", ">", 90, 85, 75, 1795303200, false};
  h.relative = true;
  h.mean = 65;
  v.last_cycle.holds["node-3"] = {h};
  RuleReport skew, few, fixed;
  skew.name = "cpu-skew";
  skew.ok = skew.relative = skew.mean_known = true;
  skew.mean = 65;
  few.name = "mem-skew";
  few.ok = few.relative = true;
  fixed.name = "cpu";
  fixed.ok = true;
  v.last_cycle.rules = {skew, few, fixed};
  rapidjson::Document d;
  const std::string body = HandleRequest(Get("/nodes"), v, [] {}).body;
  d.Parse(body.c_str());
  ASSERT_FALSE(d.HasParseError()) << body;
  const auto& rule = d["nodes"][0]["rules"][0];
  EXPECT_EQ(rule["threshold"].GetDouble(), 85);
  EXPECT_EQ(rule["clearThreshold"].GetDouble(), 75);
  EXPECT_EQ(rule["mean"].GetDouble(), 65);
  const std::string m = RenderMetrics(v);
  EXPECT_NE(m.find("dynamic_scheduler_rule_mean{rule=\"cpu-skew\"} 65\n"), std::string::npos) << m;
  EXPECT_EQ(m.find("dynamic_scheduler_rule_mean{rule=\"mem-skew\"}"), std::string::npos);
  EXPECT_EQ(m.find("dynamic_scheduler_rule_mean{rule=\"cpu\"}"), std::string::npos);
  // Without relative rules there is no such family, and an absolute hold has no mean.
  EXPECT_EQ(RenderMetrics(ReadyView()).find("rule_mean"), std::string::npos);
  d.Parse(HandleRequest(Get("/nodes"), ReadyView(), [] {}).body.c_str());
  EXPECT_FALSE(d["nodes"][0]["rules"][0].HasMember("mean"));
}

TEST(NodesJson, Golden) { ExpectGolden("nodes.json", RenderNodesJson(FullView())); }

// ---- /api/v1/state (web/state_json.h) ----

TEST(StateJson, NodesRulesAndChanges) {
  auto r = HandleRequest(Get("/api/v1/state"), StateView(), [] {});
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.headers, std::vector<std::string>{"Cache-Control: no-store"});
  rapidjson::Document d;
  d.Parse(r.body.c_str());
  ASSERT_FALSE(d.HasParseError()) << r.body;
  EXPECT_STREQ(d["mark"].GetString(), "status=presure");
  EXPECT_EQ(d["cycle"].GetInt(), 12);
  EXPECT_TRUE(d["ready"].GetBool());
  EXPECT_TRUE(d["leader"].GetBool());
  EXPECT_EQ(d["markLimit"].GetInt(), 2);
  EXPECT_EQ(d["markedNodes"].GetInt(), 2) << "node-3 and node-7 carry status=presure";
  ASSERT_EQ(d["rules"].Size(), 2u);
  EXPECT_STREQ(d["rules"][1]["operator"].GetString(), "<");
  EXPECT_EQ(d["rules"][1]["clearThreshold"].GetDouble(), 3e8);
  EXPECT_STREQ(d["rules"][1]["error"].GetString(), "Unavailable: timeout")
      << "the rule whose query failed says why";
  EXPECT_FALSE(d["rules"][0].HasMember("error"));
  // The cache's nodes now (node-1 left, node-5 came), the cycle's values and verdicts.
  const auto& nodes = d["nodes"];
  ASSERT_EQ(nodes.Size(), 4u);
  std::vector<std::string> names;
  for (const auto& n : nodes.GetArray()) names.push_back(n[0].GetString());
  EXPECT_EQ(names, (std::vector<std::string>{"node-3", "node-5", "node-7", "node-9"}));
  EXPECT_STREQ(nodes[0][1].GetString(), "presure");
  EXPECT_STREQ(nodes[0][2].GetString(), "hot");
  EXPECT_EQ(nodes[0][3].GetInt64(), 1795303200);
  EXPECT_EQ(nodes[0][4][0].GetDouble(), 91.5);
  EXPECT_EQ(nodes[0][4][1].GetDouble(), 2.5e8);
  EXPECT_STREQ(nodes[1][1].GetString(), "");
  EXPECT_STREQ(nodes[1][2].GetString(), "new");
  EXPECT_TRUE(nodes[1][3].IsNull());
  EXPECT_EQ(nodes[1][4].Size(), 0u);
  EXPECT_STREQ(nodes[2][2].GetString(), "held");
  EXPECT_STREQ(nodes[3][1].GetString(), "other") << "someone else's value under our key";
  EXPECT_STREQ(nodes[3][2].GetString(), "capped");
  EXPECT_TRUE(nodes[3][4][1].IsNull()) << "no value: null, not NaN";
  // Newest first.
  const auto& changes = d["changes"];
  ASSERT_EQ(changes.Size(), 2u);
  EXPECT_STREQ(changes[0]["node"].GetString(), "node-3");
  EXPECT_STREQ(changes[0]["change"].GetString(), "marked");
  EXPECT_STREQ(changes[0]["reason"].GetString(), "rule cpu value 91.5 > 80");
  EXPECT_STREQ(changes[0]["at"].GetString(), "2026-11-21T23:20:00Z");
}

TEST(StateJson, BeforeTheFirstCycleAndForAStandby) {
  ControllerView v = ReadyView();
  v.last_cycle.standby = true;
  v.leader_election = true;
  v.leader_holder = "pod-b";
  rapidjson::Document d;
  d.Parse(RenderStateJson(v).c_str());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_FALSE(d["leader"].GetBool());
  EXPECT_TRUE(d["standby"].GetBool());
  EXPECT_STREQ(d["leaseHolder"].GetString(), "pod-b");
  EXPECT_EQ(d["rules"].Size(), 0u);
  ASSERT_EQ(d["nodes"].Size(), 4u) << "a standby still shows the nodes and their marks";
  EXPECT_STREQ(d["nodes"][0][2].GetString(), "new");
  EXPECT_EQ(d["changes"].Size(), 0u);
  v.nodes = nullptr;
  d.Parse(RenderStateJson(v).c_str());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_EQ(d["nodes"].Size(), 0u);
}

TEST(StateJson, EscapesWhatNodesCarry) {
  ControllerView v = ReadyView();
  auto snap = std::make_shared<NodeSnapshot>(*v.nodes);
  auto n = std::make_shared<NodeInfo>();
  n->name = "x\"</script><img src=x onerror=alert(1)>";
  n->labels.emplace_back("status", "a\"b\n");
  snap->nodes.insert(snap->nodes.begin(), n);
  v.nodes = snap;
  rapidjson::Document d;
  d.Parse(RenderStateJson(v).c_str());
  ASSERT_FALSE(d.HasParseError()) << "a quote in a name cannot break the JSON";
  EXPECT_EQ(std::string(d["nodes"][0][0].GetString()), n->name);
  EXPECT_EQ(std::string(d["nodes"][0][1].GetString()), "a\"b\n");
}

TEST(StateJson, InTaintModeShowsTheTaint) {
  ControllerView v = ReadyView();
  v.mark.mode = Mark::Mode::kTaint;
  auto snap = std::make_shared<NodeSnapshot>(*v.nodes);
  for (auto& node : snap->nodes) {
    auto n = std::make_shared<NodeInfo>(*node);
    // The label is someone else's business in taint mode: only the taint counts.
    n->labels = {{"status", "presure"}};
    if (n->name == "node-3") n->taints = {Taint{"gpu", "", "NoSchedule"}, v.mark.taint};
    node = n;
  }
  v.nodes = snap;
  rapidjson::Document d;
  d.Parse(RenderStateJson(v).c_str());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_STREQ(d["markValue"].GetString(), "presure");
  EXPECT_EQ(d["markedNodes"].GetInt(), 1) << "node-3 alone carries our taint";
  for (const auto& n : d["nodes"].GetArray())
    EXPECT_STREQ(n[1].GetString(), std::string(n[0].GetString()) == "node-3" ? "presure" : "")
        << n[0].GetString();
}

TEST(StateJson, GivesARelativeRulesMean) {
  ControllerView v = StateView();
  auto t = std::make_shared<NodeTable>(*v.last_cycle.table);
  t->rules[0].relative = true;  // cpu: mean 65, thresholds of this cycle
  t->rules[0].mean = 65;
  t->rules[0].threshold = 85;
  t->rules[1].relative = true;  // mem: too few values, no mean and no thresholds
  t->rules[1].mean = t->rules[1].threshold = t->rules[1].clear_threshold = std::nan("");
  v.last_cycle.table = t;
  rapidjson::Document d;
  const std::string body = HandleRequest(Get("/api/v1/state"), v, [] {}).body;
  d.Parse(body.c_str());
  ASSERT_FALSE(d.HasParseError()) << body;
  EXPECT_EQ(d["rules"][0]["mean"].GetDouble(), 65);
  EXPECT_EQ(d["rules"][0]["threshold"].GetDouble(), 85);
  EXPECT_TRUE(d["rules"][1]["mean"].IsNull());
  EXPECT_TRUE(d["rules"][1]["threshold"].IsNull());
  d.Parse(HandleRequest(Get("/api/v1/state"), StateView(), [] {}).body.c_str());
  EXPECT_FALSE(d["rules"][0].HasMember("mean")) << "an absolute rule has none";
}

TEST(StateJson, AnotherPoolsRuleIsNotApplicableNotMissing) {
  ControllerView v = StateView();
  auto t = std::make_shared<NodeTable>(*v.last_cycle.table);
  const size_t nr = t->rules.size();
  ASSERT_EQ(t->names[1], "node-3");
  ASSERT_EQ(t->names[2], "node-7");
  t->values[1 * nr] = std::nan("");  // node-3: the first rule does not apply
  t->values[2 * nr] = std::nan("");  // node-7: no sample
  t->applies.assign(t->names.size() * nr, 1);
  t->applies[1 * nr] = 0;
  v.last_cycle.table = t;
  rapidjson::Document d;
  d.Parse(RenderStateJson(v).c_str());
  ASSERT_FALSE(d.HasParseError());
  std::map<std::string, const rapidjson::Value*> rows;
  for (const auto& n : d["nodes"].GetArray()) rows[n[0].GetString()] = &n[4];
  ASSERT_TRUE(rows.count("node-3") && rows.count("node-7"));
  ASSERT_TRUE((*rows["node-3"])[0].IsString());
  EXPECT_STREQ((*rows["node-3"])[0].GetString(), "n/a");
  EXPECT_TRUE((*rows["node-7"])[0].IsNull());
}

// predict: after a start the rule fetches its history again; until all its days are in it has
// no verdicts. The state JSON (the page's rule header), and /status, say how far it is.
TEST(StateJson, APredictRuleWarmingUpSaysHowFar) {
  ControllerView v = StateView();
  RuleReport cpu;
  cpu.name = "cpu";
  cpu.error = "Unavailable: predict: 3 of 8 days of history fetched";
  cpu.predict_days = 8;
  cpu.predict_days_held = 3;
  RuleReport mem;
  mem.name = "mem";
  mem.ok = true;
  v.last_cycle.rules = {cpu, mem};
  rapidjson::Document d;
  const std::string body = HandleRequest(Get("/api/v1/state"), v, [] {}).body;
  d.Parse(body.c_str());
  ASSERT_FALSE(d.HasParseError()) << body;
  ASSERT_TRUE(d["rules"][0].HasMember("warmingUp"));
  EXPECT_STREQ(d["rules"][0]["warmingUp"].GetString(), "3 of 8 days");
  EXPECT_FALSE(d["rules"][1].HasMember("warmingUp")) << "an ordinary rule";
  auto r = HandleRequest(Get("/status"), v, [] {});
  EXPECT_EQ(r.status, 200) << "the other rules judge: ready";
  EXPECT_EQ(r.body,
            "ok; rule cpu warming up: 3 of 8 days of history (no verdicts until all are in)\n");
  // Every rule warming up (no rule can judge): not ready, and not called a Prometheus outage.
  v.last_cycle.rules = {cpu};
  v.last_cycle.all_queries_failed = true;
  r = HandleRequest(Get("/status"), v, [] {});
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.body,
            "no rule can judge yet; rule cpu warming up: 3 of 8 days of history (no verdicts until "
            "all are in): Unavailable: predict: 3 of 8 days of history fetched\n");
  // All in: nothing said.
  cpu.predict_days_held = 8;
  cpu.ok = true;
  v.last_cycle.rules = {cpu, mem};
  v.last_cycle.all_queries_failed = false;
  d.Parse(HandleRequest(Get("/api/v1/state"), v, [] {}).body.c_str());
  EXPECT_FALSE(d["rules"][0].HasMember("warmingUp"));
  EXPECT_EQ(HandleRequest(Get("/status"), v, [] {}).body, "ok\n");
}

TEST(StateJson, Golden) { ExpectGolden("state.json", RenderStateJson(StateView())); }

// 10,000 nodes and two rules, the benchmark's cluster: what one poll of the page costs.
TEST(StateJson, At10000Nodes) {
  constexpr size_t kNodes = 10000;
  ControllerView v = ReadyView();
  auto snap = std::make_shared<NodeSnapshot>();
  std::vector<std::string> names;
  for (size_t i = 0; i < kNodes; ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "node-%05zu", i);
    auto n = std::make_shared<NodeInfo>();
    n->name = name;
    if (i % 3 == 0) n->labels.emplace_back("status", "presure");
    snap->nodes.push_back(n);
    names.push_back(name);
  }
  v.nodes = snap;
  auto t = TableFor(names);
  for (size_t i = 0; i < kNodes; ++i) {
    t->values[2 * i] = 50 + static_cast<double>(i % 500) / 10;
    t->values[2 * i + 1] = 1.5e8 + static_cast<double>(i) * 1024;
    t->states[i] = i % 3 == 0 ? NodeTable::State::kHot : NodeTable::State::kCold;
    t->since_wall[i] = i % 3 == 0 ? 1795303200 : 0;
  }
  v.last_cycle.table = t;
  const auto start = std::chrono::steady_clock::now();
  const std::string body = RenderStateJson(v);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  rapidjson::Document d;
  d.Parse(body.c_str());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_EQ(d["nodes"].Size(), kNodes);
  EXPECT_EQ(d["markedNodes"].GetUint(), 3334u);
  std::printf("state JSON at %zu nodes: %zu bytes, rendered in %.1f ms; table kept: %zu bytes\n",
              kNodes, body.size(), ms, t->Bytes());
  RecordProperty("state_json_bytes", static_cast<int>(body.size()));
  RecordProperty("table_bytes", static_cast<int>(t->Bytes()));
  // Bounds, not timings (the sanitizer passes run this too): under 64 bytes a node on the wire,
  // and the table under 64 bytes a node.
  EXPECT_LT(body.size(), 64 * kNodes);
  EXPECT_LT(t->Bytes(), 64 * kNodes);
}

// ---- /rebalance (web/rebalance_json.h) ----

TEST(RebalanceJson, OffAndOnWithItsMetrics) {
  ControllerView off = ReadyView();
  auto r = HandleRequest(Get("/rebalance"), off, [] {});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "{\"enabled\":false}\n");
  EXPECT_EQ(RenderMetrics(off).find("evictions_total"), std::string::npos)
      << "no rebalancer, no eviction metrics";

  ControllerView v = ReadyView();
  RebalanceReport rep;
  rep.enabled = true;
  rep.nodes.push_back(RebalanceNodeReport{"node-3", "qualifies", "cpu", "node_cooldown", 91.5, 60,
                                          41.5, 3, 1, 0, true});
  rep.recent.push_back(EvictionRecord{"shop/big", "node-3", "node-5", "cpu", "evicted", 50, 91.5,
                                      60, 1795303219, "", ""});
  EvictionRecord bytes = rep.recent.back();
  bytes.unit = ValueUnit::kBytes;  // a bytes-available rule: usage, load and goal in bytes
  rep.recent.push_back(bytes);
  rep.figures.evictions = 1;
  rep.figures.episodes = 2;
  rep.figures.episodes_evicted = 1;
  rep.figures.bounce_backs = 1;
  rep.figures.replacements = 4;
  rep.figures.episodes_judged = 1;
  rep.figures.episodes_relieved = 1;
  rep.figures.relieved_evictions = 1;
  rep.figures.time_to_relief = {0, 0, 0, 1, 0, 0, 0, 0, 0};
  rep.figures.time_to_relief_sum = 250;
  rep.figures.hot_node_seconds = 90;
  v.rebalance = rep;
  v.rebalance_counters.evictions["evicted"] = 1;
  v.rebalance_counters.skips["no_fit"] = 4;
  r = HandleRequest(Get("/rebalance"), v, [] {});
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  rapidjson::Document d;
  ASSERT_FALSE(d.Parse(r.body.c_str()).HasParseError()) << r.body;
  EXPECT_TRUE(d["enabled"].GetBool());
  EXPECT_EQ(std::string(d["nodes"][0]["limitedBy"].GetString()), "node_cooldown");
  EXPECT_EQ(d["nodes"][0]["loadAfter"].GetDouble(), 41.5);
  EXPECT_EQ(std::string(d["nodes"][0]["unit"].GetString()), "percent");
  EXPECT_EQ(std::string(d["evictions"][0]["unit"].GetString()), "percent");
  EXPECT_EQ(std::string(d["evictions"][1]["unit"].GetString()), "bytes");
  EXPECT_EQ(std::string(d["evictions"][0]["pod"].GetString()), "shop/big");
  EXPECT_EQ(std::string(d["evictions"][0]["to"].GetString()), "node-5");
  EXPECT_EQ(std::string(d["evictions"][0]["at"].GetString()), "2026-11-21T23:20:19Z");
  EXPECT_EQ(d["figures"]["evictionRate"].GetDouble(), 0.5);
  EXPECT_EQ(d["figures"]["bounceBacks"].GetUint64(), 1u);
  // How the relief went: as /metrics says it.
  EXPECT_EQ(d["figures"]["bounceBackRatio"].GetDouble(), 0.25);
  EXPECT_EQ(d["figures"]["evictionsPerRelievedEpisode"].GetDouble(), 1);
  EXPECT_EQ(d["figures"]["relievedEvictions"].GetUint64(), 1u);
  EXPECT_EQ(d["figures"]["hotNodeSeconds"].GetDouble(), 90);
  const auto& ttr = d["figures"]["timeToRelief"];
  EXPECT_EQ(ttr["count"].GetUint64(), 1u);
  EXPECT_EQ(ttr["sumSeconds"].GetDouble(), 250);
  ASSERT_EQ(ttr["buckets"].Size(), kTimeToReliefBuckets.size());
  EXPECT_EQ(ttr["buckets"][2]["le"].GetDouble(), 120);
  EXPECT_EQ(ttr["buckets"][2]["count"].GetUint64(), 0u);
  EXPECT_EQ(ttr["buckets"][3]["le"].GetDouble(), 300);
  EXPECT_EQ(ttr["buckets"][3]["count"].GetUint64(), 1u) << "cumulative";
  EXPECT_EQ(ttr["buckets"][7]["count"].GetUint64(), 1u);
  const std::string m = RenderMetrics(v);
  for (const char* line :
       {"dynamic_scheduler_evictions_total{result=\"evicted\"} 1\n",
        "dynamic_scheduler_evictions_total{result=\"blocked_by_pdb\"} 0\n",
        "dynamic_scheduler_eviction_skips_total{reason=\"no_fit\"} 4\n",
        "dynamic_scheduler_rebalance_bounce_backs_total 1\n",
        "dynamic_scheduler_rebalance_eviction_rate 0.5\n",
        "dynamic_scheduler_rebalance_bounce_back_ratio 0.25\n",
        "dynamic_scheduler_rebalance_evictions_per_relieved_episode 1\n",
        "dynamic_scheduler_rebalance_episodes_relieved_evictions_total 1\n",
        "dynamic_scheduler_rebalance_hot_node_seconds_total 90\n",
        "# TYPE dynamic_scheduler_rebalance_time_to_relief_seconds histogram\n",
        "dynamic_scheduler_rebalance_time_to_relief_seconds_bucket{le=\"120\"} 0\n",
        "dynamic_scheduler_rebalance_time_to_relief_seconds_bucket{le=\"300\"} 1\n",
        "dynamic_scheduler_rebalance_time_to_relief_seconds_bucket{le=\"3600\"} 1\n",
        "dynamic_scheduler_rebalance_time_to_relief_seconds_bucket{le=\"+Inf\"} 1\n",
        "dynamic_scheduler_rebalance_time_to_relief_seconds_sum 250\n",
        "dynamic_scheduler_rebalance_time_to_relief_seconds_count 1\n"})
    EXPECT_NE(m.find(line), std::string::npos) << line;
}

// ---- /metrics (web/metrics.h) ----

TEST(Metrics, Text) {
  ControllerView v = ReadyView();
  v.counters.cycles = 12;
  v.counters.label_sets = 3;
  v.counters.query_errors["cpu"] = 2;
  auto r = HandleRequest(Get("/metrics"), v, [] {});
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("dynamic_scheduler_cycles_total 12\n"), std::string::npos);
  EXPECT_NE(r.body.find("dynamic_scheduler_label_writes_total{op=\"set\"} 3\n"), std::string::npos);
  EXPECT_NE(r.body.find("dynamic_scheduler_query_errors_total{rule=\"cpu\"} 2\n"),
            std::string::npos);
}

TEST(Metrics, Golden) { ExpectGolden("metrics.txt", RenderMetrics(MetricsView())); }

// The histograms accumulate every observation between scrapes; /metrics shows them whole.
TEST(Metrics, DurationHistogramsCountEveryObservation) {
  DurationMetrics d;
  for (double s : {0.003, 0.2, 0.2, 45.0}) d.ObserveCycle(s);
  d.ObserveQuery("cpu", 0.02);
  d.ObserveQuery("cpu", 31);  // beyond the last bound: only +Inf holds it
  d.ObserveQuery("mem \"x\"", 0.004);
  ControllerView v = ReadyView();
  v.durations = d.Collect();
  const std::string m = RenderMetrics(v);
  for (const char* line :
       {"# TYPE dynamic_scheduler_cycle_duration_seconds histogram\n",
        "dynamic_scheduler_cycle_duration_seconds_count 4\n",
        "dynamic_scheduler_cycle_duration_seconds_sum 45.403\n",
        "dynamic_scheduler_cycle_duration_seconds_bucket{le=\"0.005\"} 1\n",
        "dynamic_scheduler_cycle_duration_seconds_bucket{le=\"0.1\"} 1\n",
        "dynamic_scheduler_cycle_duration_seconds_bucket{le=\"0.25\"} 3\n",
        "dynamic_scheduler_cycle_duration_seconds_bucket{le=\"30\"} 3\n",
        "dynamic_scheduler_cycle_duration_seconds_bucket{le=\"+Inf\"} 4\n",
        "# TYPE dynamic_scheduler_query_duration_seconds histogram\n",
        "dynamic_scheduler_query_duration_seconds_count{rule=\"cpu\"} 2\n",
        "dynamic_scheduler_query_duration_seconds_bucket{rule=\"cpu\",le=\"0.025\"} 1\n",
        "dynamic_scheduler_query_duration_seconds_bucket{rule=\"cpu\",le=\"30\"} 1\n",
        "dynamic_scheduler_query_duration_seconds_bucket{rule=\"cpu\",le=\"+Inf\"} 2\n",
        "dynamic_scheduler_query_duration_seconds_count{rule=\"mem \\\"x\\\"\"} 1\n"})
    EXPECT_NE(m.find(line), std::string::npos) << line << "\nin\n" << m;
  // The last cycle's duration stays a gauge of its own.
  EXPECT_NE(m.find("# TYPE dynamic_scheduler_last_cycle_duration_seconds gauge\n"),
            std::string::npos);
  // Nothing observed, nothing shown for the rules: a rule's series starts with its first query.
  const std::string empty = RenderMetrics(ReadyView());
  EXPECT_EQ(empty.find("dynamic_scheduler_query_duration_seconds"), std::string::npos);
}

TEST(Metrics, BuildInfoNamesTheBuild) {
  ControllerView v = ReadyView();
  v.version = "0.2.0";
  v.commit = "3549a1a0c2f4-dirty";
  v.compiler = "clang 14.0.6";
  EXPECT_NE(RenderMetrics(v).find("dynamic_scheduler_build_info{commit=\"3549a1a0c2f4-dirty\","
                                  "compiler=\"clang 14.0.6\",revision=\"3549a1a0c2f4-dirty\","
                                  "version=\"0.2.0\"} 1\n"),
            std::string::npos)
      << RenderMetrics(v);
}

}  // namespace
}  // namespace ds
