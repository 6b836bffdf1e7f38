#include "kube/event.h"

#include <atomic>
#include <cinttypes>
#include <cmath>
#include <cstdio>

#include "common/json_util.h"
#include "common/rfc3339.h"

namespace ds {

std::string EventNamespace(const EventInfo& e) {
  return e.object_namespace.empty() ? "default" : e.object_namespace;
}

std::string EncodeEvent(const EventInfo& e, const std::string& component,
                        const std::string& instance) {
  // Two events on one object in the same instant (two pods of one plan) must not share a name
  // (the second would get 409): a process-wide sequence is added to the nanoseconds.
  static std::atomic<uint64_t> sequence{0};
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, ".%" PRIx64,
                static_cast<uint64_t>(std::llround(e.at_wall * 1e9)) + sequence++);
  // The API server caps messages at 1 KiB (events are for people, not for data).
  const std::string message = e.message.size() > 1024 ? e.message.substr(0, 1024) : e.message;
  const std::string at = FormatRfc3339(e.at_wall);
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.StartObject();
  w.Key("apiVersion");
  w.String("v1");
  w.Key("kind");
  w.String("Event");
  w.Key("metadata");
  w.StartObject();
  w.Key("name");
  WriteString(w, e.name + suffix);
  w.Key("namespace");
  WriteString(w, EventNamespace(e));
  w.EndObject();
  w.Key("involvedObject");
  w.StartObject();
  w.Key("apiVersion");
  w.String("v1");
  w.Key("kind");
  WriteString(w, e.kind);
  w.Key("name");
  WriteString(w, e.name);
  if (!e.object_namespace.empty()) {
    w.Key("namespace");
    WriteString(w, e.object_namespace);
  }
  if (!e.uid.empty()) {
    w.Key("uid");
    WriteString(w, e.uid);
  }
  w.EndObject();
  w.Key("reason");
  WriteString(w, e.reason);
  w.Key("message");
  WriteString(w, message);
  w.Key("type");
  WriteString(w, e.type);
  w.Key("source");
  w.StartObject();
  w.Key("component");
  WriteString(w, component);
  w.EndObject();
  w.Key("reportingComponent");
  WriteString(w, component);
  w.Key("reportingInstance");
  WriteString(w, instance);
  w.Key("firstTimestamp");
  WriteString(w, at);
  w.Key("lastTimestamp");
  WriteString(w, at);
  w.Key("count");
  w.Int(1);
  w.Key(
      "eventTime");  // null: the core/v1 form (set, the API server wants the events.k8s.io fields)
  w.Null();
  w.EndObject();
  return sb.GetString();
}

}  // namespace ds
