// Small helpers for the simulator's stored objects (JSON documents edited in place), shared by the
// stores that keep whole objects (volumes, autoscalers).
#pragma once

#include <rapidjson/document.h>

#include <ctime>
#include <string>

namespace sim {

// Now as the API server writes a timestamp (RFC 3339, whole seconds, UTC).
inline std::string NowTimestamp() {
  time_t t = time(nullptr);
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Sets member `key` of `obj` to `v`, replacing one that is there.
inline void SetMember(rapidjson::Value& obj, const char* key, rapidjson::Value v,
                      rapidjson::Document::AllocatorType& a) {
  if (auto it = obj.FindMember(key); it != obj.MemberEnd())
    it->value = v;
  else
    obj.AddMember(rapidjson::Value(key, a), v, a);
}

// Member `key` of `obj` as an object, made one when it is absent or of another type.
inline rapidjson::Value& ObjectMember(rapidjson::Value& obj, const char* key,
                                      rapidjson::Document::AllocatorType& a) {
  auto it = obj.FindMember(key);
  if (it == obj.MemberEnd() || !it->value.IsObject())
    SetMember(obj, key, rapidjson::Value(rapidjson::kObjectType), a);
  return obj[key];
}

}  // namespace sim
