// HTTP front for the apps/v1 workload objects (deployments, replicasets, statefulsets,
// daemonsets: get and list, namespaced and across namespaces; the state lives in sim_apps.cc)
// and autoscaling/v2 HorizontalPodAutoscalers (create, get, list, delete, and the status
// subresource: sim_hpa.cc), with label and field selectors (metadata.name, metadata.namespace)
// and server-side Table output with the API server's columns
// (pkg/printers/internalversion/printers.go printDeployment, printReplicaSet, printStatefulSet,
// printDaemonSet, printHorizontalPodAutoscaler).
#include <rapidjson/document.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/json_util.h"
#include "test/sim/sim_hpa.h"
#include "test/sim/sim_http.h"
#include "test/sim/sim_rbac.h"
#include "test/sim/sim_server.h"
#include "test/sim/sim_volumes.h"

namespace sim {
namespace {

using rapidjson::Value;

const ApiError kNoResource{404, "NotFound", "the server could not find the requested resource", ""};
const ApiError kNoMethod{405, "MethodNotAllowed",
                         "the server does not allow this method on the requested resource", ""};

const std::vector<Column>& ColumnsOf(const std::string& resource) {
  static const std::vector<Column> kDeployment = {
      {"Name", 0}, {"Ready", 0},      {"Up-to-date", 0}, {"Available", 0},
      {"Age", 0},  {"Containers", 1}, {"Images", 1},     {"Selector", 1}};
  static const std::vector<Column> kReplicaSet = {{"Name", 0},   {"Desired", 0}, {"Current", 0},
                                                  {"Ready", 0},  {"Age", 0},     {"Containers", 1},
                                                  {"Images", 1}, {"Selector", 1}};
  static const std::vector<Column> kStatefulSet = {
      {"Name", 0}, {"Ready", 0}, {"Age", 0}, {"Containers", 1}, {"Images", 1}};
  static const std::vector<Column> kDaemonSet = {
      {"Name", 0},       {"Desired", 0},   {"Current", 0},       {"Ready", 0},
      {"Up-to-date", 0}, {"Available", 0}, {"Node Selector", 0}, {"Age", 0},
      {"Containers", 1}, {"Images", 1},    {"Selector", 1}};
  static const std::vector<Column> kHpa = {{"Name", 0},    {"Reference", 0}, {"Targets", 0},
                                           {"MinPods", 0}, {"MaxPods", 0},   {"Replicas", 0},
                                           {"Age", 0}};
  return resource == "deployments"    ? kDeployment
         : resource == "replicasets"  ? kReplicaSet
         : resource == "statefulsets" ? kStatefulSet
         : resource == "daemonsets"   ? kDaemonSet
                                      : kHpa;
}

int Int(const Value* obj, const char* key) {
  const Value* v = obj != nullptr ? ds::JsonMember(*obj, key) : nullptr;
  return v != nullptr && v->IsInt() ? v->GetInt() : 0;
}

// "k=v,k2=v2" of a map (sorted, as labels.Set.String), or "<none>".
std::string Pairs(const Value* m) {
  std::vector<std::string> kv;
  if (m != nullptr && m->IsObject())
    for (auto it = m->MemberBegin(); it != m->MemberEnd(); ++it)
      kv.push_back(std::string(it->name.GetString()) + "=" +
                   (it->value.IsString() ? it->value.GetString() : ""));
  std::sort(kv.begin(), kv.end());
  std::string out;
  for (const auto& s : kv) out += (out.empty() ? "" : ",") + s;
  return out.empty() ? "<none>" : out;
}

// The template's container names and images, comma-separated.
void Containers(const Value* spec, std::string* names, std::string* images) {
  const Value* t = spec ? ds::JsonMember(*spec, "template") : nullptr;
  const Value* ts = t ? ds::JsonMember(*t, "spec") : nullptr;
  const Value* cs = ts ? ds::JsonMember(*ts, "containers") : nullptr;
  if (cs == nullptr || !cs->IsArray()) return;
  for (const auto& c : cs->GetArray()) {
    *names += (names->empty() ? "" : ",") + ds::JsonString(c, "name");
    *images += (images->empty() ? "" : ",") + ds::JsonString(c, "image");
  }
}

std::vector<std::string> Cells(const std::string& resource, const Value& d) {
  const Value& meta = d["metadata"];
  const Value* spec = ds::JsonMember(d, "spec");
  const Value* st = ds::JsonMember(d, "status");
  const std::string name = ds::JsonString(meta, "name");
  const std::string age = Age(ds::JsonString(meta, "creationTimestamp"));
  std::string names, images;
  Containers(spec, &names, &images);
  const Value* sel = spec ? ds::JsonMember(*spec, "selector") : nullptr;
  const std::string selector = Pairs(sel ? ds::JsonMember(*sel, "matchLabels") : nullptr);
  auto n = [](int v) { return std::to_string(v); };
  if (resource == "deployments")
    return {name,
            n(Int(st, "readyReplicas")) + "/" + n(Int(spec, "replicas")),
            n(Int(st, "updatedReplicas")),
            n(Int(st, "availableReplicas")),
            age,
            names,
            images,
            selector};
  if (resource == "replicasets")
    return {name,
            n(Int(spec, "replicas")),
            n(Int(st, "replicas")),
            n(Int(st, "readyReplicas")),
            age,
            names,
            images,
            selector};
  if (resource == "statefulsets")
    return {name, n(Int(st, "readyReplicas")) + "/" + n(Int(spec, "replicas")), age, names, images};
  if (resource == "daemonsets") {
    const Value* t = spec ? ds::JsonMember(*spec, "template") : nullptr;
    const Value* ts = t ? ds::JsonMember(*t, "spec") : nullptr;
    return {name,
            n(Int(st, "desiredNumberScheduled")),
            n(Int(st, "currentNumberScheduled")),
            n(Int(st, "numberReady")),
            n(Int(st, "updatedNumberScheduled")),
            n(Int(st, "numberAvailable")),
            Pairs(ts ? ds::JsonMember(*ts, "nodeSelector") : nullptr),
            age,
            names,
            images,
            selector};
  }
  // horizontalpodautoscalers
  const Value* ref = spec ? ds::JsonMember(*spec, "scaleTargetRef") : nullptr;
  std::string targets;
  if (const Value* ms = spec ? ds::JsonMember(*spec, "metrics") : nullptr; ms && ms->IsArray())
    for (const auto& m : ms->GetArray()) {
      const Value* r = ds::JsonMember(m, "resource");
      const Value* target = r ? ds::JsonMember(*r, "target") : nullptr;
      std::string t = "<unknown>";
      if (target != nullptr && ds::JsonMember(*target, "averageUtilization") != nullptr)
        t = ds::JsonString(*r, "name") + ": <unknown>/" + n(Int(target, "averageUtilization")) +
            "%";
      targets += (targets.empty() ? "" : ", ") + t;
    }
  return {name,
          ref ? ds::JsonString(*ref, "kind") + "/" + ds::JsonString(*ref, "name") : "",
          targets.empty() ? "<none>" : targets,
          n(spec && ds::JsonMember(*spec, "minReplicas") ? Int(spec, "minReplicas") : 1),
          n(Int(spec, "maxReplicas")),
          n(Int(st, "currentReplicas")),
          age};
}

std::string Table(const std::string& resource, const std::vector<std::string>& objects,
                  uint64_t rv) {
  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  StartTable(w, std::to_string(rv), "");
  WriteColumnDefs(w, ColumnsOf(resource));
  w.Key("rows");
  w.StartArray();
  for (const auto& json : objects) {
    rapidjson::Document d;
    d.Parse(json.c_str());
    WriteTableRow(w, Cells(resource, d), d["metadata"]);
  }
  w.EndArray();
  w.EndObject();
  return sb.GetString();
}

std::string ListJson(const std::string& kind, const char* api_version,
                     const std::vector<std::string>& items, uint64_t rv) {
  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  w.StartObject();
  w.Key("kind");
  ds::WriteString(w, kind + "List");
  w.Key("apiVersion");
  w.String(api_version);
  w.Key("metadata");
  w.StartObject();
  w.Key("resourceVersion");
  ds::WriteString(w, std::to_string(rv));
  w.EndObject();
  w.Key("items");
  w.StartArray();
  for (const auto& item : items) w.RawValue(item.c_str(), item.size(), rapidjson::kObjectType);
  w.EndArray();
  w.EndObject();
  return sb.GetString();
}

// A resource path under `base`: RESOURCE (all namespaces) or namespaces/NS/RESOURCE[/NAME[/SUB]].
struct ResourcePath {
  std::string ns, resource, name, sub;
};

bool ParseResourcePath(const std::string& path, const std::string& base, ResourcePath* out) {
  if (path.rfind(base, 0) != 0) return false;
  std::vector<std::string> parts;
  for (size_t i = base.size(); i <= path.size();) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    parts.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  for (const auto& p : parts)
    if (p.empty()) return false;
  if (parts.size() == 1) {
    out->resource = parts[0];
    return true;
  }
  if (parts.size() < 3 || parts.size() > 5 || parts[0] != "namespaces") return false;
  out->ns = parts[1];
  out->resource = parts[2];
  if (parts.size() >= 4) out->name = parts[3];
  if (parts.size() == 5) out->sub = parts[4];
  return true;
}

// The list's selectors; false after answering 400.
bool Selectors(mg_connection* conn, const std::string& query,
               std::optional<ds::LabelSelector>* labels, FieldSelector* fields) {
  *labels = LabelSelectorParam(conn, query);
  if (!*labels) return false;
  std::string err;
  if (!ParseFieldSelector(QueryParam(query, "fieldSelector"), VolumeStore::SelectableFields(),
                          fields, &err)) {
    SendError(conn, ApiError{400, "BadRequest", err, ""});
    return false;
  }
  return true;
}

}  // namespace

bool Server::HandleApps(mg_connection* conn, const std::string& method, const std::string& path,
                        const std::string& query, const User& /*user*/, bool table) {
  ResourcePath rp;
  if (!ParseResourcePath(path, "/apis/apps/v1/", &rp)) return false;
  static const std::map<std::string, std::string> kKinds = {{"deployments", "Deployment"},
                                                            {"replicasets", "ReplicaSet"},
                                                            {"statefulsets", "StatefulSet"},
                                                            {"daemonsets", "DaemonSet"}};
  auto kind = kKinds.find(rp.resource);
  if (pods_ == nullptr || kind == kKinds.end() || !rp.sub.empty() ||
      (rp.ns.empty() && !rp.name.empty())) {
    SendError(conn, kNoResource);
    return true;
  }
  if (method != "GET") {
    // Discovery lists get, list and watch only: these objects are read-only here (the admin API
    // changes them).
    SendError(conn, kNoMethod);
    return true;
  }
  std::string out;
  if (!rp.name.empty()) {
    ApiError e = pods_->GetApps(rp.resource, rp.ns, rp.name, &out);
    if (!e.ok())
      SendError(conn, e);
    else if (table)
      Send(conn, 200, Table(rp.resource, {out}, store_->CurrentRv()));
    else
      Send(conn, 200, out);
    return true;
  }
  std::optional<ds::LabelSelector> labels;
  FieldSelector fields;
  if (!Selectors(conn, query, &labels, &fields)) return true;
  if (ParseBool(QueryParam(query, "watch"))) {
    // The objects change when their pods do, which the store does not log as watch events:
    // the watch polls the list and sends each object whose resourceVersion passed the last one
    // sent, as MODIFIED (enough for `kubectl rollout status` and informers; deletions are not
    // seen). Never 410.
    WatchSource src;
    src.kind = kind->second;
    src.api_version = "apps/v1";
    src.list = [&](uint64_t* list_rv) {
      return pods_->ListApps(rp.resource, rp.ns, *labels, fields, list_rv);
    };
    src.events = [&](uint64_t from, int wait_ms, std::vector<WatchSource::Event>* out,
                     bool* expired) {
      *expired = false;
      const auto until =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(wait_ms, 1));
      do {
        uint64_t rv = 0;
        for (auto& json : pods_->ListApps(rp.resource, rp.ns, *labels, fields, &rv)) {
          rapidjson::Document d;
          d.Parse(json.c_str());
          const uint64_t obj_rv =
              std::strtoull(ds::JsonString(d["metadata"], "resourceVersion").c_str(), nullptr, 10);
          if (obj_rv > from) out->push_back({obj_rv, "MODIFIED", std::move(json), true, true});
        }
        if (!out->empty()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      } while (std::chrono::steady_clock::now() < until);
      std::sort(
          out->begin(), out->end(),
          [](const WatchSource::Event& x, const WatchSource::Event& y) { return x.rv < y.rv; });
    };
    src.compacted_rv = [] { return uint64_t{0}; };
    const std::string resource = rp.resource;
    src.table = [resource](const std::string& json, bool first) {
      rapidjson::Document d;
      d.Parse(json.c_str());
      rapidjson::StringBuffer sb;
      ds::JsonWriter w(sb);
      StartTable(w, "", "");
      if (first) WriteColumnDefs(w, ColumnsOf(resource));
      w.Key("rows");
      w.StartArray();
      WriteTableRow(w, Cells(resource, d), d["metadata"]);
      w.EndArray();
      w.EndObject();
      return std::string(sb.GetString());
    };
    ServeWatch(conn, query, table, 0, 0, src);
    return true;
  }
  uint64_t rv = 0;
  auto items = pods_->ListApps(rp.resource, rp.ns, *labels, fields, &rv);
  if (table)
    Send(conn, 200, Table(rp.resource, items, rv));
  else
    Send(conn, 200, ListJson(kind->second, "apps/v1", items, rv));
  return true;
}

bool Server::HandleHpas(mg_connection* conn, const std::string& method, const std::string& path,
                        const std::string& query, const User& user, bool table) {
  ResourcePath rp;
  if (!ParseResourcePath(path, "/apis/autoscaling/v2/", &rp)) return false;
  if (hpas_ == nullptr || rp.resource != "horizontalpodautoscalers" ||
      (rp.ns.empty() && !rp.name.empty()) || (!rp.sub.empty() && rp.sub != "status")) {
    SendError(conn, kNoResource);
    return true;
  }
  if (method != "GET" && method != "HEAD" && user.read_only) {
    SendError(conn, ApiError{403, "Forbidden",
                             ForbiddenMessage(user.name, Attributes(method, path, false)), ""});
    return true;
  }
  std::string out;
  ApiError e;
  int ok_code = 200;
  if (rp.name.empty()) {
    if (method == "POST" && !rp.ns.empty()) {
      const std::string body = ReadBody(conn);
      e = hpas_->Create(rp.ns, body, &out);
      LogWrite(conn, "CREATE", rp.ns + "/", user.name, "application/json", body,
               e.ok() ? 201 : e.code, e.ok());
      ok_code = 201;
    } else if (method == "GET" && !ParseBool(QueryParam(query, "watch"))) {
      std::optional<ds::LabelSelector> labels;
      FieldSelector fields;
      if (!Selectors(conn, query, &labels, &fields)) return true;
      uint64_t rv = 0;
      auto items = hpas_->List(rp.ns, *labels, fields, &rv);
      if (table)
        Send(conn, 200, Table(rp.resource, items, rv));
      else
        Send(conn, 200, ListJson("HorizontalPodAutoscaler", "autoscaling/v2", items, rv));
      return true;
    } else {
      e = kNoMethod;
    }
  } else if (method == "GET") {
    e = hpas_->Get(rp.ns, rp.name, &out);
    if (e.ok() && table) {
      Send(conn, 200, Table(rp.resource, {out}, store_->CurrentRv()));
      return true;
    }
  } else if (method == "DELETE" && rp.sub.empty()) {
    ReadBody(conn);  // DeleteOptions: nothing in them changes how an HPA goes
    e = hpas_->Delete(rp.ns, rp.name, &out);
  } else if (method == "PUT" && rp.sub == "status") {
    const std::string body = ReadBody(conn);
    e = hpas_->ReplaceStatus(rp.ns, rp.name, body, &out);
    LogWrite(conn, "PUT", rp.ns + "/" + rp.name + "/status", user.name, "application/json", body,
             e.ok() ? 200 : e.code, e.ok());
  } else if (method == "PATCH" && rp.sub == "status") {
    const char* ct_h = mg_get_header(conn, "Content-Type");
    const std::string ct = ct_h ? ct_h : "";
    const std::string body = ReadBody(conn);
    if (ct.rfind("application/merge-patch+json", 0) == 0)
      e = hpas_->PatchStatus(rp.ns, rp.name, PatchType::kMerge, body, &out);
    else if (ct.rfind("application/strategic-merge-patch+json", 0) == 0)
      e = hpas_->PatchStatus(rp.ns, rp.name, PatchType::kStrategic, body, &out);
    else if (ct.rfind("application/json-patch+json", 0) == 0)
      e = hpas_->PatchStatus(rp.ns, rp.name, PatchType::kJson, body, &out);
    else
      e = ApiError{415, "UnsupportedMediaType",
                   "the body of the request was in an unknown format - accepted media types "
                   "include: application/json-patch+json, application/merge-patch+json, "
                   "application/apply-patch+yaml, application/strategic-merge-patch+json",
                   ""};
    LogWrite(conn, "PATCH", rp.ns + "/" + rp.name + "/status", user.name, ct, body,
             e.ok() ? 200 : e.code, e.ok());
  } else {
    e = kNoMethod;
  }
  if (!e.ok())
    SendError(conn, e);
  else
    Send(conn, ok_code, out);
  return true;
}

}  // namespace sim
