#include "test/sim/sim_auth.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <cstdio>

#include "common/json_util.h"
#include "test/sim/sim_json.h"
#include "test/sim/sim_validation.h"

namespace sim {
namespace {

// The audiences the simulated API server accepts when a TokenReview names none: its
// --api-audiences, which default to the service account issuer (kind and kubeadm clusters:
// https://kubernetes.default.svc.cluster.local).
const char* const kApiAudience = "https://kubernetes.default.svc.cluster.local";

bool Contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The JSON type Go's decoder names in "cannot unmarshal X into ...".
const char* JsonKind(const rapidjson::Value& v) {
  if (v.IsNumber()) return "number";
  if (v.IsBool()) return "bool";
  if (v.IsArray()) return "array";
  if (v.IsObject()) return "object";
  return "string";
}

// The create handler's transformDecodeError summary of a body it could not read.
std::string Summary(const std::string& body) {
  if (body.empty()) return "<empty>";
  const size_t n = std::min<size_t>(body.size(), 30);
  std::string s;
  if (body[0] == '{') {
    s = body.substr(0, n);
  } else {
    char hex[3];
    for (size_t i = 0; i < n; ++i) {
      std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(body[i]));
      s += hex;
    }
  }
  return body.size() > n ? s + " ..." : s;
}

// Reads a review object of one kind, as the API server's decoder does: an unreadable body, an
// object of another kind or of another API version is a 400; so is a field of the wrong JSON
// type (Go's "cannot unmarshal"). Absent and null fields read as empty.
class Reader {
 public:
  Reader(const char* kind, const char* group_version) : kind_(kind), gv_(group_version) {}

  // Parses `body` into *d; false after setting error().
  bool Parse(const std::string& body, rapidjson::Document* d) {
    d->Parse(body.c_str());
    if (d->HasParseError() || !d->IsObject()) {
      Fail(std::string("the object provided is unrecognized (must be of type ") + kind_ +
           "): couldn't get version/kind; json parse error: " +
           (d->HasParseError() ? ds::JsonParseError(*d)
                               : std::string("cannot unmarshal ") + JsonKind(*d) +
                                     " into Go value of type struct") +
           " (" + Summary(body) + ")");
      return false;
    }
    const std::string kind = ds::JsonString(*d, "kind"), api = ds::JsonString(*d, "apiVersion");
    const std::string version = api.substr(api.find('/') + 1);
    if (!kind.empty() && kind != kind_) {
      Fail(kind + " in version \"" + version + "\" cannot be handled as a " + kind_ +
           ": no kind \"" + kind + "\" is registered for version \"" + api + "\"");
      return false;
    }
    if (!api.empty() && api != gv_) {
      Fail("the API version in the data (" + api + ") does not match the expected API version (" +
           gv_ + ")");
      return false;
    }
    return true;
  }

  // Member `key` of `obj` as an object; nullptr when absent or null (or after a type error).
  const rapidjson::Value* Object(const rapidjson::Value* obj, const char* key,
                                 const char* go_struct, const std::string& path,
                                 const char* go_type) {
    const rapidjson::Value* v = Member(obj, key);
    if (v == nullptr) return nullptr;
    if (!v->IsObject()) {
      TypeError(*v, go_struct, path, go_type);
      return nullptr;
    }
    return v;
  }

  std::string String(const rapidjson::Value* obj, const char* key, const char* go_struct,
                     const std::string& path) {
    const rapidjson::Value* v = Member(obj, key);
    if (v == nullptr) return "";
    if (!v->IsString()) {
      TypeError(*v, go_struct, path, "string");
      return "";
    }
    return v->GetString();
  }

  std::vector<std::string> Strings(const rapidjson::Value* obj, const char* key,
                                   const char* go_struct, const std::string& path) {
    std::vector<std::string> out;
    const rapidjson::Value* v = Member(obj, key);
    if (v == nullptr) return out;
    if (!v->IsArray()) {
      TypeError(*v, go_struct, path, "[]string");
      return out;
    }
    for (const auto& s : v->GetArray()) {
      if (!s.IsString()) {
        TypeError(s, go_struct, path, "string");
        return {};
      }
      out.emplace_back(s.GetString());
    }
    return out;
  }

