// The Pod slice the rebalancer decides on, decoded from what the API server sends.
#include "kube/pod_object.h"

#include <gtest/gtest.h>

#include "common/quantity.h"
#include "kube/kube_api.h"

namespace ds {
namespace {

constexpr const char* kPod = R"({
  "kind": "Pod", "apiVersion": "v1",
  "metadata": {"name": "web-7d4b9-abcde", "namespace": "shop", "uid": "u1",
    "creationTimestamp": "2026-11-23T11:00:00Z",
    "labels": {"app": "web"},
    "annotations": {"dynamic-scheduler.io/evict": "false", "other": "x"},
    "ownerReferences": [
      {"apiVersion": "v1", "kind": "ConfigMap", "name": "not-the-controller"},
      {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9", "controller": true}]},
  "spec": {"nodeName": "node-3", "priority": 100, "priorityClassName": "high",
    "nodeSelector": {"pool": "general"},
    "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
    "volumes": [{"name": "cache", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "c"}}],
    "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "2", "memory": "64Mi"}}}],
    "containers": [
      {"name": "app", "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}},
      {"name": "sidecar", "resources": {"requests": {"cpu": "0.25", "memory": "1G"}}},
      {"name": "norequests"}]},
  "status": {"phase": "Running",
    "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]}
})";

TEST(PodObject, DecodesWhatTheRebalancerNeeds) {
  auto p = DecodePod(kPod);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->Key(), "shop/web-7d4b9-abcde");
  EXPECT_EQ(p->node, "node-3");
  EXPECT_EQ(p->owner_kind, "ReplicaSet");
  EXPECT_EQ(p->owner_name, "web-7d4b9");
  EXPECT_EQ(p->Workload(), "shop/ReplicaSet/web-7d4b9");
  EXPECT_EQ(p->phase, "Running");
  EXPECT_TRUE(p->ready);
  EXPECT_FALSE(p->terminating);
  EXPECT_EQ(p->priority, 100);
  EXPECT_EQ(p->priority_class, "high");
  EXPECT_FALSE(p->mirror);
  EXPECT_TRUE(p->local_storage) << "emptyDir";
  EXPECT_EQ(p->annotations, (Labels{{"dynamic-scheduler.io/evict", "false"}}));
  EXPECT_EQ(p->created_wall, 1795431600);
  EXPECT_DOUBLE_EQ(p->cpu_request, 2) << "the init container's 2 cores exceed the sum, 0.75";
  EXPECT_DOUBLE_EQ(p->memory_request, 256 * 1048576.0 + 1e9);
  EXPECT_EQ(p->node_selector, (Labels{{"pool", "general"}}));
  ASSERT_EQ(p->tolerations.size(), 1u);
  EXPECT_EQ(p->tolerations[0].op, "Exists");
}

TEST(PodObject, NativeSidecarsAndOverheadCount) {
  auto p =
      DecodePod(R"({"metadata":{"name":"a","namespace":"b"},"spec":{"overhead":{"cpu":"100m"},)"
                R"("initContainers":[)"
                R"({"name":"mesh","restartPolicy":"Always","resources":{"requests":{"cpu":"1"}}},)"
                R"({"name":"migrate","resources":{"requests":{"cpu":"2","memory":"1Gi"}}}],)"
                R"("containers":[{"name":"app","resources":{"requests":{"cpu":"500m"}}}]}})");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  // migrate runs beside the mesh sidecar: 2 + 1 = 3 > app + mesh = 1.5; plus 0.1 overhead.
  EXPECT_DOUBLE_EQ(p->cpu_request, 3.1);
  EXPECT_DOUBLE_EQ(p->memory_request, 1073741824);
}

// A RuntimeClass's memory overhead (spec.overhead, set by admission): the scheduler counts it for
// every pod (PodRequests), the kubelet's eviction ranking only on top of a request that is not
// zero (GetResourceRequestQuantity). A BestEffort pod with any usage exceeds its request there.
TEST(PodObject, TheKubeletAddsTheOverheadOnlyToANonZeroMemoryRequest) {
  auto best_effort =
      DecodePod(R"({"metadata":{"name":"kata","namespace":"b"},"spec":{"runtimeClassName":"kata",)"
                R"("overhead":{"cpu":"250m","memory":"160Mi"},"containers":[{"name":"app"}]}})");
  ASSERT_TRUE(best_effort.ok()) << best_effort.status().ToString();
  EXPECT_DOUBLE_EQ(best_effort->memory_request, 160 * 1048576.0) << "the scheduler's";
  EXPECT_DOUBLE_EQ(best_effort->memory_overhead, 160 * 1048576.0);
  EXPECT_DOUBLE_EQ(best_effort->KubeletMemoryRequest(), 0) << "the kubelet's";

  auto burstable =
      DecodePod(R"({"metadata":{"name":"kata","namespace":"b"},"spec":{"runtimeClassName":"kata",)"
                R"("overhead":{"memory":"160Mi"},)"
                R"("containers":[{"name":"app","resources":{"requests":{"memory":"1Gi"}}}]}})");
  ASSERT_TRUE(burstable.ok()) << burstable.status().ToString();
  EXPECT_DOUBLE_EQ(burstable->memory_request, 1184 * 1048576.0);
  EXPECT_DOUBLE_EQ(burstable->KubeletMemoryRequest(), 1184 * 1048576.0);

  // An overhead of cpu only: a memory request without one is the same to both.
  auto cpu_only =
      DecodePod(R"({"metadata":{"name":"a","namespace":"b"},"spec":{"overhead":{"cpu":"100m"},)"
                R"("containers":[{"name":"app","resources":{"requests":{"memory":"64Mi"}}}]}})");
  ASSERT_TRUE(cpu_only.ok()) << cpu_only.status().ToString();
  EXPECT_DOUBLE_EQ(cpu_only->KubeletMemoryRequest(), 64 * 1048576.0);
}

TEST(PodObject, KeepsOnlyTheAnnotationsTheRebalancerReads) {
  auto p = DecodePod(R"({"metadata":{"name":"a","namespace":"b","annotations":{
    "cluster-autoscaler.kubernetes.io/safe-to-evict":"false",
    "descheduler.alpha.kubernetes.io/eviction-in-progress":"",
    "descheduler.alpha.kubernetes.io/request-evict-only":"",
    "kubectl.kubernetes.io/last-applied-configuration":"{\"big\":true}",
    "dynamic-scheduler.io/evict":"true"}}})");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->annotations, (Labels{{"dynamic-scheduler.io/evict", "true"},
                                    {kSafeToEvictAnnotation, "false"},
                                    {kEvictionInProgressAnnotation, ""}}));
}

