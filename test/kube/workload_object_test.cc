// A pod's workload and its namespace's autoscalers, decoded from what the API server sends, and
// kubectl's rollout-status conditions for each kind.
#include "kube/workload_object.h"

#include <gtest/gtest.h>

#include <string>

namespace ds {
namespace {

// A Deployment as the API server returns it (trimmed), rolled out.
constexpr const char* kDeployment = R"({
  "kind": "Deployment", "apiVersion": "apps/v1",
  "metadata": {"name": "web", "namespace": "shop", "uid": "d1", "generation": 4},
  "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}},
  "status": {"observedGeneration": 4, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3,
    "availableReplicas": 3,
    "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
      {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]}
})";

TEST(WorkloadObject, DecodesADeployment) {
  auto w = DecodeWorkload(kDeployment, "Deployment");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->Key(), "shop/Deployment/web");
  EXPECT_EQ(w->uid, "d1");
  EXPECT_EQ(w->generation, 4);
  EXPECT_EQ(w->observed_generation, 4);
  ASSERT_TRUE(w->spec_replicas.has_value());
  EXPECT_EQ(*w->spec_replicas, 3);
  EXPECT_EQ(w->available_replicas, 3);
  EXPECT_FALSE(w->progress_deadline_exceeded);
  EXPECT_FALSE(w->RolloutInProgress()) << w->RolloutWaitingFor();
}

TEST(WorkloadObject, DecodesAReplicaSetAndItsDeployment) {
  auto w = DecodeWorkload(R"({"kind":"ReplicaSet","metadata":{"name":"web-7d4b9",
    "namespace":"shop","generation":2,"ownerReferences":[
      {"apiVersion":"v1","kind":"ConfigMap","name":"other"},
      {"apiVersion":"apps/v1","kind":"Deployment","name":"web","controller":true}]},
    "spec":{"replicas":2},
    "status":{"observedGeneration":2,"replicas":2,"readyReplicas":2,"availableReplicas":2}})",
                          "ReplicaSet");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->owner_kind, "Deployment");
  EXPECT_EQ(w->owner_name, "web");
  EXPECT_EQ(w->owner_api_version, "apps/v1");
  EXPECT_FALSE(w->RolloutInProgress()) << w->RolloutWaitingFor();
}

TEST(WorkloadObject, DecodesAStatefulSetAndADaemonSet) {
  auto s = DecodeWorkload(R"({"kind":"StatefulSet","metadata":{"name":"db","namespace":"shop",
    "generation":7},"spec":{"replicas":3,"updateStrategy":{"type":"RollingUpdate",
    "rollingUpdate":{"partition":1}}},"status":{"observedGeneration":7,"replicas":3,
    "readyReplicas":3,"updatedReplicas":2,"currentRevision":"db-1","updateRevision":"db-2"}})",
                          "StatefulSet");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->rolling_update_set);
  ASSERT_TRUE(s->partition.has_value());
  EXPECT_EQ(*s->partition, 1);
  EXPECT_EQ(s->current_revision, "db-1");
  EXPECT_EQ(s->update_revision, "db-2");
  // Partitioned: 2 of the 3 - 1 pods above the partition are updated; kubectl calls it complete
  // although the revisions differ (the partition holds the rest back on purpose).
  EXPECT_FALSE(s->RolloutInProgress()) << s->RolloutWaitingFor();

  auto d = DecodeWorkload(R"({"kind":"DaemonSet","metadata":{"name":"agent","namespace":"ops",
    "generation":3},"spec":{"updateStrategy":{"type":"RollingUpdate"}},
    "status":{"observedGeneration":3,"desiredNumberScheduled":5,"updatedNumberScheduled":4,
    "numberAvailable":5,"currentNumberScheduled":5}})",
                          "DaemonSet");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_FALSE(d->spec_replicas.has_value());
  EXPECT_EQ(d->desired_number_scheduled, 5);
  EXPECT_EQ(d->updated_number_scheduled, 4);
  EXPECT_EQ(d->number_available, 5);
  EXPECT_EQ(d->RolloutWaitingFor(), "4 of 5 new pods updated");
}

