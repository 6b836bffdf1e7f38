#include "test/sim/sim_events.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <utility>

#include "common/json_util.h"
#include "common/labels.h"

namespace sim {
namespace {

using rapidjson::Document;
using rapidjson::Value;

// Go's layouts, quoted in the API server's decoding errors.
constexpr char kTimeLayout[] = "2006-01-02T15:04:05Z07:00";
constexpr char kMicroTimeLayout[] = "2006-01-02T15:04:05.000000Z07:00";
// names.SimpleNameGenerator: generateName is cut to 63 - 5 characters, then 5 random ones follow.
constexpr size_t kMaxGenerateNameBase = 58;
constexpr int kGenerateNameAttempts = 8;
// pkg/apis/core/validation/events.go
constexpr size_t kReportingInstanceLengthLimit = 128;
constexpr size_t kActionLengthLimit = 128;
constexpr size_t kReasonLengthLimit = 128;
constexpr size_t kNoteLengthLimit = 1024;

std::string Key(const std::string& ns, const std::string& name) { return ns + "/" + name; }

// The group a request came through: "" (core/v1) or "events.k8s.io". Errors name the resource
// the way that API does (`events.events.k8s.io "x" not found`, `Event.events.k8s.io "x" is
// invalid`), and Status details carry the group.
std::string Qualified(const std::string& what, EventApi api) {
  return api == EventApi::kEventsV1 ? what + ".events.k8s.io" : what;
}

// A Status's details: {"name","group","kind","causes"} (core group: no "group").
std::string Details(const std::string& name, const std::string& kind, EventApi api,
                    const std::string& causes = "") {
  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  w.StartObject();
  if (!name.empty()) {
    w.Key("name");
    ds::WriteString(w, name);
  }
  if (api == EventApi::kEventsV1) {
    w.Key("group");
    w.String("events.k8s.io");
  }
  w.Key("kind");
  ds::WriteString(w, kind);
  if (!causes.empty()) {
    w.Key("causes");
    w.RawValue(causes.c_str(), causes.size(), rapidjson::kArrayType);
  }
  w.EndObject();
  return sb.GetString();
}

ApiError NotFound(const std::string& name, EventApi api) {
  return ApiError(404, "NotFound", Qualified("events", api) + " \"" + name + "\" not found", "",
                  Details(name, "events", api));
}

ApiError AlreadyExists(const std::string& name, bool generated, EventApi api) {
  return ApiError(409, "AlreadyExists",
                  Qualified("events", api) + " \"" + name + "\" already exists" +
                      (generated ? ", the server was not able to generate a unique name for the "
                                   "object"
                                 : ""),
                  "", Details(name, "events", api));
}

// A decoding failure, worded as the API server's codec does.
ApiError Undecodable(const std::string& why) {
  // The same words for both groups: both decode into version "v1".
  return ApiError(400, "BadRequest",
                  "Event in version \"v1\" cannot be handled as a Event: " + why);
}

// Field errors collected for one 422 Invalid, worded as k8s.io/apimachinery's field.Error.
struct FieldErrors {
  struct E {
    std::string reason, field, detail;
  };
  std::vector<E> errs;
  void Required(const std::string& field, const std::string& why = "") {
    errs.push_back(
        {"FieldValueRequired", field, "Required value" + (why.empty() ? "" : ": " + why)});
  }
  void Invalid(const std::string& field, const std::string& value, const std::string& why) {
    errs.push_back({"FieldValueInvalid", field, "Invalid value: \"" + value + "\": " + why});
  }
  // `Event "x" is invalid: f: Required value` or `... is invalid: [a, b]`.
  ApiError ToError(const std::string& name, EventApi api) const {
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
    return ApiError(422, "Invalid",
                    Qualified("Event", api) + " \"" + name + "\" is invalid: " + all, "",
                    Details(name, "Event", api, sb.GetString()));
  }
};

bool Digits(const std::string& s, size_t at, size_t n) {
  if (at + n > s.size()) return false;
  for (size_t i = at; i < at + n; ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

int Num(const std::string& s, size_t at, size_t n) { return std::stoi(s.substr(at, n)); }

// RFC 3339 as Go's time.Parse(time.RFC3339, ...) takes it: seconds, an optional fraction, "Z" or
// an offset. The instant in seconds since the epoch and microseconds.
bool ParseRfc3339(const std::string& s, int64_t* sec, int* micros) {
  if (s.size() < 20 || !Digits(s, 0, 4) || s[4] != '-' || !Digits(s, 5, 2) || s[7] != '-' ||
      !Digits(s, 8, 2) || s[10] != 'T' || !Digits(s, 11, 2) || s[13] != ':' || !Digits(s, 14, 2) ||
      s[16] != ':' || !Digits(s, 17, 2))
    return false;
  struct tm tm {};
  tm.tm_year = Num(s, 0, 4) - 1900;
  tm.tm_mon = Num(s, 5, 2) - 1;
  tm.tm_mday = Num(s, 8, 2);
  tm.tm_hour = Num(s, 11, 2);
  tm.tm_min = Num(s, 14, 2);
  tm.tm_sec = Num(s, 17, 2);
  if (tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
      tm.tm_sec > 59)
    return false;
  size_t i = 19;
  *micros = 0;
  if (s[i] == '.') {
    size_t start = ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == start || i - start > 9) return false;
    std::string frac = s.substr(start, std::min<size_t>(6, i - start));
    frac.resize(6, '0');
    *micros = std::stoi(frac);
  }
  int offset = 0;
  if (i < s.size() && s[i] == 'Z' && i + 1 == s.size()) {
    offset = 0;
  } else if (i + 6 == s.size() && (s[i] == '+' || s[i] == '-') && Digits(s, i + 1, 2) &&
             s[i + 3] == ':' && Digits(s, i + 4, 2)) {
    offset = (Num(s, i + 1, 2) * 60 + Num(s, i + 4, 2)) * 60 * (s[i] == '-' ? -1 : 1);
  } else {
    return false;
  }
  *sec = static_cast<int64_t>(timegm(&tm)) - offset;
  return true;
}

std::string FormatTime(int64_t sec, int micros, bool with_micros) {
  time_t t = static_cast<time_t>(sec);
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[40];
  size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  if (with_micros) snprintf(buf + n, sizeof(buf) - n, ".%06d", micros);
  return std::string(buf) + "Z";
}

std::string NowTime() { return FormatTime(time(nullptr), 0, false); }

// metav1.Time (seconds) or metav1.MicroTime member `key` of obj, if set, rewritten in place in
// UTC as the API server serialises it. Fails as the server's decoder does.
ApiError NormalizeTime(Value& obj, const char* key, bool micro, const std::string& where,
                       Document::AllocatorType& a) {
  auto it = obj.FindMember(key);
  if (it == obj.MemberEnd() || it->value.IsNull()) return {};
  int64_t sec = 0;
  int micros = 0;
  if (!it->value.IsString())
    return Undecodable("json: cannot unmarshal " +
                       std::string(it->value.IsNumber() ? "number" : "value") +
                       " into Go struct field " + where + " of type string");
  const std::string s = it->value.GetString();
  if (!ParseRfc3339(s, &sec, &micros))
    return Undecodable("parsing time \"" + s + "\" as \"" +
                       (micro ? kMicroTimeLayout : kTimeLayout) + "\": cannot parse \"" + s +
                       "\" as \"2006\"");
  it->value.SetString(FormatTime(sec, micros, micro).c_str(), a);
  return {};
}

// apimachinery's IsPathSegmentName / IsPathSegmentPrefix: what core/v1 names must satisfy.
std::vector<std::string> PathSegmentProblems(const std::string& name, bool prefix) {
  std::vector<std::string> out;
  if (!prefix && (name == "." || name == "..")) out.push_back("may not be '" + name + "'");
  for (const char* bad : {"/", "%"})
    if (name.find(bad) != std::string::npos)
      out.push_back(std::string("may not contain '") + bad + "'");
  return out;
}

// IsQualifiedName, in short: an optional DNS-subdomain prefix and a name of at most 63
// characters, [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?. ds::ValidateLabelKey checks the same.
std::string QualifiedNameProblem(const std::string& s) { return ds::ValidateLabelKey(s); }

// legacyValidateEvent (pkg/apis/core/validation/events.go), which is all the validation a core/v1
// create gets, then the simulator's one addition: involvedObject is required (the API server
// accepts an event without one in "default"; the OpenAPI schema and the official clients require
// it, and an event about nothing is a client bug).
void ValidateEvent(const Value& ev, const std::string& ns, FieldErrors* fe) {
  const Value* io = ds::JsonMember(ev, "involvedObject");
  if (io == nullptr || !io->IsObject() || io->ObjectEmpty()) fe->Required("involvedObject");
  const std::string io_ns = io != nullptr && io->IsObject() ? ds::JsonString(*io, "namespace") : "";
  const Value* et = ds::JsonMember(ev, "eventTime");
  const bool event_time = et != nullptr && !et->IsNull();
  const char* kMismatch = "does not match event.namespace";
  if (!event_time) {
    // "Old" events: the event lives in its object's namespace; cluster-scoped objects' events
    // live in "default" (or, for old clients, nowhere).
    if (io_ns.empty() ? !(ns.empty() || ns == "default") : ns != io_ns)
      fe->Invalid("involvedObject.namespace", io_ns, kMismatch);
    return;
  }
  if (io_ns.empty() && ns != "default" && ns != "kube-system")
    fe->Invalid("involvedObject.namespace", io_ns, kMismatch);
  const std::string controller = ds::JsonString(ev, "reportingComponent");
  if (controller.empty())
    fe->Required("reportingController");
  else if (std::string why = QualifiedNameProblem(controller); !why.empty())
    fe->Invalid("reportingController", controller, why);
  auto limited = [&](const char* json_key, const char* field, size_t limit, bool required) {
    const std::string v = ds::JsonString(ev, json_key);
    if (required && v.empty()) fe->Required(field);
    if (v.size() > limit)
      fe->Invalid(field, "", "can have at most " + std::to_string(limit) + " characters");
  };
  limited("reportingInstance", "reportingInstance", kReportingInstanceLengthLimit, true);
  limited("action", "action", kActionLengthLimit, true);
  limited("reason", "reason", kReasonLengthLimit, true);
  limited("message", "message", kNoteLengthLimit, false);
}

bool IsDns1123Subdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (alnum(c) || c == '-') continue;
    if (c == '.' && alnum(s[i - 1]) && alnum(s[i + 1])) continue;
    return false;
  }
  return true;
}

bool TimeSet(const Value& obj, const char* key) {
  const Value* v = ds::JsonMember(obj, key);
  return v != nullptr && v->IsString() && v->GetStringLength() > 0;
}

// validateV1EventSeries: a series counts at least two occurrences and says when the last was.
void ValidateSeries(const Value& ev, FieldErrors* fe) {
  const Value* series = ds::JsonMember(ev, "series");
  if (series == nullptr || !series->IsObject()) return;
  const Value* count = ds::JsonMember(*series, "count");
  if (count == nullptr || !count->IsInt() || count->GetInt() < 2)
    fe->Invalid("series.count", "", "should be at least 2");
  if (!TimeSet(*series, "lastObservedTime")) fe->Required("series.lastObservedTime");
}

// ValidateEventCreate's checks beyond legacyValidateEvent for events.k8s.io/v1 requests, on the
// stored (core) form: the real server names the fields by their internal names (firstTimestamp,
// not deprecatedFirstTimestamp), and so does this.
void ValidateStrictCreate(const Value& ev, const std::string& name, FieldErrors* fe) {
  if (name.empty())
    fe->Required("metadata.name", "name or generateName is required");
  else if (!IsDns1123Subdomain(name))
    fe->Invalid("metadata.name", name,
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character "
                "(e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
  ValidateSeries(ev, fe);
  if (!TimeSet(ev, "eventTime")) fe->Required("eventTime");
  const std::string type = ds::JsonString(ev, "type");
  if (type != "Normal" && type != "Warning") fe->Invalid("type", "", "has invalid value: " + type);
  if (TimeSet(ev, "firstTimestamp")) fe->Invalid("firstTimestamp", "", "needs to be unset");
  if (TimeSet(ev, "lastTimestamp")) fe->Invalid("lastTimestamp", "", "needs to be unset");
  if (const Value* c = ds::JsonMember(ev, "count"); c && c->IsInt() && c->GetInt() != 0)
    fe->Invalid("count", "", "needs to be unset");
  if (const Value* src = ds::JsonMember(ev, "source"); src && src->IsObject())
    if (!ds::JsonString(*src, "component").empty() || !ds::JsonString(*src, "host").empty())
      fe->Invalid("source", "", "needs to be unset");
}

// events.k8s.io/v1 field -> the stored (core/v1) field.
const std::pair<const char*, const char*> kV1ToCore[] = {
    {"eventTime", "eventTime"},
    {"series", "series"},
    {"reportingController", "reportingComponent"},
    {"reportingInstance", "reportingInstance"},
    {"action", "action"},
    {"reason", "reason"},
    {"regarding", "involvedObject"},
    {"related", "related"},
    {"note", "message"},
    {"type", "type"},
    {"deprecatedSource", "source"},
    {"deprecatedFirstTimestamp", "firstTimestamp"},
    {"deprecatedLastTimestamp", "lastTimestamp"},
    {"deprecatedCount", "count"}};

// Sets the core/v1 members of `core` from the events.k8s.io/v1 object `v1` (members of `core`
// that v1 does not set are removed); fields unknown to events/v1.Event are dropped, as Go's
// decoder drops them.
void CoreFromV1(const Value& v1, Value* core, Document::AllocatorType& a) {
  for (const auto& [v1_key, core_key] : kV1ToCore) {
    core->RemoveMember(core_key);
    if (const Value* v = ds::JsonMember(v1, v1_key); v != nullptr && !v->IsNull())
      core->AddMember(Value(core_key, a), Value(*v, a), a);
  }
}

// Go's encoding of what every stored event has: source {}, the reporting strings "", unset
// times as null.
void AddServerDefaults(Value& ev, Document::AllocatorType& a) {
  if (auto it = ev.FindMember("source"); it == ev.MemberEnd())
    ev.AddMember("source", Value(rapidjson::kObjectType), a);
  else if (!it->value.IsObject())
    it->value.SetObject();
  for (const char* k : {"firstTimestamp", "lastTimestamp", "eventTime"})
    if (!ev.HasMember(k)) ev.AddMember(Value(k, a), Value(rapidjson::kNullType), a);
  for (const char* k : {"reportingComponent", "reportingInstance"})
    if (!ev.HasMember(k) || !ev[k].IsString()) {
      ev.RemoveMember(k);
      ev.AddMember(Value(k, a), Value("", a), a);
    }
}

// ValidateObjectMetaAccessor's checks that can fail here (it runs after the kind's validation).
void ValidateMeta(const Value& meta, const std::string& name, FieldErrors* fe) {
  const std::string gen = ds::JsonString(meta, "generateName");
  if (!gen.empty())
    for (const auto& why : PathSegmentProblems(gen, true))
      fe->Invalid("metadata.generateName", gen, why);
  if (name.empty())
    fe->Required("metadata.name", "name or generateName is required");
  else
    for (const auto& why : PathSegmentProblems(name, false))
      fe->Invalid("metadata.name", name, why);
  if (const Value* l = ds::JsonMember(meta, "labels"); l && l->IsObject())
    for (auto it = l->MemberBegin(); it != l->MemberEnd(); ++it) {
      std::string key = it->name.GetString();
      std::string why = ds::ValidateLabelKey(key);
      if (why.empty() && it->value.IsString()) why = ds::ValidateLabelValue(it->value.GetString());
      if (!why.empty()) fe->Invalid("metadata.labels", key, why);
    }
}

PodKeys KeysOf(const Value& ev) {
  PodKeys k;
  static const Value kEmpty(rapidjson::kObjectType);
  const Value* meta = ds::JsonMember(ev, "metadata");
  const Value* io = ds::JsonMember(ev, "involvedObject");
  const Value* src = ds::JsonMember(ev, "source");
  if (meta == nullptr || !meta->IsObject()) meta = &kEmpty;
  if (io == nullptr || !io->IsObject()) io = &kEmpty;
  if (src == nullptr || !src->IsObject()) src = &kEmpty;
  k.fields["metadata.name"] = ds::JsonString(*meta, "name");
  k.fields["metadata.namespace"] = ds::JsonString(*meta, "namespace");
  for (const char* f :
       {"kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"})
    k.fields[std::string("involvedObject.") + f] = ds::JsonString(*io, f);
  k.fields["reason"] = ds::JsonString(ev, "reason");
  k.fields["reportingComponent"] = ds::JsonString(ev, "reportingComponent");
  std::string source = ds::JsonString(*src, "component");
  k.fields["source"] = source.empty() ? k.fields["reportingComponent"] : source;
  k.fields["type"] = ds::JsonString(ev, "type");
  if (const Value* l = ds::JsonMember(*meta, "labels"); l && l->IsObject())
    for (auto it = l->MemberBegin(); it != l->MemberEnd(); ++it)
      k.labels.emplace_back(it->name.GetString(),
                            it->value.IsString() ? it->value.GetString() : "");
  return k;
}

void SetString(Value& obj, const char* key, const std::string& s, Document::AllocatorType& a) {
  auto it = obj.FindMember(key);
  if (it != obj.MemberEnd())
    it->value.SetString(s.c_str(), a);
  else
    obj.AddMember(Value(key, a), Value(s.c_str(), a), a);
}

std::string WithResourceVersion(const std::string& json, uint64_t rv) {
  Document d;
  d.Parse(json.c_str());
  SetString(d["metadata"], "resourceVersion", std::to_string(rv), d.GetAllocator());
  return ds::JsonToString(d);
}

}  // namespace

std::string ToEventsV1(const std::string& core_json) {
  Document in;
  in.Parse(core_json.c_str());
  Document out(rapidjson::kObjectType);
  auto& a = out.GetAllocator();
  out.AddMember("kind", "Event", a);
  out.AddMember("apiVersion", "events.k8s.io/v1", a);
  if (const Value* m = ds::JsonMember(in, "metadata")) out.AddMember("metadata", Value(*m, a), a);
  for (const auto& [v1_key, core_key] : kV1ToCore) {
    const Value* v = ds::JsonMember(in, core_key);
    const std::string k = v1_key;
    const bool set = v != nullptr && !v->IsNull() &&
                     !(v->IsString() && v->GetStringLength() == 0) &&
                     !(v->IsInt() && v->GetInt() == 0);
    if (set) {
      out.AddMember(Value(v1_key, a), Value(*v, a), a);
    } else if (k == "regarding" || k == "deprecatedSource") {
      // Structs without a pointer: Go writes them even when empty.
      out.AddMember(Value(v1_key, a), Value(rapidjson::kObjectType), a);
    } else if (k == "eventTime" || k == "deprecatedFirstTimestamp" ||
               k == "deprecatedLastTimestamp") {
      out.AddMember(Value(v1_key, a), Value(rapidjson::kNullType), a);  // zero metav1 times
    }
  }
  return ds::JsonToString(out);
}

const std::vector<std::string>& EventSelectableFields() {
  // AddFieldLabelConversionsForEvent (pkg/apis/core/v1/conversion.go).
  static const std::vector<std::string> kFields = {"involvedObject.kind",
                                                   "involvedObject.namespace",
                                                   "involvedObject.name",
                                                   "involvedObject.uid",
                                                   "involvedObject.apiVersion",
                                                   "involvedObject.resourceVersion",
                                                   "involvedObject.fieldPath",
                                                   "reason",
                                                   "reportingComponent",
                                                   "source",
                                                   "type",
                                                   "metadata.namespace",
                                                   "metadata.name"};
  return kFields;
}

EventStore::EventStore(Store* cluster, EventStoreOptions options)
    : cluster_(cluster), options_(options), rng_(std::random_device{}()) {}

void EventStore::Record(const std::string& type, const std::string& json, const PodKeys& keys,
                        uint64_t rv) {
  changes_.push_back(EventChange{rv, type, json, keys});
  last_rv_ = rv;
  while (changes_.size() > options_.window) {
    compacted_rv_ = changes_.front().rv;
    changes_.pop_front();
  }
  cv_.SignalAll();
}

void EventStore::EraseLocked(std::map<std::string, Stored>::iterator it) {
  const uint64_t rv = cluster_->NextRv();
  // A deletion's watch event carries the object at the deletion's resourceVersion.
  Record("DELETED", WithResourceVersion(it->second.json, rv), it->second.keys, rv);
  by_age_.erase(it->second.rv);
  events_.erase(it);
}

ApiError EventStore::Create(const std::string& ns, const std::string& body, std::string* out,
                            EventApi api) {
  Document in;
  in.Parse(body.c_str());
  if (in.HasParseError() || !in.IsObject())
    return ApiError(
        400, "BadRequest",
        "the body of the request could not be decoded as an Event: " +
            (in.HasParseError() ? ds::JsonParseError(in) : std::string("not a JSON object")));
  if (api == EventApi::kEventsV1) {
    // Decode as events/v1.Event and convert to the stored form, as the API server does.
    Document v1;
    v1.CopyFrom(in, v1.GetAllocator());
    for (auto it = in.MemberBegin(); it != in.MemberEnd();) {
      const std::string k = it->name.GetString();
      it = (k == "kind" || k == "apiVersion" || k == "metadata") ? it + 1 : in.EraseMember(it);
    }
    CoreFromV1(v1, &in, in.GetAllocator());
  }
  // Decoding: what Go's types would refuse. Timestamps are rewritten in place (no member is
  // added to `in`, so pointers into it stay valid).
  auto& ia = in.GetAllocator();
  for (const char* k : {"metadata", "involvedObject"})
    if (const Value* v = ds::JsonMember(in, k); v && !v->IsObject() && !v->IsNull())
      return Undecodable(std::string("json: cannot unmarshal value into Go struct field Event.") +
                         k + " of type v1." + (k[0] == 'm' ? "ObjectMeta" : "ObjectReference"));
  if (const Value* c = ds::JsonMember(in, "count"); c && !c->IsNull() && !c->IsInt())
    return Undecodable(
        "json: cannot unmarshal value into Go struct field Event.count of type int32");
  if (ApiError e = NormalizeTime(in, "firstTimestamp", false, "Event.firstTimestamp", ia); !e.ok())
    return e;
  if (ApiError e = NormalizeTime(in, "lastTimestamp", false, "Event.lastTimestamp", ia); !e.ok())
    return e;
  if (ApiError e = NormalizeTime(in, "eventTime", true, "Event.eventTime", ia); !e.ok()) return e;
  if (auto s = in.FindMember("series"); s != in.MemberEnd() && s->value.IsObject())
    if (ApiError e =
            NormalizeTime(s->value, "lastObservedTime", true, "EventSeries.lastObservedTime", ia);
        !e.ok())
      return e;
  static const Value kEmpty(rapidjson::kObjectType);
  const Value* in_meta = ds::JsonMember(in, "metadata");
  if (in_meta == nullptr || !in_meta->IsObject()) in_meta = &kEmpty;

  // rest.BeforeCreate: the object's namespace, if set, must be the request's.
  const std::string obj_ns = ds::JsonString(*in_meta, "namespace");
  if (!obj_ns.empty() && obj_ns != ns)
    return ApiError(400, "BadRequest",
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request");

  ds::MutexLock l(&mu_);
  std::string name = ds::JsonString(*in_meta, "name");
  const std::string gen = ds::JsonString(*in_meta, "generateName");
  const bool generated = name.empty() && !gen.empty();
  for (int attempt = 0; generated && attempt < kGenerateNameAttempts; ++attempt) {
    static const char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";  // k8s.io/apimachinery rand
    name = gen.substr(0, kMaxGenerateNameBase);
    for (int i = 0; i < 5; ++i) name += kAlphabet[rng_() % (sizeof(kAlphabet) - 1)];
    if (!events_.count(Key(ns, name))) break;
  }

  FieldErrors fe;
  ValidateEvent(in, ns, &fe);
  if (api == EventApi::kEventsV1) ValidateStrictCreate(in, name, &fe);
  if (fe.errs.empty()) ValidateMeta(*in_meta, name, &fe);  // only after the kind's checks pass
  if (!fe.errs.empty()) return fe.ToError(name, api);

  // etcd3's store refuses a resourceVersion before it looks for the key.
  if (!ds::JsonString(*in_meta, "resourceVersion").empty())
    return ApiError(500, "InternalError",
                    "Internal error occurred: resourceVersion should not be set on objects to be "
                    "created");
  const std::string key = Key(ns, name);
  if (events_.count(key)) return AlreadyExists(name, generated, api);

  // The stored object, in the order the API server serialises it, with what the server owns.
  const uint64_t rv = cluster_->NextRv();
  Document ev(rapidjson::kObjectType);
  auto& a = ev.GetAllocator();
  ev.AddMember("kind", "Event", a);
  ev.AddMember("apiVersion", "v1", a);
  Value meta(*in_meta, a);
  SetString(meta, "name", name, a);
  SetString(meta, "namespace", ns, a);
  char uid[40];
  const uint64_t hi = rng_(), lo = rng_();
  snprintf(uid, sizeof(uid), "%08x-%04x-4%03x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
           static_cast<unsigned>((hi >> 16) & 0xffff), static_cast<unsigned>(hi & 0xfff),
           static_cast<unsigned>(0x8000 | ((lo >> 48) & 0x3fff)),
           static_cast<unsigned long long>(lo & 0xffffffffffffULL));
  SetString(meta, "uid", uid, a);
  SetString(meta, "resourceVersion", std::to_string(rv), a);
  SetString(meta, "creationTimestamp", NowTime(), a);
  meta.RemoveMember("deletionTimestamp");
  meta.RemoveMember("deletionGracePeriodSeconds");
  ev.AddMember("metadata", meta, a);
  const Value* io = ds::JsonMember(in, "involvedObject");
  ev.AddMember("involvedObject",
               io != nullptr && io->IsObject() ? Value(*io, a) : Value(rapidjson::kObjectType), a);
  for (auto it = in.MemberBegin(); it != in.MemberEnd(); ++it) {
    const std::string k = it->name.GetString();
    if (k != "kind" && k != "apiVersion" && k != "metadata" && k != "involvedObject")
      ev.AddMember(Value(it->name, a), Value(it->value, a), a);
  }
  AddServerDefaults(ev, a);

  Stored s;
  s.json = ds::JsonToString(ev);
  s.keys = KeysOf(ev);
  s.rv = rv;
  *out = api == EventApi::kEventsV1 ? ToEventsV1(s.json) : s.json;
  Record("ADDED", s.json, s.keys, rv);
  by_age_[rv] = key;
  events_.emplace(key, std::move(s));
  // Keep the newest max_events: drop the oldest, as the real server's TTL would.
  while (options_.max_events > 0 && events_.size() > options_.max_events) {
    EraseLocked(events_.find(by_age_.begin()->second));
    ++dropped_;
  }
  return {};
}

ApiError EventStore::Get(const std::string& ns, const std::string& name, std::string* out,
                         EventApi api) const {
  ds::MutexLock l(&mu_);
  auto it = events_.find(Key(ns, name));
  if (it == events_.end()) return NotFound(name, api);
  *out = api == EventApi::kEventsV1 ? ToEventsV1(it->second.json) : it->second.json;
  return {};
}

ApiError EventStore::Patch(const std::string& ns, const std::string& name, const std::string& patch,
                           std::string* out) {
  constexpr EventApi kApi = EventApi::kEventsV1;
  Document p;
  p.Parse(patch.c_str());
  if (p.HasParseError() || !p.IsObject())
    return ApiError(400, "BadRequest",
                    "error decoding patch: " +
                        (p.HasParseError() ? ds::JsonParseError(p) : std::string("not an object")));
  ds::MutexLock l(&mu_);
  auto it = events_.find(Key(ns, name));
  if (it == events_.end()) return NotFound(name, kApi);
  Document old;
  old.Parse(it->second.json.c_str());
  // A resourceVersion in the patch is a precondition (optimistic concurrency).
  if (const Value* pm = ds::JsonMember(p, "metadata"); pm && pm->IsObject()) {
    const std::string want = ds::JsonString(*pm, "resourceVersion");
    if (!want.empty() && want != ds::JsonString(old["metadata"], "resourceVersion"))
      return ApiError(409, "Conflict",
                      "Operation cannot be fulfilled on events.events.k8s.io \"" + name +
                          "\": the object has been modified; please apply your changes to the "
                          "latest version and try again",
                      "", Details(name, "events", kApi));
  }
  Document v1;
  v1.Parse(ToEventsV1(it->second.json).c_str());
  MergePatch(v1, p, v1.GetAllocator());
  Document ev;
  ev.CopyFrom(old, ev.GetAllocator());
  auto& a = ev.GetAllocator();
  CoreFromV1(v1, &ev, a);
  // Metadata as patched (labels, annotations), but what the server owns stays.
  if (const Value* m = ds::JsonMember(v1, "metadata"); m != nullptr && m->IsObject()) {
    Value meta(*m, a);
    for (const char* k : {"name", "namespace", "uid", "resourceVersion", "creationTimestamp"}) {
      meta.RemoveMember(k);
      if (const Value* v = ds::JsonMember(old["metadata"], k))
        meta.AddMember(Value(k, a), Value(*v, a), a);
    }
    ev["metadata"] = meta;
  }
  if (auto s = ev.FindMember("series"); s != ev.MemberEnd() && s->value.IsObject())
    if (ApiError e =
            NormalizeTime(s->value, "lastObservedTime", true, "EventSeries.lastObservedTime", a);
        !e.ok())
      return e;
  AddServerDefaults(ev, a);
  // ValidateEventUpdate: legacy checks, the series when it changed, every other field immutable.
  FieldErrors fe;
  ValidateEvent(ev, ns, &fe);
  // Unset, "" and 0 are one value to Go (the v1 view omits them, so a round trip drops them).
  auto member = [](const Value& obj, const char* k) {
    const Value* v = ds::JsonMember(obj, k);
    if (v == nullptr || v->IsNull() || (v->IsString() && v->GetStringLength() == 0) ||
        (v->IsInt() && v->GetInt() == 0))
      return std::string("null");
    return ds::JsonToString(*v);
  };
  if (member(ev, "series") != member(old, "series")) ValidateSeries(ev, &fe);
  for (const char* k :
       {"involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp", "count",
        "type", "eventTime", "action", "related", "reportingComponent", "reportingInstance"}) {
    const std::string now = member(ev, k);
    if (now == member(old, k)) continue;
    const Value* v = ds::JsonMember(ev, k);
    const std::string field = std::string(k) == "reportingComponent" ? "reportingController" : k;
    fe.Invalid(field, v != nullptr && v->IsString() ? v->GetString() : now, "field is immutable");
  }
  if (!fe.errs.empty()) return fe.ToError(name, kApi);
  const uint64_t rv = cluster_->NextRv();
  SetString(ev["metadata"], "resourceVersion", std::to_string(rv), a);
  it->second.json = ds::JsonToString(ev);
  it->second.keys = KeysOf(ev);
  Record("MODIFIED", it->second.json, it->second.keys, rv);
  *out = ToEventsV1(it->second.json);
  return {};
}

ApiError EventStore::Delete(const std::string& ns, const std::string& name, std::string* out,
                            EventApi api) {
  ds::MutexLock l(&mu_);
  auto it = events_.find(Key(ns, name));
  if (it == events_.end()) return NotFound(name, api);
  *out = it->second.json;
  EraseLocked(it);
  return {};
}

std::vector<std::string> EventStore::List(const std::string& ns, const ds::LabelSelector& labels,
                                          const FieldSelector& fields, size_t limit,
                                          const std::string& after, std::string* next,
                                          uint64_t* list_rv, size_t* remaining) const {
  ds::MutexLock l(&mu_);
  std::vector<std::string> out;
  *list_rv = cluster_->CurrentRv();
  next->clear();
  *remaining = 0;
  auto matches = [&](const Stored& s) {
    return (ns.empty() || s.keys.fields.at("metadata.namespace") == ns) &&
           labels.Matches(s.keys.labels) && fields.Matches(s.keys);
  };
  std::string last;
  for (auto it = after.empty() ? events_.begin() : events_.upper_bound(after); it != events_.end();
       ++it) {
    if (!matches(it->second)) continue;
    if (limit > 0 && out.size() == limit) {
      *next = last;
      for (; it != events_.end(); ++it)
        if (matches(it->second)) ++*remaining;
      break;
    }
    out.push_back(it->second.json);
    last = it->first;
  }
  return out;
}

size_t EventStore::Clear() {
  ds::MutexLock l(&mu_);
  const size_t n = events_.size();
  while (!events_.empty()) EraseLocked(events_.begin());
  return n;
}

uint64_t EventStore::ChangesAfter(uint64_t from, int timeout_ms, std::vector<EventChange>* out,
                                  bool* expired) {
  ds::MutexLock l(&mu_);
  *expired = false;
  auto ready = [&]() REQUIRES(mu_) { return last_rv_ > from || from < compacted_rv_; };
  if (!ready()) cv_.WaitFor(&mu_, std::chrono::milliseconds(timeout_ms), ready);
  if (from < compacted_rv_) {
    *expired = true;
    return cluster_->CurrentRv();
  }
  auto it = std::upper_bound(changes_.begin(), changes_.end(), from,
                             [](uint64_t v, const EventChange& c) { return v < c.rv; });
  for (; it != changes_.end(); ++it) out->push_back(*it);
  return cluster_->CurrentRv();
}

void EventStore::WakeAll() { cv_.SignalAll(); }

void EventStore::Compact() {
  ds::MutexLock l(&mu_);
  changes_.clear();
  compacted_rv_ = cluster_->CurrentRv();
  cv_.SignalAll();
}

uint64_t EventStore::compacted_rv() const {
  ds::MutexLock l(&mu_);
  return compacted_rv_;
}

size_t EventStore::size() const {
  ds::MutexLock l(&mu_);
  return events_.size();
}

uint64_t EventStore::dropped() const {
  ds::MutexLock l(&mu_);
  return dropped_;
}

}  // namespace sim
