// HTTP front for core/v1 Services and Endpoints (the state lives in sim_services.cc): create,
// get, list (in a namespace and across namespaces, with label and field selectors), update
// (PUT), patch, delete, and server-side Table output for kubectl with the API server's columns
// (pkg/printers/internalversion/printers.go printService, printEndpoints). This is what
// `kubectl apply -f` of a Service or an Endpoints needs: a GET that is 404, a POST, and on the
// next apply a strategic merge PATCH. The proxy subresource is sim_server_proxy.cc.
#include <rapidjson/document.h>

#include <algorithm>
#include <optional>

#include "common/json_util.h"
#include "test/sim/sim_http.h"
#include "test/sim/sim_rbac.h"
#include "test/sim/sim_server.h"
#include "test/sim/sim_services.h"

namespace sim {
namespace {

using rapidjson::Value;
using Kind = ServiceStore::Kind;

const std::vector<Column> kServiceColumns = {{"Name", 0},        {"Type", 0},    {"Cluster-IP", 0},
                                             {"External-IP", 0}, {"Port(s)", 0}, {"Age", 0},
                                             {"Selector", 1}};
const std::vector<Column> kEndpointsColumns = {{"Name", 0}, {"Endpoints", 0}, {"Age", 0}};

const ApiError kNoMethod{405, "MethodNotAllowed",
                         "the server does not allow this method on the requested resource", ""};

std::vector<std::string> ServiceCells(const Value& d) {
  static const Value kEmpty(rapidjson::kObjectType);
  const Value& meta = d["metadata"];
  const Value* spec = ds::JsonMember(d, "spec");
  if (spec == nullptr || !spec->IsObject()) spec = &kEmpty;
  const std::string type = ds::JsonString(*spec, "type");
  // getServiceExternalIP.
  std::string external;
  if (type == "ExternalName") {
    external = ds::JsonString(*spec, "externalName");
  } else if (const Value* ips = ds::JsonMember(*spec, "externalIPs");
             ips && ips->IsArray() && !ips->Empty()) {
    for (const auto& ip : ips->GetArray())
      if (ip.IsString()) external += (external.empty() ? "" : ",") + std::string(ip.GetString());
  } else {
    external = type == "LoadBalancer" ? "<pending>" : "<none>";
  }
  // makePortString: "80/TCP", "80:30080/TCP" with a node port.
  std::string ports;
  if (const Value* ps = ds::JsonMember(*spec, "ports"); ps && ps->IsArray())
    for (const auto& p : ps->GetArray()) {
      if (!p.IsObject()) continue;
      const Value* port = ds::JsonMember(p, "port");
      const Value* node = ds::JsonMember(p, "nodePort");
      std::string s = port && port->IsInt() ? std::to_string(port->GetInt()) : "0";
      if (node && node->IsInt() && node->GetInt() > 0) s += ":" + std::to_string(node->GetInt());
      ports += (ports.empty() ? "" : ",") + s + "/" + ds::JsonString(p, "protocol");
    }
  // labels.FormatLabels: sorted "k=v" pairs.
  std::vector<std::string> sel;
  if (const Value* s = ds::JsonMember(*spec, "selector"); s && s->IsObject())
    for (auto it = s->MemberBegin(); it != s->MemberEnd(); ++it)
      sel.push_back(std::string(it->name.GetString()) + "=" +
                    (it->value.IsString() ? it->value.GetString() : ""));
  std::sort(sel.begin(), sel.end());
  std::string selector;
  for (const auto& s : sel) selector += (selector.empty() ? "" : ",") + s;
  return {
      ds::JsonString(meta, "name"),
      type,
      ds::JsonString(*spec, "clusterIP").empty() ? "<none>" : ds::JsonString(*spec, "clusterIP"),
      external,
      ports.empty() ? "<none>" : ports,
      Age(ds::JsonString(meta, "creationTimestamp")),
      selector.empty() ? "<none>" : selector};
}

// formatEndpoints: "ip:port" per ready address and port, the first three, then " + N more...".
std::string EndpointsCell(const Value& d) {
  const Value* subsets = ds::JsonMember(d, "subsets");
  if (subsets == nullptr || !subsets->IsArray() || subsets->Empty()) return "<none>";
  std::vector<std::string> list;
  size_t count = 0;
  bool more = false;
  for (const auto& ss : subsets->GetArray()) {
    const Value* addrs = ss.IsObject() ? ds::JsonMember(ss, "addresses") : nullptr;
    const Value* ports = ss.IsObject() ? ds::JsonMember(ss, "ports") : nullptr;
    if (addrs == nullptr || !addrs->IsArray()) continue;
    const bool portless = ports == nullptr || !ports->IsArray() || ports->Empty();
    const size_t rounds = portless ? 1 : ports->Size();
    for (size_t r = 0; r < rounds; ++r) {
      count += addrs->Size();
      for (const auto& a : addrs->GetArray()) {
        if (list.size() == 3) {
          more = true;
          break;
        }
        const std::string ip = a.IsObject() ? ds::JsonString(a, "ip") : "";
        if (portless) {
          list.push_back(ip);
          continue;
        }
        const Value& p = (*ports)[static_cast<rapidjson::SizeType>(r)];
        const Value* n = p.IsObject() ? ds::JsonMember(p, "port") : nullptr;
        const std::string host = ip.find(':') != std::string::npos ? "[" + ip + "]" : ip;
        list.push_back(host + ":" + (n && n->IsInt() ? std::to_string(n->GetInt()) : "0"));
      }
    }
  }
  std::string out;
  for (const auto& s : list) out += (out.empty() ? "" : ",") + s;
  if (more) return out + " + " + std::to_string(count - 3) + " more...";
  return out.empty() ? "<none>" : out;
}

std::string Table(Kind kind, const std::vector<std::string>& items, uint64_t rv) {
  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  StartTable(w, std::to_string(rv), "");
  WriteColumnDefs(w, kind == Kind::kService ? kServiceColumns : kEndpointsColumns);
  w.Key("rows");
  w.StartArray();
  for (const auto& json : items) {
    rapidjson::Document d;
    d.Parse(json.c_str());
    const Value& meta = d["metadata"];
    WriteTableRow(w,
                  kind == Kind::kService
                      ? ServiceCells(d)
                      : std::vector<std::string>{ds::JsonString(meta, "name"), EndpointsCell(d),
                                                 Age(ds::JsonString(meta, "creationTimestamp"))},
                  meta);
  }
  w.EndArray();
  w.EndObject();
  return sb.GetString();
}

std::string ListJson(Kind kind, const std::vector<std::string>& items, uint64_t rv) {
  std::string body = std::string("{\"kind\":\"") +
                     (kind == Kind::kService ? "ServiceList" : "EndpointsList") +
                     "\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"" +
                     std::to_string(rv) + "\"},\"items\":[";
  for (size_t i = 0; i < items.size(); ++i) body += (i ? "," : "") + items[i];
  return body + "]}";
}

// The Status a DELETE of an Endpoints answers (its registry does not return the deleted object,
// the Service registry does): success, with the object's name, kind and uid.
std::string DeletedStatus(const std::string& json) {
  rapidjson::Document d;
  d.Parse(json.c_str());
  const Value& meta = d["metadata"];
  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  w.StartObject();
  w.Key("kind");
  w.String("Status");
  w.Key("apiVersion");
  w.String("v1");
  w.Key("metadata");
  w.StartObject();
  w.EndObject();
  w.Key("status");
  w.String("Success");
  w.Key("details");
  w.StartObject();
  w.Key("name");
  ds::WriteString(w, ds::JsonString(meta, "name"));
  w.Key("kind");
  w.String("endpoints");
  w.Key("uid");
  ds::WriteString(w, ds::JsonString(meta, "uid"));
  w.EndObject();
  w.EndObject();
  return sb.GetString();
}

}  // namespace

bool Server::HandleServices(mg_connection* conn, const std::string& method, const std::string& path,
                            const std::string& query, const User& user, bool table) {
  // /api/v1/{services,endpoints} (all namespaces: list) or
  // /api/v1/namespaces/NS/{services,endpoints}[/NAME]; deeper paths (the proxy subresource)
  // are not this handler's.
  static const std::string kApi = "/api/v1/";
  static const std::string kNs = "/api/v1/namespaces/";
  std::string ns, resource, name;
  bool all = false;
  if (path == kApi + "services" || path == kApi + "endpoints") {
    resource = path.substr(kApi.size());
    all = true;
  } else if (path.rfind(kNs, 0) == 0) {
    std::vector<std::string> parts;
    for (size_t i = kNs.size(); i <= path.size();) {
      size_t j = path.find('/', i);
      if (j == std::string::npos) j = path.size();
      parts.push_back(path.substr(i, j - i));
      i = j + 1;
    }
    if (parts.size() < 2 || parts.size() > 3 || parts[0].empty() ||
        (parts[1] != "services" && parts[1] != "endpoints") ||
        (parts.size() == 3 && parts[2].empty()))
      return false;
    ns = parts[0];
    resource = parts[1];
    if (parts.size() == 3) name = parts[2];
  } else {
    return false;
  }
  if (services_ == nullptr) return false;
  const Kind kind = resource == "services" ? Kind::kService : Kind::kEndpoints;
  if (method != "GET" && method != "HEAD" && user.read_only) {
    SendError(conn, ApiError{403, "Forbidden",
                             ForbiddenMessage(user.name, Attributes(method, path, false)), ""});
    return true;
  }
  std::string out;
  ApiError e;
  int ok_code = 200;
  if (name.empty()) {
    if (method == "POST" && !all) {
      const std::string body = ReadBody(conn);
      e = services_->Create(kind, ns, body, &out);
      LogWrite(conn, "CREATE", ns + "/" + resource + "/", user.name, "application/json", body,
               e.ok() ? 201 : e.code, e.ok());
      ok_code = 201;
    } else if (method == "GET" && !ParseBool(QueryParam(query, "watch"))) {
      auto labels = LabelSelectorParam(conn, query);
      if (!labels) return true;
      FieldSelector fields;
      std::string err;
      if (!ParseFieldSelector(QueryParam(query, "fieldSelector"), ServiceStore::SelectableFields(),
                              &fields, &err)) {
        SendError(conn, ApiError{400, "BadRequest", err, ""});
        return true;
      }
      uint64_t rv = 0;
      auto items = services_->List(kind, ns, *labels, fields, &rv);
      Send(conn, 200, table ? Table(kind, items, rv) : ListJson(kind, items, rv));
      return true;
    } else {
      e = kNoMethod;  // watches are not served: discovery lists no watch verb
    }
  } else if (method == "GET") {
    e = services_->Get(kind, ns, name, &out);
    if (e.ok() && table) {
      Send(conn, 200, Table(kind, {out}, store_->CurrentRv()));
      return true;
    }
  } else if (method == "PUT") {
    const std::string body = ReadBody(conn);
    bool created = false;
    e = services_->Replace(kind, ns, name, body, &out, &created);
    if (created) ok_code = 201;
    LogWrite(conn, "PUT", ns + "/" + resource + "/" + name, user.name, "application/json", body,
             e.ok() ? ok_code : e.code, e.ok());
  } else if (method == "PATCH") {
    const char* ct_h = mg_get_header(conn, "Content-Type");
    const std::string ct = ct_h ? ct_h : "";
    const std::string body = ReadBody(conn);
    bool changed = false;
    if (ct.rfind("application/merge-patch+json", 0) == 0)
      e = services_->Patch(kind, ns, name, PatchType::kMerge, body, &out, &changed);
    else if (ct.rfind("application/strategic-merge-patch+json", 0) == 0)
      e = services_->Patch(kind, ns, name, PatchType::kStrategic, body, &out, &changed);
    else if (ct.rfind("application/json-patch+json", 0) == 0)
      e = services_->Patch(kind, ns, name, PatchType::kJson, body, &out, &changed);
    else
      e = ApiError{415, "UnsupportedMediaType",
                   "the body of the request was in an unknown format - accepted media types "
                   "include: application/json-patch+json, application/merge-patch+json, "
                   "application/apply-patch+yaml, application/strategic-merge-patch+json",
                   ""};
    LogWrite(conn, "PATCH", ns + "/" + resource + "/" + name, user.name, ct, body,
             e.ok() ? 200 : e.code, e.ok() && changed);
  } else if (method == "DELETE") {
    ReadBody(conn);  // DeleteOptions: nothing in them changes how these go
    e = services_->Delete(kind, ns, name, &out);
    if (e.ok() && kind == Kind::kEndpoints) out = DeletedStatus(out);
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
