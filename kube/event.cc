#include "kube/event.h"

#include <atomic>
#include <cinttypes>
#include <cmath>
#include <cstdio>

#include "common/json_util.h"
#include "kube/lease.h"  // FormatMicroTime

namespace ds {
namespace {

// s cut to at most n bytes without splitting a UTF-8 sequence (the API server counts bytes; a
// cut character would make the body invalid UTF-8).
std::string CutUtf8(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

void WriteRef(JsonWriter& w, const std::string& kind, const std::string& name,
              const std::string& ns, const std::string& uid, const std::string& api_version = "") {
  w.StartObject();
  w.Key("apiVersion");
  WriteString(w, api_version.empty() ? "v1" : api_version);  // Node and Pod are core/v1
  w.Key("kind");
  WriteString(w, kind);
  w.Key("name");
  WriteString(w, name);
  if (!ns.empty()) {
    w.Key("namespace");
    WriteString(w, ns);
  }
  if (!uid.empty()) {
    w.Key("uid");
    WriteString(w, uid);
  }
  w.EndObject();
}

}  // namespace

std::string EventNamespace(const EventInfo& e) {
  return e.object_namespace.empty() ? "default" : e.object_namespace;
}

std::string EventName(const EventInfo& e) {
  // Two events on one object in the same instant (two pods of one plan) must not share a name:
  // a process-wide sequence is added to the nanoseconds.
  static std::atomic<uint64_t> sequence{0};
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, ".%" PRIx64,
                static_cast<uint64_t>(std::llround(e.at_wall * 1e9)) + sequence++);
  return e.name + suffix;
}

std::string EncodeEvent(const EventInfo& e, const std::string& controller,
                        const std::string& instance) {
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.StartObject();
  w.Key("apiVersion");
  w.String("events.k8s.io/v1");
  w.Key("kind");
  w.String("Event");
  w.Key("metadata");
  w.StartObject();
  w.Key("name");
  WriteString(w, e.event_name.empty() ? EventName(e) : e.event_name);
  w.Key("namespace");
  WriteString(w, EventNamespace(e));
  w.EndObject();
  w.Key("eventTime");
  WriteString(w, FormatMicroTime(e.at_wall));
  if (e.series_count >= 2) {  // a series whose first Event was lost (client-go creates it so)
    w.Key("series");
    w.StartObject();
    w.Key("count");
    w.Int(e.series_count);
    w.Key("lastObservedTime");
    WriteString(w, FormatMicroTime(e.series_last_wall));
    w.EndObject();
  }
  w.Key("reportingController");
  WriteString(w, controller);
  w.Key("reportingInstance");
  WriteString(w, CutUtf8(instance, kEventFieldLimit));
  w.Key("action");
  WriteString(w, e.action);
  w.Key("reason");
  WriteString(w, e.reason);
  w.Key("regarding");
  WriteRef(w, e.kind, e.name, e.object_namespace, e.uid, e.api_version);
  if (!e.related_kind.empty()) {
    w.Key("related");
    WriteRef(w, e.related_kind, e.related_name, e.related_namespace, "");
  }
  w.Key("note");
  WriteString(w, CutUtf8(e.message, kEventNoteLimit));
  w.Key("type");
  WriteString(w, e.type);
  w.EndObject();
  return sb.GetString();
}

std::string EncodeEventSeriesPatch(int count, double last_observed_wall) {
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.StartObject();
  w.Key("series");
  w.StartObject();
  w.Key("count");
  w.Int(count);
  w.Key("lastObservedTime");
  WriteString(w, FormatMicroTime(last_observed_wall));
  w.EndObject();
  w.EndObject();
  return sb.GetString();
}

}  // namespace ds