// What the fit check and steering read: node affinity, host ports, every requested resource, and
// the constraints they do not judge, each named.
TEST(PodObject, DecodesSchedulingConstraints) {
  auto p = DecodePod(R"({"metadata":{"name":"a","namespace":"b"},"spec":{
    "affinity":{
      "nodeAffinity":{
        "requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
          {"matchExpressions":[{"key":"zone","operator":"In","values":["a","b"]}],
           "matchFields":[{"key":"metadata.name","operator":"NotIn","values":["n9"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution":[
          {"weight":100,"preference":{"matchExpressions":[
            {"key":"status","operator":"NotIn","values":["presure"]}]}}]},
      "podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[]}},
    "initContainers":[{"name":"i","resources":{"requests":{"nvidia.com/gpu":"1"}},
      "ports":[{"containerPort":1,"hostPort":7000}]}],
    "containers":[
      {"name":"c","ports":[{"containerPort":80,"hostPort":8080},{"containerPort":53,"hostPort":53,
        "protocol":"UDP","hostIP":"10.0.0.1"},{"containerPort":9090}],
       "resources":{"requests":{"cpu":"1","ephemeral-storage":"1Gi","nvidia.com/gpu":"2"}}}]}})");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->required_affinity.size(), 1u);
  EXPECT_EQ(p->required_affinity[0].match_expressions[0].values,
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p->required_affinity[0].match_fields[0].op, "NotIn");
  ASSERT_EQ(p->preferred_affinity.size(), 1u);
  EXPECT_EQ(p->preferred_affinity[0].weight, 100);
  EXPECT_EQ(p->preferred_affinity[0].preference.match_expressions[0].key, "status");
  EXPECT_EQ(p->host_ports, (std::vector<HostPort>{{8080, "TCP", ""}, {53, "UDP", "10.0.0.1"}}))
      << "not the ordinary init container's 7000: it has ended when the others run";
  EXPECT_DOUBLE_EQ(p->cpu_request, 1);
  EXPECT_EQ(p->other_requests, (std::vector<std::pair<std::string, double>>{
                                   {"ephemeral-storage", 1073741824}, {"nvidia.com/gpu", 2}}))
      << "the init container's 1 GPU is less than the app's 2";
  EXPECT_TRUE(p->unjudged.empty()) << "preferred anti-affinity only scores";
}

TEST(PodObject, APodLevelRequestIsThePodsRequest) {
  auto p = DecodePod(R"({"metadata":{"name":"a","namespace":"b"},"spec":{
    "resources":{"requests":{"cpu":"2"}},
    "containers":[{"name":"c","resources":{"requests":{"cpu":"100m","memory":"1Gi"}}}]}})");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_DOUBLE_EQ(p->cpu_request, 2);
  EXPECT_DOUBLE_EQ(p->memory_request, 1073741824) << "no pod-level memory: the containers'";
}

