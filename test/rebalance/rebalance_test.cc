// The rebalancer's pure choices: which pods may go, which would fit elsewhere, which to move, and
// every limit on evicting. Each test names one rule and fails without it.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <limits>

#include "rebalance/effect.h"
#include "rebalance/evictable.h"
#include "rebalance/eviction_budget.h"
#include "rebalance/eviction_text.h"
#include "rebalance/kubelet_order.h"
#include "rebalance/node_relief.h"
#include "rebalance/placement.h"
#include "rebalance/pod_choice.h"
#include "rebalance/pod_usage.h"
#include "rebalance/qualify.h"
#include "rebalance/relief_plan.h"
#include "rebalance/steering.h"
#include "rebalance/underuse.h"

namespace ds {
namespace {

constexpr double kNow = 1795435200;  // 2026-11-23 12:00 UTC

PodInfo Pod(const std::string& name, const std::string& node = "hot") {
  PodInfo p;
  p.ns = "shop";
  p.name = name;
  p.node = node;
  p.owner_kind = "ReplicaSet";
  p.owner_name = "web-" + name;
  p.phase = "Running";
  p.ready = true;
  p.created_wall = kNow - 3600;
  p.cpu_request = 0.5;
  p.memory_request = 256e6;
  return p;
}

TEST(Evictable, DeschedulersDefaultsAndOurs) {
  EvictablePolicy policy;
  policy.exclude_namespaces = {"kube-system"};
  struct Case {
    const char* name;
    std::function<void(PodInfo*)> change;
    Keep want;
  } cases[] = {
      {"a plain replica", [](PodInfo*) {}, Keep::kNone},
      {"daemonset", [](PodInfo* p) { p->owner_kind = "DaemonSet"; }, Keep::kDaemonSet},
      {"mirror", [](PodInfo* p) { p->mirror = true; }, Keep::kMirror},
      {"bare", [](PodInfo* p) { p->owner_kind.clear(); }, Keep::kBare},
      {"emptyDir", [](PodInfo* p) { p->local_storage = true; }, Keep::kLocalStorage},
      {"critical", [](PodInfo* p) { p->priority = 2000000000; }, Keep::kCritical},
      {"node critical class", [](PodInfo* p) { p->priority_class = "system-node-critical"; },
       Keep::kCritical},
      {"terminating", [](PodInfo* p) { p->terminating = true; }, Keep::kTerminating},
      {"pending", [](PodInfo* p) { p->phase = "Pending"; }, Keep::kNotRunning},
      {"succeeded", [](PodInfo* p) { p->phase = "Succeeded"; }, Keep::kNotRunning},
      {"young", [](PodInfo* p) { p->created_wall = kNow - 60; }, Keep::kTooYoung},
      {"opted out",
       [](PodInfo* p) {
         p->annotations = {{kEvictOptOutAnnotation, "false"}};
       },
       Keep::kOptedOut},
      {"excluded namespace", [](PodInfo* p) { p->ns = "kube-system"; }, Keep::kNamespace},
  };
  for (const Case& c : cases) {
    PodInfo p = Pod("a");
    c.change(&p);
    EXPECT_EQ(CheckEvictable(p, policy, kNow), c.want) << c.name << ": " << KeepName(c.want);
  }
  policy.include_namespaces = {"payments"};
  EXPECT_EQ(CheckEvictable(Pod("a"), policy, kNow), Keep::kNamespace) << "not included";
  EvictablePolicy lenient;
  lenient.evict_bare_pods = lenient.evict_local_storage = true;
  PodInfo bare = Pod("a");
  bare.owner_kind.clear();
  bare.local_storage = true;
  EXPECT_EQ(CheckEvictable(bare, lenient, kNow), Keep::kNone) << "allowed by the policy";
}

PlacementNode Node(const std::string& name, double cpu_free, bool marked = false) {
  PlacementNode n;
  n.name = name;
  n.marked = marked;
  n.allocatable_cpu = 4;
  n.requested_cpu = 4 - cpu_free;
  n.allocatable_memory = 16e9;
  n.allocatable_other = {{"pods", 110}};
  return n;
}

TEST(Placement, OnlyWhereTheSchedulerCouldPutIt) {
  PlacementNode tainted = Node("tainted", 4);
  tainted.taints = {{"gpu", "true", "NoSchedule"}};
  PlacementNode prefer = Node("prefer", 1);
  prefer.taints = {{"spot", "", "PreferNoSchedule"}};  // scores, never filters
  PlacementNode cordoned = Node("cordoned", 4);
  cordoned.unschedulable = true;
  Placement place(
      {Node("hot", 4), Node("also-hot", 4, /*marked=*/true), tainted, cordoned, prefer});
  PodInfo p = Pod("a");
  EXPECT_EQ(place.Reserve(p, "hot"), "prefer");
  EXPECT_EQ(place.Reserve(p, "hot"), "prefer") << "0.5 cores left of 1";
  EXPECT_EQ(place.Reserve(p, "hot"), "") << "full now: the reservations count";
  p.tolerations = {{"gpu", "Equal", "true", "NoSchedule"}};
  EXPECT_EQ(place.Reserve(p, "hot"), "tainted");
  p.node_selector = {{"zone", "b"}};
  EXPECT_EQ(place.Reserve(p, "hot"), "") << "no node has zone=b";
}

// NodeAffinity's filter on the destination's whole labels and name: a pod pinned to the node it
// leaves fits nowhere else (its replacement would stay Pending), one that needs a zone fits there.
TEST(Placement, RequiredNodeAffinityIsTheSchedulersFilter) {
  PlacementNode a = Node("a", 4), b = Node("b", 4);
  a.labels = {{"topology.kubernetes.io/zone", "z1"}};
  b.labels = {{"topology.kubernetes.io/zone", "z2"}};
  Placement place({a, b});
  PodInfo pinned = Pod("pinned");
  pinned.required_affinity = {NodeSelectorTerm{{{"kubernetes.io/hostname", "In", {"hot"}}}, {}}};
  EXPECT_EQ(place.Reserve(pinned, "hot"), "");
  PodInfo by_name = Pod("by-name");
  by_name.required_affinity = {NodeSelectorTerm{{}, {{"metadata.name", "In", {"hot"}}}}};
  EXPECT_EQ(place.Reserve(by_name, "hot"), "");
  PodInfo zoned = Pod("zoned");
  zoned.required_affinity = {NodeSelectorTerm{{{"topology.kubernetes.io/zone", "In", {"z2"}}}, {}}};
  EXPECT_EQ(place.Reserve(zoned, "hot"), "b");
  zoned.required_affinity.push_back(
      NodeSelectorTerm{{{"topology.kubernetes.io/zone", "In", {"z1"}}}, {}});
  EXPECT_EQ(place.Reserve(zoned, "hot"), "a") << "terms are ORed; a has more room left now";
}

// NodeResourcesFit beyond cpu and memory, and NodePorts.
TEST(Placement, PodCountExtendedResourcesAndHostPorts) {
  PlacementNode full = Node("full", 4);
  full.requested_other = {{"pods", 110}};
  PlacementNode gpu = Node("gpu", 2);
  gpu.allocatable_other.emplace_back("nvidia.com/gpu", 1);
  gpu.host_ports = {{8080, "TCP", ""}};
  Placement place({full, gpu});
  PodInfo p = Pod("a");
  EXPECT_EQ(place.Reserve(p, "hot"), "gpu") << "full has 110 of 110 pods, though room for more";
  PodInfo wants_gpu = Pod("g");
  wants_gpu.other_requests = {{"nvidia.com/gpu", 1}};
  EXPECT_EQ(place.Reserve(wants_gpu, "hot"), "gpu");
  EXPECT_EQ(place.Reserve(wants_gpu, "hot"), "") << "its one GPU is reserved now";
  PodInfo port = Pod("p");
  port.host_ports = {{8080, "TCP", "10.0.0.5"}};
  EXPECT_EQ(place.Reserve(port, "hot"), "") << "8080/TCP is bound on every address of gpu";
  port.host_ports = {{8080, "UDP", ""}};
  EXPECT_EQ(place.Reserve(port, "hot"), "gpu") << "another protocol";
  PlacementNode unreported = Node("unreported", 4);
  unreported.allocatable_other.clear();
  EXPECT_EQ(Placement({unreported}).Reserve(Pod("b"), "hot"), "")
      << "a node that reports no pod capacity takes none, as the scheduler reads it";
}

TEST(Placement, AConstraintItDoesNotJudgeFitsNowhere) {
  Placement place({Node("a", 4)});
  PodInfo p = Pod("a");
  p.unjudged = {"podAntiAffinity (namespaceSelector)"};
  EXPECT_EQ(place.Reserve(p, "hot"), "");
  p.unjudged.clear();
  EXPECT_EQ(place.Reserve(p, "hot"), "a");
}

// A group term over `app` in `key`'s topology, in the pods' namespace.
PodGroupTerm Group(const std::string& app, const std::string& key, int32_t max_skew = 0) {
  PodGroupTerm t;
  t.selector = *LabelSelector::Parse("app=" + app);
  t.namespaces = {"shop"};
  t.topology_key = key;
  t.max_skew = max_skew;
  return t;
}

ResidentPod Resident(const std::string& uid, const std::string& app) {
  return ResidentPod{uid, "shop", {{"app", app}}, false, false, {}};
}

PlacementNode Host(const std::string& name, const std::string& zone = "z1") {
  PlacementNode n = Node(name, 4);
  n.labels = {{"kubernetes.io/hostname", name}, {"topology.kubernetes.io/zone", zone}};
  return n;
}

const char* const kHost = "kubernetes.io/hostname";
const char* const kZone = "topology.kubernetes.io/zone";

// InterPodAffinity: the pod's own required anti-affinity, judged on the destination's pods and
// on the replacements sent there in the same cycle.
TEST(Placement, RequiredAntiAffinityKeepsReplicasApart) {
  PlacementNode a = Host("a"), b = Host("b");
  a.pods = {Resident("w1", "web")};
  b.requested_cpu = 1;  // a has more room: without the term, a would be chosen
  Placement place({a, b});
  PodInfo web = Pod("web");
  web.uid = "w2";
  web.labels = {{"app", "web"}};
  web.pod_anti_affinity = {Group("web", kHost)};
  EXPECT_EQ(place.Reserve(web, "hot"), "b") << "a already runs a web pod";
  web.uid = "w3";
  EXPECT_EQ(place.Reserve(web, "hot"), "") << "b runs the replacement sent there just now";
  PodInfo other = Pod("other");
  other.labels = {{"app", "web"}};
  EXPECT_EQ(place.Reserve(other, "hot"), "a") << "no term of its own, none on a's pods";
}

// The required anti-affinity of a pod already on the destination keeps the replacement away too
// (the scheduler's symmetric check).
TEST(Placement, AnExistingPodsAntiAffinityKeepsItAway) {
  PlacementNode a = Host("a"), b = Host("b");
  ResidentPod guard = Resident("g", "db");
  guard.anti_affinity = {Group("web", kHost)};
  a.pods = {guard};
  b.requested_cpu = 1;
  Placement place({a, b});
  PodInfo web = Pod("web");
  web.labels = {{"app", "web"}};
  EXPECT_EQ(place.Reserve(web, "hot"), "b");
  web.ns = "other";
  EXPECT_EQ(place.Reserve(web, "hot"), "a") << "the guard's term counts its own namespace only";
}

// Required pod affinity: the replacement must join a pod of the group in the domain; a pod on
// its way out (terminating) is no company.
TEST(Placement, RequiredAffinityNeedsAPodOfTheGroupThere) {
  PlacementNode a = Host("a"), b = Host("b");
  b.requested_cpu = 1;
  b.pods = {Resident("c1", "cache")};
  ResidentPod leaving = Resident("c2", "cache");
  leaving.terminating = true;
  a.pods = {leaving};
  Placement place({a, b});
  PodInfo web = Pod("web");
  web.pod_affinity = {Group("cache", kHost)};
  EXPECT_EQ(place.Reserve(web, "hot"), "b");
  PodInfo lonely = Pod("lonely");
  lonely.pod_affinity = {Group("search", kHost)};
  EXPECT_EQ(place.Reserve(lonely, "hot"), "") << "no search pod anywhere listed";
}

// A replacement this cycle's plan sends somewhere is no company for another pod's required
// affinity: the scheduler decides where it really lands.
TEST(Placement, APlannedReplacementIsNoCompany) {
  PlacementNode a = Host("a"), b = Host("b");
  Placement place({a, b});
  PodInfo redis = Pod("redis");
  redis.labels = {{"app", "redis"}};
  ASSERT_NE(place.Reserve(redis, "hot"), "");
  PodInfo web = Pod("web");
  web.pod_affinity = {Group("redis", kHost)};
  EXPECT_EQ(place.Reserve(web, "hot"), "") << "no real redis pod on any destination";
}

// Another pod's anti-affinity term that could not be read keeps every pod away from it.
TEST(Placement, AnUnreadTermOfAPodThereKeepsEveryPodAway) {
  PlacementNode a = Host("a"), b = Host("b");
  ResidentPod odd = Resident("o", "odd");
  PodGroupTerm unread;
  unread.all = true;
  unread.topology_key = kHost;
  odd.anti_affinity = {unread};
  a.pods = {odd};
  b.requested_cpu = 1;
  Placement place({a, b});
  EXPECT_EQ(place.Reserve(Pod("web"), "hot"), "b");
}

// A replacement reserved in this cycle keeps the pods its zone-wide anti-affinity counts out of
// its whole zone, not only off its node.
TEST(Placement, AReservedReplacementsZoneTermKeepsOthersOutOfItsZone) {
  PlacementNode a = Host("a", "z1"), c = Host("c", "z1"), b = Host("b", "z2");
  c.requested_cpu = 0.5;
  b.requested_cpu = 2;
  Placement place({a, b, c});
  PodInfo guard = Pod("guard");
  guard.pod_anti_affinity = {Group("db", kZone)};
  place.AddGroups({{guard.pod_anti_affinity[0].Id(), {}}});
  ASSERT_EQ(place.Reserve(guard, "hot"), "a");
  PodInfo db = Pod("db");
  db.labels = {{"app", "db"}};
  EXPECT_EQ(place.Reserve(db, "hot"), "b") << "c has more room, but is in z1 with the guard";
}

// PodTopologySpread, DoNotSchedule: the domain's count plus the pod within maxSkew (the
// cluster's smallest count is never below 0).
TEST(Placement, HostnameSpreadWithinMaxSkew) {
  PlacementNode a = Host("a"), b = Host("b"), bare = Node("bare", 4);
  a.pods = {Resident("w1", "web")};
  b.requested_cpu = 1;
  bare.requested_cpu = 0.5;  // the most room, but no hostname label: the scheduler filters it
  Placement place({a, b, bare});
  PodInfo web = Pod("web");
  web.labels = {{"app", "web"}};
  web.spread = {Group("web", kHost, 1)};
  EXPECT_EQ(place.Reserve(web, "hot"), "b") << "a: 1 + 1 > 1";
  EXPECT_EQ(place.Reserve(web, "hot"), "") << "b has its replacement now";
  web.spread[0].max_skew = 2;
  EXPECT_EQ(place.Reserve(web, "hot"), "a") << "1 + 1 <= 2; a has the more room";
  PodInfo unlabelled = Pod("x");  // the selector does not match the pod itself: no + 1
  unlabelled.spread = {Group("web", kHost, 1)};
  EXPECT_EQ(place.Reserve(unlabelled, "hot"), "b") << "a has 2 web pods now, b 1";
}

// A key other than the hostname spans nodes whose pods are not listed: the members the caller
// listed decide, and without them the term fits nowhere.
TEST(Placement, ZoneTermsNeedTheirMembersListed) {
  PlacementNode a = Host("a", "z1"), b = Host("b", "z2");
  b.requested_cpu = 1;
  Placement place({a, b});
  PodInfo web = Pod("web");
  web.uid = "w-hot";
  web.labels = {{"app", "web"}};
  web.pod_anti_affinity = {Group("web", kZone)};
  EXPECT_EQ(place.Reserve(web, "hot"), "") << "its members were not listed";
  // The pod itself, on the hot node in z1, is one of them: it counts until it is gone.
  place.AddGroups({{web.pod_anti_affinity[0].Id(), {GroupMember{"w-hot", "z1", false}}}});
  EXPECT_EQ(place.Reserve(web, "hot"), "b");
  PodInfo again = web;
  again.uid = "w-hot-2";
  EXPECT_EQ(place.Reserve(again, "hot"), "") << "z2 has the replacement just sent there";

  PodInfo spread = Pod("s");
  spread.uid = "s-hot";
  spread.labels = {{"app", "s"}};
  spread.spread = {Group("s", kZone, 2)};
  place.AddGroups({{spread.spread[0].Id(),
                    {GroupMember{"s-hot", "z1", false}, GroupMember{"s1", "z1", false},
                     GroupMember{"s2", "z2", false}}}});
  EXPECT_EQ(place.Reserve(spread, "hot"), "a")
      << "z1: 1 + 1 (the pod itself leaves) and z2: 1 + 1 are both within 2; a has more room";
  EXPECT_EQ(place.Reserve(spread, "hot"), "b") << "z1: 2 + 1 > 2 now";
  EXPECT_EQ(place.Reserve(spread, "hot"), "") << "z2: 2 + 1 > 2 too";
}

// VolumeBinding: a bound volume's node affinity holds the replacement to where the volume is; a
// claim whose volume was not read fits nowhere.
TEST(Placement, ABoundVolumeKeepsTheReplacementInItsZone) {
  PlacementNode a = Host("a", "z1"), b = Host("b", "z2");
  b.requested_cpu = 1;  // a has the more room
  Placement place({a, b});
  PodInfo db = Pod("db");
  db.claims = {"data"};
  EXPECT_EQ(place.Reserve(db, "hot"), "") << "its volume was not read";
  db.volume_affinity = {{NodeSelectorTerm{{{kZone, "In", {"z2"}}}, {}}}};
  EXPECT_EQ(place.Reserve(db, "hot"), "b");
  db.claims.push_back("logs");
  db.volume_affinity.push_back({});  // usable anywhere
  EXPECT_EQ(place.Reserve(db, "hot"), "b") << "every volume must reach the node";
}

TEST(Placement, FitsSomewhereReservesNothing) {
  Placement place({Node("a", 0.5)});
  PodInfo p = Pod("p");
  EXPECT_TRUE(place.FitsSomewhere(p, "hot"));
  EXPECT_TRUE(place.FitsSomewhere(p, "hot"));
  EXPECT_FALSE(place.FitsSomewhere(p, "a")) << "not on the node it leaves";
  EXPECT_EQ(place.Reserve(p, "hot"), "a");
  EXPECT_FALSE(place.FitsSomewhere(p, "hot"));
}

// Steer or skip: a pod is evicted only when something keeps its replacement off the mark.
TEST(EvictionText, ThePodTheNodesAndTheNumbersAreFields) {
  EvictionRecord r;
  r.pod = "shop/web-1";
  r.node = "node-2";
  r.to = "node-4";
  r.rule = "cpu";
  r.load = 86.734;
  r.goal = 60;
  r.usage = 21.68;
  EXPECT_EQ(EvictionReason(r, false), "rule cpu at 86.73 % is over its clear threshold 60 %");
  EXPECT_EQ(EvictionLogFields(r, false).Encoded(),
            " {pod=\"shop/web-1\" node=\"node-2\" destination=\"node-4\" rule=\"cpu\" "
            "reason=\"rule cpu at 86.73 % is over its clear threshold 60 %\" usage_percent=21.68}");
  // A drain moves every pod, whatever it uses: no share.
  r.rule = "underused";
  r.load = 8;
  r.goal = 20;
  EXPECT_EQ(EvictionLogFields(r, true).Encoded(),
            " {pod=\"shop/web-1\" node=\"node-2\" destination=\"node-4\" rule=\"underused\" "
            "reason=\"the node has stayed underused, at 8 % of allocatable, below 20 %\"}");
  // A bytes-available rule: bytes left and the pod's working set, in the rule's unit.
  r.rule = "mem";
  r.unit = ValueUnit::kBytes;
  r.load = 80 * 1024.0 * 1024;
  r.goal = 500 * 1024.0 * 1024;
  r.usage = 300 * 1024.0 * 1024;
  EXPECT_EQ(EvictionLogFields(r, false).Encoded(),
            " {pod=\"shop/web-1\" node=\"node-2\" destination=\"node-4\" rule=\"mem\" "
            "reason=\"rule mem at 80 MiB available is below its clear threshold 500 MiB\" "
            "usage_bytes=314572800}");
}

TEST(Steering, AReplacementAvoidsTheMarkOnlyWhenATermOrTheTaintSaysSo) {
  const Taint ours{"dynamic-scheduler.io/pressure", "presure", "PreferNoSchedule"};
  PodInfo bare = Pod("bare");
  EXPECT_EQ(SteeredAway(bare, "status", "presure", nullptr), Steer::kNone);
  EXPECT_STREQ(SteerName(Steer::kNone), "would_return");
  EXPECT_EQ(SteeredAway(bare, "status", "presure", &ours), Steer::kTaint)
      << "mark: both, and nothing tolerates the taint";
  PodInfo tolerant = bare;
  tolerant.tolerations = {{"", "Exists", "", ""}};
  EXPECT_EQ(SteeredAway(tolerant, "status", "presure", &ours), Steer::kNone)
      << "tolerates every taint: ours does not steer it";

  PodInfo preferred = Pod("p");
  preferred.preferred_affinity = {{100, {{{"status", "NotIn", {"presure"}}}, {}}}};
  EXPECT_EQ(SteeredAway(preferred, "status", "presure", nullptr), Steer::kPreferred);
  EXPECT_EQ(SteeredAway(preferred, "status", "underused", nullptr), Steer::kNone)
      << "a drain's value is not excluded by the term";
  preferred.preferred_affinity.push_back({100, {{{"zone", "In", {"z1"}}}, {}}});
  EXPECT_EQ(SteeredAway(preferred, "status", "presure", nullptr), Steer::kNone)
      << "100 for its zone against 100 for the mark: a hot node in z1 may still score first";
  preferred.preferred_affinity[0].weight = 0;
  preferred.preferred_affinity.pop_back();
  EXPECT_EQ(SteeredAway(preferred, "status", "presure", nullptr), Steer::kNone)
      << "weight 0 scores nothing";

  PodInfo required = Pod("r");
  required.required_affinity = {{{{"status", "DoesNotExist", {}}}, {}},
                                {{{"status", "In", {"cool"}}}, {}}};
  EXPECT_EQ(SteeredAway(required, "status", "presure", nullptr), Steer::kRequired);
  required.required_affinity.push_back({{{"zone", "In", {"a"}}}, {}});
  EXPECT_EQ(SteeredAway(required, "status", "presure", nullptr), Steer::kNone)
      << "one ORed term lets a marked node in zone a through";
  EXPECT_NE(SteeringAdvice("status", "presure", nullptr)
                .find("{key: status, operator: NotIn, values: [presure]}"),
            std::string::npos);
}

// mark: taint puts no label on the node: a term against the label does not steer, only the taint.
TEST(Steering, WithTheTaintAloneOnlyTheTaintSteers) {
  const Taint ours{"dynamic-scheduler.io/pressure", "presure", "PreferNoSchedule"};
  PodInfo preferred = Pod("p");
  preferred.preferred_affinity = {{100, {{{"status", "NotIn", {"presure"}}}, {}}}};
  preferred.tolerations = {{"", "Exists", "", ""}};
  EXPECT_EQ(SteeredAway(preferred, "status", "", &ours), Steer::kNone)
      << "the node has no status label: the term matches it like any other node";
  preferred.required_affinity = {{{{"status", "NotIn", {"presure"}}}, {}}};
  EXPECT_EQ(SteeredAway(preferred, "status", "", &ours), Steer::kNone);
  preferred.tolerations.clear();
  EXPECT_EQ(SteeredAway(preferred, "status", "", &ours), Steer::kTaint);
  const std::string advice = SteeringAdvice("status", "", &ours);
  EXPECT_NE(advice.find("toleration that tolerates the taint "
                        "dynamic-scheduler.io/pressure=presure:PreferNoSchedule"),
            std::string::npos)
      << advice;
}

// The effect simulation's finding: a pod requesting 14 GiB and using 28 GiB fit by requests on
// nodes whose real memory could not hold it, and was evicted there again and again.
TEST(Placement, RealUsageMustStayBelowTheCeilingWhereKnown) {
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  auto node = [&](const std::string& name, double used_gib, double requested_gib) {
    PlacementNode n = Node(name, 4);
    n.allocatable_memory = 64 * kGiB;
    n.requested_memory = requested_gib * kGiB;
    n.used_memory = used_gib * kGiB;
    return n;
  };
  // By requests "b" has the most room; by real usage it is the fuller one.
  Placement place({node("a", 20, 30), node("b", 40, 0)});
  PodInfo big = Pod("big");
  big.memory_request = 14 * kGiB;
  const UsageFit big_fit{Rule::Resource::kMemory, 28 * kGiB, 70};
  EXPECT_EQ(place.Reserve(big, "hot", big_fit), "")
      << "a: (20+28)/64 = 75 %, b: 106 %, both over the clear threshold of 70 %";
  PodInfo small = Pod("small");
  small.memory_request = 1 * kGiB;
  const UsageFit small_fit{Rule::Resource::kMemory, 10 * kGiB, 70};
  EXPECT_EQ(place.Reserve(small, "hot", small_fit), "a") << "b would reach 78 %";
  EXPECT_EQ(place.Reserve(small, "hot", small_fit), "a") << "a: 40 GiB = 62.5 %";
  EXPECT_EQ(place.Reserve(small, "hot", small_fit), "")
      << "a: the two reservations' usage counts, 50 GiB = 78 %";
  // Without a ceiling, memory must still stay below allocatable.
  Placement full({node("a", 40, 0)});
  EXPECT_EQ(full.Reserve(big, "hot", UsageFit{Rule::Resource::kMemory, 28 * kGiB}), "");
  EXPECT_EQ(full.Reserve(big, "hot", UsageFit{Rule::Resource::kMemory, 20 * kGiB}), "a");
  // A node whose real usage is unknown is judged by requests alone, as before.
  PlacementNode unknown = node("u", 0, 0);
  unknown.used_memory = std::nan("");
  Placement blind({unknown});
  EXPECT_EQ(blind.Reserve(big, "hot", big_fit), "u");
}

// A destination whose available memory bytes are known (a bytes-available rule) must keep at
// least that rule's clear threshold available once the replacement's working set is there.
TEST(Placement, AvailableBytesMustStayAtOrAboveTheFloorWhereKnown) {
  constexpr double kMiB = 1024.0 * 1024;
  auto node = [&](const std::string& name, double available_mib) {
    PlacementNode n = Node(name, 4);
    n.available_memory = available_mib * kMiB;
    n.available_floor = 500 * kMiB;
    return n;
  };
  Placement place({node("tight", 700), node("roomy", 2000)});
  PodInfo p = Pod("p");
  const UsageFit fit{Rule::Resource::kMemory, 900 * kMiB};
  EXPECT_EQ(place.Reserve(p, "hot", fit), "roomy") << "tight would keep 700 - 900 < 500 MiB";
  EXPECT_EQ(place.Reserve(p, "hot", fit), "") << "roomy keeps 1100 MiB, a second would leave 200";
  EXPECT_EQ(place.Reserve(p, "hot", UsageFit{Rule::Resource::kMemory, 200 * kMiB}), "tight")
      << "tight keeps exactly 500 MiB: at the floor is still room";
  // Unknown bytes, or a CPU fit: not judged.
  PlacementNode blind = node("blind", 0);
  blind.available_memory = std::nan("");
  Placement unknown({blind});
  EXPECT_EQ(unknown.Reserve(p, "hot", fit), "blind");
  Placement cpu({node("tight", 100)});
  EXPECT_EQ(cpu.Reserve(p, "hot", UsageFit{Rule::Resource::kCpu, 0.5}), "tight");
}

// A rule on memory bytes available (operator '<'): the plan raises the node's available bytes by
// each pod's working set until the clear threshold; it wins over a percent rule holding too.
TEST(NodeRelief, AvailableBytesRaisedToTheClearThreshold) {
  constexpr double kMiB = 1024.0 * 1024;
  const std::vector<HoldingRule> holding = {
      {"cpu", Rule::Resource::kCpu, 95, 60, false},
      {"avail", Rule::Resource::kMemory, 80 * kMiB, 500 * kMiB, true}};
  auto relief = ReliefFor("hot", holding, 4, 0, 30);
  ASSERT_TRUE(relief.has_value()) << "no allocatable needed for bytes";
  EXPECT_EQ(relief->rule, "avail") << "the rule that predicts a kubelet eviction sets the goal";
  EXPECT_TRUE(relief->available_bytes);
  EXPECT_EQ(relief->unit(), ValueUnit::kBytes);
  EXPECT_DOUBLE_EQ(relief->Value(relief->load.load), 80 * kMiB);
  EXPECT_DOUBLE_EQ(relief->Value(relief->load.goal), 500 * kMiB);
  EXPECT_TRUE(std::isnan(relief->CeilingPercent()));
  EXPECT_DOUBLE_EQ(relief->Share(300 * kMiB), 300 * kMiB) << "a working set counts in full";
  // 420 MiB short: 300 + 200 MiB reach it, smallest enough never planned below a floor.
  std::vector<PodInfo> pods = {Pod("a"), Pod("b"), Pod("c")};
  std::vector<Candidate> c = {{&pods[0], relief->Share(300 * kMiB)},
                              {&pods[1], relief->Share(200 * kMiB)},
                              {&pods[2], relief->Share(50 * kMiB)}};
  Placement place({Node("cold", 4)});
  PodChoice ch =
      ChoosePods(relief->load, c, 10, &place,
                 UsageCeiling{relief->resource, relief->per_unit, relief->CeilingPercent()});
  ASSERT_EQ(ch.picks.size(), 2u);
  EXPECT_TRUE(ch.reached);
  EXPECT_DOUBLE_EQ(relief->Value(ch.load_after), 580 * kMiB);
  // At or above the clear threshold, or not a memory rule: nothing to relieve by bytes.
  EXPECT_FALSE(ReliefFor("hot", {{"avail", Rule::Resource::kMemory, 500 * kMiB, 500 * kMiB, true}},
                         4, 16e9, 0)
                   .has_value());
  auto percent = ReliefFor("hot", {holding[0]}, 4, 16e9, 30);
  ASSERT_TRUE(percent.has_value());
  EXPECT_FALSE(percent->available_bytes) << "percent rules as before";
  EXPECT_DOUBLE_EQ(percent->load.floor, 30);
  EXPECT_DOUBLE_EQ(percent->CeilingPercent(), 60);
}

TEST(ChoosePods, ACandidateThatFitsOnlyByRequestsIsNotPicked) {
  PlacementNode cold = Node("cold", 4);
  cold.used_cpu = 2.5;  // 62.5 % of 4 cores
  Placement place({cold});
  PodInfo heavy = Pod("heavy"), light = Pod("light");
  // The hot node has 4 cores: 25 % of it per core. heavy uses 1 core (87.5 % on cold), light
  // 0.2 (67.5 %).
  std::vector<Candidate> c = {{&heavy, 25}, {&light, 5}};
  PodChoice ch =
      ChoosePods({"hot", 95, 60, 0}, c, 10, &place, UsageCeiling{Rule::Resource::kCpu, 25, 70});
  ASSERT_EQ(ch.picks.size(), 1u);
  EXPECT_EQ(ch.picks[0].pod, &light);
  EXPECT_EQ(ch.no_fit, 1u);
}

TEST(Tolerations, ExistsAndEffects) {
  PodInfo p = Pod("a");
  std::vector<Taint> taints = {{"k", "v", "NoExecute"}};
  EXPECT_FALSE(ToleratesAll(p, taints));
  p.tolerations = {{"k", "Exists", "", ""}};
  EXPECT_TRUE(ToleratesAll(p, taints));
  p.tolerations = {{"k", "Equal", "v", "NoSchedule"}};
  EXPECT_FALSE(ToleratesAll(p, taints)) << "another effect";
  p.tolerations = {{"", "Exists", "", ""}};
  EXPECT_TRUE(ToleratesAll(p, taints)) << "an empty key with Exists tolerates everything";
}

TEST(PodChoice, FewestLargestFirstDownToTheGoal) {
  std::vector<PodInfo> pods = {Pod("small"), Pod("big"), Pod("mid"), Pod("idle")};
  std::vector<Candidate> c = {{&pods[0], 5}, {&pods[1], 30}, {&pods[2], 15}, {&pods[3], 0}};
  Placement place({Node("hot", 0), Node("cold", 4)});
  // CPU at 95 %, clear threshold 60: big (30) then mid (15) would leave 50.
  PodChoice ch = ChoosePods({"hot", 95, 60, 0}, c, 10, &place);
  ASSERT_EQ(ch.picks.size(), 2u);
  EXPECT_EQ(ch.picks[0].pod->name, "big");
  EXPECT_EQ(ch.picks[1].pod->name, "mid");
  EXPECT_EQ(ch.picks[0].to, "cold");
  EXPECT_DOUBLE_EQ(ch.load_after, 50);
  EXPECT_TRUE(ch.reached);
}

// /explain's record of the plan (rebalance/decision.h): every candidate in the plan's order, and
// why each one not picked was left.
TEST(PodChoice, SaysWhyEachCandidateWasLeft) {
  std::vector<PodInfo> pods = {Pod("small"), Pod("big"), Pod("mid"), Pod("idle"), Pod("odd")};
  std::vector<Candidate> c = {
      {&pods[0], 5}, {&pods[1], 30}, {&pods[2], 15}, {&pods[3], 0}, {&pods[4], std::nan("")}};
  Placement place({Node("hot", 0), Node("cold", 4)});
  PodChoice ch = ChoosePods({"hot", 95, 60, 0}, c, 10, &place);
  ASSERT_EQ(ch.ranked.size(), 4u) << "a usage that is no number is not ranked";
  EXPECT_EQ(ch.ranked[0]->name, "big");
  std::map<std::string, std::string> left;
  for (const auto& [pod, why] : ch.left) left[pod->name] = why;
  EXPECT_EQ(left, (std::map<std::string, std::string>{
                      {"odd", "no_usage"}, {"small", "goal_reached"}, {"idle", "goal_reached"}}));
  // One pick allowed: the rest wait for the room.
  Placement again({Node("hot", 0), Node("cold", 4)});
  PodChoice one = ChoosePods({"hot", 95, 60, 0}, c, 1, &again);
  left.clear();
  for (const auto& [pod, why] : one.left) left[pod->name] = why;
  EXPECT_EQ(left["mid"], "no_room");
  // In the kubelet's order, the first that cannot go stops the rest: they stay behind it.
  Placement none({Node("hot", 0)});
  PodChoice stuck = ChoosePods({"hot", 95, 60, 0}, c, 10, &none,
                               UsageCeiling{Rule::Resource::kNone, 0, std::nan(""), true});
  left.clear();
  for (const auto& [pod, why] : stuck.left) left[pod->name] = why;
  EXPECT_EQ(left["big"], "no_fit");
  EXPECT_EQ(left["mid"], "kubelet_victim_stays");
  EXPECT_EQ(stuck.left.size(), 5u) << "each candidate once";
}

TEST(KubeletOrder, OverRequestsThenLowerPriorityThenMostAboveRequests) {
  // The kubelet's rankMemoryPressure (pkg/kubelet/eviction/helpers.go): {working set, request,
  // priority}; `first` is evicted before `then`.
  struct Case {
    const char* name;
    KubeletMemoryRank first, then;
  } cases[] = {
      {"over its request before within, whatever the priority", {3e9, 2e9, 1000}, {4e9, 4e9, 0}},
      {"over its request before within, however large", {1.1e9, 1e9, 0}, {8e9, 16e9, 0}},
      {"a BestEffort pod using anything is over its (zero) request", {1e6, 0, 0}, {5e9, 6e9, 0}},
      {"both over: the lower priority first", {1.1e9, 1e9, -5}, {9e9, 1e9, 0}},
      {"both within: the lower priority first", {1e9, 1e9, 0}, {1e9, 8e9, 10}},
      {"both over, same priority: more above the request first", {3e9, 1e9, 0}, {4e9, 3e9, 0}},
      {"both within, same priority: the least headroom first", {2e9, 2e9, 0}, {1e9, 2e9, 0}},
  };
  for (const Case& c : cases) {
    EXPECT_TRUE(KubeletEvictsBefore(c.first, c.then)) << c.name;
    EXPECT_FALSE(KubeletEvictsBefore(c.then, c.first)) << c.name;
  }
  // Exactly at its request is not over it (the kubelet's Cmp == 1): ranked with the pods within.
  EXPECT_TRUE(KubeletEvictsBefore({1.5e9, 1e9, 0}, {2e9, 2e9, -100}));
  KubeletMemoryRank same{2e9, 1e9, 3};
  EXPECT_FALSE(KubeletEvictsBefore(same, same)) << "equal: neither first";
}

TEST(PodChoice, MemoryGoesInTheKubeletsOrderCpuLargestFirst) {
  std::vector<PodInfo> pods = {Pod("guaranteed"), Pod("big-burst"), Pod("small-burst"),
                               Pod("slack")};
  const double ws[] = {4e9, 3e9, 1e9, 1.5e9};
  pods[0].memory_request = 4e9;  // within its request: the kubelet's last choice
  pods[1].memory_request = 1e9;  // 2 GB over, but priority 100
  pods[1].priority = 100;
  pods[2].memory_request = 0.5e9;  // 0.5 GB over, priority 0: the kubelet's first
  pods[3].memory_request = 2e9;
  // The hot node has 16 GB allocatable: 100 / 16e9 percent per byte. At 95 %, goal 80.
  const double per_byte = 100 / 16e9;
  std::vector<Candidate> c;
  for (size_t i = 0; i < pods.size(); ++i) c.push_back({&pods[i], ws[i] * per_byte});
  Placement place({Node("cold", 4)});
  PodChoice mem = ChoosePods({"hot", 95, 80, 0}, c, 10, &place,
                             UsageCeiling{Rule::Resource::kMemory, per_byte, std::nan("")});
  ASSERT_EQ(mem.picks.size(), 2u);
  EXPECT_EQ(mem.picks[0].pod->name, "small-burst");
  EXPECT_EQ(mem.picks[1].pod->name, "big-burst");
  EXPECT_DOUBLE_EQ(mem.load_after, 70);
  EXPECT_TRUE(mem.reached) << "the Guaranteed pod within its request stays";
  // The same pods under a CPU rule: the largest user alone is enough.
  Placement place2({Node("cold", 4)});
  PodChoice cpu = ChoosePods({"hot", 95, 80, 0}, c, 10, &place2,
                             UsageCeiling{Rule::Resource::kCpu, 25, std::nan("")});
  ASSERT_EQ(cpu.picks.size(), 1u);
  EXPECT_EQ(cpu.picks[0].pod->name, "guaranteed");
}

// A RuntimeClass's overhead makes a BestEffort pod's scheduling request non-zero, but the kubelet
// adds it only to a non-zero request (GetResourceRequestQuantity): for the kubelet the pod has no
// memory request and exceeds it, so it goes before a pod over its request at a higher priority.
TEST(PodChoice, ABestEffortPodsOverheadIsNoRequestToTheKubelet) {
  std::vector<PodInfo> pods = {Pod("kata-best-effort"), Pod("burst")};
  pods[0].memory_request = pods[0].memory_overhead = 160 * 1048576.0;  // the overhead alone
  pods[1].memory_request = 1e9;
  pods[1].priority = 10;
  const double ws[] = {100 * 1048576.0, 1.2e9};  // within 160 Mi; 0.2 GB over 1 GB
  const double per_byte = 100 / 16e9;
  std::vector<Candidate> c;
  for (size_t i = 0; i < pods.size(); ++i) c.push_back({&pods[i], ws[i] * per_byte});
  Placement place({Node("cold", 4)});
  PodChoice mem = ChoosePods({"hot", 95, 80, 0}, c, 1, &place,
                             UsageCeiling{Rule::Resource::kMemory, per_byte, std::nan("")});
  ASSERT_EQ(mem.picks.size(), 1u);
  EXPECT_EQ(mem.picks[0].pod->name, "kata-best-effort")
      << "over its (zero) request at priority 0: the kubelet's first";
}

TEST(PodChoice, AnUnknownUsageIsNeverChosen) {
  std::vector<PodInfo> pods = {Pod("nan"), Pod("inf"), Pod("ok")};
  std::vector<Candidate> c = {{&pods[0], std::nan("")},
                              {&pods[1], std::numeric_limits<double>::infinity()},
                              {&pods[2], 10}};
  Placement place({Node("cold", 4)});
  PodChoice ch = ChoosePods({"hot", 95, 60, 0}, c, 10, &place);
  ASSERT_EQ(ch.picks.size(), 1u);
  EXPECT_EQ(ch.picks[0].pod->name, "ok");
  EXPECT_EQ(ch.over_floor, 0u) << "an infinite usage is unknown, not a pod too large to move";
}

TEST(PodChoice, NeverBelowTheFloorAndOnlyWhatFits) {
  std::vector<PodInfo> pods = {Pod("huge"), Pod("mid"), Pod("nofit")};
  pods[2].cpu_request = 8;  // fits nowhere
  std::vector<Candidate> c = {{&pods[0], 70}, {&pods[1], 20}, {&pods[2], 40}};
  Placement place({Node("cold", 4)});
  // 90 % with a goal of 75 and a floor of 40: huge would leave 20 (< 40).
  PodChoice ch = ChoosePods({"hot", 90, 75, 40}, c, 10, &place);
  ASSERT_EQ(ch.picks.size(), 1u);
  EXPECT_EQ(ch.picks[0].pod->name, "mid");
  EXPECT_EQ(ch.over_floor, 1u);
  EXPECT_EQ(ch.no_fit, 1u);
  EXPECT_TRUE(ch.reached);
  PodChoice capped = ChoosePods({"hot", 95, 10, 0}, {{&pods[1], 20}, {&pods[0], 70}}, 1, &place);
  ASSERT_EQ(capped.picks.size(), 1u) << "at most max_pods";
  EXPECT_FALSE(capped.reached);
}

TEST(PodChoice, ADrainTakesEveryPodThatFitsLargestRequestsFirst) {
  std::vector<PodInfo> pods = {Pod("small"), Pod("big"), Pod("nofit"), Pod("mid")};
  pods[0].cpu_request = 0.1;
  pods[1].cpu_request = 1.5;
  pods[2].cpu_request = 8;  // fits nowhere
  pods[3].cpu_request = 1;
  std::vector<const PodInfo*> c = {&pods[0], &pods[1], &pods[2], &pods[3]};
  Placement place({Node("a", 2), Node("b", 1)});
  PodChoice ch = ChooseDrain("idle", c, 10, &place);
  ASSERT_EQ(ch.picks.size(), 3u);
  EXPECT_EQ(ch.picks[0].pod->name, "big") << "the hardest to place first, while room is left";
  EXPECT_EQ(ch.picks[0].to, "a");
  EXPECT_EQ(ch.picks[1].pod->name, "mid");
  EXPECT_EQ(ch.picks[1].to, "b") << "a has 0.5 left after big";
  EXPECT_EQ(ch.picks[2].pod->name, "small");
  EXPECT_EQ(ch.no_fit, 1u);
  Placement again({Node("a", 4)});
  EXPECT_EQ(ChooseDrain("idle", c, 1, &again).picks.size(), 1u) << "at most max_pods";
}

UnderuseNode Idle(const std::string& name, double cpu, double memory) {
  UnderuseNode n;
  n.name = name;
  n.load[0] = cpu;
  n.load[1] = memory;
  return n;
}

UnderusedConfig Underused() {
  UnderusedConfig c;
  c.enabled = true;
  c.below[0] = 20;
  c.below[1] = 30;
  c.for_seconds = 600;
  c.max_nodes = 1;
  return c;
}

TEST(Underuse, EveryBoundMustHoldAndAKnownBreachDecides) {
  const UnderusedConfig c = Underused();
  const double below[2] = {10, 10}, cpu_high[2] = {20, 10}, unknown[2] = {std::nan(""), 10},
               unknown_but_high[2] = {std::nan(""), 50};
  EXPECT_EQ(ClassifyUnderuse(below, c), UnderuseVerdict::kBelow);
  EXPECT_EQ(ClassifyUnderuse(cpu_high, c), UnderuseVerdict::kAbove) << "at the bound is not below";
  EXPECT_EQ(ClassifyUnderuse(unknown, c), UnderuseVerdict::kUnknown);
  EXPECT_EQ(ClassifyUnderuse(unknown_but_high, c), UnderuseVerdict::kAbove);
  UnderusedConfig cpu_only = c;
  cpu_only.below[1] = std::nan("");
  EXPECT_EQ(ClassifyUnderuse(unknown, cpu_only), UnderuseVerdict::kUnknown);
  const double memory_unknown[2] = {5, std::nan("")};
  EXPECT_EQ(ClassifyUnderuse(memory_unknown, cpu_only), UnderuseVerdict::kBelow)
      << "a resource without a bound is no condition";
}

TEST(Underuse, MarksAfterForTheEmptiestFirstUpToMaxNodes) {
  const UnderusedConfig c = Underused();
  UnderuseTracker t;
  std::vector<UnderuseNode> nodes = {Idle("a", 10, 10), Idle("b", 5, 5), Idle("busy", 50, 50)};
  UnderusePlan p = t.Step(nodes, c, kNow);
  EXPECT_TRUE(p.mark.empty()) << "not below for 10 minutes yet";
  EXPECT_EQ(p.below_since.size(), 2u);
  p = t.Step(nodes, c, kNow + 599);
  EXPECT_TRUE(p.mark.empty());
  p = t.Step(nodes, c, kNow + 600);
  EXPECT_EQ(p.mark, std::vector<std::string>{"b"}) << "the emptiest, and only maxNodes";
  EXPECT_EQ(p.capped, std::vector<std::string>{"a"});
  EXPECT_DOUBLE_EQ(p.below_since.at("a"), kNow);
  // b now carries the mark (the cache saw it): it is drained, a still waits for room.
  nodes[1].ours = true;
  p = t.Step(nodes, c, kNow + 610);
  EXPECT_EQ(p.drain, std::vector<std::string>{"b"});
  EXPECT_TRUE(p.mark.empty());
  EXPECT_EQ(p.capped, std::vector<std::string>{"a"});
}

TEST(Underuse, UnknownLoadRestartsTheWaitButKeepsAMark) {
  const UnderusedConfig c = Underused();
  UnderuseTracker t;
  std::vector<UnderuseNode> nodes = {Idle("a", 10, 10), Idle("m", 10, 10)};
  nodes[1].ours = true;
  t.Step(nodes, c, kNow);
  nodes[0].load[0] = nodes[1].load[0] = std::nan("");  // Prometheus lost the series
  UnderusePlan p = t.Step(nodes, c, kNow + 300);
  EXPECT_TRUE(p.unmark.empty()) << "unknown never removes a mark";
  EXPECT_TRUE(p.drain.empty()) << "nor drains on no evidence";
  nodes[0].load[0] = nodes[1].load[0] = 10;
  p = t.Step(nodes, c, kNow + 600);
  EXPECT_TRUE(p.mark.empty()) << "the wait started again at " << p.below_since.at("a");
  EXPECT_EQ(p.drain, std::vector<std::string>{"m"});
  EXPECT_TRUE(t.Step(nodes, c, kNow + 1200).mark.empty()) << "m holds the one place (maxNodes 1)";
}

TEST(Underuse, ADrainedNodeKeepsItsMarkButNotItsPlace) {
  UnderusedConfig c = Underused();
  c.for_seconds = 0;
  UnderuseTracker t;
  std::vector<UnderuseNode> nodes = {Idle("daemons-only", 2, 2), Idle("next", 5, 5)};
  nodes[0].ours = true;
  UnderusePlan p = t.Step(nodes, c, kNow);
  EXPECT_TRUE(p.mark.empty()) << "maxNodes 1: the marked node is being drained";
  nodes[0].drained = true;  // its last drain found nothing it may move
  p = t.Step(nodes, c, kNow + 10);
  EXPECT_EQ(p.mark, std::vector<std::string>{"next"});
  EXPECT_EQ(p.drain, std::vector<std::string>{"daemons-only"}) << "still looked at, now and then";
  EXPECT_TRUE(p.unmark.empty());
}

TEST(Underuse, AboveABoundOrIneligibleUnmarksAndTakenNodesAreNeverMarked) {
  UnderusedConfig c = Underused();
  c.for_seconds = 0;
  c.max_nodes = 5;
  UnderuseTracker t;
  std::vector<UnderuseNode> nodes = {Idle("warm", 25, 10), Idle("cordoned", 5, 5),
                                     Idle("hot-marked", 5, 5), Idle("free", 5, 5)};
  nodes[0].ours = true;
  nodes[1].ours = true;
  nodes[1].eligible = false;
  nodes[2].taken = true;  // our key with another value: the hot mark, or an operator's
  UnderusePlan p = t.Step(nodes, c, kNow);
  EXPECT_EQ(p.unmark, (std::vector<std::string>{"warm", "cordoned"}));
  EXPECT_EQ(p.mark, std::vector<std::string>{"free"});
  EXPECT_TRUE(p.drain.empty());
}

TEST(EvictionWindow, DaysHoursAndMidnight) {
  TimeWindow weekdays_night{0b0111110, 22 * 60, 6 * 60};  // Mon-Fri 22:00-06:00
  std::vector<TimeWindow> w = {weekdays_night};
  EXPECT_TRUE(InWindow(w, 1, 23 * 60)) << "Monday 23:00";
  EXPECT_TRUE(InWindow(w, 2, 5 * 60)) << "Tuesday 05:00 is Monday's window";
  EXPECT_TRUE(InWindow(w, 6, 5 * 60)) << "Saturday 05:00 is Friday's window";
  EXPECT_FALSE(InWindow(w, 6, 23 * 60)) << "Saturday 23:00";
  EXPECT_FALSE(InWindow(w, 1, 5 * 60)) << "Monday 05:00 is Sunday's, not in the days";
  EXPECT_FALSE(InWindow(w, 3, 12 * 60));
  EXPECT_TRUE(InWindow({}, 0, 0)) << "no windows: always";
}

TEST(EvictionBudget, EveryLimit) {
  EvictionLimits l;
  l.per_cycle = 2;
  l.per_hour = 4;
  l.per_node_per_hour = 2;
  l.node_cooldown_seconds = 60;
  l.per_workload_unreplaced = 1;
  l.per_namespace_per_hour = 3;
  l.windows = {TimeWindow{0x7f, 8 * 60, 18 * 60}};
  EvictionBudget b(l);
  b.StartCycle(kNow, 1, 7 * 60);
  EXPECT_EQ(b.Check(Pod("a")), Limit::kWindow);
  b.StartCycle(kNow, 1, 9 * 60);
  EXPECT_EQ(b.Check(Pod("a")), Limit::kNone);
  b.Record(Pod("a"));
  EXPECT_EQ(b.Check(Pod("b")), Limit::kNone) << "one cycle's picks for a node are one plan";
  EXPECT_EQ(b.Check(Pod("b", "other")), Limit::kNone);
  PodInfo same_workload = Pod("a2", "other");
  same_workload.owner_name = "web-a";
  EXPECT_EQ(b.Check(same_workload), Limit::kWorkload) << "web-a's replacement is not running yet";
  b.Replaced("shop/ReplicaSet/web-a");
  EXPECT_EQ(b.Check(same_workload), Limit::kNone);
  b.Record(Pod("b", "other"));
  EXPECT_EQ(b.Check(Pod("c", "third")), Limit::kCycle);

  b.StartCycle(kNow + 120, 1, 9 * 60 + 2);
  b.Record(Pod("c"));  // hot's second this hour
  b.StartCycle(kNow + 240, 1, 9 * 60 + 4);
  EXPECT_EQ(b.Check(Pod("d")), Limit::kNodeHour);
  EXPECT_EQ(b.Check(Pod("d", "third")), Limit::kNamespace) << "3 in shop this hour";
  PodInfo elsewhere = Pod("e", "third");
  elsewhere.ns = "blog";
  b.Record(elsewhere);
  EXPECT_EQ(b.Check(Pod("f", "fourth")), Limit::kHour) << "4 this hour, cluster-wide";
  b.StartCycle(kNow + 3600, 1, 10 * 60);
  EXPECT_EQ(b.Check(Pod("g", "fourth")), Limit::kNone) << "the hour has passed";
  EXPECT_STREQ(LimitName(Limit::kNodeCooldown), "node_cooldown");
}

// Issue 38: a restarted controller or a new leader counts every limit from the ledger.
TEST(EvictionBudget, RestoredFromTheLedgerEveryLimitHolds) {
  EvictionLimits l;
  l.per_cycle = 5;
  l.per_hour = 3;
  l.per_node_per_hour = 2;
  l.node_cooldown_seconds = 60;
  l.per_namespace_per_hour = 0;
  l.per_workload_unreplaced = 1;
  EvictionBudget b(l);
  b.StartCycle(kNow, 1, 9 * 60);
  b.Record(Pod("forgotten", "elsewhere"));  // what this replica counted: the ledger replaces it
  b.Restore({
      LedgerEntry{kNow - 4000, "hot", "shop/old", "", "shop/ReplicaSet/web-old", "", 0, 0, false},
      LedgerEntry{kNow - 300, "hot", "shop/a", "", "shop/ReplicaSet/web-a", "", 0, 0, false},
      LedgerEntry{kNow - 30, "cool", "shop/b", "", "shop/ReplicaSet/web-b", "", 0, 0, false},
  });
  EXPECT_EQ(b.Check(Pod("x", "cool")), Limit::kNodeCooldown) << "30 s ago, from the ledger";
  EXPECT_EQ(b.Check(Pod("x", "third")), Limit::kNone) << "an hour-old entry does not count";
  PodInfo a2 = Pod("a2", "third");
  a2.owner_name = "web-a";
  EXPECT_EQ(b.Check(a2), Limit::kWorkload) << "web-a's replacement is not seen yet";
  b.Replaced("shop/ReplicaSet/web-a");
  EXPECT_EQ(b.Check(a2), Limit::kNone);
  b.Record(Pod("c", "third"));
  EXPECT_EQ(b.Check(Pod("y", "fourth")), Limit::kHour) << "2 from the ledger and 1 since";
  b.StartCycle(kNow + 10, 1, 9 * 60);
  EXPECT_EQ(b.Check(Pod("y", "elsewhere")), Limit::kHour)
      << "the replica's own count before the restore is gone, the ledger's stays";
}

TEST(EvictionBudget, TheNodeCooldownStartsWithTheNextCycle) {
  EvictionLimits l;
  l.per_cycle = 5;
  l.node_cooldown_seconds = 60;
  EvictionBudget b(l);
  b.StartCycle(kNow, 1, 9 * 60);
  b.Record(Pod("a"));
  EXPECT_EQ(b.Check(Pod("b")), Limit::kNone) << "the same cycle: the same plan";
  b.StartCycle(kNow + 10, 1, 9 * 60);
  EXPECT_EQ(b.Check(Pod("b")), Limit::kNodeCooldown) << "wait to see the plan's effect";
  b.StartCycle(kNow + 60, 1, 9 * 60 + 1);
  EXPECT_EQ(b.Check(Pod("b")), Limit::kNone);
}

// A wall clock stepped back (NTP, a VM restored) puts the last eviction "in the future": that is
// within the cool-down, not a new cycle of the same plan.
TEST(EvictionBudget, AWallClockSteppedBackDoesNotBypassTheCooldown) {
  EvictionLimits l;
  l.per_cycle = 5;
  l.per_node_per_hour = 10;
  l.node_cooldown_seconds = 60;
  EvictionBudget b(l);
  b.StartCycle(kNow, 1, 9 * 60);
  b.Record(Pod("a"));
  b.StartCycle(kNow - 300, 1, 9 * 60 - 5);
  EXPECT_EQ(b.Check(Pod("b")), Limit::kNodeCooldown);
  b.StartCycle(kNow + 60, 1, 9 * 60 + 1);
  EXPECT_EQ(b.Check(Pod("b")), Limit::kNone);
}

TEST(EvictionBudget, AnUnreportedReplacementStopsCountingAfterTheExpiry) {
  EvictionLimits l;
  l.unreplaced_expiry_seconds = 600;
  l.node_cooldown_seconds = 0;
  EvictionBudget b(l);
  b.StartCycle(kNow, 1, 600);
  b.Record(Pod("a"));
  PodInfo again = Pod("a2", "other");
  again.owner_name = "web-a";
  b.StartCycle(kNow + 599, 1, 610);
  EXPECT_EQ(b.Check(again), Limit::kWorkload);
  b.StartCycle(kNow + 600, 1, 610);
  EXPECT_EQ(b.Check(again), Limit::kNone);
}

TEST(Qualify, MarkFirstThenAfterOrAnAlert) {
  RebalanceConfig cfg;
  cfg.after_seconds = 120;
  cfg.hold_after_eviction_seconds = 300;
  RebalanceNode n;
  n.marked_since_wall = kNow - 60;
  EXPECT_EQ(Qualifies(n, cfg, kNow), Qualification::kNotMarked)
      << "a mark the cache has not seen does not count";
  n.observed_marked = true;
  EXPECT_EQ(Qualifies(n, cfg, kNow), Qualification::kNotLongEnough);
  EXPECT_EQ(Qualifies(n, cfg, kNow + 60), Qualification::kYes);
  n.alerted = true;
  EXPECT_EQ(Qualifies(n, cfg, kNow), Qualification::kYes) << "an alert need not wait";
  n.selected = false;
  EXPECT_EQ(Qualifies(n, cfg, kNow + 600), Qualification::kNotSelected);
}

// Defect E2: a rule with a relieveAfter of its own that begins to hold a node another rule has
// marked has no `since` in the ownership record read at the cycle's start. It has not waited at
// all, so it must not drive the relief in that cycle (a bytes rule with relieveAfter 600 s used to
// evict at 0 s: it is a bytes-available rule, which ReliefFor prefers).
TEST(Qualify, ARuleThatJustBeganToHoldHasNotWaitedItsOwnTime) {
  RebalanceConfig cfg;
  cfg.after_seconds = 120;
  const double marked = kNow - 300;  // the cpu rule marked the node 5 minutes ago
  const HoldingRule cpu{"cpu", Rule::Resource::kCpu, 95, 70, false, 60};
  const HoldingRule bytes{"mem-available", Rule::Resource::kMemory, 1e9, 3e9, true, 600};
  const std::vector<HeldSince> record = {HeldSince{marked, 60, "cpu"}};  // no mem-available yet
  auto names = [](const std::vector<HoldingRule>& rules) {
    std::vector<std::string> out;
    for (const HoldingRule& r : rules) out.emplace_back(r.rule);
    return out;
  };
  using Names = std::vector<std::string>;
  EXPECT_EQ(names(DueHoldingRules({cpu, bytes}, record, cfg, kNow, false)), Names{"cpu"});
  auto goal = ReliefGoal("hot", {cpu, bytes}, record, cfg, kNow, false, 4, 16e9);
  ASSERT_TRUE(goal.has_value());
  EXPECT_EQ(goal->rule, "cpu") << "not the bytes rule that began to hold this cycle";
  // Recorded from the next cycle on, it waits its 600 s from then.
  const std::vector<HeldSince> next = {HeldSince{marked, 60, "cpu"},
                                       HeldSince{kNow, 600, "mem-available"}};
  EXPECT_EQ(names(DueHoldingRules({cpu, bytes}, next, cfg, kNow + 599, false)), Names{"cpu"});
  EXPECT_EQ(names(DueHoldingRules({cpu, bytes}, next, cfg, kNow + 600, false)),
            (Names{"cpu", "mem-available"}));
  // A wait of 0 is no wait; an alert waits for nothing.
  HoldingRule at_once = bytes;
  at_once.relieve_after_seconds = 0;
  EXPECT_EQ(names(DueHoldingRules({cpu, at_once}, record, cfg, kNow, false)),
            (Names{"cpu", "mem-available"}));
  EXPECT_EQ(names(DueHoldingRules({cpu, bytes}, record, cfg, kNow, true)),
            (Names{"cpu", "mem-available"}));
  // Without a wait of its own (rebalance.after, which Qualifies counted for the node) and without
  // a since, as a graded mark's cooler-level rule, a rule is due once the node qualifies.
  HoldingRule patient = bytes;
  patient.relieve_after_seconds = -1;
  EXPECT_EQ(names(DueHoldingRules({cpu, patient}, record, cfg, kNow, false)),
            (Names{"cpu", "mem-available"}));
}

TEST(Qualify, TheMarkStaysWhileEvictionsAreInFlightAndForTheHold) {
  RebalanceConfig cfg;
  cfg.hold_after_eviction_seconds = 300;
  RebalanceNode n;
  EXPECT_FALSE(HoldsMark(n, cfg, kNow)) << "never evicted";
  n.evictions_in_flight = 1;
  EXPECT_TRUE(HoldsMark(n, cfg, kNow));
  n.evictions_in_flight = 0;
  n.last_eviction_wall = kNow;
  EXPECT_TRUE(HoldsMark(n, cfg, kNow + 299));
  EXPECT_FALSE(HoldsMark(n, cfg, kNow + 300));
}

TEST(Effect, TheFourFigures) {
  EffectTracker t(600);
  // Discovery: 3 reference-hot node-cycles, 2 of them marked.
  t.OnCycle(kNow, {"a", "b"}, {"a"});
  t.OnCycle(kNow + 10, {"a"}, {"a", "c"});
  // Episodes: a (evicted, cools in time), b (evicted, never cools), c (nothing evictable).
  for (const char* n : {"a", "b", "c"}) t.OnQualified(n, kNow);
  t.OnQualified("a", kNow + 5);  // once per episode
  t.OnEviction("a", "shop/ReplicaSet/web", kNow + 20);
  t.OnEviction("a", "shop/ReplicaSet/api", kNow + 30);
  t.OnEviction("b", "shop/ReplicaSet/db", kNow + 20);
  // Replacements: web lands elsewhere, api bounces back onto a, a stranger's pod is no replacement.
  t.OnPodBound("shop/ReplicaSet/web", "d", kNow + 40);
  t.OnPodBound("shop/ReplicaSet/api", "a", kNow + 41);
  t.OnPodBound("shop/ReplicaSet/other", "a", kNow + 42);
  t.OnCleared("a", kNow + 300);
  t.OnUnmarked("a");
  t.OnCycle(kNow + 700, {}, {"b", "c"});  // b's window ended without clearing
  t.OnCleared("b", kNow + 800);           // too late to count
  EffectFigures f = t.Figures();
  EXPECT_EQ(f.reference_hot, 3u);
  EXPECT_DOUBLE_EQ(f.DiscoveryRate(), 2.0 / 3);
  EXPECT_EQ(f.episodes, 3u);
  EXPECT_DOUBLE_EQ(f.EvictionRate(), 2.0 / 3);
  EXPECT_EQ(f.episodes_judged, 2u);
  EXPECT_DOUBLE_EQ(f.Effectiveness(), 0.5);
  EXPECT_EQ(f.evictions, 3u);
  EXPECT_EQ(f.replacements, 2u);
  EXPECT_EQ(f.bounce_backs, 1u);
  t.OnPodBound("shop/ReplicaSet/db", "b", kNow + 2000);
  EXPECT_EQ(t.Figures().bounce_backs, 1u) << "outside the window: not a bounce-back";
}

// Each eviction's own outcome, handed out once its window ends: relieved after how long, and
// where its replacement ran.
TEST(Effect, EachEvictionsOutcomeOnceItsWindowEnds) {
  EffectTracker t(600);
  t.OnQualified("a", kNow);
  t.OnEviction("a", "shop/ReplicaSet/web", kNow, "shop/web-1", "apps/v1");
  t.OnEviction("b", "shop/ReplicaSet/db", kNow + 10, "shop/db-1", "apps/v1");
  t.OnPodBound("shop/ReplicaSet/web", "d", kNow + 30);
  t.OnCleared("a", kNow + 200);
  t.OnCleared("a", kNow + 260);  // the first clearing counts
  t.OnCycle(kNow + 300, {}, {"a", "b"});
  EXPECT_TRUE(t.TakeOutcomes().empty()) << "both windows still open";
  t.OnCycle(kNow + 605, {}, {"b"});
  std::vector<EvictionOutcome> first = t.TakeOutcomes();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].pod, "shop/web-1");
  EXPECT_EQ(first[0].owner_api_version, "apps/v1");
  EXPECT_DOUBLE_EQ(first[0].relieved_after, 200);
  EXPECT_EQ(first[0].replacement_node, "d");
  EXPECT_TRUE(t.TakeOutcomes().empty()) << "taken once";
  t.OnCleared("b", kNow + 650);  // after its window: too late
  t.OnCycle(kNow + 700, {}, {});
  std::vector<EvictionOutcome> second = t.TakeOutcomes();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].node, "b");
  EXPECT_LT(second[0].relieved_after, 0);
  EXPECT_EQ(second[0].replacement_node, "");
}

