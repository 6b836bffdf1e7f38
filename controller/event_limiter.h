// How many Events the controller may post: every Event is an object the API server stores, so a
// metric that flaps around its threshold must not turn into a stream of them. As client-go's spam
// filter does, each object (node) has a token bucket: a burst, then one Event per refill
// interval; a cycle posts at most `per_cycle` in all (a cluster-wide load spike marks thousands of
// nodes at once). What is held back is not lost: it is counted here, and the EventRecorder
// (event_recorder.h) counts it in its Event's series, which the next write carries.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/clock.h"

namespace ds {

struct EventLimits {
  double burst = 5;
  double refill_seconds = 300;  // one more Event per object per this many seconds
  size_t per_cycle = 100;
};

class EventLimiter {
 public:
  explicit EventLimiter(EventLimits limits = {}) : limits_(limits) {}

  // Starts a cycle's budget.
  void NewCycle() { sent_this_cycle_ = 0; }
  // Whether an Event about `object` may be posted now: the number of earlier ones held back for
  // it (to say so), or nullopt when this one is held back too (and counted).
  std::optional<size_t> Admit(const std::string& object, TimePoint now);
  size_t suppressed_total() const { return suppressed_total_; }
  size_t tracked() const { return buckets_.size(); }

 private:
  struct Bucket {
    double tokens = 0;
    TimePoint at{};
    size_t held_back = 0;
  };
  const EventLimits limits_;
  std::unordered_map<std::string, Bucket> buckets_;
  size_t sent_this_cycle_ = 0;
  size_t suppressed_total_ = 0;
};

}  // namespace ds
