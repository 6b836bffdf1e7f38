#include "app/plugin.h"

#include <rapidjson/document.h>

#include <ostream>
#include <sstream>

#include "common/clock.h"
#include "common/http_transport.h"
#include "common/json_util.h"
#include "kube/kube_api.h"
#include "kube/kubeconfig.h"

namespace ds {

namespace {

constexpr const char* kUsage =
    "usage: kubectl dynamic-scheduler explain pod/NAME [-n NAMESPACE] | explain node/NAME | "
    "status | nodes | replay ... [-o json] [--kubeconfig FILE] [--context NAME] "
    "[--controller-namespace NS] [--service NAME] [--port NAME] [--scheme https]";

std::string Str(const rapidjson::Value& v, const char* key) {
  if (!v.IsObject()) return "";
  const rapidjson::Value* m = JsonMember(v, key);
  return m != nullptr && m->IsString() ? std::string(m->GetString(), m->GetStringLength()) : "";
}

std::string Num(const rapidjson::Value& v, const char* key) {
  const rapidjson::Value* m = v.IsObject() ? JsonMember(v, key) : nullptr;
  if (m == nullptr) return "";
  if (m->IsString()) return m->GetString();
  if (!m->IsNumber()) return "";
  std::ostringstream s;
  s.precision(4);
  s << m->GetDouble();
  return s.str();
}

void NodeText(const rapidjson::Value& n, std::ostream& o) {
  o << "Node " << Str(n, "node");
  if (!Str(n, "state").empty()) o << " (" << Str(n, "state") << ")";
  o << ": " << Str(n, "because") << "\n";
  if (const rapidjson::Value* rules = JsonMember(n, "rules"); rules && rules->IsArray())
    for (const auto& r : rules->GetArray())
      o << "  rule " << Str(r, "rule") << ": " << Num(r, "value") << " " << Str(r, "unit") << " ("
        << Str(r, "op") << " " << Num(r, "threshold") << " marks, clears at "
        << Num(r, "clearThreshold") << ")\n";
  if (const rapidjson::Value* relief = JsonMember(n, "relief"); relief && relief->IsObject()) {
    o << "  relief: " << Str(*relief, "qualification");
    if (!Str(*relief, "rule").empty())
      o << ", rule " << Str(*relief, "rule") << " at " << Num(*relief, "load") << ", goal "
        << Num(*relief, "goal") << " (" << Str(*relief, "unit") << ")";
    if (!Str(*relief, "limitedBy").empty()) o << ", limited by " << Str(*relief, "limitedBy");
    o << "\n";
  }
  if (const rapidjson::Value* pods = JsonMember(n, "pods"); pods && pods->IsArray()) {
    o << "  pods, as the cycle of " << Str(n, "decided") << " took them:\n";
    for (const auto& p : pods->GetArray()) {
      o << "    " << Str(p, "pod") << ": " << Str(p, "verdict") << " (" << Str(p, "reason");
      if (!Str(p, "to").empty()) o << " to " << Str(p, "to");
      o << ") " << Str(p, "because") << "\n";
    }
  }
}

}  // namespace

bool IsPluginName(const std::string& argv0) {
  const std::string base = argv0.substr(argv0.rfind('/') + 1);
  return base == "kubectl-dynamic_scheduler";
}

StatusOr<PluginArgs> ParsePluginArgs(const std::vector<std::string>& args) {
  PluginArgs a;
  std::vector<std::string> words;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i], value;
    const bool flag = arg.size() > 1 && arg[0] == '-';
    if (!flag) {
      words.push_back(arg);
      continue;
    }
    if (arg == "-h" || arg == "--help") return Status::NotFound(kUsage);  // RunPlugin: exit 0
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (arg.size() > 2 && arg[1] != '-') {  // kubectl's joined short flags: -ojson, -nshop
      value = arg.substr(2);
      arg = arg.substr(0, 2);
    } else {
      if (i + 1 >= args.size()) return Status::InvalidArgument(arg + " needs a value\n" + kUsage);
      value = args[++i];
    }
    if (arg == "-n" || arg == "--namespace") {
      a.ns = value;
    } else if (arg == "-o" || arg == "--output") {
      if (value != "json" && value != "text")
        return Status::InvalidArgument("-o must be json or text, got \"" + value + "\"");
      a.output = value;
    } else if (arg == "--kubeconfig") {
      a.kubeconfig = value;
    } else if (arg == "--context") {
      a.context = value;
    } else if (arg == "--controller-namespace") {
      a.controller_namespace = value;
    } else if (arg == "--service") {
      a.service = value;
    } else if (arg == "--port") {
      a.port = value;
    } else if (arg == "--scheme") {
      if (value != "http" && value != "https")
        return Status::InvalidArgument("--scheme must be http or https, got \"" + value + "\"");
      a.scheme = value == "https" ? "https" : "";
    } else {
      return Status::InvalidArgument("unknown flag " + arg + "\n" + kUsage);
    }
  }
  if (words.empty()) return Status::InvalidArgument(kUsage);
  a.command = words[0];
  if (a.command == "status" || a.command == "nodes") {
    if (words.size() != 1) return Status::InvalidArgument(kUsage);
    return a;
  }
  if (a.command != "explain" || words.size() != 2) return Status::InvalidArgument(kUsage);
  const std::string& what = words[1];
  const size_t slash = what.find('/');
  if (slash == std::string::npos || slash + 1 == what.size())
    return Status::InvalidArgument("explain what? pod/NAME or node/NAME, got \"" + what + "\"");
  a.kind = what.substr(0, slash);
  a.name = what.substr(slash + 1);
  if (a.kind == "po" || a.kind == "pods") a.kind = "pod";
  if (a.kind == "no" || a.kind == "nodes") a.kind = "node";
  if (a.kind != "pod" && a.kind != "node")
    return Status::InvalidArgument("explain pod/NAME or node/NAME, got \"" + what + "\"");
  return a;
}