TEST(PodObject, NamesTheConstraintsTheFitCheckDoesNotJudge) {
  auto p = DecodePod(R"({"metadata":{"name":"a","namespace":"b"},"spec":{
    "schedulerName":"volcano",
    "affinity":{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
      {"labelSelector":{"matchLabels":{"app":"a"}},"topologyKey":"kubernetes.io/hostname",
       "namespaceSelector":{"matchLabels":{"team":"x"}}}]},
      "podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
      {"labelSelector":{"matchExpressions":[{"key":"app","operator":"Near"}]},"topologyKey":"zone"}]},
      "nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
        {"matchExpressions":[{"key":"zone","operator":"Near","values":["a"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution":[{"weight":1}]}},
    "topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone","whenUnsatisfiable":"ScheduleAnyway"},
      {"maxSkew":0,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule"}],
    "volumes":[{"name":"d","persistentVolumeClaim":{"claimName":"data-a"}},
      {"name":"e","ephemeral":{"volumeClaimTemplate":{}}}],
    "resourceClaims":[{"name":"gpu","resourceClaimTemplateName":"one-gpu"}],
    "containers":[{"name":"c"}]}})");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->unjudged, (std::vector<std::string>{
                             "nodeAffinity (operator \"Near\" is not In, NotIn, Exists, "
                             "DoesNotExist, Gt or Lt)",
                             "nodeAffinity preference (a preferred term has no preference)",
                             "podAffinity (matchExpressions operator \"Near\" on app)",
                             "podAntiAffinity (namespaceSelector)",
                             "topologySpreadConstraints (maxSkew is not above 0)", "resourceClaims",
                             "schedulerName volcano"}));
  EXPECT_TRUE(p->pod_affinity.empty() && p->spread.empty());
  // The unread anti-affinity term still keeps other pods away from this one: it counts them all.
  ASSERT_EQ(p->pod_anti_affinity.size(), 1u);
  EXPECT_TRUE(p->pod_anti_affinity[0].all);
  EXPECT_TRUE(p->pod_anti_affinity[0].Counts("anywhere", {}));
  EXPECT_EQ(p->pod_anti_affinity[0].topology_key, "kubernetes.io/hostname");
  EXPECT_EQ(p->claims, std::vector<std::string>{"data-a"})
      << "judged once its volume is read; an ephemeral volume is claimed anew";
}

