#include "rebalance/pool_mean.h"

#include <algorithm>
#include <cmath>

namespace ds {

MovingMean::MovingMean(const PoolMean* pool, bool negated)
    : pool_(pool), sum_(negated ? -pool->sum : pool->sum) {}

void MovingMean::Move(double share, double amount, const std::string& to) {
  sum_ -= share;
  // Bytes available negated: the new node's load rises by the bytes it gives up, per_unit 1.
  if (auto it = pool_->per_unit.find(to); it != pool_->per_unit.end()) sum_ += amount * it->second;
}

std::shared_ptr<const PoolMean> MakePoolMean(
    const Rule& rule, double mean, size_t count, const std::vector<double>& values,
    const std::function<std::pair<std::string, double>(size_t)>& node, bool list_nodes) {
  if (rule.relative_to == Rule::Relative::kNone || rule.resource == Rule::Resource::kNone ||
      count == 0)
    return nullptr;
  auto pool = std::make_shared<PoolMean>();
  pool->sum = mean * static_cast<double>(count);
  pool->count = count;
  pool->clear_offset = rule.clear_threshold;
  pool->threshold_offset = rule.threshold;
  for (size_t i = 0; list_nodes && i < values.size(); ++i) {
    if (!std::isfinite(values[i])) continue;
    auto [name, allocatable] = node(i);
    if (rule.AvailableBytes())
      pool->per_unit.emplace(std::move(name), 1.0);
    else if (allocatable > 0 && std::isfinite(allocatable))
      pool->per_unit.emplace(std::move(name), 100.0 / allocatable);
  }
  return pool;
}

std::vector<size_t> BalanceDestinations(const std::vector<double>& values,
                                        const std::vector<bool>& held, double mean,
                                        double clear_offset, double threshold_offset) {
  double excess = 0;
  std::vector<size_t> free;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) continue;
    if (i < held.size() && held[i])
      excess += std::max(0.0, values[i] - (mean + clear_offset));
    else
      free.push_back(i);
  }
  std::vector<size_t> out;
  if (!(excess > 0)) return out;
  std::sort(free.begin(), free.end(), [&](size_t a, size_t b) {
    return values[a] != values[b] ? values[a] < values[b] : a < b;
  });
  for (size_t i : free) {
    const double room = mean + threshold_offset - values[i];
    if (!(room > 0) || !(excess > 0)) break;
    out.push_back(i);
    excess -= room;
  }
  return out;
}

}  // namespace ds