TEST(WorkloadObject, AbsentStatusFieldsAreZeroAsTheApiOmitsThem) {
  // A Deployment scaled to 0 that was never rolled out: the API omits every zero.
  auto w = DecodeWorkload(
      R"({"metadata":{"name":"idle","namespace":"a","generation":1},"spec":{"replicas":0},
          "status":{"observedGeneration":1}})",
      "Deployment");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->replicas, 0);
  EXPECT_FALSE(w->RolloutInProgress()) << w->RolloutWaitingFor();
}

TEST(WorkloadObject, ErrorsNameTheField) {
  struct Case {
    const char* body;
    const char* kind;
    const char* field;
  } cases[] = {
      {R"({"metadata":{"name":"w","namespace":"a"},"status":{"updatedReplicas":"3"}})",
       "Deployment", "status.updatedReplicas"},
      {R"({"metadata":{"name":"w","namespace":"a"},"spec":{"replicas":1.5}})", "ReplicaSet",
       "spec.replicas"},
      {R"({"metadata":{"name":"w","namespace":"a","generation":"x"}})", "StatefulSet",
       "metadata.generation"},
      {R"({"metadata":{"name":"w","namespace":"a"},"status":{"observedGeneration":true}})",
       "DaemonSet", "status.observedGeneration"},
      {R"({"metadata":{"name":"w","namespace":"a"},"status":{"numberAvailable":[]}})", "DaemonSet",
       "status.numberAvailable"},
      {R"({"metadata":{"name":"w","namespace":"a"},
           "spec":{"updateStrategy":{"rollingUpdate":{"partition":"1"}}}})",
       "StatefulSet", "spec.updateStrategy.rollingUpdate.partition"},
      {R"({"metadata":{"name":"w","namespace":"a"},"status":{"replicas":4294967296}})",
       "Deployment", "status.replicas"},
      {R"({"metadata":{"namespace":"a"}})", "Deployment", "metadata.name"},
      {R"({"kind":"StatefulSet","metadata":{"name":"w","namespace":"a"}})", "Deployment",
       "kind is StatefulSet"},
      {R"({"metadata":{"name":"w","namespace":"a"}})", "Job", "not a workload kind"},
      {R"([1])", "Deployment", "not an object"},
      {R"({"metadata":)", "Deployment", "invalid JSON"},
  };
  for (const Case& c : cases) {
    auto w = DecodeWorkload(c.body, c.kind);
    ASSERT_FALSE(w.ok()) << c.body;
    EXPECT_NE(w.status().message().find(c.field), std::string::npos)
        << c.field << " in " << w.status().ToString();
  }
}

