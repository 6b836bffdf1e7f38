#include "controller/event_recorder.h"

namespace ds {

EventWrite EventRecorder::PatchOf(const Series& s) const {
  EventWrite w;
  w.kind = EventWrite::Kind::kPatch;
  w.event = s.first;
  w.event.series_count = s.count;
  w.event.series_last_wall = s.last_wall;
  return w;
}

std::optional<EventWrite> EventRecorder::Observe(const EventInfo& e, TimePoint now, bool write) {
  auto it = series_.find(e);
  if (it != series_.end() && ToSeconds(now - it->last) > window_seconds_) {
    series_.erase(it);  // closed: Finish was not called in time; a new series starts
    it = series_.end();
  }
  if (it == series_.end()) {
    Series s;
    s.first = e;
    s.first.event_name = EventName(e);
    s.first.series_count = 0;
    it = series_.insert(std::move(s)).first;
  }
  const Series& s = *it;
  ++s.count;
  s.last = now;
  s.last_wall = e.at_wall;
  if (!write) return std::nullopt;
  if (s.created) {
    s.written = s.count;
    return PatchOf(s);
  }
  // The first write of the series: a create, with the series when occurrences were held back
  // (series.count must be at least 2, which a held-back one makes it).
  EventWrite w;
  w.kind = EventWrite::Kind::kCreate;
  w.event = s.first;
  if (s.count >= 2) {
    w.event.series_count = s.count;
    w.event.series_last_wall = s.last_wall;
  }
  s.created = true;
  s.written = s.count;
  return w;
}

void EventRecorder::Failed(const EventWrite& w) {
  if (auto it = series_.find(w.event); it != series_.end()) series_.erase(it);
}

std::vector<EventWrite> EventRecorder::Finish(TimePoint now) {
  std::vector<EventWrite> out;
  for (auto it = series_.begin(); it != series_.end();) {
    const Series& s = *it;
    if (ToSeconds(now - s.last) <= window_seconds_) {
      ++it;
      continue;
    }
    if (s.created && s.count > s.written) out.push_back(PatchOf(s));
    it = series_.erase(it);
  }
  return out;
}

}  // namespace ds
