#include "controller/event_limiter.h"

#include <algorithm>
#include <vector>

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
  // Bounded: a bucket that has refilled and holds nothing back is the same as none. Pruned only
  // when the map grows past what a large cluster needs, so the common case costs nothing.
  if (buckets_.size() > 20000) {
    std::vector<std::string> idle;
    for (const auto& [name, bk] : buckets_)
      if (bk.held_back == 0 &&
          bk.tokens + ToSeconds(now - bk.at) / limits_.refill_seconds >= limits_.burst)
        idle.push_back(name);
    for (const auto& name : idle) buckets_.erase(name);
  }
  return held;
}

}  // namespace ds