std::string ServiceProxyPath(const PluginArgs& a, const std::string& path) {
  std::string target = a.service + ":" + a.port;
  if (!a.scheme.empty()) target = a.scheme + ":" + target;
  return "/api/v1/namespaces/" + UrlEncode(a.controller_namespace) + "/services/" +
         UrlEncode(target) + "/proxy" + path;
}

std::string ExplainText(const std::string& json) {
  rapidjson::Document d;
  d.Parse(json.c_str(), json.size());
  if (d.HasParseError() || !d.IsObject()) return json;
  std::ostringstream o;
  if (!Str(d, "error").empty()) return "error: " + Str(d, "error") + "\n";
  if (Str(d, "pod").empty()) {
    NodeText(d, o);
    return o.str();
  }
  o << "Pod " << Str(d, "pod") << "\n";
  if (const rapidjson::Value* dec = JsonMember(d, "decision"); dec && dec->IsObject()) {
    o << "  verdict: " << Str(*dec, "verdict") << " (" << Str(*dec, "reason") << ", decided at "
      << Str(*dec, "stage") << " in the cycle of " << Str(d, "decided") << ")\n";
    o << "  because: " << Str(*dec, "because") << "\n";
    if (!Str(*dec, "detail").empty()) o << "  detail: " << Str(*dec, "detail") << "\n";
    if (!Str(*dec, "to").empty()) o << "  replacement fits on: " << Str(*dec, "to") << "\n";
    if (!Str(*dec, "change").empty()) o << "  to change it: " << Str(*dec, "change") << "\n";
    if (const rapidjson::Value* checks = JsonMember(*dec, "checks"); checks && checks->IsArray()) {
      o << "  checks:";
      for (const auto& c : checks->GetArray())
        if (Str(c, "result") != "not_reached")
          o << " " << Str(c, "check") << "="
            << (Str(c, "result") == "passed" ? "ok" : Str(c, "reason"));
      o << "\n";
    }
  } else if (!Str(d, "because").empty()) {
    o << "  " << Str(d, "because") << "\n";
  }
  if (const rapidjson::Value* e = JsonMember(d, "eviction"); e && e->IsObject()) {
    o << "  last eviction: " << Str(*e, "at") << " from " << Str(*e, "node") << ", result "
      << Str(*e, "result") << ": rule " << Str(*e, "rule") << " at " << Num(*e, "load") << ", goal "
      << Num(*e, "goal") << " (" << Str(*e, "unit") << ")";
    if (!Str(*e, "to").empty()) o << ", replacement to " << Str(*e, "to");
    o << "\n    " << Str(d, "evictionBecause") << "\n";
  }
  if (const rapidjson::Value* n = JsonMember(d, "nodeState"); n && n->IsObject()) {
    o << "  ";
    NodeText(*n, o);
  }
  return o.str();
}

