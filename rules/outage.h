// What happens to the marks while Prometheus does not answer at all (onPrometheusDown).
//
// `hold` (the default) changes nothing during an outage: a mark set on evidence stays until
// evidence says otherwise, so a short outage never makes labels flap. `release` removes the marks
// once every query has failed for `releaseAfter`: a long outage then falls back to plain
// kube-scheduler behaviour instead of steering pods away from nodes by data hours old. The
// removals go through the same writer as any other, so they are spread by the write limits.
//
// The outage is counted from the first cycle of this process (or leadership term) in which every
// query failed: a replica that starts during an outage waits `releaseAfter` in full before it
// removes anything, as it cannot know how long the outage has lasted.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "common/clock.h"
#include "rules/decider.h"

namespace ds {

struct OutagePolicy {
  bool release = false;  // false: hold
  double release_after_seconds = 600;
};

class OutageClock {
 public:
  // Once per cycle: whether every rule's query failed in it.
  void Observe(bool every_query_failed, TimePoint now) {
    if (!every_query_failed)
      down_since_.reset();
    else if (!down_since_)
      down_since_ = now;
  }
  // Forgets the outage (a new leadership term counts its own).
  void Reset() { down_since_.reset(); }
  // Seconds every query has been failing; 0 while Prometheus answers.
  double DownSeconds(TimePoint now) const {
    return down_since_ ? ToSeconds(now - *down_since_) : 0;
  }
  bool Releasing(const OutagePolicy& policy, TimePoint now) const {
    return policy.release && down_since_ && DownSeconds(now) >= policy.release_after_seconds;
  }

 private:
  std::optional<TimePoint> down_since_;
};

// Releasing: every unknown verdict (no evidence) becomes cold with no holds, so the planner
// removes our marks (and the records left without one). Returns how many verdicts changed.
size_t ReleaseVerdicts(std::vector<NodeDecision>* decisions);

}  // namespace ds
