// Series of repeated Events, as client-go's events.k8s.io/v1 broadcaster
// (k8s.io/client-go/tools/events/event_broadcaster.go) keeps them: the first occurrence of an
// Event is created; a repeat of the same (regarding, reason, action, related) while the series
// is open bumps the first Event's `series` {count, lastObservedTime} with a PATCH instead of
// creating another object; a series closes when nothing repeated it for `window` (client-go's
// finishTime, 6 min), and the next occurrence starts a new Event. The note is the first
// occurrence's (the API server refuses to change it), so a flapping node shows one Event per
// reason with a growing count rather than a stream of them.
//
// Occurrences the EventLimiter holds back are not dropped here: they are counted, and the next
// write of that series (or its final PATCH when it closes) carries the whole count. A series
// whose first Event was never created is dropped when it closes (posting it late would undo the
// limiter's per-cycle cap after a cluster-wide spike); those are in the suppressed counter.
//
// Pure: the caller supplies time and performs the writes. Not thread-safe (the cycle thread).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "kube/event.h"

namespace ds {

struct EventWrite {
  enum class Kind { kCreate, kPatch };
  Kind kind = Kind::kCreate;
  // For kCreate: the Event to POST, event_name chosen (series set when earlier occurrences were
  // held back). For kPatch: event_name, series_count and series_last_wall of the series.
  EventInfo event;
};

class EventRecorder {
 public:
  explicit EventRecorder(double window_seconds = 360) : window_seconds_(window_seconds) {}

  // One occurrence of `e` (e.at_wall: its wall time) at `now`. With `write`, the write to make
  // for it: a create for a new series, else a PATCH with the running count. Without `write` (the
  // limiter held it back) only counts it and returns nullopt.
  std::optional<EventWrite> Observe(const EventInfo& e, TimePoint now, bool write);
  // A write failed for good: the series is forgotten, so the next occurrence creates anew.
  void Failed(const EventWrite& w);
  // Closes the series nothing repeated for the window: the final PATCH of each whose count was
  // not all written yet; the rest are forgotten.
  std::vector<EventWrite> Finish(TimePoint now);
  size_t open_series() const { return series_.size(); }

 private:
  // A series is found by the fields of its first Event that name it (regarding, reason, action,
  // related); the set compares them in place rather than keeping a copy as a separate key, which
  // was about a third of a series' memory (a mass flip at 10,000 nodes opens thousands of series
  // for the 6-minute window).
  struct Series {
    EventInfo first;  // as created (event_name set)
    // Not part of the order, so changed in place through the set's const elements.
    mutable int count = 0;
    mutable int written = 0;  // the count the API server has
    mutable bool created = false;
    mutable TimePoint last{};
    mutable double last_wall = 0;
  };
  struct ByKey {
    using is_transparent = void;
    static auto Tie(const EventInfo& e) {
      return std::tie(e.kind, e.object_namespace, e.name, e.uid, e.reason, e.action, e.related_kind,
                      e.related_namespace, e.related_name);
    }
    bool operator()(const Series& a, const Series& b) const { return Tie(a.first) < Tie(b.first); }
    bool operator()(const Series& a, const EventInfo& b) const { return Tie(a.first) < Tie(b); }
    bool operator()(const EventInfo& a, const Series& b) const { return Tie(a) < Tie(b.first); }
  };
  EventWrite PatchOf(const Series& s) const;

  const double window_seconds_;
  std::set<Series, ByKey> series_;
};

}  // namespace ds
