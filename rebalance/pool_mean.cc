#include "rebalance/pool_mean.h"

namespace ds {

MovingMean::MovingMean(const PoolMean* pool, bool negated)
    : pool_(pool), sum_(negated ? -pool->sum : pool->sum) {}

void MovingMean::Move(double share, double amount, const std::string& to) {
  sum_ -= share;
  // Bytes available negated: the new node's load rises by the bytes it gives up, per_unit 1.
  if (auto it = pool_->per_unit.find(to); it != pool_->per_unit.end()) sum_ += amount * it->second;
}

}  // namespace ds