// kubectl rollout status, condition by condition (rollout_status.go).
TEST(WorkloadObject, RolloutInProgressFollowsKubectl) {
  auto deployment = [] {
    WorkloadStatus w;
    w.kind = "Deployment";
    w.generation = w.observed_generation = 2;
    w.spec_replicas = 3;
    w.replicas = w.updated_replicas = w.ready_replicas = w.available_replicas = 3;
    return w;
  };
  auto sts = [] {
    WorkloadStatus w;
    w.kind = "StatefulSet";
    w.generation = w.observed_generation = 5;
    w.spec_replicas = 3;
    w.replicas = w.ready_replicas = w.updated_replicas = 3;
    w.current_revision = w.update_revision = "r1";
    return w;
  };
  auto ds = [] {
    WorkloadStatus w;
    w.kind = "DaemonSet";
    w.generation = w.observed_generation = 1;
    w.desired_number_scheduled = w.updated_number_scheduled = w.number_available = 4;
    return w;
  };
  auto rs = [] {
    WorkloadStatus w;
    w.kind = "ReplicaSet";
    w.generation = w.observed_generation = 1;
    w.spec_replicas = 2;
    w.replicas = w.ready_replicas = w.available_replicas = 2;
    return w;
  };
  struct Case {
    const char* name;
    WorkloadStatus w;
    bool in_progress;
  } cases[] = {
      {"deployment done", deployment(), false},
      {"deployment spec not observed",
       [&] {
         auto w = deployment();
         w.generation = 3;
         return w;
       }(),
       true},
      {"deployment updatedReplicas < spec.replicas",
       [&] {
         auto w = deployment();
         w.updated_replicas = 2;
         return w;
       }(),
       true},
      {"deployment old replicas pending termination",
       [&] {
         auto w = deployment();
         w.replicas = 4;
         return w;
       }(),
       true},
      {"deployment availableReplicas < updatedReplicas",
       [&] {
         auto w = deployment();
         w.available_replicas = 2;
         return w;
       }(),
       true},
      {"deployment progress deadline exceeded",
       [&] {
         auto w = deployment();
         w.progress_deadline_exceeded = true;
         return w;
       }(),
       true},
      {"deployment without spec.replicas: that check skipped",
       [&] {
         auto w = deployment();
         w.spec_replicas.reset();
         w.updated_replicas = w.replicas = w.available_replicas = 1;
         return w;
       }(),
       false},
      {"statefulset done", sts(), false},
      {"statefulset never observed",
       [&] {
         auto w = sts();
         w.observed_generation = 0;
         return w;
       }(),
       true},
      {"statefulset generation ahead",
       [&] {
         auto w = sts();
         w.generation = 6;
         return w;
       }(),
       true},
      {"statefulset readyReplicas < spec.replicas",
       [&] {
         auto w = sts();
         w.ready_replicas = 2;
         return w;
       }(),
       true},
      {"statefulset revisions differ (no rollingUpdate block)",
       [&] {
         auto w = sts();
         w.update_revision = "r2";
         return w;
       }(),
       true},
      {"statefulset partitioned, below the partition's count",
       [&] {
         auto w = sts();
         w.rolling_update_set = true;
         w.partition = 1;
         w.updated_replicas = 1;
         w.update_revision = "r2";
         return w;
       }(),
       true},
      {"statefulset partitioned, reached: done despite revisions",
       [&] {
         auto w = sts();
         w.rolling_update_set = true;
         w.partition = 1;
         w.updated_replicas = 2;
         w.update_revision = "r2";
         return w;
       }(),
       false},
      {"statefulset rollingUpdate without partition: done",
       [&] {
         auto w = sts();
         w.rolling_update_set = true;
         w.update_revision = "r2";
         return w;
       }(),
       false},
      {"statefulset OnDelete: nothing to wait for",
       [&] {
         auto w = sts();
         w.update_strategy = "OnDelete";
         w.ready_replicas = 0;
         return w;
       }(),
       false},
      {"daemonset done", ds(), false},
      {"daemonset generation ahead",
       [&] {
         auto w = ds();
         w.generation = 2;
         return w;
       }(),
       true},
      {"daemonset updatedNumberScheduled < desired",
       [&] {
         auto w = ds();
         w.updated_number_scheduled = 3;
         return w;
       }(),
       true},
      {"daemonset numberAvailable < desired",
       [&] {
         auto w = ds();
         w.number_available = 3;
         return w;
       }(),
       true},
      {"daemonset OnDelete",
       [&] {
         auto w = ds();
         w.update_strategy = "OnDelete";
         w.updated_number_scheduled = 0;
         return w;
       }(),
       false},
      {"replicaset done", rs(), false},
      {"replicaset scaling",
       [&] {
         auto w = rs();
         w.replicas = 3;
         return w;
       }(),
       true},
      {"replicaset replica not available",
       [&] {
         auto w = rs();
         w.available_replicas = 1;
         return w;
       }(),
       true},
      {"replicaset generation ahead",
       [&] {
         auto w = rs();
         w.generation = 2;
         return w;
       }(),
       true},
  };
  for (const Case& c : cases)
    EXPECT_EQ(c.w.RolloutInProgress(), c.in_progress)
        << c.name << ": \"" << c.w.RolloutWaitingFor() << "\"";
}

