// HTTP front for Pods, the eviction subresource and policy/v1 PodDisruptionBudgets (the state and
// semantics live in sim_pods.cc): list with paging and selectors, watch with the same framing,
// bookmarks and 410s as Nodes, server-side Table output for kubectl.
#include <rapidjson/document.h>

#include <chrono>
#include <thread>

#include "common/json_util.h"
#include "test/sim/sim_http.h"
#include "test/sim/sim_pods.h"
#include "test/sim/sim_server.h"

namespace sim {
namespace {

const std::vector<Column> kPodColumns = {
    {"Name", 0}, {"Ready", 0}, {"Status", 0},         {"Restarts", 0},       {"Age", 0},
    {"IP", 1},   {"Node", 1},  {"Nominated Node", 1}, {"Readiness Gates", 1}};
const std::vector<Column> kPdbColumns = {{"Name", 0},
                                         {"Min Available", 0},
                                         {"Max Unavailable", 0},
                                         {"Allowed Disruptions", 0},
                                         {"Age", 0}};

std::vector<std::string> PodCells(const rapidjson::Value& d) {
  const auto& meta = d["metadata"];
  const rapidjson::Value* st = ds::JsonMember(d, "status");
  const rapidjson::Value* spec = ds::JsonMember(d, "spec");
  int total = 0, ready = 0, restarts = 0;
  if (spec)
    if (const auto* cs = ds::JsonMember(*spec, "containers"); cs && cs->IsArray())
      total = static_cast<int>(cs->Size());
  if (st)
    if (const auto* css = ds::JsonMember(*st, "containerStatuses"); css && css->IsArray())
      for (const auto& c : css->GetArray()) {
        if (const auto* r = ds::JsonMember(c, "ready"); r && r->IsBool() && r->GetBool()) ++ready;
        if (const auto* r = ds::JsonMember(c, "restartCount"); r && r->IsInt())
          restarts += r->GetInt();
      }
  std::string phase = st ? ds::JsonString(*st, "phase") : "";
  std::string status = ds::JsonMember(meta, "deletionTimestamp") ? "Terminating" : phase;
  std::string ip = st ? ds::JsonString(*st, "podIP") : "";
  std::string node = spec ? ds::JsonString(*spec, "nodeName") : "";
  std::string nominated = st ? ds::JsonString(*st, "nominatedNodeName") : "";
  return {ds::JsonString(meta, "name"),
          std::to_string(ready) + "/" + std::to_string(total),
          status,
          std::to_string(restarts),
          Age(ds::JsonString(meta, "creationTimestamp")),
          ip.empty() ? "<none>" : ip,
          node.empty() ? "<none>" : node,
          nominated.empty() ? "<none>" : nominated,
          "<none>"};
}

std::vector<std::string> PdbCells(const rapidjson::Value& d) {
  const auto& meta = d["metadata"];
  const rapidjson::Value* spec = ds::JsonMember(d, "spec");
  auto cell = [&](const char* k) -> std::string {
    const rapidjson::Value* v = spec ? ds::JsonMember(*spec, k) : nullptr;
    if (v == nullptr || v->IsNull()) return "N/A";
    if (v->IsString()) return v->GetString();
    return ds::JsonToString(*v);
  };
  int allowed = 0;
  if (const auto* st = ds::JsonMember(d, "status"))
    if (const auto* a = ds::JsonMember(*st, "disruptionsAllowed"); a && a->IsInt())
      allowed = a->GetInt();
  return {ds::JsonString(meta, "name"), cell("minAvailable"), cell("maxUnavailable"),
          std::to_string(allowed), Age(ds::JsonString(meta, "creationTimestamp"))};
}

std::string Table(const std::vector<std::string>& objects, uint64_t rv, const std::string& cont,
                  bool columns, bool pdb) {
  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  StartTable(w, rv != 0 ? std::to_string(rv) : "", cont);
  if (columns) WriteColumnDefs(w, pdb ? kPdbColumns : kPodColumns);
  w.Key("rows");
  w.StartArray();
  for (const auto& json : objects) {
    rapidjson::Document d;
    d.Parse(json.c_str());
    WriteTableRow(w, pdb ? PdbCells(d) : PodCells(d), d["metadata"]);
  }
  w.EndArray();
  w.EndObject();
  return sb.GetString();
}

std::string ListJson(const char* kind, const char* api_version,
                     const std::vector<std::string>& items, uint64_t rv, const std::string& cont,
                     size_t remaining) {
  std::string body = std::string("{\"kind\":\"") + kind + "\",\"apiVersion\":\"" + api_version +
                     "\",\"metadata\":{\"resourceVersion\":\"" + std::to_string(rv) + "\"";
  if (!cont.empty())
    body += ",\"continue\":\"" + cont + "\",\"remainingItemCount\":" + std::to_string(remaining);
  body += "},\"items\":[";
  for (size_t i = 0; i < items.size(); ++i) body += (i ? "," : "") + items[i];
  return body + "]}";
}

std::vector<std::string> SplitPath(const std::string& path, size_t from) {
  std::vector<std::string> parts;
  for (size_t i = from; i <= path.size();) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    parts.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return parts;
}

const ApiError kNoResource{404, "NotFound", "the server could not find the requested resource", ""};
const ApiError kNoMethod{405, "MethodNotAllowed",
                         "the server does not allow this method on the requested resource", ""};

std::string Forbidden(const User& user, const std::string& verb, const std::string& resource,
                      const std::string& group, const std::string& ns, const std::string& name) {
  std::string kind = group.empty() ? resource : resource + "." + group;
  return (name.empty() ? kind : kind + " \"" + name + "\"") + " is forbidden: User \"" + user.name +
         "\" cannot " + verb + " resource \"" + resource + "\" in API group \"" + group + "\"" +
         (ns.empty() ? " at the cluster scope" : " in the namespace \"" + ns + "\"");
}

std::string VerbOf(const std::string& method) {
  return method == "POST"    ? "create"
         : method == "PUT"   ? "update"
         : method == "PATCH" ? "patch"
                             : "delete";
}

}  // namespace

bool Server::HandlePods(mg_connection* conn, const std::string& method, const std::string& path,
                        const std::string& query, const User& user, bool table, double drop_after,
                        size_t pad) {
  // /api/v1/pods or /api/v1/namespaces/NS/pods[/NAME[/eviction]]
  std::string ns, name, sub;
  if (path == "/api/v1/pods") {
    if (method != "GET") {
      SendError(conn, kNoMethod);
      return true;
    }
  } else {
    if (path.rfind("/api/v1/namespaces/", 0) != 0) return false;
    auto parts = SplitPath(path, std::string("/api/v1/namespaces/").size());
    if (parts.size() < 2 || parts[1] != "pods" || parts[0].empty()) return false;
    ns = parts[0];
    if (parts.size() >= 3) name = parts[2];
    if (parts.size() >= 4) sub = parts[3];
    if (parts.size() > 4 || (parts.size() >= 3 && name.empty()) ||
        (!sub.empty() && sub != "eviction")) {
      SendError(conn, kNoResource);
      return true;
    }
  }
  if (pods_ == nullptr) {
    SendError(conn, kNoResource);
    return true;
  }
  bool is_write = method != "GET" && method != "HEAD";
  if (is_write && user.read_only) {
    SendError(conn, ApiError{403, "Forbidden",
                             Forbidden(user, VerbOf(method), sub.empty() ? "pods" : "pods/" + sub,
                                       "", ns, name),
                             ""});
    return true;
  }
  std::string out;
  if (!sub.empty()) {  // eviction
    if (method != "POST") {
      SendError(conn, kNoMethod);
      return true;
    }
    std::string body = ReadBody(conn);
    int code = 0;
    ApiError e = pods_->Evict(ns, name, body, &out, &code);
    LogWrite(conn, "EVICT", ns + "/" + name, user.name, "application/json", body,
             e.ok() ? code : e.code, e.ok() && code == 201);
    if (!e.ok())
      SendError(conn, e);
    else
      Send(conn, code, out);
    return true;
  }
  if (name.empty()) {
    if (method == "POST") {
      std::string body = ReadBody(conn);
      ApiError e = pods_->CreatePod(ns, body, &out);
      LogWrite(conn, "CREATE", ns + "/", user.name, "application/json", body, e.ok() ? 201 : e.code,
               e.ok());
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
    if (ParseBool(QueryParam(query, "watch"))) {
      PodWatch(conn, ns, query, table, drop_after, pad);
      return true;
    }
    auto sel = LabelSelectorParam(conn, query);
    if (!sel) return true;
    FieldSelector fields;
    std::string err;
    if (!ParseFieldSelector(QueryParam(query, "fieldSelector"), &fields, &err)) {
      SendError(conn, ApiError{400, "BadRequest", err, ""});
      return true;
    }
    auto paging = ListPagingParams(conn, query, pods_->compacted_rv());
    if (!paging) return true;
    const size_t limit = paging->limit;
    const std::string& after = paging->after;
    uint64_t list_rv = paging->list_rv;
    std::string next;
    uint64_t rv = 0;
    size_t remaining = 0;
    auto items = pods_->ListPods(ns, *sel, fields, limit, after, &next, &rv, &remaining);
    if (list_rv == 0) list_rv = rv;
    std::string token = next.empty() ? "" : MakeContinue(list_rv, next);
    if (table)
      Send(conn, 200, Table(items, list_rv, token, true, false));
    else
      Send(conn, 200, ListJson("PodList", "v1", items, list_rv, token, remaining));
    return true;
  }
  if (method == "GET") {
    ApiError e = pods_->GetPod(ns, name, &out);
    if (!e.ok())
      SendError(conn, e);
    else if (table)
      Send(conn, 200, Table({out}, store_->CurrentRv(), "", true, false));
    else
      Send(conn, 200, out);
    return true;
  }
  if (method == "DELETE") {
    std::string body = ReadBody(conn);
    ApiError e = pods_->DeletePod(ns, name, body, &out);
    LogWrite(conn, "DELETE", ns + "/" + name, user.name, "application/json", body,
             e.ok() ? 200 : e.code, e.ok());
    if (!e.ok())
      SendError(conn, e);
    else
      Send(conn, 200, out);
    return true;
  }
  SendError(conn, kNoMethod);
  return true;
}

bool Server::HandlePdbs(mg_connection* conn, const std::string& method, const std::string& path,
                        const User& user, bool table) {
  // /apis/policy/v1/poddisruptionbudgets or /apis/policy/v1/namespaces/NS/poddisruptionbudgets[/N]
  const std::string base = "/apis/policy/v1/";
  if (path.rfind(base, 0) != 0) return false;
  auto parts = SplitPath(path, base.size());
  std::string ns, name;
  bool ok = false;
  if (parts.size() == 1 && parts[0] == "poddisruptionbudgets") {
    ok = method == "GET";
  } else if ((parts.size() == 3 || parts.size() == 4) && parts[0] == "namespaces" &&
             parts[2] == "poddisruptionbudgets" && !parts[1].empty()) {
    ns = parts[1];
    if (parts.size() == 4) name = parts[3];
    ok = parts.size() == 3 || !name.empty();
  }
  if (!ok || pods_ == nullptr) {
    SendError(conn, kNoResource);
    return true;
  }
  if (method != "GET" && user.read_only) {
    SendError(
        conn,
        ApiError{403, "Forbidden",
                 Forbidden(user, VerbOf(method), "poddisruptionbudgets", "policy", ns, name), ""});
    return true;
  }
  std::string out;
  ApiError e;
  int ok_code = 200;
  if (method == "GET" && name.empty()) {
    uint64_t rv = 0;
    auto items = pods_->ListPdbs(ns, &rv);
    if (table)
      Send(conn, 200, Table(items, rv, "", true, true));
    else
      Send(conn, 200, ListJson("PodDisruptionBudgetList", "policy/v1", items, rv, "", 0));
    return true;
  }
  if (method == "GET") {
    e = pods_->GetPdb(ns, name, &out);
    if (e.ok() && table) {
      Send(conn, 200, Table({out}, store_->CurrentRv(), "", true, true));
      return true;
    }
  } else if (method == "POST" && name.empty()) {
    e = pods_->CreatePdb(ns, ReadBody(conn), &out);
    ok_code = 201;
  } else if (method == "PUT" && !name.empty()) {
    e = pods_->ReplacePdb(ns, name, ReadBody(conn), &out);
  } else if (method == "DELETE" && !name.empty()) {
    e = pods_->DeletePdb(ns, name, &out);
  } else {
    e = kNoMethod;
  }
  if (!e.ok())
    SendError(conn, e);
  else
    Send(conn, ok_code, out);
  return true;
}

void Server::PodWatch(mg_connection* conn, const std::string& ns, const std::string& query,
                      bool table, double drop_after, size_t pad) {
  auto sel = LabelSelectorParam(conn, query);
  if (!sel) return;
  FieldSelector fields;
  std::string err;
  if (!ParseFieldSelector(QueryParam(query, "fieldSelector"), &fields, &err)) {
    SendError(conn, ApiError{400, "BadRequest", err, ""});
    return;
  }
  auto matches = [&](const PodKeys& k) {
    return (ns.empty() || k.fields.at("metadata.namespace") == ns) && sel->Matches(k.labels) &&
           fields.Matches(k);
  };
  WatchSource src;
  src.kind = "Pod";
  src.list = [&](uint64_t* list_rv) {
    std::string next;
    size_t rem;
    return pods_->ListPods(ns, *sel, fields, 0, "", &next, list_rv, &rem);
  };
  src.events = [&](uint64_t rv, int wait_ms, std::vector<WatchSource::Event>* out, bool* expired) {
    std::vector<PodEvent> evs;
    pods_->EventsAfter(rv, wait_ms, &evs, expired);
    for (auto& ev : evs)
      out->push_back({ev.rv, std::move(ev.type), std::move(ev.json),
                      ev.had_old && matches(ev.old_keys), matches(ev.new_keys)});
  };
  src.compacted_rv = [&] { return pods_->compacted_rv(); };
  src.table = [](const std::string& json, bool first) {
    return Table({json}, 0, "", first, false);
  };
  ServeWatch(conn, query, table, drop_after, pad, src);
}

}  // namespace sim
