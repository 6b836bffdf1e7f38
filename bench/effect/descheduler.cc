#include "bench/effect/descheduler.h"

#include <algorithm>

namespace effect {

std::vector<uint64_t> LowNodeUtilization(const std::vector<DeschedNode>& nodes,
                                         const DeschedulerParams& p) {
  struct Use {
    double v[3];  // requested cpu, memory, pods
  };
  auto capacity = [](const DeschedNode& n, int r) {
    return r == 0 ? n.cpu : r == 1 ? n.memory : n.pods;
  };
  std::vector<Use> use(nodes.size());
  std::vector<size_t> over;
  double room[3] = {0, 0, 0};
  bool any_under = false;
  for (size_t k = 0; k < nodes.size(); ++k) {
    Use& u = use[k];
    u.v[0] = u.v[1] = 0;
    u.v[2] = static_cast<double>(nodes[k].pod_requests.size());
    for (const DeschedPod& pod : nodes[k].pod_requests) {
      u.v[0] += pod.cpu;
      u.v[1] += pod.memory;
    }
    bool under = true, is_over = false;
    for (int r = 0; r < 3; ++r) {
      const double pct = 100 * u.v[r] / capacity(nodes[k], r);
      under = under && pct < p.thresholds[r];
      is_over = is_over || pct > p.target_thresholds[r];
    }
    if (under) {
      any_under = true;
      for (int r = 0; r < 3; ++r)
        room[r] += p.target_thresholds[r] / 100 * capacity(nodes[k], r) - u.v[r];
    }
    if (is_over) over.push_back(k);
  }
  std::vector<uint64_t> out;
  if (!any_under || over.empty()) return out;
  auto total = [&](size_t k) {
    double s = 0;
    for (int r = 0; r < 3; ++r) s += use[k].v[r] / capacity(nodes[k], r);
    return s;
  };
  std::stable_sort(over.begin(), over.end(),
                   [&](size_t a, size_t b) { return total(a) > total(b); });
  for (size_t k : over) {
    for (const DeschedPod& pod : nodes[k].pod_requests) {
      bool still_over = false;
      for (int r = 0; r < 3; ++r)
        still_over =
            still_over || 100 * use[k].v[r] / capacity(nodes[k], r) > p.target_thresholds[r];
      if (!still_over || room[0] <= 0 || room[1] <= 0 || room[2] <= 0) break;
      out.push_back(pod.id);
      use[k].v[0] -= pod.cpu;
      use[k].v[1] -= pod.memory;
      use[k].v[2] -= 1;
      room[0] -= pod.cpu;
      room[1] -= pod.memory;
      room[2] -= 1;
    }
  }
  return out;
}

}  // namespace effect