// Time to relief, per relieved episode: from the node's mark (from the qualification where the
// mark's time is unknown) to the first cycle after its first eviction that found it at or below its
// clear threshold, into the buckets of kTimeToReliefBuckets (each `le` holds its bound).
TEST(Effect, TimeToReliefFromTheMarkToTheFirstClearCycle) {
  EffectTracker t(600, 10);
  // a: marked at kNow, qualifies 2 minutes later, cools 400 s after the mark.
  t.OnQualified("a", kNow + 120, kNow);
  t.OnEviction("a", "shop/ReplicaSet/web", kNow + 130);
  t.OnCleared("a", kNow + 400);
  t.OnCleared("a", kNow + 410);  // the first clear cycle counts, once
  // b: the mark's time is unknown: from its qualification, 60 s (on the bound: le="60").
  t.OnQualified("b", kNow + 40, 0);
  t.OnEviction("b", "shop/ReplicaSet/db", kNow + 50);
  t.OnCleared("b", kNow + 100);
  // c: a mark time after the qualification cannot be: from the qualification too (20 s).
  t.OnQualified("c", kNow + 10, kNow + 500);
  t.OnEviction("c", "shop/ReplicaSet/api", kNow + 20);
  t.OnCleared("c", kNow + 30);
  // d: marked long before (relieveAfter held it): over the last bound.
  t.OnQualified("d", kNow, kNow - 4000);
  t.OnEviction("d", "shop/ReplicaSet/batch", kNow + 10);
  t.OnCleared("d", kNow + 20);
  // e: cooled before any eviction, and too late after it: not relieved, not observed.
  t.OnQualified("e", kNow, kNow);
  t.OnCleared("e", kNow + 5);
  t.OnEviction("e", "shop/ReplicaSet/cache", kNow + 10);
  t.OnCleared("e", kNow + 700);
  const EffectFigures f = t.Figures();
  EXPECT_EQ(f.episodes_relieved, 4u);
  const std::array<uint64_t, 9> want = {1, 1, 0, 0, 1, 0, 0, 0, 1};  // 30 60 ... 3600 +Inf
  EXPECT_EQ(f.time_to_relief, want);
  EXPECT_DOUBLE_EQ(f.time_to_relief_sum, 400 + 60 + 20 + 4020);
}

