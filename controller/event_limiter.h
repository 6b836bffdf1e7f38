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
  // Past this many buckets, idle ones are swept at once rather than at the next interval.
  static constexpr size_t kMaxBuckets = 20000;
  // Forgets the buckets that have refilled and hold nothing back: at most once per refill
  // interval, or at once when there are more than kMaxBuckets.
  void Prune(TimePoint now);

  struct Bucket {
    double tokens = 0;
    TimePoint at{};
    size_t held_back = 0;
  };
  const EventLimits limits_;
  std::unordered_map<std::string, Bucket> buckets_;
  size_t sent_this_cycle_ = 0;
  TimePoint last_prune_{};
  size_t suppressed_total_ = 0;
};

}  // namespace ds
