#include "rebalance/node_relief.h"

#include <cmath>
#include <limits>

namespace ds {

double Relief::CeilingPercent() const {
  if (available_bytes) return std::nan("");
  return pool != nullptr && pool->count > 0 ? MovingMean(pool.get(), false).Ceiling() : load.goal;
}

std::optional<Relief> ReliefFor(const std::string& node, const std::vector<HoldingRule>& holding,
                                double allocatable_cpu, double allocatable_memory, double target) {
  std::optional<Relief> best;
  double best_excess = 0;
  for (const HoldingRule& h : holding) {
    if (h.resource == Rule::Resource::kNone || !std::isfinite(h.value)) continue;
    if (h.available_bytes) {
      if (h.resource != Rule::Resource::kMemory) continue;
      const double short_by = h.clear_threshold - h.value;  // bytes below the goal
      if (!(short_by > 0)) continue;
      // Bytes beat percent: of two bytes rules (pools overlap), the one further short.
      if (best && best->available_bytes && short_by <= best_excess) continue;
      best_excess = short_by;
      Relief r;
      r.rule = std::string(h.rule);
      r.resource = h.resource;
      r.available_bytes = true;
      r.load =
          NodeLoad{node, -h.value, -h.clear_threshold, -std::numeric_limits<double>::infinity()};
      r.per_unit = 1;
      r.pool = h.pool;
      best = std::move(r);
      continue;
    }
    if (best && best->available_bytes) continue;
    double allocatable = 0;
    if (h.resource == Rule::Resource::kCpu) allocatable = allocatable_cpu;
    if (h.resource == Rule::Resource::kMemory) allocatable = allocatable_memory;
    if (!(allocatable > 0) || !std::isfinite(allocatable)) continue;
    const double excess = h.value - h.clear_threshold;
    if (!(excess > 0) || (best && excess <= best_excess)) continue;
    best_excess = excess;
    Relief r;
    r.rule = std::string(h.rule);
    r.resource = h.resource;
    r.load = NodeLoad{node, h.value, h.clear_threshold, target};
    r.per_unit = 100.0 / allocatable;
    r.pool = h.pool;
    best = std::move(r);
  }
  return best;
}

}  // namespace ds