// Evictions per relieved episode: the evictions of the relieved episodes (one after the relief, in
// the same episode, too) per relieved episode; and bounce-backs per replacement seen.
TEST(Effect, EvictionsPerRelievedEpisodeAndTheBounceBackRatio) {
  EffectTracker t(600);
  EXPECT_DOUBLE_EQ(t.Figures().EvictionsPerRelief(), 0) << "none relieved yet";
  EXPECT_DOUBLE_EQ(t.Figures().BounceBackRatio(), 0) << "no replacement yet";
  for (const char* n : {"a", "b", "c"}) t.OnQualified(n, kNow, kNow);
  t.OnEviction("a", "shop/ReplicaSet/web", kNow + 10);
  t.OnEviction("a", "shop/ReplicaSet/api", kNow + 20);
  t.OnCleared("a", kNow + 100);
  t.OnEviction("a", "shop/ReplicaSet/web", kNow + 200);  // hot again, still the same episode
  t.OnEviction("b", "shop/ReplicaSet/db", kNow + 10);    // never relieved
  t.OnEviction("c", "shop/ReplicaSet/batch", kNow + 10);
  t.OnCleared("c", kNow + 50);
  // Replacements: web and api elsewhere, db back onto b, batch elsewhere.
  t.OnPodBound("shop/ReplicaSet/web", "d", kNow + 230);
  t.OnPodBound("shop/ReplicaSet/api", "d", kNow + 230);
  t.OnPodBound("shop/ReplicaSet/db", "b", kNow + 230);
  t.OnPodBound("shop/ReplicaSet/batch", "e", kNow + 230);
  t.OnCycle(kNow + 700, {}, {"a", "b", "c"});  // b's window ended: not relieved
  const EffectFigures f = t.Figures();
  EXPECT_EQ(f.episodes_judged, 3u);
  EXPECT_EQ(f.episodes_relieved, 2u);
  EXPECT_EQ(f.relieved_evictions, 4u);
  EXPECT_DOUBLE_EQ(f.EvictionsPerRelief(), 2);
  EXPECT_EQ(f.replacements, 4u);
  EXPECT_DOUBLE_EQ(f.BounceBackRatio(), 0.25);
}

