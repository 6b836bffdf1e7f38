// What the simulator's stores share to word errors as the API server does: Status details, the
// NotFound/AlreadyExists/Conflict of a resource, and field errors collected into one 422 Invalid
// (apimachinery's field.ErrorList and its aggregate message), with the name and label checks of
// ObjectMeta validation.
#pragma once

#include <rapidjson/document.h>

#include <string>
#include <vector>

#include "common/json_util.h"
#include "common/labels.h"
#include "test/sim/sim_store.h"

namespace sim {

// details of a Status: {"name","group","kind","causes"}.
inline std::string Details(const std::string& name, const std::string& group,
                           const std::string& kind, const std::string& causes = "") {
  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  w.StartObject();
  if (!name.empty()) {
    w.Key("name");
    ds::WriteString(w, name);
  }
  if (!group.empty()) {
    w.Key("group");
    ds::WriteString(w, group);
  }
  if (!kind.empty()) {
    w.Key("kind");
    ds::WriteString(w, kind);
  }
  if (!causes.empty()) {
    w.Key("causes");
    w.RawValue(causes.c_str(), causes.size(), rapidjson::kArrayType);
  }
  w.EndObject();
  return sb.GetString();
}

inline ApiError Err(int code, const std::string& reason, const std::string& message,
                    const std::string& details = "") {
  return ApiError(code, reason, message, "", details);
}

// "pods" or "poddisruptionbudgets.policy" errors worded as the API server does.
struct Resource {
  const char* plural;
  const char* group;
  std::string Ref(const std::string& name) const {
    return std::string(plural) + (*group ? std::string(".") + group : "") + " \"" + name + "\"";
  }
  ApiError NotFound(const std::string& name) const {
    return Err(404, "NotFound", Ref(name) + " not found", Details(name, group, plural));
  }
  ApiError Exists(const std::string& name) const {
    return Err(409, "AlreadyExists", Ref(name) + " already exists", Details(name, group, plural));
  }
  ApiError Conflict(const std::string& name, const std::string& why) const {
    return Err(409, "Conflict", "Operation cannot be fulfilled on " + Ref(name) + ": " + why,
               Details(name, group, plural));
  }
};

// Field errors collected for one 422 Invalid.
struct FieldErrors {
  struct E {
    std::string reason, field, detail;  // detail: "Required value", "Invalid value: ..."
  };
  std::vector<E> errs;
  void Required(const std::string& field, const std::string& why = "") {
    errs.push_back(
        {"FieldValueRequired", field, "Required value" + (why.empty() ? "" : ": " + why)});
  }
  void Invalid(const std::string& field, const std::string& value, const std::string& why) {
    errs.push_back({"FieldValueInvalid", field, "Invalid value: " + value + ": " + why});
  }
  // "Pod \"x\" is invalid: f: Required value" or "... is invalid: [a, b]"
  ApiError ToError(const std::string& kind, const std::string& group_kind, const std::string& group,
                   const std::string& name) const {
    rapidjson::StringBuffer sb;
    ds::JsonWriter w(sb);
    w.StartArray();
    std::string all;
    for (const auto& e : errs) {
      all += (all.empty() ? "" : ", ") + e.field + ": " + e.detail;
      w.StartObject();
      w.Key("reason");
      ds::WriteString(w, e.reason);
      w.Key("message");
      ds::WriteString(w, e.detail);
      w.Key("field");
      ds::WriteString(w, e.field);
      w.EndObject();
    }
    w.EndArray();
    if (errs.size() > 1) all = "[" + all + "]";
    return Err(422, "Invalid", group_kind + " \"" + name + "\" is invalid: " + all,
               Details(name, group, kind, sb.GetString()));
  }
};

inline void ValidateLabels(const rapidjson::Value* meta, FieldErrors* fe) {
  const rapidjson::Value* l = meta ? ds::JsonMember(*meta, "labels") : nullptr;
  if (l == nullptr || !l->IsObject()) return;
  for (auto it = l->MemberBegin(); it != l->MemberEnd(); ++it) {
    std::string key = it->name.GetString();
    std::string why = ds::ValidateLabelKey(key);
    if (why.empty())
      why = it->value.IsString() ? ds::ValidateLabelValue(it->value.GetString())
                                 : "label value must be a string";
    if (!why.empty()) fe->Invalid("metadata.labels", "\"" + key + "\"", why);
  }
}

inline bool IsDns1123Subdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (alnum(c) || c == '-') continue;
    if (c == '.' && alnum(s[i - 1]) && alnum(s[i + 1])) continue;
    return false;
  }
  return true;
}

inline void ValidateName(const std::string& name, FieldErrors* fe) {
  if (name.empty())
    fe->Required("metadata.name", "name or generateName is required");
  else if (!IsDns1123Subdomain(name))
    fe->Invalid("metadata.name", "\"" + name + "\"",
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character "
                "(e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
}

}  // namespace sim
