#include "replay/right_sizing.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace ds {

WorkloadId WorkloadOf(const PodInfo& pod) {
  if (pod.owner_kind.empty()) return {pod.ns, "Pod", pod.name};
  if (pod.owner_kind == "ReplicaSet") {
    // The Deployment controller names its ReplicaSets "<deployment>-<pod-template-hash>" and
    // labels their pods with the hash: both must agree, or the ReplicaSet stands alone.
    const std::string* hash = FindLabel(pod.labels, "pod-template-hash");
    const std::string& rs = pod.owner_name;
    if (hash && !hash->empty() && rs.size() > hash->size() + 1 &&
        rs.compare(rs.size() - hash->size(), hash->size(), *hash) == 0 &&
        rs[rs.size() - hash->size() - 1] == '-')
      return {pod.ns, "Deployment", rs.substr(0, rs.size() - hash->size() - 1)};
  }
  return {pod.ns, pod.owner_kind, pod.owner_name};
}

namespace {

bool MarkedAt(const NodeMarks& marks, const std::string& node, double t) {
  auto it = marks.find(node);
  if (it == marks.end()) return false;
  for (const MarkSpan& s : it->second)
    if (s.start <= t && t < s.end) return true;
  return false;
}

// Nearest rank: the smallest value with at least 95 % of the samples at or below it.
double P95(std::vector<double>* v) {
  if (v->empty()) return std::nan("");
  size_t rank = static_cast<size_t>(std::ceil(0.95 * static_cast<double>(v->size())));
  size_t i = rank == 0 ? 0 : rank - 1;
  std::nth_element(v->begin(), v->begin() + static_cast<std::ptrdiff_t>(i), v->end());
  return (*v)[i];
}

struct Acc {
  std::vector<double> cpu, memory;
  double cpu_request = 0, memory_request = 0, hot = 0;
  size_t pods = 0;
};

}  // namespace

RightSizing RightSize(const std::vector<PodInfo>& pods, const std::vector<UsageSeries>& cpu,
                      const std::vector<UsageSeries>& memory, const NodeMarks& marks,
                      double step_seconds) {
  std::unordered_map<std::string, const PodInfo*> by_key;
  for (const PodInfo& p : pods) by_key[p.Key()] = &p;

  std::map<WorkloadId, Acc> acc;
  std::unordered_map<std::string, WorkloadId> seen;  // pod key -> workload, once per pod
  RightSizing out;
  auto workload = [&](const UsageSeries& s) -> Acc* {
    std::string key = s.ns + "/" + s.pod;
    auto found = by_key.find(key);
    if (found == by_key.end()) return nullptr;
    auto [it, fresh] = seen.try_emplace(key, WorkloadOf(*found->second));
    Acc& a = acc[it->second];
    if (fresh) {
      ++a.pods;
      a.cpu_request = std::max(a.cpu_request, found->second->cpu_request);
      a.memory_request = std::max(a.memory_request, found->second->memory_request);
    }
    return &a;
  };
  // Hot time is counted from the CPU series, or the memory series of a pod without one: each
  // point is one step of the pod on its node.
  std::unordered_map<std::string, bool> has_cpu;
  auto count_hot = [&](const UsageSeries& s, Acc* a) {
    const std::string& node = !s.node.empty() ? s.node : by_key.at(s.ns + "/" + s.pod)->node;
    for (const auto& point : s.points)
      if (MarkedAt(marks, node, point.first)) a->hot += step_seconds;
  };
  std::unordered_map<std::string, bool> unlisted;
  for (const UsageSeries& s : cpu) {
    Acc* a = workload(s);
    if (!a) {
      unlisted[s.ns + "/" + s.pod] = true;
      continue;
    }
    has_cpu[s.ns + "/" + s.pod] = true;
    for (const auto& point : s.points)
      if (!std::isnan(point.second)) a->cpu.push_back(point.second);
    count_hot(s, a);
  }
  for (const UsageSeries& s : memory) {
    Acc* a = workload(s);
    if (!a) {
      unlisted[s.ns + "/" + s.pod] = true;
      continue;
    }
    for (const auto& point : s.points)
      if (!std::isnan(point.second)) a->memory.push_back(point.second);
    if (!has_cpu.count(s.ns + "/" + s.pod)) count_hot(s, a);
  }
  out.unlisted_pods = unlisted.size();

  double total_hot = 0;
  for (const auto& entry : acc) total_hot += entry.second.hot;
  for (auto& [id, a] : acc) {
    WorkloadRow r;
    r.ns = id.ns;
    r.kind = id.kind;
    r.name = id.name;
    r.cpu_p95_cores = P95(&a.cpu);
    r.memory_p95_bytes = P95(&a.memory);
    r.cpu_request_cores = a.cpu_request;
    r.memory_request_bytes = a.memory_request;
    r.hot_node_seconds = a.hot;
    r.hot_node_seconds_share = total_hot > 0 ? a.hot / total_hot : 0;
    r.pods = a.pods;
    out.rows.push_back(std::move(r));
  }
  // Over its request: P95 per core requested; no request at all ranks first (+inf), no sample last.
  auto over = [](const WorkloadRow& r) {
    if (std::isnan(r.cpu_p95_cores)) return -1.0;
    if (r.cpu_request_cores <= 0) return r.cpu_p95_cores > 0 ? INFINITY : 0.0;
    return r.cpu_p95_cores / r.cpu_request_cores;
  };
  std::stable_sort(out.rows.begin(), out.rows.end(),
                   [&](const WorkloadRow& a, const WorkloadRow& b) {
                     if (a.hot_node_seconds_share != b.hot_node_seconds_share)
                       return a.hot_node_seconds_share > b.hot_node_seconds_share;
                     return over(a) > over(b);
                   });
  return out;
}

void WriteWorkloads(JsonWriter& w, const std::vector<WorkloadRow>& rows) {
  auto number = [&](double v) {
    if (std::isfinite(v))
      w.Double(v);
    else
      w.Null();
  };
  w.StartArray();
  for (const WorkloadRow& r : rows) {
    w.StartObject();
    w.Key("namespace");
    WriteString(w, r.ns);
    w.Key("kind");
    WriteString(w, r.kind);
    w.Key("name");
    WriteString(w, r.name);
    w.Key("cpu_p95_cores");
    number(r.cpu_p95_cores);
    w.Key("cpu_request_cores");
    number(r.cpu_request_cores);
    w.Key("memory_p95_bytes");
    number(r.memory_p95_bytes);
    w.Key("memory_request_bytes");
    number(r.memory_request_bytes);
    w.Key("hot_node_seconds_share");
    number(r.hot_node_seconds_share);
    w.Key("hot_node_seconds");
    number(r.hot_node_seconds);
    w.Key("pods");
    w.Uint64(r.pods);
    w.EndObject();
  }
  w.EndArray();
}

}  // namespace ds
