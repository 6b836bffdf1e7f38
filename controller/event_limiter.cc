#include "controller/event_limiter.h"

#include <algorithm>

namespace ds {

std::optional<size_t> EventLimiter::Admit(const std::string& object, TimePoint now) {
  auto [it, fresh] = buckets_.try_emplace(object);
  Bucket& b = it->second;
  if (fresh) {
    b.tokens = limits_.burst;
  } else {
    b.tokens = std::min(limits_.burst,
                        b.tokens + std::max(0.0, ToSeconds(now - b.at)) / limits_.refill_seconds);
  }
  b.at = now;
  if (b.tokens < 1 || sent_this_cycle_ >= limits_.per_cycle) {
    ++b.held_back;
    ++suppressed_total_;
    return std::nullopt;
  }
  b.tokens -= 1;
  ++sent_this_cycle_;
  const size_t held = b.held_back;
  b.held_back = 0;
  Prune(now);
  return held;
}

void EventLimiter::Prune(TimePoint now) {
  // A bucket that has refilled and holds nothing back is the same as none. Swept once per refill
  // interval, not only when the map is large: a cluster whose nodes take turns being marked
  // (10,000 nodes, a few flips a second) otherwise keeps a bucket for every node that was ever
  // marked, and the resident size creeps up for as long as the process runs.
  if (!(now - last_prune_ >= FromSeconds(limits_.refill_seconds)) && buckets_.size() <= kMaxBuckets)
    return;
  last_prune_ = now;
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    const Bucket& b = it->second;
    if (b.held_back == 0 &&
        b.tokens + ToSeconds(now - b.at) / limits_.refill_seconds >= limits_.burst)
      it = buckets_.erase(it);
    else
      ++it;
  }
}

}  // namespace ds