  const ApiError& error() const { return error_; }
  bool ok() const { return error_.ok(); }

 private:
  static const rapidjson::Value* Member(const rapidjson::Value* obj, const char* key) {
    if (obj == nullptr) return nullptr;
    const rapidjson::Value* v = ds::JsonMember(*obj, key);
    return v == nullptr || v->IsNull() ? nullptr : v;
  }
  void TypeError(const rapidjson::Value& v, const char* go_struct, const std::string& path,
                 const std::string& go_type) {
    Fail(std::string(kind_) + " in version \"v1\" cannot be handled as a " + kind_ +
         ": json: cannot unmarshal " + JsonKind(v) + " into Go struct field " + go_struct + "." +
         path + " of type " + go_type);
  }
  void Fail(const std::string& message) {
    if (error_.ok()) error_ = Err(400, "BadRequest", message);
  }

  const char* kind_;
  const std::string gv_;
  ApiError error_;
};

// The metadata of a review's answer: what the client sent, with creationTimestamp (null, or
// `now` where the server sets it) where metav1.ObjectMeta puts it.
void WriteMetadata(ds::JsonWriter& w, const rapidjson::Value* meta, const std::string& now = "") {
  w.Key("metadata");
  w.StartObject();
  auto timestamp = [&] {
    w.Key("creationTimestamp");
    if (now.empty())
      w.Null();
    else
      ds::WriteString(w, now);
  };
  bool written = false;
  if (meta != nullptr && meta->IsObject()) {
    static const char* const kBefore[] = {"name", "generateName",    "namespace", "selfLink",
                                          "uid",  "resourceVersion", "generation"};
    for (auto it = meta->MemberBegin(); it != meta->MemberEnd(); ++it) {
      const std::string key = it->name.GetString();
      if (key == "creationTimestamp") continue;
      if (!written && std::none_of(std::begin(kBefore), std::end(kBefore),
                                   [&](const char* k) { return key == k; })) {
        timestamp();
        written = true;
      }
      w.Key(key.c_str(), static_cast<rapidjson::SizeType>(key.size()));
      it->value.Accept(w);
    }
  }
  if (!written) timestamp();
  w.EndObject();
}

void WriteStrings(ds::JsonWriter& w, const char* key, const std::vector<std::string>& v) {
  if (v.empty()) return;  // omitempty
  w.Key(key);
  w.StartArray();
  for (const auto& s : v) ds::WriteString(w, s);
  w.EndArray();
}

void WriteIfSet(ds::JsonWriter& w, const char* key, const std::string& v) {
  if (v.empty()) return;  // omitempty
  w.Key(key);
  ds::WriteString(w, v);
}

// authentication/v1 UserInfo (every field omitempty).
void WriteUserInfo(ds::JsonWriter& w, const UserInfo* u) {
  w.StartObject();
  if (u != nullptr) {
    WriteIfSet(w, "username", u->username);
    WriteIfSet(w, "uid", u->uid);
    WriteStrings(w, "groups", u->groups);
  }
  w.EndObject();
}

// A metadata the validation of the access reviews calls empty: nothing but managedFields and a
// null creationTimestamp; empty strings, maps and lists count as unset (semantic equality).
bool MetadataEmpty(const rapidjson::Value* meta) {
  if (meta == nullptr || !meta->IsObject()) return true;
  for (auto it = meta->MemberBegin(); it != meta->MemberEnd(); ++it) {
    const std::string key = it->name.GetString();
    const auto& v = it->value;
    if (key == "managedFields" || v.IsNull()) continue;
    if ((v.IsString() && v.GetStringLength() == 0) || (v.IsObject() && v.MemberCount() == 0) ||
        (v.IsArray() && v.Empty()) || (v.IsNumber() && v.GetDouble() == 0) ||
        (v.IsBool() && !v.GetBool()))
      continue;
    return false;
  }
  return true;
}

// metav1.ObjectMeta as json.Marshal renders it in a field error: the fields sent, with the
// creationTimestamp a zero time marshals to.
std::string MetadataValue(const rapidjson::Value* meta) {
  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  w.StartObject();
  WriteMetadata(w, meta);
  w.EndObject();
  rapidjson::Document d;
  d.Parse(sb.GetString());
  return ds::JsonToString(d["metadata"]);
}

// authorization/v1 ResourceAttributes and NonResourceAttributes, as the review carries them.
struct ResourceAttrs {
  std::string ns, verb, group, version, resource, subresource, name;
};
struct PathAttrs {
  std::string path, verb;
};

// The two attribute kinds of a SubjectAccessReviewSpec or SelfSubjectAccessReviewSpec.
struct AccessSpec {
  std::optional<ResourceAttrs> resource;
  std::optional<PathAttrs> path;
};

AccessSpec ReadAccessSpec(Reader& r, const rapidjson::Value* spec, const char* spec_struct) {
  AccessSpec s;
  if (const auto* ra = r.Object(spec, "resourceAttributes", spec_struct, "spec.resourceAttributes",
                                "v1.ResourceAttributes")) {
    const char* st = "ResourceAttributes";
    const std::string p = "spec.resourceAttributes.";
    s.resource = ResourceAttrs{r.String(ra, "namespace", st, p + "namespace"),
                               r.String(ra, "verb", st, p + "verb"),
                               r.String(ra, "group", st, p + "group"),
                               r.String(ra, "version", st, p + "version"),
                               r.String(ra, "resource", st, p + "resource"),
                               r.String(ra, "subresource", st, p + "subresource"),
                               r.String(ra, "name", st, p + "name")};
  }
  if (const auto* na = r.Object(spec, "nonResourceAttributes", spec_struct,
                                "spec.nonResourceAttributes", "v1.NonResourceAttributes")) {
    const char* st = "NonResourceAttributes";
    s.path = PathAttrs{r.String(na, "path", st, "spec.nonResourceAttributes.path"),
                       r.String(na, "verb", st, "spec.nonResourceAttributes.verb")};
  }
  return s;
}

// ValidateSubjectAccessReviewSpec's checks on the attributes (field paths and wording of
// Kubernetes 1.30-1.33; a nil attributes pointer renders as null, the internal
// NonResourceAttributes struct through json.Marshal with its Go field names).
void ValidateAccessSpec(const AccessSpec& s, FieldErrors* fe) {
  if (s.resource && s.path) {
    rapidjson::StringBuffer sb;
    ds::JsonWriter w(sb);
    w.StartObject();
    w.Key("Path");
    ds::WriteString(w, s.path->path);
    w.Key("Verb");
    ds::WriteString(w, s.path->verb);
    w.EndObject();
    fe->Invalid("spec.nonResourceAttributes", sb.GetString(),
                "cannot be specified in combination with resourceAttributes");
  }
  if (!s.resource && !s.path)
    fe->Invalid("spec.resourceAttributes", "null",
                "exactly one of nonResourceAttributes or resourceAttributes must be specified");
}

void WriteAccessSpec(ds::JsonWriter& w, const AccessSpec& s) {
  if (s.resource) {
    w.Key("resourceAttributes");
    w.StartObject();
    WriteIfSet(w, "namespace", s.resource->ns);
    WriteIfSet(w, "verb", s.resource->verb);
    WriteIfSet(w, "group", s.resource->group);
    WriteIfSet(w, "version", s.resource->version);
    WriteIfSet(w, "resource", s.resource->resource);
    WriteIfSet(w, "subresource", s.resource->subresource);
    WriteIfSet(w, "name", s.resource->name);
    w.EndObject();
  }
  if (s.path) {
    w.Key("nonResourceAttributes");
    w.StartObject();
    WriteIfSet(w, "path", s.path->path);
    WriteIfSet(w, "verb", s.path->verb);
    w.EndObject();
  }
}

// The request the review asks about (authorizationutil.ResourceAttributesFrom or
// NonResourceAttributesFrom; the version plays no part in RBAC).
RequestAttributes ToRequest(const AccessSpec& s) {
  RequestAttributes a;
  if (s.resource) {
    a.verb = s.resource->verb;
    a.group = s.resource->group;
    a.resource = s.resource->resource;
    a.subresource = s.resource->subresource;
    a.ns = s.resource->ns;
    a.name = s.resource->name;
  } else if (s.path) {
    a.verb = s.path->verb;
    a.path = s.path->path;
  }
  return a;
}

void WriteAccessStatus(ds::JsonWriter& w, const RbacDecision& d) {
  w.Key("status");
  w.StartObject();
  w.Key("allowed");  // not omitempty; denied is, and RBAC never denies outright
  w.Bool(d.allowed);
  WriteIfSet(w, "reason", d.reason);
  w.EndObject();
}

// The Invalid error of an access review: its kind is empty there (the decoded object is the
// internal version, whose TypeMeta is cleared), hence ".authorization.k8s.io \"\" is invalid".
ApiError InvalidReview(const FieldErrors& fe) {
  return fe.ToError("", ".authorization.k8s.io", "authorization.k8s.io", "");
}

}  // namespace