// Hot node-seconds: each cycle, the marked nodes not at or below their clear threshold, for the
// time since the previous cycle, at most a cycle (-s).
TEST(Effect, HotNodeSecondsCountTheMarkedNodesStillHotForTheTimeWatched) {
  EffectTracker t(600, 10);
  t.OnCycle(kNow, {}, {"a", "b", "c"}, {"c"});  // the first cycle: a cycle's worth, c cooled
  EXPECT_DOUBLE_EQ(t.Figures().hot_node_seconds, 20);
  t.OnCycle(kNow + 10, {}, {"a", "b"});
  EXPECT_DOUBLE_EQ(t.Figures().hot_node_seconds, 40);
  t.OnCycle(kNow + 13, {}, {"a"});  // a webhook's early cycle: 3 s
  EXPECT_DOUBLE_EQ(t.Figures().hot_node_seconds, 43);
  t.OnCycle(kNow + 613, {}, {"a"});  // after 10 minutes of standby: one cycle, not 600 s
  EXPECT_DOUBLE_EQ(t.Figures().hot_node_seconds, 53);
  t.OnCycle(kNow + 600, {}, {"a"});  // the wall clock stepped back: nothing
  EXPECT_DOUBLE_EQ(t.Figures().hot_node_seconds, 53);
  EffectTracker unbounded(600);
  unbounded.OnCycle(kNow, {}, {"a"});
  unbounded.OnCycle(kNow + 25, {}, {"a"});
  EXPECT_DOUBLE_EQ(unbounded.Figures().hot_node_seconds, 25) << "without -s: the time between";
}

