// HTTP front for PersistentVolumeClaims and PersistentVolumes (the state and the PV controller's
// binding live in sim_volumes.cc): create, get, delete, list with label and field selectors
// (metadata.name, metadata.namespace: what kubectl delete's wait asks), and server-side Table
// output for kubectl with the API server's columns (pkg/printers/internalversion/printers.go
// printPersistentVolume, printPersistentVolumeClaim).
#include <rapidjson/document.h>

#include "common/json_util.h"
#include "test/sim/sim_http.h"
#include "test/sim/sim_rbac.h"
#include "test/sim/sim_server.h"
#include "test/sim/sim_volumes.h"

namespace sim {
namespace {

const std::vector<Column> kVolumeColumns = {
    {"Name", 0},   {"Capacity", 0}, {"Access Modes", 0}, {"Reclaim Policy", 0},
    {"Status", 0}, {"Claim", 0},    {"StorageClass", 0}, {"VolumeAttributesClass", 0},
    {"Reason", 0}, {"Age", 0},      {"VolumeMode", 1}};
const std::vector<Column> kClaimColumns = {{"Name", 0},
                                           {"Status", 0},
                                           {"Volume", 0},
                                           {"Capacity", 0},
                                           {"Access Modes", 0},
                                           {"StorageClass", 0},
                                           {"VolumeAttributesClass", 0},
                                           {"Age", 0},
                                           {"VolumeMode", 1}};

// "RWO,ROX" as the printers abbreviate access modes (helper.GetAccessModesAsString).
std::string AccessModes(const rapidjson::Value* modes) {
  std::string out;
  if (modes == nullptr || !modes->IsArray()) return out;
  for (const auto& m : modes->GetArray()) {
    if (!m.IsString()) continue;
    const std::string s = m.GetString();
    const std::string abbr = s == "ReadWriteOnce"      ? "RWO"
                             : s == "ReadOnlyMany"     ? "ROX"
                             : s == "ReadWriteMany"    ? "RWX"
                             : s == "ReadWriteOncePod" ? "RWOP"
                                                       : "";
    if (!abbr.empty()) out += (out.empty() ? "" : ",") + abbr;
  }
  return out;
}

std::string Storage(const rapidjson::Value* list) {
  return list != nullptr && list->IsObject() ? ds::JsonString(*list, "storage") : "";
}

std::string Unset(const std::string& s) { return s.empty() ? "<unset>" : s; }

std::vector<std::string> VolumeCells(const rapidjson::Value& d) {
  static const rapidjson::Value kEmpty(rapidjson::kObjectType);
  const auto& meta = d["metadata"];
  const rapidjson::Value* spec = ds::JsonMember(d, "spec");
  const rapidjson::Value* st = ds::JsonMember(d, "status");
  if (spec == nullptr || !spec->IsObject()) spec = &kEmpty;
  if (st == nullptr || !st->IsObject()) st = &kEmpty;
  std::string claim;
  if (const auto* ref = ds::JsonMember(*spec, "claimRef"); ref && ref->IsObject())
    claim = ds::JsonString(*ref, "namespace") + "/" + ds::JsonString(*ref, "name");
  const std::string phase =
      ds::JsonMember(meta, "deletionTimestamp") ? "Terminating" : ds::JsonString(*st, "phase");
  return {ds::JsonString(meta, "name"),
          Storage(ds::JsonMember(*spec, "capacity")),
          AccessModes(ds::JsonMember(*spec, "accessModes")),
          ds::JsonString(*spec, "persistentVolumeReclaimPolicy"),
          phase,
          claim,
          ds::JsonString(*spec, "storageClassName"),
          Unset(ds::JsonString(*spec, "volumeAttributesClassName")),
          ds::JsonString(*st, "reason"),
          Age(ds::JsonString(meta, "creationTimestamp")),
          Unset(ds::JsonString(*spec, "volumeMode"))};
}

std::vector<std::string> ClaimCells(const rapidjson::Value& d) {
  static const rapidjson::Value kEmpty(rapidjson::kObjectType);
  const auto& meta = d["metadata"];
  const rapidjson::Value* spec = ds::JsonMember(d, "spec");
  const rapidjson::Value* st = ds::JsonMember(d, "status");
  if (spec == nullptr || !spec->IsObject()) spec = &kEmpty;
  if (st == nullptr || !st->IsObject()) st = &kEmpty;
  const std::string volume = ds::JsonString(*spec, "volumeName");
  std::string capacity, modes;
  if (!volume.empty()) {  // the printer shows what the binding gave the claim
    capacity = Storage(ds::JsonMember(*st, "capacity"));
    modes = AccessModes(ds::JsonMember(*st, "accessModes"));
  }
  const std::string phase =
      ds::JsonMember(meta, "deletionTimestamp") ? "Terminating" : ds::JsonString(*st, "phase");
  return {ds::JsonString(meta, "name"),
          phase,
          volume,
          capacity,
          modes,
          ds::JsonString(*spec, "storageClassName"),
          Unset(ds::JsonString(*spec, "volumeAttributesClassName")),
          Age(ds::JsonString(meta, "creationTimestamp")),
          Unset(ds::JsonString(*spec, "volumeMode"))};
}

std::string Table(const std::vector<std::string>& items, uint64_t rv, bool claims) {
  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  StartTable(w, std::to_string(rv), "");
  WriteColumnDefs(w, claims ? kClaimColumns : kVolumeColumns);
  w.Key("rows");
  w.StartArray();
  for (const auto& json : items) {
    rapidjson::Document d;
    d.Parse(json.c_str());
    WriteTableRow(w, claims ? ClaimCells(d) : VolumeCells(d), d["metadata"]);
  }
  w.EndArray();
  w.EndObject();
  return sb.GetString();
}

std::string ListJson(const char* kind, const std::vector<std::string>& items, uint64_t rv) {
  std::string body = std::string("{\"kind\":\"") + kind +
                     "\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"" +
                     std::to_string(rv) + "\"},\"items\":[";
  for (size_t i = 0; i < items.size(); ++i) body += (i ? "," : "") + items[i];
  return body + "]}";
}

const ApiError kNoResource{404, "NotFound", "the server could not find the requested resource", ""};
const ApiError kNoMethod{405, "MethodNotAllowed",
                         "the server does not allow this method on the requested resource", ""};

}  // namespace

bool Server::HandleVolumes(mg_connection* conn, const std::string& method, const std::string& path,
                           const std::string& query, const User& user, bool table) {
  // /api/v1/persistentvolumes[/NAME], /api/v1/persistentvolumeclaims (all namespaces: list) or
  // /api/v1/namespaces/NS/persistentvolumeclaims[/NAME]
  static const std::string kPv = "/api/v1/persistentvolumes";
  static const std::string kPvc = "persistentvolumeclaims";
  static const std::string kNs = "/api/v1/namespaces/";
  bool claims = false, all = false;
  std::string ns, name;
  if (path == kPv || path.rfind(kPv + "/", 0) == 0) {
    name = path.size() > kPv.size() ? path.substr(kPv.size() + 1) : "";
    if (path.size() > kPv.size() && name.empty()) return false;
  } else if (path == "/api/v1/" + kPvc) {
    claims = all = true;
  } else if (path.rfind(kNs, 0) == 0) {
    const size_t ns_end = path.find('/', kNs.size());
    if (ns_end == std::string::npos || ns_end == kNs.size()) return false;
    const std::string rest = path.substr(ns_end + 1);  // "persistentvolumeclaims[/NAME]"
    if (rest != kPvc && rest.rfind(kPvc + "/", 0) != 0) return false;
    claims = true;
    ns = path.substr(kNs.size(), ns_end - kNs.size());
    if (rest != kPvc) name = rest.substr(kPvc.size() + 1);
    if (rest != kPvc && name.empty()) return false;
  } else {
    return false;
  }
  if (volumes_ == nullptr || name.find('/') != std::string::npos) {
    SendError(conn, kNoResource);
    return true;
  }
  if (method != "GET" && method != "HEAD" && user.read_only) {
    SendError(conn, ApiError{403, "Forbidden",
                             ForbiddenMessage(user.name, Attributes(method, path, false)), ""});
    return true;
  }
  std::string out;
  if (name.empty()) {
    if (method == "POST" && !all) {
      const std::string body = ReadBody(conn);
      ApiError e =
          claims ? volumes_->CreateClaim(ns, body, &out) : volumes_->CreateVolume(body, &out);
      if (!e.ok())
        SendError(conn, e);
      else
        Send(conn, 201, out);
      return true;
    }
    if (method != "GET") {
      SendError(conn, kNoMethod);
      return true;
    }
    if (ParseBool(QueryParam(query, "watch"))) {  // not served: discovery lists no watch verb
      SendError(conn, kNoMethod);
      return true;
    }
    auto sel = LabelSelectorParam(conn, query);
    if (!sel) return true;
    FieldSelector fields;
    std::string err;
    if (!ParseFieldSelector(QueryParam(query, "fieldSelector"), VolumeStore::SelectableFields(),
                            &fields, &err)) {
      SendError(conn, ApiError{400, "BadRequest", err, ""});
      return true;
    }
    uint64_t rv = 0;
    auto items = claims ? volumes_->ListClaims(ns, *sel, fields, &rv)
                        : volumes_->ListVolumes(*sel, fields, &rv);
    if (table)
      Send(conn, 200, Table(items, rv, claims));
    else
      Send(conn, 200,
           ListJson(claims ? "PersistentVolumeClaimList" : "PersistentVolumeList", items, rv));
    return true;
  }
  ApiError e;
  if (method == "GET") {
    e = claims ? volumes_->GetClaim(ns, name, &out) : volumes_->GetVolume(name, &out);
    if (e.ok() && table) {
      Send(conn, 200, Table({out}, store_->CurrentRv(), claims));
      return true;
    }
  } else if (method == "DELETE") {
    ReadBody(conn);  // DeleteOptions: nothing in them changes how these go
    e = claims ? volumes_->DeleteClaim(ns, name, &out) : volumes_->DeleteVolume(name, &out);
  } else {
    e = kNoMethod;
  }
  if (!e.ok())
    SendError(conn, e);
  else
    Send(conn, 200, out);
  return true;
}

}  // namespace sim