// Required inter-pod terms and DoNotSchedule spread constraints become groups the fit check
// counts: the selector in the API's string form (matchLabelKeys merged in with the pod's own
// value), the namespaces they count (the pod's by default; none listed: every one).
TEST(PodObject, ReadsInterPodTermsAndSpreadConstraints) {
  auto p = DecodePod(R"({"metadata":{"name":"a","namespace":"shop",
      "labels":{"app":"web","pod-template-hash":"5d8f"}},"spec":{
    "affinity":{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
      {"labelSelector":{"matchLabels":{"app":"web"},"matchExpressions":[
         {"key":"tier","operator":"In","values":["a","b"]},{"key":"canary","operator":"DoesNotExist"}]},
       "matchLabelKeys":["pod-template-hash"],"topologyKey":"kubernetes.io/hostname"}]},
      "podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
      {"labelSelector":{"matchLabels":{"app":"cache"}},"namespaceSelector":{},
       "topologyKey":"topology.kubernetes.io/zone"},
      {"labelSelector":{"matchLabels":{"app":"db"}},"namespaces":["data"],"topologyKey":"zone"},
      {"topologyKey":"zone"}]}},
    "topologySpreadConstraints":[{"maxSkew":2,"topologyKey":"topology.kubernetes.io/zone",
      "whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"web"}},
      "matchLabelKeys":["pod-template-hash","absent"]},
      {"maxSkew":1,"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"ScheduleAnyway",
       "labelSelector":{}}],
    "containers":[{"name":"c"}]}})");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->unjudged.empty()) << p->unjudged.front();
  ASSERT_EQ(p->pod_anti_affinity.size(), 1u);
  const PodGroupTerm& anti = p->pod_anti_affinity[0];
  EXPECT_EQ(anti.selector.text(), "app=web,tier in (a,b),!canary,pod-template-hash=5d8f");
  EXPECT_EQ(anti.namespaces, std::vector<std::string>{"shop"}) << "the pod's own by default";
  EXPECT_TRUE(anti.Counts("shop", {{"app", "web"}, {"tier", "a"}, {"pod-template-hash", "5d8f"}}));
  EXPECT_FALSE(anti.Counts("shop", {{"app", "web"}, {"tier", "a"}, {"pod-template-hash", "old"}}))
      << "another ReplicaSet's pods (matchLabelKeys)";
  EXPECT_FALSE(
      anti.Counts("other", {{"app", "web"}, {"tier", "a"}, {"pod-template-hash", "5d8f"}}));
  ASSERT_EQ(p->pod_affinity.size(), 3u);
  EXPECT_TRUE(p->pod_affinity[0].namespaces.empty()) << "namespaceSelector {}: every namespace";
  EXPECT_TRUE(p->pod_affinity[0].Counts("anywhere", {{"app", "cache"}}));
  EXPECT_EQ(p->pod_affinity[1].namespaces, std::vector<std::string>{"data"});
  EXPECT_TRUE(p->pod_affinity[2].none) << "a null labelSelector counts no pod";
  EXPECT_FALSE(p->pod_affinity[2].Counts("shop", {{"app", "web"}}));
  ASSERT_EQ(p->spread.size(), 1u) << "ScheduleAnyway only scores";
  EXPECT_EQ(p->spread[0].max_skew, 2);
  EXPECT_EQ(p->spread[0].selector.text(), "app=web,pod-template-hash=5d8f");
  EXPECT_EQ(p->spread[0].namespaces, std::vector<std::string>{"shop"});
}