UserInfo AuthenticatedUser(const std::string& username, const std::string& uid,
                           const std::vector<std::string>& groups) {
  UserInfo u{username, uid, {}};
  auto add = [&](const std::string& g) {
    if (!g.empty() && !Contains(u.groups, g)) u.groups.push_back(g);
  };
  const std::string sa = "system:serviceaccount:";
  if (username.rfind(sa, 0) == 0) {
    const std::string rest = username.substr(sa.size());
    if (auto colon = rest.find(':'); colon != std::string::npos && colon > 0) {
      add("system:serviceaccounts");
      add("system:serviceaccounts:" + rest.substr(0, colon));
    }
  }
  for (const auto& g : groups) add(g);
  add("system:authenticated");
  return u;
}

ApiError TokenReview(const std::string& body, const TokenLookup& lookup, std::string* out) {
  Reader r("TokenReview", "authentication.k8s.io/v1");
  rapidjson::Document d;
  if (!r.Parse(body, &d)) return r.error();
  const rapidjson::Value* spec = r.Object(&d, "spec", "TokenReview", "spec", "v1.TokenReviewSpec");
  const std::string token = r.String(spec, "token", "TokenReviewSpec", "spec.token");
  const std::vector<std::string> audiences =
      r.Strings(spec, "audiences", "TokenReviewSpec", "spec.audiences");
  if (!r.ok()) return r.error();
  // pkg/registry/authentication/tokenreview/storage.go checks this before anything else.
  if (token.empty())
    return Err(400, "BadRequest", "token is required for TokenReview in authentication");

  // The simulator's tokens are audience-agnostic, like a static token file: they authenticate
  // for the API server's own audiences only (authenticator.WrapAudienceAgnosticToken), and the
  // status names the audiences both sides accept.
  std::vector<std::string> accepted;
  if (audiences.empty() || Contains(audiences, kApiAudience)) accepted.push_back(kApiAudience);
  std::optional<UserInfo> user;
  if (!accepted.empty()) user = lookup(token);

  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  w.StartObject();
  w.Key("kind");
  w.String("TokenReview");
  w.Key("apiVersion");
  w.String("authentication.k8s.io/v1");
  WriteMetadata(w, ds::JsonMember(d, "metadata"));
  w.Key("spec");
  w.StartObject();
  w.Key("token");
  ds::WriteString(w, token);
  WriteStrings(w, "audiences", audiences);
  w.EndObject();
  w.Key("status");
  w.StartObject();
  if (user) {
    w.Key("authenticated");  // omitempty: absent when false
    w.Bool(true);
  }
  w.Key("user");
  WriteUserInfo(w, user ? &*user : nullptr);
  if (user) {
    WriteStrings(w, "audiences", accepted);
  } else {
    // No authenticator knew the token, none failed: the bearer token authenticator's default.
    w.Key("error");
    w.String("invalid bearer token");
  }
  w.EndObject();
  w.EndObject();
  *out = sb.GetString();
  return ApiError();
}

