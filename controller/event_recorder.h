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

#include <map>
#include <optional>
#include <string>
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
  // A series keeps its first Event packed: the fields that name the series (regarding, reason,
  // action, related) as the map's key, the others (note, type, apiVersion, the Event's name) in
  // one string. An EventInfo is 14 strings, mostly empty for a node's Event, and a key copied
  // out of it was 7 more: about 1 kB a series, where packed it is about a third of that. It
  // matters because a mass flip or churn at 10,000 nodes keeps thousands of series open for the
  // 6-minute window.
  struct Series {
    std::string rest;       // PackRest(first)
    double first_wall = 0;  // the first occurrence's at_wall (eventTime)
    int count = 0;
    int written = 0;  // the count the API server has
    bool created = false;
    TimePoint last{};
    double last_wall = 0;
  };
  static std::string KeyOf(const EventInfo& e);
  static std::string PackRest(const EventInfo& e);
  // The first Event back from its key and series, with the series' count and last time set.
  static EventInfo Unpack(const std::string& key, const Series& s);
  static EventWrite PatchOf(const std::string& key, const Series& s);

  const double window_seconds_;
  std::map<std::string, Series> series_;
};

}  // namespace ds
