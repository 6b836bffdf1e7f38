// Other disruptors: a pod that someone else is already moving is left alone, with the reason.
#include "rebalance/disruptors.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace ds {
namespace {

PodInfo Pod() {
  PodInfo p;
  p.ns = "shop";
  p.name = "web-7d4b9-abcde";
  p.node = "n1";
  p.owner_kind = "ReplicaSet";
  p.owner_name = "web-7d4b9";
  p.owner_api_version = "apps/v1";
  p.phase = "Running";
  return p;
}

WorkloadStatus Deployment() {
  WorkloadStatus w;
  w.kind = "Deployment";
  w.ns = "shop";
  w.name = "web";
  w.generation = w.observed_generation = 3;
  w.spec_replicas = 4;
  w.replicas = w.updated_replicas = w.ready_replicas = w.available_replicas = 4;
  return w;
}

Autoscaler Hpa(const std::string& kind, const std::string& name, int32_t current, int32_t desired) {
  Autoscaler a;
  a.ns = "shop";
  a.name = "hpa-" + name;
  a.target_kind = kind;
  a.target_name = name;
  a.target_api_version = "apps/v1";
  a.current_replicas = current;
  a.desired_replicas = desired;
  return a;
}

TEST(Disruptors, FirstReasonNotToEvict) {
  const WorkloadStatus settled = Deployment();
  WorkloadStatus rolling = Deployment();
  rolling.updated_replicas = 2;  // 2 of 4 new replicas: mid-rollout
  WorkloadStatus crashlooping = Deployment();
  crashlooping.available_replicas = 3;  // one replica not available: no rollout (the PDB's)
  // A ReplicaSet owned by an Argo Rollout: judged itself; its HPA targets the Rollout.
  WorkloadStatus argo_rs;
  argo_rs.kind = "ReplicaSet";
  argo_rs.ns = "shop";
  argo_rs.name = "web-7d4b9";
  argo_rs.owner_kind = "Rollout";
  argo_rs.owner_name = "web";
  argo_rs.owner_api_version = "argoproj.io/v1alpha1";

  struct Case {
    const char* name;
    std::vector<Taint> taints;
    Labels annotations;
    const WorkloadStatus* workload;
    std::vector<Autoscaler> hpas;
    Disruptor want;
  } cases[] = {
      {"nothing else moves it",
       {},
       {},
       &settled,
       {Hpa("Deployment", "web", 4, 4)},
       Disruptor::kNone},
      {"workload unknown, no HPA", {}, {}, nullptr, {}, Disruptor::kNone},
      {"a replica not available is no rollout", {}, {}, &crashlooping, {}, Disruptor::kNone},
      {"cluster-autoscaler deletes the node",
       {Taint{"ToBeDeletedByClusterAutoscaler", "1767225600", "NoSchedule"}},
       {},
       &settled,
       {},
       Disruptor::kNodeRemoval},
      {"cluster-autoscaler's taint by key whatever its effect",
       {Taint{"ToBeDeletedByClusterAutoscaler", "", "NoExecute"}},
       {},
       &settled,
       {},
       Disruptor::kNodeRemoval},
      {"a deletion candidate only (PreferNoSchedule): not removed yet",
       {Taint{"DeletionCandidateOfClusterAutoscaler", "1767225600", "PreferNoSchedule"}},
       {},
       &settled,
       {},
       Disruptor::kNone},
      {"Karpenter disrupts the node",
       {Taint{"karpenter.sh/disrupted", "", "NoSchedule"}},
       {},
       &settled,
       {},
       Disruptor::kNodeRemoval},
      {"Karpenter before v1 disrupts the node",
       {Taint{"karpenter.sh/disruption", "disrupting", "NoSchedule"}},
       {},
       &settled,
       {},
       Disruptor::kNodeRemoval},
      {"karpenter.sh/disrupted with another effect is not Karpenter's",
       {Taint{"karpenter.sh/disrupted", "", "PreferNoSchedule"}},
       {},
       &settled,
       {},
       Disruptor::kNone},
      {"safe-to-evict false",
       {},
       {{"cluster-autoscaler.kubernetes.io/safe-to-evict", "false"}},
       &settled,
       {},
       Disruptor::kSafeToEvictFalse},
      {"safe-to-evict true says nothing against it",
       {},
       {{"cluster-autoscaler.kubernetes.io/safe-to-evict", "true"}},
       &settled,
       {},
       Disruptor::kNone},
      {"eviction in progress in the background",
       {},
       {{"descheduler.alpha.kubernetes.io/eviction-in-progress", ""}},
       &settled,
       {},
       Disruptor::kEvictingInBackground},
      {"rollout in progress", {}, {}, &rolling, {}, Disruptor::kRollout},
      {"HPA scaling the Deployment down",
       {},
       {},
       &settled,
       {Hpa("Deployment", "web", 6, 4)},
       Disruptor::kScaleDown},
      {"HPA scaling it up", {}, {}, &settled, {Hpa("Deployment", "web", 4, 6)}, Disruptor::kNone},
      {"HPA scaling another workload down",
       {},
       {},
       &settled,
       {Hpa("Deployment", "api", 6, 4), Hpa("StatefulSet", "web", 6, 4)},
       Disruptor::kNone},
      {"workload unknown: the HPA of the pod's own owner",
       {},
       {},
       nullptr,
       {Hpa("ReplicaSet", "web-7d4b9", 3, 1)},
       Disruptor::kScaleDown},
      {"HPA scaling the ReplicaSet's controller (an Argo Rollout) down",
       {},
       {},
       &argo_rs,
       {Hpa("Rollout", "web", 5, 2)},
       Disruptor::kScaleDown},
      {"the node's reason comes first",
       {Taint{"karpenter.sh/disrupted", "", "NoSchedule"}},
       {{"cluster-autoscaler.kubernetes.io/safe-to-evict", "false"}},
       &rolling,
       {Hpa("Deployment", "web", 6, 4)},
       Disruptor::kNodeRemoval},
      {"the pod's before its workload's",
       {},
       {{"descheduler.alpha.kubernetes.io/eviction-in-progress", "true"}},
       &rolling,
       {Hpa("Deployment", "web", 6, 4)},
       Disruptor::kEvictingInBackground},
      {"a rollout before a scale-down",
       {},
       {},
       &rolling,
       {Hpa("Deployment", "web", 6, 4)},
       Disruptor::kRollout},
  };
  for (const Case& c : cases) {
    PodInfo pod = Pod();
    pod.annotations = c.annotations;
    NodeInfo node;
    node.name = "n1";
    node.taints = c.taints;
    EXPECT_EQ(DisruptorName(OtherDisruptor(pod, node, c.workload, c.hpas)),
              std::string(DisruptorName(c.want)))
        << c.name;
  }
}

TEST(Disruptors, NamesForMetrics) {
  EXPECT_STREQ(DisruptorName(Disruptor::kNone), "none");
  EXPECT_STREQ(DisruptorName(Disruptor::kNodeRemoval), "node_removal");
  EXPECT_STREQ(DisruptorName(Disruptor::kSafeToEvictFalse), "safe_to_evict_false");
  EXPECT_STREQ(DisruptorName(Disruptor::kEvictingInBackground), "evicting_in_background");
  EXPECT_STREQ(DisruptorName(Disruptor::kRollout), "rollout");
  EXPECT_STREQ(DisruptorName(Disruptor::kScaleDown), "scale_down");
}

TEST(Disruptors, WhichWorkloadToRead) {
  using Ref = std::optional<WorkloadRef>;
  auto pod = [](const std::string& kind, const std::string& api) {
    PodInfo p = Pod();
    p.owner_kind = kind;
    p.owner_name = "w";
    p.owner_api_version = api;
    return p;
  };
  EXPECT_EQ(WorkloadToRead(pod("ReplicaSet", "apps/v1")), (Ref{{"ReplicaSet", "w"}}));
  EXPECT_EQ(WorkloadToRead(pod("StatefulSet", "apps/v1")), (Ref{{"StatefulSet", "w"}}));
  EXPECT_EQ(WorkloadToRead(pod("DaemonSet", "apps/v1")), (Ref{{"DaemonSet", "w"}}));
  EXPECT_EQ(WorkloadToRead(pod("Job", "batch/v1")), Ref{});
  EXPECT_EQ(WorkloadToRead(pod("", "")), Ref{}) << "a bare pod";
  EXPECT_EQ(WorkloadToRead(pod("ReplicaSet", "example.com/v1")), Ref{})
      << "another group's kind of the same name";

  WorkloadStatus rs;
  rs.kind = "ReplicaSet";
  rs.name = "web-7d4b9";
  EXPECT_EQ(OwnerToRead(rs), Ref{}) << "a ReplicaSet of no Deployment is the top";
  rs.owner_kind = "Deployment";
  rs.owner_name = "web";
  rs.owner_api_version = "apps/v1";
  EXPECT_EQ(OwnerToRead(rs), (Ref{{"Deployment", "web"}}));
  rs.owner_kind = "Rollout";
  rs.owner_api_version = "argoproj.io/v1alpha1";
  EXPECT_EQ(OwnerToRead(rs), Ref{}) << "a custom owner: the ReplicaSet is what we judge";
  WorkloadStatus deployment = Deployment();
  EXPECT_EQ(OwnerToRead(deployment), Ref{});
  WorkloadStatus sts;
  sts.kind = "StatefulSet";
  sts.owner_kind = "Deployment";  // nonsense, but a StatefulSet is read directly
  sts.owner_api_version = "apps/v1";
  EXPECT_EQ(OwnerToRead(sts), Ref{});
}

}  // namespace
}  // namespace ds