ApiError SelfSubjectReview(const std::string& body, const UserInfo& caller, std::string* out) {
  Reader r("SelfSubjectReview", "authentication.k8s.io/v1");
  rapidjson::Document d;
  if (!r.Parse(body, &d)) return r.error();
  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  w.StartObject();
  w.Key("kind");
  w.String("SelfSubjectReview");
  w.Key("apiVersion");
  w.String("authentication.k8s.io/v1");
  WriteMetadata(w, nullptr, NowTimestamp());  // the registry sets it to now
  w.Key("status");
  w.StartObject();
  w.Key("userInfo");
  WriteUserInfo(w, &caller);
  w.EndObject();
  w.EndObject();
  *out = sb.GetString();
  return ApiError();
}

ApiError SubjectAccessReview(const std::string& body, const RbacUsers& users, std::string* out) {
  Reader r("SubjectAccessReview", "authorization.k8s.io/v1");
  rapidjson::Document d;
  if (!r.Parse(body, &d)) return r.error();
  const rapidjson::Value* meta =
      r.Object(&d, "metadata", "SubjectAccessReview", "metadata", "v1.ObjectMeta");
  const rapidjson::Value* spec =
      r.Object(&d, "spec", "SubjectAccessReview", "spec", "v1.SubjectAccessReviewSpec");
  const AccessSpec access = ReadAccessSpec(r, spec, "SubjectAccessReviewSpec");
  const std::string user = r.String(spec, "user", "SubjectAccessReviewSpec", "spec.user");
  const std::vector<std::string> groups =
      r.Strings(spec, "groups", "SubjectAccessReviewSpec", "spec.groups");
  const std::string uid = r.String(spec, "uid", "SubjectAccessReviewSpec", "spec.uid");
  const rapidjson::Value* extra =
      r.Object(spec, "extra", "SubjectAccessReviewSpec", "spec.extra", "map[string]v1.ExtraValue");
  if (!r.ok()) return r.error();

  FieldErrors fe;
  ValidateAccessSpec(access, &fe);
  if (user.empty() && groups.empty())
    fe.Invalid("spec.user", "\"\"", "at least one of user or group must be specified");
  if (!MetadataEmpty(meta)) fe.Invalid("metadata", MetadataValue(meta), "must be empty");
  if (!fe.errs.empty()) return InvalidReview(fe);

  const RbacDecision decision = Authorize(users, user, groups, ToRequest(access));
  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  w.StartObject();
  w.Key("kind");
  w.String("SubjectAccessReview");
  w.Key("apiVersion");
  w.String("authorization.k8s.io/v1");
  WriteMetadata(w, meta);
  w.Key("spec");
  w.StartObject();
  WriteAccessSpec(w, access);
  WriteIfSet(w, "user", user);
  WriteStrings(w, "groups", groups);
  if (extra != nullptr && extra->MemberCount() > 0) {
    w.Key("extra");
    extra->Accept(w);
  }
  WriteIfSet(w, "uid", uid);
  w.EndObject();
  WriteAccessStatus(w, decision);
  w.EndObject();
  *out = sb.GetString();
  return ApiError();
}

