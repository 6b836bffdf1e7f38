#include "kube/lease.h"

#include <cmath>
#include <ctime>

#include "common/json_util.h"

namespace ds {

StatusOr<LeaseRecord> DecodeLease(const std::string& body) {
  rapidjson::Document d;
  d.Parse(body.c_str(), body.size());
  if (d.HasParseError()) return Status::Internal("lease: " + JsonParseError(d));
  if (!d.IsObject()) return Status::Internal("lease: not a JSON object");
  LeaseRecord r;
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
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.StartObject();
  w.Key("apiVersion");
  w.String("coordination.k8s.io/v1");
  w.Key("kind");
  w.String("Lease");
  w.Key("metadata");
  w.StartObject();
  w.Key("name");
  WriteString(w, name);
  w.Key("namespace");
  WriteString(w, ns);
  if (!r.resource_version.empty()) {
    w.Key("resourceVersion");
    WriteString(w, r.resource_version);
  }
  w.EndObject();
  w.Key("spec");
  w.StartObject();
  w.Key("holderIdentity");
  WriteString(w, r.holder_identity);
  w.Key("leaseDurationSeconds");
  w.Int(r.lease_duration_seconds);
  if (!r.acquire_time.empty()) {
    w.Key("acquireTime");
    WriteString(w, r.acquire_time);
  }
  if (!r.renew_time.empty()) {
    w.Key("renewTime");
    WriteString(w, r.renew_time);
  }
  w.Key("leaseTransitions");
  w.Int(r.lease_transitions);
  w.EndObject();
  w.EndObject();
  return std::string(sb.GetString(), sb.GetSize());
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