TEST(PodUsage, NodesPlaceholderBecomesAnEscapedAlternation) {
  EXPECT_EQ(ExpandNodes(R"(sum by (namespace, pod) (x{node=~"$nodes"}))", {"node-1", "a.b.c"}),
            R"(sum by (namespace, pod) (x{node=~"node-1|a\\.b\\.c"}))");
  EXPECT_EQ(ExpandNodes("no placeholder", {"node-1"}), "no placeholder");
  EXPECT_EQ(ExpandNodes("$nodes/$nodes", {"n"}), "n/n");
}

TEST(PodUsage, KeepsTheWantedPodsAndSumsTheirSeries) {
  std::unordered_set<std::string> wanted = {"shop/web-1", "shop/web-2"};
  PodUsageSink sink(&wanted);
  auto add = [&](std::string_view ns, std::string_view pod, std::string_view container, double v) {
    LabelViews l = {{"namespace", ns}, {"pod", pod}, {"container", container}};
    sink.Add(l, v);
  };
  add("shop", "web-1", "app", 0.5);
  add("shop", "web-1", "sidecar", 0.25);  // a query without `sum by`: the pod's parts add up
  add("shop", "web-2", "app", std::nan(""));
  add("shop", "other", "app", 3);   // not on a qualifying node
  sink.Add({{"pod", "web-1"}}, 1);  // no namespace
  EXPECT_EQ(sink.usage().size(), 1u);
  EXPECT_DOUBLE_EQ(sink.usage().at("shop/web-1"), 0.75);
  EXPECT_EQ(sink.usage().count("shop/web-2"), 0u) << "NaN is unknown, not idle";
  EXPECT_EQ(sink.skipped_nan(), 1u);
  EXPECT_EQ(sink.unlabelled(), 1u);
  sink.Reset();
  EXPECT_TRUE(sink.usage().empty());
  PodUsageSink all(nullptr);
  all.Add({{"namespace", "a"}, {"pod", "b"}}, 2);
  EXPECT_DOUBLE_EQ(all.usage().at("a/b"), 2);
}

}  // namespace
}  // namespace ds