ApiError SelfSubjectAccessReview(const std::string& body, const UserInfo& caller,
                                 const RbacUsers& users, std::string* out) {
  Reader r("SelfSubjectAccessReview", "authorization.k8s.io/v1");
  rapidjson::Document d;
  if (!r.Parse(body, &d)) return r.error();
  const rapidjson::Value* meta =
      r.Object(&d, "metadata", "SelfSubjectAccessReview", "metadata", "v1.ObjectMeta");
  const rapidjson::Value* spec =
      r.Object(&d, "spec", "SelfSubjectAccessReview", "spec", "v1.SelfSubjectAccessReviewSpec");
  const AccessSpec access = ReadAccessSpec(r, spec, "SelfSubjectAccessReviewSpec");
  if (!r.ok()) return r.error();

  FieldErrors fe;
  ValidateAccessSpec(access, &fe);
  if (!MetadataEmpty(meta)) fe.Invalid("metadata", MetadataValue(meta), "must be empty");
  if (!fe.errs.empty()) return InvalidReview(fe);

  const RbacDecision decision = Authorize(users, caller.username, caller.groups, ToRequest(access));
  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  w.StartObject();
  w.Key("kind");
  w.String("SelfSubjectAccessReview");
  w.Key("apiVersion");
  w.String("authorization.k8s.io/v1");
  WriteMetadata(w, meta);
  w.Key("spec");
  w.StartObject();
  WriteAccessSpec(w, access);
  w.EndObject();
  WriteAccessStatus(w, decision);
  w.EndObject();
  *out = sb.GetString();
  return ApiError();
}

}  // namespace sim