constexpr const char* kHpaList = R"({
  "kind": "HorizontalPodAutoscalerList", "apiVersion": "autoscaling/v2",
  "metadata": {"resourceVersion": "9"},
  "items": [
    {"metadata": {"name": "web", "namespace": "shop"},
     "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
       "minReplicas": 2, "maxReplicas": 10},
     "status": {"currentReplicas": 6, "desiredReplicas": 4}},
    {"metadata": {"name": "fresh", "namespace": "shop"},
     "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"},
       "maxReplicas": 5},
     "status": {"desiredReplicas": 0}}]
})";

TEST(WorkloadObject, DecodesAnHpaList) {
  auto list = DecodeAutoscalerList(kHpaList);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 2u);
  const Autoscaler& web = (*list)[0];
  EXPECT_EQ(web.ns, "shop");
  EXPECT_EQ(web.name, "web");
  EXPECT_EQ(web.target_kind, "Deployment");
  EXPECT_EQ(web.target_name, "web");
  EXPECT_EQ(web.target_api_version, "apps/v1");
  EXPECT_EQ(web.current_replicas, 6);
  EXPECT_EQ(web.desired_replicas, 4);
  EXPECT_TRUE(web.ScalingDown());
  EXPECT_TRUE(web.Targets("Deployment", "web"));
  EXPECT_FALSE(web.Targets("ReplicaSet", "web"));
  // No currentReplicas yet (a new HPA): not scaling anything down.
  EXPECT_FALSE((*list)[1].ScalingDown());

  auto empty = DecodeAutoscalerList(R"({"kind":"HorizontalPodAutoscalerList","items":null})");
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_TRUE(empty->empty());
}

TEST(WorkloadObject, HpaErrorsNameTheField) {
  struct Case {
    const char* body;
    const char* field;
  } cases[] = {
      {R"({"items":[{"metadata":{"name":"h","namespace":"a"},"spec":{}}]})", "spec.scaleTargetRef"},
      {R"({"items":[{"metadata":{"name":"h","namespace":"a"},
           "spec":{"scaleTargetRef":{"kind":"Deployment"}}}]})",
       "spec.scaleTargetRef.name"},
      {R"({"items":[{"metadata":{"name":"h","namespace":"a"},
           "spec":{"scaleTargetRef":{"kind":"Deployment","name":"w"}},
           "status":{"currentReplicas":"2"}}]})",
       "status.currentReplicas"},
      {R"({"items":[{"metadata":{"name":"h","namespace":"a"},
           "spec":{"scaleTargetRef":{"kind":"Deployment","name":"w"}},
           "status":{"desiredReplicas":-1.0}}]})",
       "status.desiredReplicas"},
      {R"({"items":[{"spec":{}}]})", "metadata"},
      {R"({"kind":"HorizontalPodAutoscalerList"})", "items"},
  };
  for (const Case& c : cases) {
    auto list = DecodeAutoscalerList(c.body);
    ASSERT_FALSE(list.ok()) << c.body;
    EXPECT_NE(list.status().message().find(c.field), std::string::npos)
        << c.field << " in " << list.status().ToString();
  }
}

TEST(WorkloadObject, ResourcesOfTheKinds) {
  EXPECT_EQ(WorkloadResource("Deployment"), "deployments");
  EXPECT_EQ(WorkloadResource("ReplicaSet"), "replicasets");
  EXPECT_EQ(WorkloadResource("StatefulSet"), "statefulsets");
  EXPECT_EQ(WorkloadResource("DaemonSet"), "daemonsets");
  EXPECT_EQ(WorkloadResource("Job"), "");
}

}  // namespace
}  // namespace ds