TEST(PodObject, TerminatingMirrorAndBare) {
  auto p = DecodePod(
      R"({"metadata":{"name":"kube-apiserver-n1","namespace":"kube-system",)"
      R"("deletionTimestamp":"2026-11-23T12:00:00Z",)"
      R"("annotations":{"kubernetes.io/config.mirror":"abc"}},"status":{"phase":"Running"}})");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->terminating);
  EXPECT_TRUE(p->mirror);
  EXPECT_TRUE(p->owner_kind.empty());
  EXPECT_EQ(p->Workload(), "");
}

TEST(PodObject, ErrorsNameThePod) {
  auto bad = DecodePod(R"({"metadata":{"name":"a","namespace":"b"},"spec":{"containers":)"
                       R"([{"resources":{"requests":{"cpu":"lots"}}}]}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("Pod b/a"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(DecodePod(R"({"metadata":{"name":"a"}})").ok()) << "no namespace";
  EXPECT_FALSE(DecodePod("[]").ok());
  auto list = DecodePodList(std::string(R"({"kind":"PodList","metadata":{"resourceVersion":"9",)") +
                            R"("continue":"c"},"items":[)" + kPod + "]}");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(list->items.size(), 1u);
  EXPECT_EQ(list->continue_token, "c");
}

TEST(Quantity, Forms) {
  struct Case {
    const char* text;
    double want;
  } ok[] = {{"1", 1},      {"500m", 0.5},        {"0.25", 0.25},      {"1.5", 1.5},
            {"2k", 2000},  {"256Mi", 268435456}, {"1Gi", 1073741824}, {"1G", 1e9},
            {"1e3", 1000}, {"100n", 1e-7},       {"5E", 5e18},        {"+3", 3}};
  for (const Case& c : ok) {
    double v = -1;
    ASSERT_TRUE(ParseQuantity(c.text, &v)) << c.text;
    EXPECT_DOUBLE_EQ(v, c.want) << c.text;
  }
  for (const char* bad : {"", "m", "1.2.3", "1x", "1Mib", "e3", "1e", "1e999", ".", "1 Gi"}) {
    double v = -1;
    EXPECT_FALSE(ParseQuantity(bad, &v)) << bad;
    EXPECT_EQ(v, -1) << bad;
  }
}

TEST(Eviction, AnswersAreClassified) {
  using K = EvictionResult::Kind;
  EXPECT_EQ(EvictionResultFromResponse(201, "{}", "", "e").kind, K::kEvicted);
  // kube-apiserver's answer when a PodDisruptionBudget allows no disruption.
  const std::string budget =
      R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"Cannot evict pod as it )"
      R"(would violate the pod's disruption budget.","reason":"TooManyRequests","details":)"
      R"({"causes":[{"reason":"DisruptionBudget","message":"The disruption budget web needs 2 )"
      R"(healthy pods and has 2 currently"}]},"code":429})";
  EvictionResult r = EvictionResultFromResponse(429, budget, "", "evict pod shop/a");
  EXPECT_EQ(r.kind, K::kBlockedByBudget);
  EXPECT_NE(r.status.message().find("disruption budget"), std::string::npos);
  EXPECT_EQ(EvictionResultFromResponse(429, R"({"kind":"Status","code":429})", "1", "e").kind,
            K::kError)
      << "API Priority and Fairness: an ordinary throttle";
  EXPECT_EQ(EvictionResultFromResponse(
                500,
                R"({"kind":"Status","message":"This pod has more than one PodDisruptionBudget, )"
                R"(which the eviction subresource does not support.","code":500})",
                "", "e")
                .kind,
            K::kMultipleBudgets);
  EXPECT_EQ(EvictionResultFromResponse(404, "{}", "", "e").kind, K::kGone);
  EXPECT_EQ(EvictionResultFromResponse(403, "{}", "", "e").kind, K::kError);
}