int RunPlugin(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  auto parsed = ParsePluginArgs(args);
  if (!parsed.ok() && parsed.status().code() == StatusCode::kNotFound) {  // -h, --help
    out << parsed.status().message() << "\n";
    return 0;
  }
  if (!parsed.ok()) {
    err << parsed.status().message() << "\n";
    return 2;
  }
  PluginArgs a = std::move(*parsed);
  auto rest = ResolveRestConfig(a.kubeconfig, a.context);
  if (!rest.ok()) {
    err << "kubeconfig: " << rest.status().message() << "\n";
    return 2;
  }
  if (a.ns.empty()) a.ns = rest->namespace_name.empty() ? "default" : rest->namespace_name;
  RealClock clock;
  CurlTransport transport(rest->tls, rest->proxy_url);
  HttpKubeApi kube(&transport, *rest, &clock, 30, "kubectl-dynamic_scheduler");
  std::string path;
  if (a.command == "status") {
    path = "/status";
  } else if (a.command == "nodes") {
    path = "/nodes";
  } else if (a.kind == "node") {
    path = "/explain?node=" + UrlEncode(a.name);
  } else {
    // The pod's node, read with the user's own rights: the controller keeps decisions by node,
    // and a pod whose node it did not relieve is explained by its node's state.
    auto pod = kube.GetPath("/api/v1/namespaces/" + UrlEncode(a.ns) + "/pods/" + UrlEncode(a.name));
    std::string node, uid;
    if (pod.ok() && pod->status == 200) {
      rapidjson::Document d;
      d.Parse(pod->body.c_str(), pod->body.size());
      if (!d.HasParseError() && d.IsObject() && d.HasMember("spec"))
        node = Str(d["spec"], "nodeName");
      if (!d.HasParseError() && d.IsObject() && d.HasMember("metadata"))
        uid = Str(d["metadata"], "uid");
    }
    path = "/explain?pod=" + UrlEncode(a.ns + "/" + a.name);
    if (!node.empty()) path += "&node=" + UrlEncode(node);
    if (!uid.empty()) path += "&uid=" + UrlEncode(uid);
  }
  // A standby answers /explain 503 (it decides nothing), and the service proxy picks any ready
  // replica: asked again, a few times, until the leader answers (with two replicas, ten tries
  // all miss it about once in a thousand).
  StatusOr<HttpResponse> got = Status::Internal("not asked");
  for (int attempt = 0; attempt < 10; ++attempt) {
    got = kube.GetPath(ServiceProxyPath(a, path));
    if (!got.ok() || got->status != 503 || got->body.find("standby") == std::string::npos) break;
  }
  if (!got.ok()) {
    err << "reaching the API server: " << got.status().message() << "\n";
    return 1;
  }
  if (got->status == 401 && !got->Header("www-authenticate").empty() &&
      got->body.find("\"kind\"") == std::string::npos) {
    // The controller's own 401: its port requires a token (-web_auth=kubernetes), which the API
    // server's service proxy does not pass on.
    err << "the controller asks for a bearer token (-web_auth=kubernetes), and the API server's "
           "service proxy does not pass yours on: see docs/operating.md, \"kubectl "
           "dynamic-scheduler\"\n";
    return 1;
  }
  if (got->status >= 400) {
    // The API server's refusal (a Status: 403 without the Role, 503 without endpoints) or the
    // controller's ({"error": ...}: a pod or node it does not know), said as they said it.
    rapidjson::Document d;
    d.Parse(got->body.c_str(), got->body.size());
    std::string why = got->body;
    if (!d.HasParseError() && d.IsObject())
      why = !Str(d, "message").empty() ? Str(d, "message") : Str(d, "error");
    err << "HTTP " << got->status << " from " << ServiceProxyPath(a, path) << ": " << why
        << (why.empty() || why.back() == '\n' ? "" : "\n");
    return 1;
  }
  if (a.command == "explain" && a.output == "text") {
    out << ExplainText(got->body);
  } else {
    out << got->body;
  }
  return 0;
}

}  // namespace ds
