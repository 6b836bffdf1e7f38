// The scheduler model's InterPodAffinity and PodTopologySpread filters (required terms and
// DoNotSchedule constraints), its VolumeBinding filter (bound claims' volume node affinity, and
// the PreFilter's missing and unbound claims), and the readers that feed them. The model's fast
// path (ChooseNode against Schedule) is checked in bench/effect/effect_test.cc.
#include "test/sched/scheduler_model.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <map>
#include <string>
#include <vector>

namespace sim {
namespace {

using Labels = std::map<std::string, std::string>;

SchedNode Node(const std::string& name, Labels labels) {
  SchedNode n;
  n.name = name;
  n.labels = std::move(labels);
  n.labels["kubernetes.io/hostname"] = name;
  n.cpu_milli = 4000;
  n.memory = 8LL << 30;
  return n;
}

// n0 and n1 in zone a, n2 in zone b, n3 without a zone.
std::vector<SchedNode> FourNodes() {
  return {Node("n0", {{"zone", "a"}}), Node("n1", {{"zone", "a"}}), Node("n2", {{"zone", "b"}}),
          Node("n3", {})};
}

SchedPod Pod(Labels labels, const std::string& node = "", const std::string& ns = "default") {
  SchedPod p;
  p.ns = ns;
  p.labels = std::move(labels);
  p.node = node;
  return p;
}

LabelSelector Select(const Labels& match_labels) {
  LabelSelector s{true, {}};
  for (const auto& [k, v] : match_labels) s.requirements.push_back({k, "In", {v}});
  return s;
}

PodAffinityTerm Term(const Labels& match_labels, const std::string& key) {
  PodAffinityTerm t;
  t.selector = Select(match_labels);
  t.topology_key = key;
  return t;
}

SpreadConstraint Spread(const Labels& match_labels, int32_t max_skew = 1) {
  SpreadConstraint c;
  c.max_skew = max_skew;
  c.topology_key = "zone";
  c.selector = Select(match_labels);
  return c;
}

// The nodes that passed every filter.
std::vector<std::string> Feasible(const ScheduleResult& r) {
  std::vector<std::string> out;
  for (const auto& s : r.scores) out.push_back(s.node);
  return out;
}

using Names = std::vector<std::string>;

constexpr char kAffinity[] = "node(s) didn't match pod affinity rules";
constexpr char kAntiAffinity[] = "node(s) didn't match pod anti-affinity rules";
constexpr char kExisting[] = "node(s) didn't satisfy existing pods anti-affinity rules";
constexpr char kSpread[] = "node(s) didn't match pod topology spread constraints";
constexpr char kSpreadLabel[] =
    "node(s) didn't match pod topology spread constraints (missing required label)";

// PodTopologySpread's system default on the hostname (ChooseNode's owner_pods): with its
// weight 2, a second pod of one ReplicaSet goes to another node even where its own node would
// score higher by requests, as kube-scheduler spreads a rollout's pods.
TEST(DefaultSpreadTest, AnOwnersSecondPodGoesToAnotherNode) {
  std::vector<SchedNode> nodes = {Node("n0", {}), Node("n1", {})};
  std::vector<NodeRequests> requested(2);
  SchedPod filler = Pod({});
  filler.cpu_milli = 500;
  filler.cpu_set = true;
  requested[1].Add(filler);  // n1 has a little less room: n0 wins on requests alone
  SchedPod pod = Pod({});
  pod.cpu_milli = 100;
  pod.memory = 1LL << 30;
  pod.cpu_set = pod.memory_set = true;
  EXPECT_EQ(ChooseNode(nodes, requested, pod), 0);
  std::vector<int32_t> owner = {0, 0};
  EXPECT_EQ(ChooseNode(nodes, requested, pod, &owner), 0) << "no pod of the owner yet";
  owner = {1, 0};
  EXPECT_EQ(ChooseNode(nodes, requested, pod, &owner), 1) << "spread beats a little more room";
  EXPECT_EQ(ChooseNode(nodes, requested, pod), 0) << "without the counts: requests decide";
}

TEST(InterPodAffinityTest, RequiredAffinityNeedsAMatchingPodInTheNodesDomain) {
  const auto nodes = FourNodes();
  SchedPod pod = Pod({{"app", "web"}});
  pod.pod_affinity.push_back(Term({{"app", "db"}}, "zone"));
  // Emptier nodes score higher: without the filter, n0 would win.
  const std::vector<SchedPod> bound = {Pod({{"app", "db"}}, "n2")};
  const ScheduleResult r = Schedule(nodes, bound, pod);
  EXPECT_EQ(r.node, "n2");
  EXPECT_EQ(Feasible(r), Names{"n2"});
  // n3 has no zone label: it fails whatever runs where.
  EXPECT_EQ(r.why, (std::map<std::string, int>{{kAffinity, 3}}));
  // Every term must hold.
  pod.pod_affinity.push_back(Term({{"app", "cache"}}, "zone"));
  EXPECT_EQ(Schedule(nodes, bound, pod).message,
            "0/4 nodes are available: 4 node(s) didn't match pod affinity rules.");
}

// The first pod of a group with affinity to itself may go to any node with the topology key, as
// long as no pod anywhere matches the terms; once one does, the others follow it.
TEST(InterPodAffinityTest, TheFirstOfASelfAffineGroupGoesAnywhereWithTheKey) {
  const auto nodes = FourNodes();
  SchedPod pod = Pod({{"app", "web"}});
  pod.pod_affinity.push_back(Term({{"app", "web"}}, "zone"));
  ScheduleResult r = Schedule(nodes, {}, pod);
  EXPECT_EQ(Feasible(r), (Names{"n0", "n1", "n2"}));
  EXPECT_EQ(r.why, (std::map<std::string, int>{{kAffinity, 1}}));  // n3: no zone label
  r = Schedule(nodes, {Pod({{"app", "web"}}, "n2")}, pod);
  EXPECT_EQ(Feasible(r), Names{"n2"});
  // A pod that does not match its own terms has no such pass.
  pod.labels = {{"app", "api"}};
  EXPECT_EQ(Schedule(nodes, {}, pod).node, "");
}

TEST(InterPodAffinityTest, TermNamespaces) {
  const auto nodes = FourNodes();
  const std::vector<SchedPod> bound = {Pod({{"app", "db"}}, "n2", "data")};
  SchedPod pod = Pod({{"app", "web"}});
  pod.pod_affinity.push_back(Term({{"app", "db"}}, "zone"));
  auto feasible = [&](const PodAffinityTerm& t) {
    pod.pod_affinity[0] = t;
    return Feasible(Schedule(nodes, bound, pod));
  };
  PodAffinityTerm t = Term({{"app", "db"}}, "zone");
  EXPECT_EQ(feasible(t), Names{});  // no namespaces, no selector: the pod's own namespace
  t.namespaces = {"data"};
  EXPECT_EQ(feasible(t), Names{"n2"});
  t.namespaces.clear();
  t.namespace_selector = LabelSelector{true, {}};  // {}: every namespace
  EXPECT_EQ(feasible(t), Names{"n2"});
  t.namespace_selector = Select({{"kubernetes.io/metadata.name", "data"}});
  EXPECT_EQ(feasible(t), Names{"n2"});
  t.namespace_selector = Select({{"team", "storage"}});  // namespace labels beyond the name: none
  EXPECT_EQ(feasible(t), Names{});
}

TEST(InterPodAffinityTest, RequiredAntiAffinityKeepsOutOfDomainsWithAMatchingPod) {
  const auto nodes = FourNodes();
  SchedPod pod = Pod({{"app", "web"}});
  pod.pod_anti_affinity.push_back(Term({{"app", "web"}}, "zone"));
  const ScheduleResult r = Schedule(nodes, {Pod({{"app", "web"}}, "n0")}, pod);
  // n1 shares n0's zone; n3 has no zone label and passes.
  EXPECT_EQ(Feasible(r), (Names{"n2", "n3"}));
  EXPECT_EQ(r.why, (std::map<std::string, int>{{kAntiAffinity, 2}}));
  // A pod of another namespace does not count.
  EXPECT_EQ(Feasible(Schedule(nodes, {Pod({{"app", "web"}}, "n0", "other")}, pod)),
            (Names{"n0", "n1", "n2", "n3"}));
}

TEST(InterPodAffinityTest, ExistingPodsAntiAffinityKeepsTheIncomingPodAway) {
  const auto nodes = FourNodes();
  SchedPod db = Pod({{"app", "db"}}, "n0");
  db.pod_anti_affinity.push_back(Term({{"app", "web"}}, "zone"));
  SchedPod web = Pod({{"app", "web"}});
  ScheduleResult r = Schedule(nodes, {db}, web);
  EXPECT_EQ(Feasible(r), (Names{"n2", "n3"}));
  EXPECT_EQ(r.why, (std::map<std::string, int>{{kExisting, 2}}));
  // The existing pod's term defaults to its own namespace ...
  web.ns = "other";
  EXPECT_EQ(Feasible(Schedule(nodes, {db}, web)), (Names{"n0", "n1", "n2", "n3"}));
  // ... and its namespaceSelector is matched against the incoming pod's namespace.
  db.pod_anti_affinity[0].namespace_selector = Select({{"kubernetes.io/metadata.name", "other"}});
  EXPECT_EQ(Feasible(Schedule(nodes, {db}, web)), (Names{"n2", "n3"}));
}

// InterPodAffinity counts every pod of the node, as the scheduler's NodeInfo holds terminating
// pods until they are gone.
TEST(InterPodAffinityTest, TerminatingPodsStillCount) {
  const auto nodes = FourNodes();
  SchedPod old = Pod({{"app", "web"}}, "n0");
  old.terminating = true;
  SchedPod pod = Pod({{"app", "web"}});
  pod.pod_anti_affinity.push_back(Term({{"app", "web"}}, "kubernetes.io/hostname"));
  EXPECT_EQ(Feasible(Schedule(nodes, {old}, pod)), (Names{"n1", "n2", "n3"}));
}

TEST(InterPodAffinityTest, MatchAndMismatchLabelKeysUseTheOwnersLabels) {
  const auto nodes = FourNodes();
  // One replica per node of the same revision: a pod of the old revision does not repel.
  SchedPod pod = Pod({{"app", "web"}, {"pod-template-hash", "new"}});
  PodAffinityTerm anti = Term({{"app", "web"}}, "kubernetes.io/hostname");
  anti.match_label_keys = {"pod-template-hash"};
  pod.pod_anti_affinity.push_back(anti);
  const std::vector<SchedPod> bound = {Pod({{"app", "web"}, {"pod-template-hash", "old"}}, "n0"),
                                       Pod({{"app", "web"}, {"pod-template-hash", "new"}}, "n1")};
  EXPECT_EQ(Feasible(Schedule(nodes, bound, pod)), (Names{"n0", "n2", "n3"}));
  // Next to a pod of another tenant only.
  SchedPod tenant = Pod({{"app", "web"}, {"tenant", "a"}});
  PodAffinityTerm aff = Term({{"app", "web"}}, "kubernetes.io/hostname");
  aff.mismatch_label_keys = {"tenant"};
  tenant.pod_affinity.push_back(aff);
  const std::vector<SchedPod> tenants = {Pod({{"app", "web"}, {"tenant", "a"}}, "n0"),
                                         Pod({{"app", "web"}, {"tenant", "b"}}, "n1")};
  EXPECT_EQ(Feasible(Schedule(nodes, tenants, tenant)), Names{"n1"});
  // An existing pod's keys take that pod's values.
  SchedPod existing = Pod({{"app", "web"}, {"pod-template-hash", "old"}}, "n0");
  existing.pod_anti_affinity.push_back(anti);
  SchedPod incoming = Pod({{"app", "web"}, {"pod-template-hash", "new"}});
  EXPECT_EQ(Feasible(Schedule(nodes, {existing}, incoming)), (Names{"n0", "n1", "n2", "n3"}));
  incoming.labels["pod-template-hash"] = "old";
  EXPECT_EQ(Feasible(Schedule(nodes, {existing}, incoming)), (Names{"n1", "n2", "n3"}));
}

// Within the plugin the first failing rule is the node's only reason.
TEST(InterPodAffinityTest, OneReasonPerNode) {
  const auto nodes = FourNodes();
  SchedPod db = Pod({{"app", "db"}}, "n0");
  db.pod_anti_affinity.push_back(Term({{"app", "web"}}, "zone"));
  SchedPod pod = Pod({{"app", "web"}});
  pod.pod_anti_affinity.push_back(Term({{"app", "db"}}, "zone"));
  const ScheduleResult r = Schedule(nodes, {db}, pod);
  EXPECT_EQ(r.why, (std::map<std::string, int>{{kAntiAffinity, 2}}));
}

TEST(PodTopologySpreadTest, SkewIsTheDomainsCountPlusSelfMinusTheGlobalMinimum) {
  const auto nodes = FourNodes();
  const std::vector<SchedPod> bound = {Pod({{"app", "web"}}, "n0"), Pod({{"app", "web"}}, "n1")};
  SchedPod pod = Pod({{"app", "web"}});
  pod.spread.push_back(Spread({{"app", "web"}}));
  ScheduleResult r = Schedule(nodes, bound, pod);
  // Zone a: 2 + 1 - 0 > 1; zone b: 0 + 1 - 0; n3 lacks the key.
  EXPECT_EQ(r.node, "n2");
  EXPECT_EQ(Feasible(r), Names{"n2"});
  EXPECT_EQ(r.why, (std::map<std::string, int>{{kSpread, 2}, {kSpreadLabel, 1}}));
  pod.spread[0].max_skew = 3;
  EXPECT_EQ(Feasible(Schedule(nodes, bound, pod)), (Names{"n0", "n1", "n2"}));
  pod.spread[0].max_skew = 2;  // 2 + 1 - 0 > 2
  EXPECT_EQ(Feasible(Schedule(nodes, bound, pod)), Names{"n2"});
  pod.labels = {{"app", "api"}};  // outside the selector, it adds nothing: 2 + 0 - 0
  EXPECT_EQ(Feasible(Schedule(nodes, bound, pod)), (Names{"n0", "n1", "n2"}));
}

TEST(PodTopologySpreadTest, CountsLivePodsOfThePodsNamespaceOnly) {
  const auto nodes = FourNodes();
  SchedPod leaving = Pod({{"app", "web"}}, "n0");
  leaving.terminating = true;
  const std::vector<SchedPod> bound = {leaving, Pod({{"app", "web"}}, "n1", "other")};
  SchedPod pod = Pod({{"app", "web"}});
  pod.spread.push_back(Spread({{"app", "web"}}));
  EXPECT_EQ(Feasible(Schedule(nodes, bound, pod)), (Names{"n0", "n1", "n2"}));
}

// countPodsMatchSelector counts nothing for an empty selector, which the pod itself matches.
TEST(PodTopologySpreadTest, AnEmptySelectorCountsNoPod) {
  const auto nodes = FourNodes();
  const std::vector<SchedPod> bound = {Pod({{"app", "web"}}, "n0"), Pod({{"app", "web"}}, "n1")};
  SchedPod pod = Pod({{"app", "web"}});
  pod.spread.push_back(Spread({}));
  EXPECT_EQ(Feasible(Schedule(nodes, bound, pod)), (Names{"n0", "n1", "n2"}));
  pod.spread[0].max_skew = 0;  // 0 + 1 - 0: the pod itself counts
  EXPECT_EQ(Feasible(Schedule(nodes, bound, pod)), Names{});
}

// Eligible domains come from the nodes that pass the pod's node affinity (Honor by default) and,
// with nodeTaintsPolicy Honor, its tolerations (Ignore by default).
TEST(PodTopologySpreadTest, NodeInclusionPolicies) {
  std::vector<SchedNode> nodes = {Node("n0", {{"zone", "a"}, {"disk", "ssd"}}),
                                  Node("n1", {{"zone", "b"}, {"disk", "ssd"}}),
                                  Node("n2", {{"zone", "c"}})};
  const std::vector<SchedPod> bound = {Pod({{"app", "web"}}, "n0"), Pod({{"app", "web"}}, "n1")};
  SchedPod pod = Pod({{"app", "web"}});
  pod.node_selector = {{"disk", "ssd"}};
  pod.spread.push_back(Spread({{"app", "web"}}));
  // Zone c is not the pod's to use: the minimum is 1, and 1 + 1 - 1 <= 1.
  EXPECT_EQ(Feasible(Schedule(nodes, bound, pod)), (Names{"n0", "n1"}));
  pod.spread[0].honor_node_affinity = false;  // zone c counts: 1 + 1 - 0 > 1
  EXPECT_EQ(Feasible(Schedule(nodes, bound, pod)), Names{});

  pod = Pod({{"app", "web"}});
  pod.spread.push_back(Spread({{"app", "web"}}));
  nodes[2].taints.push_back({"dedicated", "batch", "NoSchedule"});
  EXPECT_EQ(Feasible(Schedule(nodes, bound, pod)), Names{});  // taints ignored: zone c counts
  pod.spread[0].honor_node_taints = true;
  EXPECT_EQ(Feasible(Schedule(nodes, bound, pod)), (Names{"n0", "n1"}));
  pod.tolerations.push_back({"dedicated", "Equal", "batch", "NoSchedule"});
  EXPECT_EQ(Feasible(Schedule(nodes, bound, pod)), Names{"n2"});
}

TEST(PodTopologySpreadTest, FewerDomainsThanMinDomainsMakeTheMinimumZero) {
  std::vector<SchedNode> nodes = {Node("n0", {{"zone", "a"}}), Node("n1", {{"zone", "b"}})};
  const std::vector<SchedPod> bound = {Pod({{"app", "web"}}, "n0"), Pod({{"app", "web"}}, "n1")};
  SchedPod pod = Pod({{"app", "web"}});
  pod.spread.push_back(Spread({{"app", "web"}}));
  pod.spread[0].min_domains = 2;
  EXPECT_EQ(Feasible(Schedule(nodes, bound, pod)), (Names{"n0", "n1"}));
  pod.spread[0].min_domains = 3;  // 1 + 1 - 0 > 1
  const ScheduleResult r = Schedule(nodes, bound, pod);
  EXPECT_EQ(r.message,
            "0/2 nodes are available: 2 node(s) didn't match pod topology spread constraints.");
}

TEST(PodTopologySpreadTest, MatchLabelKeysNarrowTheSelectorToThePodsValues) {
  const auto nodes = FourNodes();
  const std::vector<SchedPod> bound = {Pod({{"app", "web"}, {"pod-template-hash", "old"}}, "n0"),
                                       Pod({{"app", "web"}, {"pod-template-hash", "old"}}, "n1")};
  SchedPod pod = Pod({{"app", "web"}, {"pod-template-hash", "new"}});
  pod.spread.push_back(Spread({{"app", "web"}}));
  EXPECT_EQ(Feasible(Schedule(nodes, bound, pod)), Names{"n2"});
  pod.spread[0].match_label_keys = {"pod-template-hash"};  // the old revision no longer counts
  EXPECT_EQ(Feasible(Schedule(nodes, bound, pod)), (Names{"n0", "n1", "n2"}));
}

TEST(SchedulerModelTest, PodFromJsonReadsWhatThePodFiltersNeed) {
  rapidjson::Document d;
  d.Parse(R"({
    "metadata": {"name": "w", "namespace": "shop", "labels": {"app": "web", "rev": "2"},
                 "deletionTimestamp": "2024-01-01T00:00:00Z"},
    "spec": {
      "nodeName": "n1",
      "affinity": {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
          {"labelSelector": {"matchLabels": {"app": "db"},
                             "matchExpressions": [{"key": "tier", "operator": "NotIn",
                                                   "values": ["test"]}]},
           "namespaces": ["data"], "namespaceSelector": {}, "topologyKey": "zone",
           "matchLabelKeys": ["rev"], "mismatchLabelKeys": ["tenant"]}]},
        "podAntiAffinity": {
          "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "host"}],
          "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "podAffinityTerm": {"topologyKey": "zone"}}]}},
      "topologySpreadConstraints": [
        {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "web"}}, "matchLabelKeys": ["rev"],
         "minDomains": 3, "nodeAffinityPolicy": "Ignore", "nodeTaintsPolicy": "Honor"},
        {"maxSkew": 1, "topologyKey": "host", "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": {"app": "web"}}},
        {"maxSkew": 1, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule"}]}})");
  ASSERT_FALSE(d.HasParseError());
  const SchedPod p = PodFromJson(d);
  EXPECT_EQ(p.ns, "shop");
  EXPECT_EQ(p.labels, (Labels{{"app", "web"}, {"rev", "2"}}));
  EXPECT_TRUE(p.terminating);
  ASSERT_EQ(p.pod_affinity.size(), 1u);
  const PodAffinityTerm& a = p.pod_affinity[0];
  EXPECT_TRUE(a.selector.set);
  ASSERT_EQ(a.selector.requirements.size(), 2u);
  EXPECT_EQ(a.selector.requirements[0].key, "app");
  EXPECT_EQ(a.selector.requirements[0].op, "In");
  EXPECT_EQ(a.selector.requirements[0].values, Names{"db"});
  EXPECT_EQ(a.selector.requirements[1].op, "NotIn");
  EXPECT_EQ(a.namespaces, Names{"data"});
  EXPECT_TRUE(a.namespace_selector.set);
  EXPECT_TRUE(a.namespace_selector.requirements.empty());
  EXPECT_EQ(a.topology_key, "zone");
  EXPECT_EQ(a.match_label_keys, Names{"rev"});
  EXPECT_EQ(a.mismatch_label_keys, Names{"tenant"});
  ASSERT_EQ(p.pod_anti_affinity.size(), 1u);          // the preferred term is scoring only
  EXPECT_FALSE(p.pod_anti_affinity[0].selector.set);  // absent: selects nothing
  EXPECT_FALSE(p.pod_anti_affinity[0].namespace_selector.set);
  ASSERT_EQ(p.spread.size(), 2u);  // ScheduleAnyway dropped
  EXPECT_EQ(p.spread[0].max_skew, 2);
  EXPECT_EQ(p.spread[0].topology_key, "zone");
  EXPECT_EQ(p.spread[0].selector.requirements.size(), 1u);
  EXPECT_EQ(p.spread[0].match_label_keys, Names{"rev"});
  EXPECT_EQ(p.spread[0].min_domains, 3);
  EXPECT_FALSE(p.spread[0].honor_node_affinity);
  EXPECT_TRUE(p.spread[0].honor_node_taints);
  EXPECT_EQ(p.spread[1].topology_key, "rack");
  EXPECT_FALSE(p.spread[1].selector.set);
  EXPECT_EQ(p.spread[1].min_domains, 1);
  EXPECT_TRUE(p.spread[1].honor_node_affinity);
  EXPECT_FALSE(p.spread[1].honor_node_taints);
  // A pod without metadata or affinity reads as before.
  d.Parse(R"({"spec": {"containers": [{"resources": {"requests": {"cpu": "250m"}}}]}})");
  const SchedPod plain = PodFromJson(d);
  EXPECT_EQ(plain.cpu_milli, 250);
  EXPECT_FALSE(plain.terminating);
  EXPECT_TRUE(plain.pod_affinity.empty() && plain.pod_anti_affinity.empty() &&
              plain.spread.empty());
}

// --- VolumeBinding ---

constexpr char kVolumeConflict[] = "node(s) had volume node affinity conflict";

// A pod in "default" with persistentVolumeClaim volumes.
SchedPod PodWithClaims(std::vector<std::string> claims) {
  SchedPod p = Pod({});
  p.claims = std::move(claims);
  return p;
}

// A claim the PV controller bound to `volume`.
SchedClaim Bound(const std::string& volume) {
  SchedClaim c;
  c.volume_name = volume;
  c.bind_completed = true;
  return c;
}

// A volume reachable from the nodes whose `key` is one of `values` (one term per value: ORed).
SchedVolume PinnedTo(const std::string& key, const std::vector<std::string>& values) {
  SchedVolume v;
  v.has_required = true;
  for (const auto& value : values) v.required.push_back({{key, "In", {value}}});
  return v;
}

TEST(VolumeBindingTest, BoundVolumeNodeAffinityLimitsTheNodes) {
  const auto nodes = FourNodes();
  SchedVolumes vols;
  vols.claims["default/data"] = Bound("pv-1");
  vols.volumes["pv-1"] = PinnedTo("kubernetes.io/hostname", {"n2"});
  const SchedPod pod = PodWithClaims({"data"});
  ScheduleResult r = Schedule(nodes, {}, pod, vols);
  EXPECT_EQ(r.node, "n2");
  EXPECT_EQ(Feasible(r), Names{"n2"});
  EXPECT_EQ(r.why.at(kVolumeConflict), 3);
  // The terms are ORed; a term's requirements are ANDed.
  vols.volumes["pv-1"] = PinnedTo("zone", {"b", "a"});
  EXPECT_EQ(Feasible(Schedule(nodes, {}, pod, vols)), (Names{"n0", "n1", "n2"}));
  vols.volumes["pv-1"].required = {
      {{"zone", "In", {"a"}}, {"kubernetes.io/hostname", "In", {"n1"}}}};
  EXPECT_EQ(Feasible(Schedule(nodes, {}, pod, vols)), Names{"n1"});
  // Required with no terms matches no node.
  vols.volumes["pv-1"].required.clear();
  r = Schedule(nodes, {}, pod, vols);
  EXPECT_EQ(r.node, "");
  EXPECT_EQ(r.message, "0/4 nodes are available: 4 node(s) had volume node affinity conflict.");
  // A volume without node affinity goes anywhere.
  vols.volumes["pv-1"] = SchedVolume{};
  EXPECT_EQ(Feasible(Schedule(nodes, {}, pod, vols)), (Names{"n0", "n1", "n2", "n3"}));
}

TEST(VolumeBindingTest, EveryClaimsVolumeMustReachTheNode) {
  const auto nodes = FourNodes();
  SchedVolumes vols;
  vols.claims["default/a"] = Bound("pv-a");
  vols.claims["default/b"] = Bound("pv-b");
  vols.volumes["pv-a"] = PinnedTo("zone", {"a"});
  vols.volumes["pv-b"] = PinnedTo("kubernetes.io/hostname", {"n1", "n2"});
  EXPECT_EQ(Feasible(Schedule(nodes, {}, PodWithClaims({"a", "b"}), vols)), Names{"n1"});
  // Other filters still apply: a node the volume reaches but the pod's selector excludes.
  SchedPod pod = PodWithClaims({"a", "b"});
  pod.node_selector = {{"kubernetes.io/hostname", "n0"}};
  const ScheduleResult r = Schedule(nodes, {}, pod, vols);
  EXPECT_EQ(r.node, "");
  EXPECT_EQ(r.why.at(kVolumeConflict), 3);  // n0 (pv-b), n2 and n3 (pv-a)
}

TEST(VolumeBindingTest, BoundToAMissingVolume) {
  SchedVolumes vols;
  vols.claims["default/data"] = Bound("gone");
  const ScheduleResult r = Schedule(FourNodes(), {}, PodWithClaims({"data"}), vols);
  EXPECT_EQ(r.node, "");
  EXPECT_EQ(r.message,
            "0/4 nodes are available: 4 node(s) unavailable due to one or more pvc(s) bound to "
            "non-existent pv(s).");
}

TEST(VolumeBindingTest, PreFilterRejectsMissingUnboundAndDeletingClaims) {
  const auto nodes = FourNodes();
  SchedVolumes vols;
  vols.volumes["pv-1"] = SchedVolume{};
  struct Case {
    const char* what;
    SchedClaim claim;
    std::string message;
  };
  SchedClaim pending;
  SchedClaim prebound;  // spec.volumeName set, the PV controller has not completed the binding
  prebound.volume_name = "pv-1";
  SchedClaim deleting = Bound("pv-1");
  deleting.deleting = true;
  SchedClaim lost = Bound("pv-0");
  lost.lost = true;
  const std::vector<Case> cases = {
      {"unbound", pending,
       "0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims."},
      {"prebound", prebound,
       "0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims."},
      {"deleting", deleting,
       "0/4 nodes are available: persistentvolumeclaim \"data\" is being deleted."},
      {"lost", lost,
       "0/4 nodes are available: persistentvolumeclaim \"data\" bound to non-existent "
       "persistentvolume \"pv-0\"."},
  };
  for (const Case& c : cases) {
    vols.claims["default/data"] = c.claim;
    const ScheduleResult r = Schedule(nodes, {}, PodWithClaims({"data"}), vols);
    EXPECT_EQ(r.node, "") << c.what;
    EXPECT_EQ(r.message, c.message) << c.what;
    EXPECT_TRUE(r.scores.empty()) << c.what;
  }
  // Missing: the claim is looked up in the pod's namespace only.
  vols.claims.clear();
  vols.claims["other/data"] = Bound("pv-1");
  ScheduleResult r = Schedule(nodes, {}, PodWithClaims({"data"}), vols);
  EXPECT_EQ(r.message, "0/4 nodes are available: persistentvolumeclaim \"data\" not found.");
  EXPECT_EQ(r.why.at("persistentvolumeclaim \"data\" not found"), 4);
  // Claims are checked in the pod's order: the first missing one is named.
  vols.claims["default/data"] = pending;
  r = Schedule(nodes, {}, PodWithClaims({"data", "logs"}), vols);
  EXPECT_EQ(r.message, "0/4 nodes are available: persistentvolumeclaim \"logs\" not found.");
  // A pod without claims needs no volumes.
  EXPECT_EQ(Schedule(nodes, {}, Pod({}), SchedVolumes{}).node, "n0");
}

TEST(VolumeBindingTest, ReadersTakeClaimsVolumesAndThePodsClaimNames) {
  rapidjson::Document d;
  d.Parse(R"({"metadata": {"name": "db"}, "spec": {"volumes": [
      {"name": "tmp", "emptyDir": {}},
      {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}},
      {"name": "logs", "persistentVolumeClaim": {"claimName": "logs", "readOnly": true}}]}})");
  EXPECT_EQ(PodFromJson(d).claims, (Names{"data-db-0", "logs"}));
  SchedVolumes vols;
  d.Parse(R"({"metadata": {"name": "data-db-0", "namespace": "shop",
                           "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
              "spec": {"volumeName": "pv-7"}, "status": {"phase": "Bound"}})");
  AddClaimFromJson(d, &vols);
  d.Parse(R"({"metadata": {"name": "logs", "namespace": "shop",
                           "deletionTimestamp": "2024-01-01T00:00:00Z"},
              "spec": {"volumeName": "pv-8"}, "status": {"phase": "Lost"}})");
  AddClaimFromJson(d, &vols);
  ASSERT_EQ(vols.claims.size(), 2u);
  const SchedClaim& c = vols.claims.at("shop/data-db-0");
  EXPECT_EQ(c.volume_name, "pv-7");
  EXPECT_TRUE(c.bind_completed);
  EXPECT_FALSE(c.deleting || c.lost);
  const SchedClaim& l = vols.claims.at("shop/logs");
  EXPECT_FALSE(l.bind_completed);
  EXPECT_TRUE(l.deleting && l.lost);
  d.Parse(R"({"metadata": {"name": "pv-7"}, "spec": {"nodeAffinity": {"required": {
      "nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                               "values": ["n1", "n2"]}]},
        {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]}}}})");
  AddVolumeFromJson(d, &vols);
  d.Parse(R"({"metadata": {"name": "pv-8"}, "spec": {"hostPath": {"path": "/x"}}})");
  AddVolumeFromJson(d, &vols);
  const SchedVolume& v = vols.volumes.at("pv-7");
  EXPECT_TRUE(v.has_required);
  ASSERT_EQ(v.required.size(), 2u);
  EXPECT_EQ(v.required[0][0].values, (Names{"n1", "n2"}));
  EXPECT_EQ(v.required[1][0].op, "Exists");
  EXPECT_FALSE(vols.volumes.at("pv-8").has_required);
}

}  // namespace
}  // namespace sim