// KubeVirt's virt-api refuses the eviction of a virt-launcher pod with 429 after it has marked
// the VM for evacuation (live migration); the API server wraps its webhook's message as
// admission/plugin/webhook/errors ToStatusErr does. The pod leaves when the migration ends.
TEST(Eviction, AWebhookThatEvictsInTheBackgroundIsNotARefusal) {
  using K = EvictionResult::Kind;
  auto webhook_429 = [](const std::string& message) {
    return R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":)"
           R"("pods \"virt-launcher-vm1-x7k2p\" is forbidden: admission webhook )"
           R"(\"virt-launcher-eviction-interceptor.kubevirt.io\" denied the request: )" +
           message +
           R"(","reason":"Forbidden","details":{"name":"virt-launcher-vm1-x7k2p","kind":"pods"},)"
           R"("code":429})";
  };
  EvictionResult started = EvictionResultFromResponse(
      429, webhook_429(R"(Eviction triggered evacuation of VMI \"vms/vm1\")"), "",
      "evict pod vms/virt-launcher-vm1-x7k2p");
  EXPECT_EQ(started.kind, K::kInBackground) << started.status.ToString();
  EXPECT_EQ(started.status.http_status(), 429);
  // Asked again while the migration runs.
  EXPECT_EQ(EvictionResultFromResponse(
                429,
                webhook_429(
                    R"(Evacuation in progress: Eviction triggered evacuation of VMI \"vms/vm1\")"),
                "", "e")
                .kind,
            K::kInBackground);
  // The same webhook's other 429s refuse the eviction: nothing happens in the background.
  EXPECT_EQ(EvictionResultFromResponse(
                429,
                webhook_429("VMI vm1 is configured with an eviction strategy but is not "
                            "live-migratable"),
                "", "e")
                .kind,
            K::kError);
  EXPECT_EQ(
      EvictionResultFromResponse(429, webhook_429("Eviction request for target Pod"), "", "e").kind,
      K::kError);
  // The same words with another code say nothing.
  EXPECT_EQ(
      EvictionResultFromResponse(403, webhook_429("Eviction triggered evacuation"), "", "e").kind,
      K::kError);
  // A PodDisruptionBudget's 429 and API Priority and Fairness's stay what they were.
  const std::string budget =
      R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"Cannot evict pod as it )"
      R"(would violate the pod's disruption budget.","reason":"TooManyRequests","details":)"
      R"({"causes":[{"reason":"DisruptionBudget","message":"The disruption budget web needs 2 )"
      R"(healthy pods and has 2 currently"}]},"code":429})";
  EXPECT_EQ(EvictionResultFromResponse(429, budget, "", "e").kind, K::kBlockedByBudget);
  EXPECT_EQ(EvictionResultFromResponse(
                429,
                R"({"kind":"Status","status":"Failure","message":"Too many requests, please try )"
                R"(again later.","reason":"TooManyRequests","details":{"retryAfterSeconds":1},)"
                R"("code":429})",
                "1", "e")
                .kind,
            K::kError);
}

TEST(Eviction, OnlyTheAuthorizersDenialIsAboutPermissions) {
  auto rbac = EvictionResultFromResponse(
      403,
      R"({"kind":"Status","status":"Failure","reason":"Forbidden","code":403,"message":)"
      R"("pods \"a\" is forbidden: User \"u\" cannot create resource \"pods/eviction\" in API )"
      R"(group \"\" in the namespace \"b\""})",
      "", "evict b/a");
  EXPECT_TRUE(rbac.AuthorizationDenied()) << rbac.status.ToString();
  auto webhook = EvictionResultFromResponse(
      403,
      R"({"kind":"Status","status":"Failure","reason":"Forbidden","code":403,"message":)"
      R"("admission webhook \"deny.example.com\" denied the request: no"})",
      "", "evict b/a");
  EXPECT_FALSE(webhook.AuthorizationDenied());
}

}  // namespace
}  // namespace ds
