#include "kube/lease.h"

#include <algorithm>
#include <cmath>
#include <ctime>

#include "common/json_util.h"

namespace ds {
namespace {

using rapidjson::Value;
using Allocator = rapidjson::Document::AllocatorType;
// Full precision: a number in a field this code does not know goes back with the value it came
// with (integers exactly within 64 bits, others to a double's precision), so the object does not
// drift from one renewal to the next. Debian's RapidJSON 1.1.0 reads outside a table on that
// path for a long number such as -0.000...0164, or for one whose digits reach far below 1e-300
// such as 0.888...8E-335 (both found by the fuzzer): NumberProblem refuses them before parsing.
constexpr unsigned kParseFlags = rapidjson::kParseFullPrecisionFlag;
// No Lease the API server writes holds a number this long (int64 has 19 digits)...
constexpr size_t kMaxNumberChars = 40;
// ...nor one whose digits reach beyond 10^±300 (a double's range is about 10^±308).
constexpr int kMaxDecimalExponent = 300;

// Why a number token of a JSON text (outside strings) is not to be parsed, or "".
std::string NumberProblem(const std::string& json) {
  bool in_string = false, escaped = false;
  size_t i = 0;
  while (i < json.size()) {
    const char c = json[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      ++i;
      continue;
    }
    if (c == '"') {
      in_string = true;
      ++i;
      continue;
    }
    const auto in_number = [](char x) {
      return (x >= '0' && x <= '9') || x == '.' || x == 'e' || x == 'E' || x == '+' || x == '-';
    };
    if (!in_number(c)) {
      ++i;
      continue;
    }
    const size_t start = i;
    while (i < json.size() && in_number(json[i])) ++i;
    if (i - start > kMaxNumberChars)
      return "a number longer than " + std::to_string(kMaxNumberChars) + " characters";
    // The decimal places its digits span: the exponent, less the digits after the point, up to
    // the exponent plus the digits before it.
    int int_digits = 0, frac_digits = 0, exponent = 0, sign = 1;
    bool fraction = false, in_exponent = false;
    for (size_t k = start; k < i; ++k) {
      const char d = json[k];
      if (in_exponent) {
        if (d == '-') sign = -1;
        if (d >= '0' && d <= '9') exponent = std::min(exponent * 10 + (d - '0'), 100000);
      } else if (d == '.') {
        fraction = true;
      } else if (d == 'e' || d == 'E') {
        in_exponent = true;
      } else if (d >= '0' && d <= '9') {
        ++(fraction ? frac_digits : int_digits);
      }
    }
    exponent *= sign;
    if (exponent - frac_digits < -kMaxDecimalExponent ||
        exponent + int_digits > kMaxDecimalExponent)
      return "a number beyond 1e" + std::to_string(kMaxDecimalExponent) + " or 1e-" +
             std::to_string(kMaxDecimalExponent);
  }
  return "";
}

// Member `key` of object `obj`, added as null when absent. Later members with the same key are
// erased: the API server keeps the last of duplicate keys and DecodeLease the first, so a key
// written once means the same to both.
Value& Unique(Value& obj, const char* key, Allocator& a) {
  auto it = obj.FindMember(key);
  if (it == obj.MemberEnd()) {
    obj.AddMember(Value(key, a), Value(), a);
    return (obj.MemberEnd() - 1)->value;
  }
  for (auto dup = it + 1; dup != obj.MemberEnd();)
    dup = dup->name == key ? obj.EraseMember(dup) : dup + 1;
  return it->value;
}

// Sets string member `key`, or removes every `key` when `value` is empty (DecodeLease reads an
// absent member as "").
void SetOrErase(Value& obj, const char* key, const std::string& value, Allocator& a) {
  if (!value.empty()) {
    Unique(obj, key, a).SetString(value.data(), static_cast<rapidjson::SizeType>(value.size()), a);
    return;
  }
  for (auto it = obj.MemberBegin(); it != obj.MemberEnd();)
    it = it->name == key ? obj.EraseMember(it) : it + 1;
}

}  // namespace

StatusOr<LeaseRecord> DecodeLease(const std::string& body) {
  if (std::string why = NumberProblem(body); !why.empty()) return Status::Internal("lease: " + why);
  rapidjson::Document d;
  d.Parse<kParseFlags>(body.c_str(), body.size());
  if (d.HasParseError()) return Status::Internal("lease: " + JsonParseError(d));
  if (!d.IsObject()) return Status::Internal("lease: not a JSON object");
  LeaseRecord r;
  r.object = body;
  const auto* meta = JsonMember(d, "metadata");
  if (meta == nullptr || !meta->IsObject()) return Status::Internal("lease: metadata missing");
  r.resource_version = JsonString(*meta, "resourceVersion");
  if (r.resource_version.empty())
    return Status::Internal("lease: metadata.resourceVersion missing");
  const auto* spec = JsonMember(d, "spec");
  if (spec == nullptr || spec->IsNull()) return r;
  if (!spec->IsObject()) return Status::Internal("lease: spec is not an object");
  auto str = [&](const char* k, std::string* out) -> Status {
    const auto* v = JsonMember(*spec, k);
    if (v == nullptr || v->IsNull()) return Status::OK();
    if (!v->IsString())
      return Status::Internal(std::string("lease: spec.") + k + " is not a string");
    *out = v->GetString();
    return Status::OK();
  };
  auto num = [&](const char* k, int* out) -> Status {
    const auto* v = JsonMember(*spec, k);
    if (v == nullptr || v->IsNull()) return Status::OK();
    if (!v->IsInt())
      return Status::Internal(std::string("lease: spec.") + k + " is not an integer");
    *out = v->GetInt();
    return Status::OK();
  };
  RETURN_NOT_OK(str("holderIdentity", &r.holder_identity));
  RETURN_NOT_OK(str("acquireTime", &r.acquire_time));
  RETURN_NOT_OK(str("renewTime", &r.renew_time));
  RETURN_NOT_OK(num("leaseDurationSeconds", &r.lease_duration_seconds));
  RETURN_NOT_OK(num("leaseTransitions", &r.lease_transitions));
  return r;
}

std::string EncodeLease(const std::string& ns, const std::string& name, const LeaseRecord& r) {
  rapidjson::Document d;
  Allocator& a = d.GetAllocator();
  if (!r.object.empty()) d.Parse<kParseFlags>(r.object.c_str(), r.object.size());
  if (r.object.empty() || d.HasParseError() || !d.IsObject()) {
    // A new Lease (or one that never came from DecodeLease): only what this code knows.
    d.SetObject();
    d.AddMember("apiVersion", "coordination.k8s.io/v1", a);
    d.AddMember("kind", "Lease", a);
  }
  Value& meta = Unique(d, "metadata", a);
  if (!meta.IsObject()) meta.SetObject();
  if (!meta.HasMember("name")) meta.AddMember("name", Value(name, a), a);
  if (!meta.HasMember("namespace")) meta.AddMember("namespace", Value(ns, a), a);
  // A create must not carry one; an update carries the one it read as its precondition.
  SetOrErase(meta, "resourceVersion", r.resource_version, a);
  Value& spec = Unique(d, "spec", a);
  if (!spec.IsObject()) spec.SetObject();
  Unique(spec, "holderIdentity", a)
      .SetString(r.holder_identity.data(),
                 static_cast<rapidjson::SizeType>(r.holder_identity.size()), a);
  Unique(spec, "leaseDurationSeconds", a).SetInt(r.lease_duration_seconds);
  SetOrErase(spec, "acquireTime", r.acquire_time, a);
  SetOrErase(spec, "renewTime", r.renew_time, a);
  Unique(spec, "leaseTransitions", a).SetInt(r.lease_transitions);
  return JsonToString(d);
}

std::string LeaseAnnotation(const std::string& object, const std::string& key) {
  if (object.empty() || !NumberProblem(object).empty()) return "";
  rapidjson::Document d;
  d.Parse<kParseFlags>(object.c_str(), object.size());
  if (d.HasParseError() || !d.IsObject()) return "";
  const Value* meta = JsonMember(d, "metadata");
  const Value* ann = meta != nullptr ? JsonMember(*meta, "annotations") : nullptr;
  return ann != nullptr ? JsonString(*ann, key.c_str()) : "";
}

std::string WithLeaseAnnotation(const std::string& object, const std::string& key,
                                const std::string& value) {
  rapidjson::Document d;
  Allocator& a = d.GetAllocator();
  if (!object.empty() && NumberProblem(object).empty())
    d.Parse<kParseFlags>(object.c_str(), object.size());
  if (object.empty() || d.HasParseError() || !d.IsObject()) d.SetObject();
  Value& meta = Unique(d, "metadata", a);
  if (!meta.IsObject()) meta.SetObject();
  Value& ann = Unique(meta, "annotations", a);
  if (!ann.IsObject()) ann.SetObject();
  Unique(ann, key.c_str(), a)
      .SetString(value.data(), static_cast<rapidjson::SizeType>(value.size()), a);
  return JsonToString(d);
}

std::string FormatMicroTime(double epoch_seconds) {
  double whole = std::floor(epoch_seconds);
  time_t t = static_cast<time_t>(whole);
  long micros = std::lround((epoch_seconds - whole) * 1e6);
  if (micros >= 1000000) {
    ++t;
    micros -= 1000000;
  }
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[40];
  size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + n, sizeof(buf) - n, ".%06ldZ", micros);
  return buf;
}

}  // namespace ds
