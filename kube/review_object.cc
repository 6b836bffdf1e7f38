#include "kube/review_object.h"

#include "common/json_util.h"

namespace ds {
namespace {

using rapidjson::Value;

void WriteUser(JsonWriter& w, const UserInfo& u) {
  if (!u.username.empty()) {
    w.Key("user");
    WriteString(w, u.username);
  }
  if (!u.uid.empty()) {
    w.Key("uid");
    WriteString(w, u.uid);
  }
  if (!u.groups.empty()) {
    w.Key("groups");
    w.StartArray();
    for (const std::string& g : u.groups) WriteString(w, g);
    w.EndArray();
  }
  if (!u.extra.empty()) {
    w.Key("extra");
    w.StartObject();
    for (const auto& [k, values] : u.extra) {
      WriteString(w, k);
      w.StartArray();
      for (const std::string& v : values) WriteString(w, v);
      w.EndArray();
    }
    w.EndObject();
  }
}

// The top-level object of an answer of `kind`, parsed into *d; its status (null when absent).
StatusOr<const Value*> ParseStatus(const std::string& body, const char* kind,
                                   rapidjson::Document* d) {
  d->Parse<rapidjson::kParseIterativeFlag>(body.c_str(), body.size());
  const std::string what = std::string("decode ") + kind;
  if (d->HasParseError()) return Status::Unavailable(what + ": " + JsonParseError(*d));
  if (!d->IsObject()) return Status::Unavailable(what + ": not a JSON object");
  if (const std::string k = JsonString(*d, "kind"); !k.empty() && k != kind)
    return Status::Unavailable(what + ": the answer is a " + k);
  const Value* status = JsonMember(*d, "status");
  if (status != nullptr && !status->IsObject())
    return Status::Unavailable(what + ": status is not an object");
  return status;
}

// A boolean member of `status` (false when absent); error when present and not a boolean.
Status ReadBool(const Value* status, const char* name, const char* kind, bool* out) {
  *out = false;
  const Value* v = status == nullptr ? nullptr : JsonMember(*status, name);
  if (v == nullptr || v->IsNull()) return Status::OK();
  if (!v->IsBool())
    return Status::Unavailable(std::string("decode ") + kind + ": status." + name +
                               " is not a boolean");
  *out = v->GetBool();
  return Status::OK();
}

// An array of strings (absent or null: empty).
Status ReadStrings(const Value* v, const std::string& field, std::vector<std::string>* out) {
  out->clear();
  if (v == nullptr || v->IsNull()) return Status::OK();
  if (!v->IsArray()) return Status::Unavailable("decode TokenReview: " + field + " is not a list");
  for (const Value& s : v->GetArray()) {
    if (!s.IsString())
      return Status::Unavailable("decode TokenReview: " + field + " holds a non-string");
    out->emplace_back(s.GetString(), s.GetStringLength());
  }
  return Status::OK();
}

}  // namespace

std::string EncodeTokenReview(const std::string& token) {
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.StartObject();
  w.Key("apiVersion");
  w.String("authentication.k8s.io/v1");
  w.Key("kind");
  w.String("TokenReview");
  w.Key("spec");
  w.StartObject();
  w.Key("token");
  WriteString(w, token);
  w.EndObject();
  w.EndObject();
  return std::string(sb.GetString(), sb.GetSize());
}

StatusOr<TokenReviewResult> DecodeTokenReview(const std::string& body) {
  rapidjson::Document d;
  ASSIGN_OR_RETURN(const Value* status, ParseStatus(body, "TokenReview", &d));
  TokenReviewResult r;
  RETURN_NOT_OK(ReadBool(status, "authenticated", "TokenReview", &r.authenticated));
  if (status == nullptr) return r;
  r.error = JsonString(*status, "error");
  const Value* user = JsonMember(*status, "user");
  if (user == nullptr || user->IsNull()) return r;
  if (!user->IsObject())
    return Status::Unavailable("decode TokenReview: status.user is not an object");
  r.user.username = JsonString(*user, "username");
  r.user.uid = JsonString(*user, "uid");
  RETURN_NOT_OK(ReadStrings(JsonMember(*user, "groups"), "status.user.groups", &r.user.groups));
  const Value* extra = JsonMember(*user, "extra");
  if (extra != nullptr && !extra->IsNull()) {
    if (!extra->IsObject())
      return Status::Unavailable("decode TokenReview: status.user.extra is not an object");
    for (const auto& m : extra->GetObject()) {
      const std::string key(m.name.GetString(), m.name.GetStringLength());
      RETURN_NOT_OK(ReadStrings(&m.value, "status.user.extra." + key, &r.user.extra[key]));
    }
  }
  // An authenticated answer without a name names nobody: nothing could be authorized for it.
  if (r.authenticated && r.user.username.empty())
    return Status::Unavailable(
        "decode TokenReview: authenticated, but status.user.username is empty");
  return r;
}

std::string EncodeSubjectAccessReview(const AccessAttributes& a) {
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.StartObject();
  w.Key("apiVersion");
  w.String("authorization.k8s.io/v1");
  w.Key("kind");
  w.String("SubjectAccessReview");
  w.Key("spec");
  w.StartObject();
  if (a.is_resource()) {
    const ResourceAttributes& r = a.resource;
    w.Key("resourceAttributes");
    w.StartObject();
    auto field = [&](const char* key, const std::string& value) {
      if (value.empty()) return;
      w.Key(key);
      WriteString(w, value);
    };
    field("namespace", r.namespace_name);
    field("verb", a.verb);
    field("group", r.group);
    field("version", r.version);
    field("resource", r.resource);
    field("subresource", r.subresource);
    field("name", r.name);
    w.EndObject();
  } else {
    w.Key("nonResourceAttributes");
    w.StartObject();
    w.Key("path");
    WriteString(w, a.path);
    w.Key("verb");
    WriteString(w, a.verb);
    w.EndObject();
  }
  WriteUser(w, a.user);
  w.EndObject();
  w.EndObject();
  return std::string(sb.GetString(), sb.GetSize());
}

StatusOr<AccessDecision> DecodeSubjectAccessReview(const std::string& body) {
  rapidjson::Document d;
  ASSIGN_OR_RETURN(const Value* status, ParseStatus(body, "SubjectAccessReview", &d));
  AccessDecision r;
  RETURN_NOT_OK(ReadBool(status, "allowed", "SubjectAccessReview", &r.allowed));
  RETURN_NOT_OK(ReadBool(status, "denied", "SubjectAccessReview", &r.denied));
  if (status != nullptr) {
    r.reason = JsonString(*status, "reason");
    r.evaluation_error = JsonString(*status, "evaluationError");
  }
  return r;
}

}  // namespace ds
