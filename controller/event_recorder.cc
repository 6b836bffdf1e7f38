#include "controller/event_recorder.h"

#include <cstdint>
#include <cstring>

namespace ds {
namespace {

// Each field as its length (4 bytes) and its bytes: exact for any content, and a key compares
// field by field in order.
void Put(const std::string& field, std::string* out) {
  const uint32_t n = static_cast<uint32_t>(field.size());
  char len[4];
  std::memcpy(len, &n, sizeof n);
  out->append(len, sizeof len);
  out->append(field);
}

// Reads the next field Put wrote at *pos (which it moves on).
std::string Take(const std::string& in, size_t* pos) {
  uint32_t n = 0;
  std::memcpy(&n, in.data() + *pos, sizeof n);
  std::string field = in.substr(*pos + sizeof n, n);
  *pos += sizeof n + n;
  return field;
}

}  // namespace

std::string EventRecorder::KeyOf(const EventInfo& e) {
  std::string key;
  for (const std::string* f : {&e.kind, &e.object_namespace, &e.name, &e.uid, &e.reason, &e.action,
                               &e.related_kind, &e.related_namespace, &e.related_name})
    Put(*f, &key);
  return key;
}

std::string EventRecorder::PackRest(const EventInfo& e) {
  std::string rest;
  for (const std::string* f : {&e.api_version, &e.message, &e.type, &e.event_name}) Put(*f, &rest);
  rest.shrink_to_fit();
  return rest;
}

EventInfo EventRecorder::Unpack(const std::string& key, const Series& s) {
  EventInfo e;
  size_t pos = 0;
  for (std::string* f : {&e.kind, &e.object_namespace, &e.name, &e.uid, &e.reason, &e.action,
                         &e.related_kind, &e.related_namespace, &e.related_name})
    *f = Take(key, &pos);
  pos = 0;
  for (std::string* f : {&e.api_version, &e.message, &e.type, &e.event_name})
    *f = Take(s.rest, &pos);
  e.at_wall = s.first_wall;
  e.series_count = s.count;
  e.series_last_wall = s.last_wall;
  return e;
}

EventWrite EventRecorder::PatchOf(const std::string& key, const Series& s) {
  EventWrite w;
  w.kind = EventWrite::Kind::kPatch;
  w.event = Unpack(key, s);
  return w;
}

std::optional<EventWrite> EventRecorder::Observe(const EventInfo& e, TimePoint now, bool write) {
  std::string key = KeyOf(e);
  auto it = series_.find(key);
  if (it != series_.end() && ToSeconds(now - it->second.last) > window_seconds_) {
    series_.erase(it);  // closed: Finish was not called in time; a new series starts
    it = series_.end();
  }
  if (it == series_.end()) {
    EventInfo first = e;
    first.event_name = EventName(e);
    Series s;
    s.rest = PackRest(first);
    s.first_wall = e.at_wall;
    key.shrink_to_fit();
    it = series_.emplace(std::move(key), std::move(s)).first;
  }
  Series& s = it->second;
  ++s.count;
  s.last = now;
  s.last_wall = e.at_wall;
  if (!write) return std::nullopt;
  if (s.created) {
    s.written = s.count;
    return PatchOf(it->first, s);
  }
  // The first write of the series: a create, with the series when occurrences were held back
  // (series.count must be at least 2, which a held-back one makes it).
  EventWrite w;
  w.kind = EventWrite::Kind::kCreate;
  w.event = Unpack(it->first, s);
  if (s.count < 2) {
    w.event.series_count = 0;
    w.event.series_last_wall = 0;
  }
  s.created = true;
  s.written = s.count;
  return w;
}

void EventRecorder::Failed(const EventWrite& w) { series_.erase(KeyOf(w.event)); }

std::vector<EventWrite> EventRecorder::Finish(TimePoint now) {
  std::vector<EventWrite> out;
  for (auto it = series_.begin(); it != series_.end();) {
    const Series& s = it->second;
    if (ToSeconds(now - s.last) <= window_seconds_) {
      ++it;
      continue;
    }
    if (s.created && s.count > s.written) out.push_back(PatchOf(it->first, s));
    it = series_.erase(it);
  }
  return out;
}

}  // namespace ds
