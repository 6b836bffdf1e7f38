// Right-sizing (issue 26, seed 003's root question): which workloads' requests are too small?
// Per workload (its controller owner, a Deployment rather than its ReplicaSet), the 95th
// percentile of its pods' real CPU and memory over the replayed window against what each pod
// requests, and its share of the hot node-time: the time its pods spent on nodes the replay marked.
// A workload that uses far more than it requests and sits on the hot nodes is a cause of hot
// nodes; the marks are only the symptom. Pure: series, pods and marks in, rows out.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/json_util.h"
#include "kube/pod_object.h"

namespace ds {

// One pod's usage over the window (a podUsage query answered by query_range).
struct UsageSeries {
  std::string ns, pod;
  // The node the series names (a `node` label), else "": the pod's node in the pod list is taken.
  std::string node;
  std::vector<std::pair<double, double>> points;  // (epoch seconds, value), time ascending
};

// A mark on one node: [start, end), end the window's end while it was still marked there. A node's
// spans are in time order and do not overlap.
struct MarkSpan {
  double start = 0, end = 0;
};
using NodeMarks = std::map<std::string, std::vector<MarkSpan>>;

// The workload a pod belongs to. A ReplicaSet whose name is "<d>-<pod-template-hash>" (the pod
// carries that label) is Deployment <d>, as the Deployment controller names them; without the
// label the ReplicaSet is its own workload (a bare one). Every other owner is the workload as it
// is (StatefulSet, DaemonSet, Job, ...); a bare pod is kind "Pod" under its own name.
struct WorkloadId {
  std::string ns, kind, name;
  auto operator<=>(const WorkloadId&) const = default;
};
WorkloadId WorkloadOf(const PodInfo& pod);

struct WorkloadRow {
  std::string ns, kind, name;
  // 95th percentile (nearest rank, P95Sketch) of every sample of its pods: the usage of one pod,
  // comparable with one pod's request. NaN: no sample.
  double cpu_p95_cores = 0, memory_p95_bytes = 0;
  // The largest request among its listed pods (the pods of one template agree; mid-rollout the
  // larger is the one that will stay).
  double cpu_request_cores = 0, memory_request_bytes = 0;
  double hot_node_seconds = 0;  // pod-seconds its pods spent on marked nodes
  // hot_node_seconds over all listed workloads' (0 when no pod was ever on a marked node).
  double hot_node_seconds_share = 0;
  size_t pods = 0;  // its pods that have a series
};

struct RightSizing {
  std::vector<WorkloadRow> rows;  // largest hot share first, then the most over its CPU request
  // Pods with a series but no entry in the pod list (deleted since): no owner, no request, so no
  // row; their hot time is left out of the shares as well.
  size_t unlisted_pods = 0;
};

// The 95th percentile (nearest rank) of a stream of samples in bounded memory: exact while it
// holds at most kExactSamples, then from buckets 1 % wide on a log scale (the value reported is
// its bucket's geometric middle, within 0.5 % of the exact one). A week of a large workload's
// pods at a minute's step is millions of samples; a hundred thousand workloads' worth must fit.
class P95Sketch {
 public:
  static constexpr size_t kExactSamples = 1024;
  void Add(double v);
  double Get() const;  // NaN when empty
  size_t count() const { return count_; }

 private:
  void Bucket(double v);
  size_t count_ = 0;
  std::vector<double> exact_;                  // until it would pass kExactSamples
  std::unordered_map<int, uint64_t> buckets_;  // log-scale index -> samples; <= 0: one bucket
  bool bucketed_ = false;
};

// Right-sizing fed chunk by chunk (the podUsage history arrives one range request at a time), so
// that only the figures, never the series, are kept. Add may be called with a pod's points in any
// number of parts, of either resource, in any order.
class RightSizer {
 public:
  // `step_seconds`: the spacing of the series' points; each point counts as one step on its node.
  // `pods` and `marks` must outlive the RightSizer.
  RightSizer(const std::vector<PodInfo>& pods, const NodeMarks& marks, double step_seconds);

  void AddCpu(const UsageSeries& s) { Add(0, s); }
  void AddMemory(const UsageSeries& s) { Add(1, s); }
  RightSizing Finish() const;

 private:
  struct Acc {
    P95Sketch usage[2];  // cpu, memory
    double cpu_request = 0, memory_request = 0;
    size_t pods = 0;
  };
  // Hot time is counted from a pod's CPU points, or its memory points when it has no CPU series.
  struct PodState {
    Acc* workload = nullptr;
    double hot[2] = {0, 0};
    bool has[2] = {false, false};
  };
  void Add(int resource, const UsageSeries& s);

  const NodeMarks& marks_;
  const double step_;
  std::unordered_map<std::string, const PodInfo*> by_key_;
  std::map<WorkloadId, Acc> workloads_;
  std::unordered_map<std::string, PodState> pods_;  // "namespace/pod" with a series
  std::unordered_set<std::string> unlisted_;
};

// All at once: a RightSizer fed `cpu` and `memory`.
RightSizing RightSize(const std::vector<PodInfo>& pods, const std::vector<UsageSeries>& cpu,
                      const std::vector<UsageSeries>& memory, const NodeMarks& marks,
                      double step_seconds);

// The `workloads` array of replay.json (the contract): one object per row, every row.
// NaN figures are written as null.
void WriteWorkloads(JsonWriter& w, const std::vector<WorkloadRow>& rows);

}  // namespace ds
