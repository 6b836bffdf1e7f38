#include "replay/right_sizing.h"

#include <algorithm>
#include <cmath>
#include <limits>
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

constexpr double kBucketRatio = 1.01;
const double kLogRatio = std::log(kBucketRatio);
constexpr int kZero = std::numeric_limits<int>::min();  // the bucket of values <= 0

}  // namespace

void P95Sketch::Bucket(double v) {
  int i = v > 0 ? static_cast<int>(std::floor(std::log(v) / kLogRatio)) : kZero;
  ++buckets_[i];
}

void P95Sketch::Add(double v) {
  // NaN and +-Inf are no usage (a range answer may carry them), and an infinite one has no bucket.
  if (!std::isfinite(v)) return;
  ++count_;
  if (!bucketed_ && exact_.size() < kExactSamples) {
    exact_.push_back(v);
    return;
  }
  if (!bucketed_) {
    for (double x : exact_) Bucket(x);
    exact_.clear();
    exact_.shrink_to_fit();
    bucketed_ = true;
  }
  Bucket(v);
}

double P95Sketch::Get() const {
  if (count_ == 0) return std::nan("");
  // Nearest rank: the smallest value with at least 95 % of the samples at or below it.
  const size_t rank =
      std::max<size_t>(1, static_cast<size_t>(std::ceil(0.95 * static_cast<double>(count_))));
  if (!bucketed_) {
    std::vector<double> v = exact_;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(rank - 1), v.end());
    return v[rank - 1];
  }
  std::vector<std::pair<int, uint64_t>> sorted(buckets_.begin(), buckets_.end());
  std::sort(sorted.begin(), sorted.end());
  size_t seen = 0;
  for (const auto& [i, n] : sorted) {
    seen += n;
    if (seen >= rank) return i == kZero ? 0 : std::exp((i + 0.5) * kLogRatio);
  }
  return std::nan("");  // not reached: the buckets hold count_ samples
}

RightSizer::RightSizer(const std::vector<PodInfo>& pods, const NodeMarks& marks,
                       double step_seconds)
    : marks_(marks), step_(step_seconds) {
  for (const PodInfo& p : pods) by_key_[p.Key()] = &p;
}

namespace {

// In one of `spans` (time order, no overlap)? The last span that starts at or before t decides.
bool InSpans(const std::vector<MarkSpan>& spans, double t) {
  auto after = std::upper_bound(spans.begin(), spans.end(), t,
                                [](double x, const MarkSpan& s) { return x < s.start; });
  return after != spans.begin() && t < std::prev(after)->end;
}

}  // namespace

void RightSizer::Add(int resource, const UsageSeries& s) {
  std::string key = s.ns + "/" + s.pod;
  auto found = by_key_.find(key);
  if (found == by_key_.end()) {
    unlisted_.insert(std::move(key));
    return;
  }
  const PodInfo& pod = *found->second;
  auto [it, fresh] = pods_.try_emplace(key);
  PodState& ps = it->second;
  if (fresh) {
    Acc& a = workloads_[WorkloadOf(pod)];
    ++a.pods;
    a.cpu_request = std::max(a.cpu_request, pod.cpu_request);
    a.memory_request = std::max(a.memory_request, pod.memory_request);
    ps.workload = &a;
  }
  ps.has[resource] = true;
  const std::string& node = !s.node.empty() ? s.node : pod.node;
  auto marked = marks_.find(node);
  P95Sketch& usage = ps.workload->usage[resource];
  for (const auto& [t, v] : s.points) {
    if (std::isnan(v)) continue;
    usage.Add(v);
    if (marked != marks_.end() && InSpans(marked->second, t)) ps.hot[resource] += step_;
  }
}

RightSizing RightSizer::Finish() const {
  RightSizing out;
  out.unlisted_pods = unlisted_.size();
  std::map<const Acc*, double> hot;
  double total_hot = 0;
  for (const auto& [key, ps] : pods_) {
    double h = ps.has[0] ? ps.hot[0] : ps.hot[1];
    hot[ps.workload] += h;
    total_hot += h;
  }
  for (const auto& [id, a] : workloads_) {
    WorkloadRow r;
    r.ns = id.ns;
    r.kind = id.kind;
    r.name = id.name;
    r.cpu_p95_cores = a.usage[0].Get();
    r.memory_p95_bytes = a.usage[1].Get();
    r.cpu_request_cores = a.cpu_request;
    r.memory_request_bytes = a.memory_request;
    r.hot_node_seconds = hot[&a];
    r.hot_node_seconds_share = total_hot > 0 ? r.hot_node_seconds / total_hot : 0;
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

RightSizing RightSize(const std::vector<PodInfo>& pods, const std::vector<UsageSeries>& cpu,
                      const std::vector<UsageSeries>& memory, const NodeMarks& marks,
                      double step_seconds) {
  RightSizer sizer(pods, marks, step_seconds);
  for (const UsageSeries& s : cpu) sizer.AddCpu(s);
  for (const UsageSeries& s : memory) sizer.AddMemory(s);
  return sizer.Finish();
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
