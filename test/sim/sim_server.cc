#include "test/sim/sim_server.h"

#include <civetweb.h>
#include <rapidjson/document.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <thread>

#include "common/json_util.h"
#include "test/sim/sim_http.h"
#include "test/sim/sim_validation.h"

namespace sim {
namespace {

void WriteColumns(ds::JsonWriter& w) {
  static const char* cols[][3] = {{"Name", "string", "name"},
                                  {"Status", "string", ""},
                                  {"Roles", "string", ""},
                                  {"Age", "string", ""},
                                  {"Version", "string", ""}};
  w.Key("columnDefinitions");
  w.StartArray();
  for (auto& c : cols) {
    w.StartObject();
    w.Key("name");
    w.String(c[0]);
    w.Key("type");
    w.String(c[1]);
    w.Key("format");
    w.String(c[2]);
    w.Key("description");
    w.String("");
    w.Key("priority");
    w.Int(0);
    w.EndObject();
  }
  w.EndArray();
}

void WriteRow(ds::JsonWriter& w, const std::string& node_json) {
  rapidjson::Document d;
  d.Parse(node_json.c_str());
  const auto& meta = d["metadata"];
  std::string ready = "Unknown";
  if (const auto* st = ds::JsonMember(d, "status"))
    if (const auto* conds = ds::JsonMember(*st, "conditions"); conds && conds->IsArray())
      for (const auto& c : conds->GetArray())
        if (ds::JsonString(c, "type") == "Ready")
          ready = ds::JsonString(c, "status") == "True" ? "Ready" : "NotReady";
  if (const auto* spec = ds::JsonMember(d, "spec"))
    if (const auto* u = ds::JsonMember(*spec, "unschedulable"); u && u->IsBool() && u->GetBool())
      ready += ",SchedulingDisabled";
  std::string roles;
  if (const auto* labels = ds::JsonMember(meta, "labels"); labels && labels->IsObject())
    for (auto it = labels->MemberBegin(); it != labels->MemberEnd(); ++it) {
      std::string k = it->name.GetString();
      const std::string p = "node-role.kubernetes.io/";
      if (k.rfind(p, 0) == 0) roles += (roles.empty() ? "" : ",") + k.substr(p.size());
    }
  std::string version;
  if (const auto* st = ds::JsonMember(d, "status"))
    if (const auto* ni = ds::JsonMember(*st, "nodeInfo"))
      version = ds::JsonString(*ni, "kubeletVersion");
  WriteTableRow(w,
                {ds::JsonString(meta, "name"), ready, roles.empty() ? "<none>" : roles,
                 Age(ds::JsonString(meta, "creationTimestamp")), version},
                meta);
}

std::string TableJson(const std::vector<std::string>& nodes, uint64_t rv, const std::string& cont,
                      bool columns) {
  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  StartTable(w, std::to_string(rv), cont);
  if (columns) WriteColumns(w);
  w.Key("rows");
  w.StartArray();
  for (const auto& n : nodes) WriteRow(w, n);
  w.EndArray();
  w.EndObject();
  return sb.GetString();
}

// kubectl get leases: NAME, HOLDER, AGE.
std::string LeaseTableJson(const std::vector<std::string>& leases, uint64_t rv) {
  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  StartTable(w, std::to_string(rv), "");
  w.Key("columnDefinitions");
  w.StartArray();
  for (const char* c : {"Name", "Holder", "Age"}) {
    w.StartObject();
    w.Key("name");
    w.String(c);
    w.Key("type");
    w.String("string");
    w.Key("format");
    w.String(std::string(c) == "Name" ? "name" : "");
    w.Key("description");
    w.String("");
    w.Key("priority");
    w.Int(0);
    w.EndObject();
  }
  w.EndArray();
  w.Key("rows");
  w.StartArray();
  for (const auto& json : leases) {
    rapidjson::Document d;
    d.Parse(json.c_str());
    const auto& meta = d["metadata"];
    const auto* spec = ds::JsonMember(d, "spec");
    WriteTableRow(
        w,
        {ds::JsonString(meta, "name"), spec ? ds::JsonString(*spec, "holderIdentity") : "",
         Age(ds::JsonString(meta, "creationTimestamp"))},
        meta);
  }
  w.EndArray();
  w.EndObject();
  return sb.GetString();
}

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The class a request belongs to, for fault matching.
std::string RequestClass(const std::string& method, const std::string& path,
                         const std::string& query) {
  if (path.rfind("/apis/coordination.k8s.io/v1/", 0) == 0) return "lease";
  const std::string evict = "/eviction";
  if (method == "POST" && path.size() > evict.size() &&
      path.compare(path.size() - evict.size(), evict.size(), evict) == 0)
    return "evict";
  if (path.rfind("/api/v1/nodes", 0) != 0) return "discovery";
  bool one = path.size() > std::string("/api/v1/nodes").size() + 1;
  if (method == "GET") {
    char w[8];
    if (!one && mg_get_var(query.c_str(), query.size(), "watch", w, sizeof(w)) > 0) return "watch";
    return one ? "get" : "list";
  }
  if (method == "PATCH") return "patch";
  if (method == "PUT") return "put";
  if (method == "POST") return "create";
  if (method == "DELETE") return "delete";
  return "other";
}

}  // namespace

bool Server::TakeFault(const std::string& request_class, const std::string& selector, Fault* out) {
  ds::MutexLock l(&fault_mu_);
  double now = SteadySeconds();
  for (auto it = faults_.begin(); it != faults_.end();) {
    if (it->until > 0 && now > it->until) {
      it = faults_.erase(it);
      continue;
    }
    if ((it->match == "all" || it->match == request_class) &&
        (it->selector_contains.empty() ||
         selector.find(it->selector_contains) != std::string::npos)) {
      *out = *it;
      if (it->count > 0 && --it->count == 0) faults_.erase(it);
      return true;
    }
    ++it;
  }
  return false;
}

void Server::Refuse(double seconds) {
  // mg_stop waits for every worker, including the one serving this request: do it elsewhere.
  std::thread([this, seconds] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    mg_context* ctx = ctx_;
    ctx_ = nullptr;
    store_->WakeAll();
    ++watch_epoch_;
    if (ctx != nullptr) mg_stop(ctx);
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    std::string err;
    if (!stopping_ && !Start(&err))
      fprintf(stderr, "kube-sim: restart after refusing failed: %s\n", err.c_str());
  }).detach();
}

Server::Server(Store* store, ServerOptions options, PodStore* pods, EventStore* events,
               VolumeStore* volumes, HpaStore* hpas, ServiceStore* services)
    : store_(store),
      pods_(pods),
      events_(events),
      volumes_(volumes),
      hpas_(hpas),
      services_(services),
      options_(std::move(options)),
      tokens_(options_.tokens) {}

Server::~Server() { Stop(); }

bool Server::Start(std::string* error) {
  // After the first start, listen on the same port again (Refuse restarts the server).
  std::string listen = port_ != 0 ? "127.0.0.1:" + std::to_string(port_) : options_.listen;
  std::string ports = listen + (options_.tls ? "s" : "");
  std::string threads = std::to_string(options_.threads);
  // Keep-alive is off unless asked for (-keep_alive): CivetWeb keeps a connection open after a
  // handler returns unless it decided to close it itself, so a watch that ends without its
  // terminating chunk (a simulated drop) would leave the client waiting instead of seeing the
  // broken stream. Every request therefore gets its own connection -- and a TLS handshake, which
  // is why the benchmarks of a client's cost per request turn it on.
  std::vector<const char*> opts = {"listening_ports",    ports.c_str(),
                                   "num_threads",        threads.c_str(),
                                   "enable_keep_alive",  options_.keep_alive ? "yes" : "no",
                                   "request_timeout_ms", "600000"};
  // TCP_NODELAY, as Go's net/http sets on every connection of kube-apiserver: CivetWeb writes the
  // headers and the body separately, and with Nagle the body waited for the client's delayed ACK
  // (40 ms on Linux) -- every answer on a kept-alive connection took 40 ms more, and the client
  // woke twice for it.
  opts.insert(opts.end(), {"tcp_nodelay", "1"});
  // An idle connection is kept 90 s, kube-apiserver's http.Server IdleTimeout (secure_serving.go):
  // CivetWeb's default of 500 ms closed a client's connection between two of its cycles, and
  // each cycle began with a TLS handshake.
  opts.insert(opts.end(), {"keep_alive_timeout_ms", "90000"});
  if (options_.tls) {
    opts.insert(opts.end(), {"ssl_certificate", options_.server_pem.c_str(), "ssl_ca_file",
                             options_.ca_file.c_str(), "ssl_verify_peer", "optional",
                             "ssl_protocol_version", "4"});
  }
  opts.push_back(nullptr);
  mg_callbacks cb;
  std::memset(&cb, 0, sizeof(cb));
  mg_init_library(options_.tls ? MG_FEATURES_SSL : 0);
  ctx_ = mg_start(&cb, &policy_, opts.data());
  if (ctx_ == nullptr) {
    *error = "cannot start the HTTP server on " + ports;
    return false;
  }
  // The port first: handlers read port_, and registering them afterwards (under CivetWeb's lock)
  // orders that write before every request.
  mg_server_port sp[4];
  if (mg_get_server_ports(ctx_, 4, sp) > 0) port_ = sp[0].port;
  mg_set_request_handler(ctx_, "/", &Server::Handle, this);
  return true;
}

void Server::Stop() {
  if (ctx_ == nullptr) return;
  stopping_ = true;
  store_->WakeAll();
  if (pods_ != nullptr) pods_->WakeAll();
  if (events_ != nullptr) events_->WakeAll();
  mg_stop(ctx_);
  ctx_ = nullptr;
}

int Server::Handle(mg_connection* conn, void* self) {
  // CivetWeb runs handlers on threads with the small stack its build chose (USE_STACK_SIZE); the
  // handlers, and the pod controllers and scheduler model a write runs, need more than that
  // under AddressSanitizer. So each request is handled on a thread with the default stack, while
  // the CivetWeb thread waits: the connection is never used by two threads at once.
  int rc = 0;
  std::thread worker([&] { rc = static_cast<Server*>(self)->Dispatch(conn); });
  worker.join();
  return rc;
}

// When the request being handled arrived (before any injected latency), for the write log.
thread_local double t_request_arrived = 0;

void Server::LogWrite(mg_connection* conn, const std::string& verb, const std::string& name,
                      const std::string& user, const std::string& content_type,
                      const std::string& body, int code, bool changed) {
  const char* agent = mg_get_header(conn, "User-Agent");
  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  w.StartObject();
  w.Key("time");
  w.Double(
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  w.Key("arrived");
  w.Double(t_request_arrived);  // the client's send time, give or take the loopback
  w.Key("verb");
  ds::WriteString(w, verb);
  w.Key("name");
  ds::WriteString(w, name);
  w.Key("user");
  ds::WriteString(w, user);
  w.Key("userAgent");
  ds::WriteString(w, agent ? agent : "");
  w.Key("contentType");
  ds::WriteString(w, content_type);
  w.Key("body");
  ds::WriteString(w, body.substr(0, 4096));
  w.Key("code");
  w.Int(code);
  w.Key("changed");
  w.Bool(changed);
  w.EndObject();
  ds::MutexLock l(&log_mu_);
  writes_.emplace_back(sb.GetString());
  if (!options_.write_log_file.empty()) {
    std::ofstream out(options_.write_log_file, std::ios::app);
    out << writes_.back() << "\n";
  }
}

int Server::Dispatch(mg_connection* conn) {
  t_request_arrived =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const mg_request_info* ri = mg_get_request_info(conn);
  const std::string method = ri->request_method;
  const std::string path = ri->local_uri ? ri->local_uri : "/";
  const std::string query = ri->query_string ? ri->query_string : "";
  const char* accept_h = mg_get_header(conn, "Accept");
  const std::string accept = accept_h ? accept_h : "";
  const bool table = accept.find("as=Table") != std::string::npos;

  // --- test-only admin API (no auth: it does not exist on a real server) ---
  if (path.rfind("/sim/", 0) == 0) {
    if (path == "/sim/writes" && method == "GET") {
      ds::MutexLock l(&log_mu_);
      std::string body = "{\"count\":" + std::to_string(writes_.size()) + ",\"writes\":[";
      for (size_t i = 0; i < writes_.size(); ++i) body += (i ? "," : "") + writes_[i];
      Send(conn, 200, body + "]}");
    } else if (path == "/sim/writes" && method == "DELETE") {
      ds::MutexLock l(&log_mu_);
      writes_.clear();
      Send(conn, 200, "{}");
    } else if (path == "/sim/compact" && method == "POST") {
      store_->Compact();
      if (pods_ != nullptr) pods_->Compact();
      if (events_ != nullptr) events_->Compact();
      Send(conn, 200, "{\"compactedRV\":\"" + std::to_string(store_->compacted_rv()) + "\"}");
    } else if (path == "/sim/drop-watches" && method == "POST") {
      ++watch_epoch_;
      store_->WakeAll();
      if (pods_ != nullptr) pods_->WakeAll();
      if (events_ != nullptr) events_->WakeAll();
      Send(conn, 200, "{}");
    } else if (path == "/sim/faults" && method == "POST") {
      // {"match":"patch","status":503,"retryAfter":2,"latencyMs":0,"hang":false,
      //  "dropWatchSeconds":0,"count":0,"seconds":0,"selectorContains":""}
      rapidjson::Document d;
      std::string body = ReadBody(conn);
      d.Parse(body.c_str());
      if (d.HasParseError() || !d.IsObject()) {
        Send(conn, 400, "{\"error\":\"fault must be a JSON object\"}");
        return 1;
      }
      Fault f;
      f.match = ds::JsonString(d, "match", "all");
      f.selector_contains = ds::JsonString(d, "selectorContains", "");
      auto num = [&](const char* k) {
        const auto* v = ds::JsonMember(d, k);
        return v && v->IsNumber() ? v->GetDouble() : 0.0;
      };
      f.status = static_cast<int>(num("status"));
      f.retry_after = num("retryAfter");
      f.latency_ms = static_cast<int>(num("latencyMs"));
      f.drop_watch_seconds = num("dropWatchSeconds");
      f.pad_bytes = static_cast<size_t>(num("padBytes"));
      f.count = static_cast<int>(num("count"));
      if (const auto* h = ds::JsonMember(d, "hang"); h && h->IsBool()) f.hang = h->GetBool();
      if (num("seconds") > 0) f.until = SteadySeconds() + num("seconds");
      ds::MutexLock l(&fault_mu_);
      faults_.push_back(f);
      Send(conn, 200, "{}");
    } else if (path == "/sim/faults" && method == "DELETE") {
      {
        ds::MutexLock l(&fault_mu_);
        faults_.clear();
      }
      ++fault_epoch_;
      Send(conn, 200, "{}");
    } else if (path == "/sim/tokens" && method == "POST") {
      // {"token":"t","user":"dynamic-scheduler","readOnly":false,"uid":"","groups":[]}: the
      // token authenticates as that user from now on (uid and groups: what a TokenReview of it
      // reports, besides the groups the API server adds).
      rapidjson::Document d;
      std::string body = ReadBody(conn);
      d.Parse(body.c_str());
      if (d.HasParseError() || !d.IsObject() || ds::JsonString(d, "token").empty() ||
          ds::JsonString(d, "user").empty()) {
        Send(conn, 400, "{\"error\":\"want a JSON object with token and user\"}");
        return 1;
      }
      const auto* ro = ds::JsonMember(d, "readOnly");
      User u{ds::JsonString(d, "user"),
             ro != nullptr && ro->IsBool() && ro->GetBool(),
             ds::JsonString(d, "uid"),
             {}};
      if (const auto* g = ds::JsonMember(d, "groups"); g != nullptr && g->IsArray())
        for (const auto& v : g->GetArray())
          if (v.IsString()) u.groups.emplace_back(v.GetString());
      ds::MutexLock l(&token_mu_);
      tokens_[ds::JsonString(d, "token")] = std::move(u);
      Send(conn, 200, "{}");
    } else if (path == "/sim/tokens" && method == "DELETE") {
      // ?token=t: revoked; requests that carry it get 401 from now on.
      size_t n;
      {
        ds::MutexLock l(&token_mu_);
        n = tokens_.erase(QueryParam(query, "token"));
      }
      Send(conn, 200, "{\"revoked\":" + std::to_string(n) + "}");
    } else if (path == "/sim/refuse" && method == "POST") {
      double seconds = std::strtod(QueryParam(query, "seconds").c_str(), nullptr);
      Send(conn, 200, "{}");
      Refuse(seconds > 0 ? seconds : 5);
    } else if (path == "/sim/workloads" && method == "POST" && pods_ != nullptr) {
      // {"namespace","name","replicas","template":{"metadata":{"labels"},"spec":{...}}}
      std::string out;
      ApiError e = pods_->ApplyWorkload(ReadBody(conn), &out);
      if (!e.ok())
        SendError(conn, e);
      else
        Send(conn, 200, out);
    } else if (path == "/sim/workloads" && method == "GET" && pods_ != nullptr) {
      Send(conn, 200, pods_->WorkloadsJson());
    } else if (path.rfind("/sim/workloads/", 0) == 0 && method == "DELETE" && pods_ != nullptr) {
      std::string rest = path.substr(std::string("/sim/workloads/").size());
      auto slash = rest.find('/');
      ApiError e = slash == std::string::npos
                       ? ApiError{404, "NotFound", "use /sim/workloads/NS/NAME", ""}
                       : pods_->DeleteWorkload(rest.substr(0, slash), rest.substr(slash + 1));
      if (!e.ok())
        SendError(conn, e);
      else
        Send(conn, 200, "{}");
    } else if (path == "/sim/rollouts" && method == "POST" && pods_ != nullptr) {
      // {"kind":"Deployment","namespace","name","observed":true,"updatedReplicas":0} starts a
      // frozen rollout; {..., "done": true} ends it. Answers the object.
      std::string out;
      ApiError e = pods_->SetRollout(ReadBody(conn), &out);
      if (!e.ok())
        SendError(conn, e);
      else
        Send(conn, 200, out);
    } else if (path == "/sim/migrations" && method == "POST" && pods_ != nullptr) {
      // {"namespace","name","abort":false}: a VM launcher's live migration ends now (the pod
      // goes), or is cancelled (abort: the pod stays, its eviction-in-progress mark goes).
      rapidjson::Document d;
      d.Parse(ReadBody(conn).c_str());
      ApiError e = !d.HasParseError() && d.IsObject()
                       ? pods_->EndMigration(ds::JsonString(d, "namespace", "default"),
                                             ds::JsonString(d, "name"),
                                             ds::JsonMember(d, "abort") != nullptr &&
                                                 d["abort"].IsBool() && d["abort"].GetBool())
                       : ApiError{400, "BadRequest", "invalid JSON body", ""};
      if (!e.ok())
        SendError(conn, e);
      else
        Send(conn, 200, "{}");
    } else if (path == "/sim/hpas" && method == "POST" && hpas_ != nullptr) {
      // {"namespace","name","target":{"kind","name"},"minReplicas","maxReplicas",
      //  "currentReplicas","desiredReplicas"}: creates or updates the HPA and its status.
      std::string out;
      ApiError e = hpas_->SetFromAdmin(ReadBody(conn), &out);
      if (!e.ok())
        SendError(conn, e);
      else
        Send(conn, 200, out);
    } else if (path == "/sim/schedule" && method == "POST" && pods_ != nullptr) {
      // The scheduler model's verdict and per-plugin scores for a Pod, without creating it.
      Send(conn, 200, pods_->ExplainSchedule(ReadBody(conn)));
    } else if (path == "/sim/events" && method == "GET" && events_ != nullptr) {
      // How many events are stored, the cap, and how many the cap has dropped.
      Send(conn, 200,
           "{\"count\":" + std::to_string(events_->size()) +
               ",\"max\":" + std::to_string(events_->max_events()) +
               ",\"dropped\":" + std::to_string(events_->dropped()) + "}");
    } else if (path == "/sim/events" && method == "DELETE" && events_ != nullptr) {
      // Deletes every event (watchers see DELETED for each).
      Send(conn, 200, "{\"deleted\":" + std::to_string(events_->Clear()) + "}");
    } else if (path == "/sim/stats" && method == "GET") {
      std::string reqs;
      {
        ds::MutexLock l(&log_mu_);
        for (const auto& [k, n] : requests_)
          reqs += (reqs.empty() ? "\"" : ",\"") + k + "\":" + std::to_string(n);
      }
      Send(conn, 200,
           "{\"nodes\":" + std::to_string(store_->size()) +
               ",\"pods\":" + std::to_string(pods_ != nullptr ? pods_->size() : 0) +
               ",\"events\":" + std::to_string(events_ != nullptr ? events_->size() : 0) +
               ",\"resourceVersion\":\"" + std::to_string(store_->CurrentRv()) + "\",\"watches\":" +
               std::to_string(open_watches_.load()) + ",\"requests\":{" + reqs + "}}");
    } else {
      Send(conn, 404, "{\"error\":\"unknown sim endpoint\"}");
    }
    return 1;
  }

  // Requests by kind, for the benchmarks' API-efficiency figures.
  {
    std::string kind = method;
    if (path.rfind("/api/v1/nodes", 0) == 0) {
      bool one = path.size() > std::string("/api/v1/nodes").size() + 1;
      char w[8];
      bool watch = mg_get_var(query.c_str(), query.size(), "watch", w, sizeof(w)) > 0;
      kind += watch ? " watch" : one ? " node" : " nodes";
    } else if (path.rfind("/apis/coordination.k8s.io/v1/", 0) == 0) {
      kind += " lease";
    } else {
      kind += " other";
    }
    ds::MutexLock l(&log_mu_);
    ++requests_[kind];
  }

  // --- authentication ---
  User user;
  bool authed = options_.anonymous;
  if (options_.anonymous) user.name = "system:anonymous";
  if (const char* auth = mg_get_header(conn, "Authorization"); auth != nullptr) {
    std::string a = auth;
    if (a.rfind("Bearer ", 0) == 0) {
      ds::MutexLock l(&token_mu_);
      auto it = tokens_.find(a.substr(7));
      if (it != tokens_.end()) {
        user = it->second;
        authed = true;
      } else {
        authed = false;  // a wrong token is rejected even where anonymous access is allowed
      }
    }
  } else if (ri->client_cert != nullptr && ri->client_cert->subject != nullptr) {
    std::string subj = ri->client_cert->subject;
    auto cn = subj.find("CN=");
    user.name = cn == std::string::npos
                    ? subj
                    : subj.substr(cn + 3, subj.find_first_of(",/", cn + 3) - cn - 3);
    // A client certificate's organizations are its user's groups (x509's CommonNameUserConversion).
    for (size_t o = subj.find("O="); o != std::string::npos; o = subj.find("O=", o + 2))
      if (o == 0 || subj[o - 1] == '/' || subj[o - 1] == ',' || subj[o - 1] == ' ')
        user.groups.push_back(subj.substr(o + 2, subj.find_first_of(",/", o + 2) - o - 2));
    authed = true;
  }
  if (!authed) {
    SendError(conn, ApiError{401, "Unauthorized", "Unauthorized", ""});
    return 1;
  }
  if (!options_.request_log_file.empty()) {
    char at[32];
    std::snprintf(at, sizeof at, "%.6f ", t_request_arrived);
    ds::MutexLock l(&log_mu_);
    if (!request_log_.is_open()) request_log_.open(options_.request_log_file, std::ios::app);
    request_log_ << at << user.name << " " << method << " " << path << (query.empty() ? "" : "?")
                 << query << std::endl;  // flushed: a benchmark reads it while the server runs
  }

  // Who the caller is to the API server: the anonymous user of the plain-HTTP test mode is
  // unauthenticated; everyone else gets the groups the authenticators add.
  const UserInfo caller = options_.anonymous && user.name == "system:anonymous"
                              ? UserInfo{user.name, "", {"system:unauthenticated"}}
                              : AuthenticatedUser(user.name, user.uid, user.groups);

  // --- authorization (RBAC, for the users it lists) ---
  if (options_.rbac.count(user.name) > 0) {
    RequestAttributes attrs = Attributes(method, path, ParseBool(QueryParam(query, "watch")));
    if (!Authorize(options_.rbac, user.name, caller.groups, attrs).allowed) {
      {
        ds::MutexLock l(&log_mu_);
        ++requests_["forbidden " + attrs.verb + " " +
                    (attrs.resource.empty() ? attrs.path : attrs.resource)];
      }
      // NewForbidden's details: the group and resource (none for a path) and the name.
      SendError(
          conn,
          Err(403, "Forbidden", ForbiddenMessage(user.name, attrs),
              attrs.resource.empty() ? "{}" : Details(attrs.name, attrs.group, attrs.resource)));
      return 1;
    }
  }

  // --- injected faults ---
  const std::string rclass = RequestClass(method, path, query);
  Fault fault;
  bool faulted = TakeFault(rclass, QueryParam(query, "labelSelector"), &fault);
  if (faulted) {
    if (fault.latency_ms > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(fault.latency_ms));
    if (fault.hang) {
      uint64_t epoch = fault_epoch_.load();
      double give_up = SteadySeconds() + 120;
      while (fault_epoch_.load() == epoch && !stopping_ && SteadySeconds() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      return 1;  // close without an answer
    }
    if (fault.status != 0) {
      ApiError e{
          fault.status,
          fault.status == 429   ? "TooManyRequests"
          : fault.status == 403 ? "Forbidden"
          : fault.status == 410 ? "Expired"
          : fault.status == 409 ? "Conflict"
          : fault.status >= 500 ? "ServiceUnavailable"
                                : "BadRequest",
          // A 403 worded as RBAC's (an admission webhook's would say "admission webhook
          // ... denied the request"), so a client can tell the two apart as with a real
          // API server.
          fault.status == 403
              ? ForbiddenMessage(user.name,
                                 Attributes(method, path, ParseBool(QueryParam(query, "watch"))))
              : "injected fault",
          ""};
      std::string extra;
      if (fault.retry_after > 0)
        extra =
            "Retry-After: " + std::to_string(static_cast<int>(fault.retry_after + 0.5)) + "\r\n";
      if (rclass == "patch" || rclass == "put" || rclass == "create" || rclass == "delete")
        LogWrite(conn, method, path.substr(path.rfind('/') + 1), user.name, "", ReadBody(conn),
                 fault.status, false);
      Send(conn, fault.status, StatusJson(e), "application/json", extra);
      return 1;
    }
  }

  // --- discovery ---
  if (method == "GET" && (path == "/healthz" || path == "/readyz" || path == "/livez")) {
    Send(conn, 200, "ok", "text/plain");
    return 1;
  }
  if (method == "GET" && (path == "/version" || path == "/version/")) {
    Send(conn, 200,
         "{\"major\":\"1\",\"minor\":\"30\",\"gitVersion\":\"v1.30.0-sim\",\"gitCommit\":"
         "\"0000000000000000000000000000000000000000\",\"gitTreeState\":\"clean\",\"buildDate\":"
         "\"2024-04-17T17:27:03Z\",\"goVersion\":\"go1.22.2\",\"compiler\":\"gc\",\"platform\":"
         "\"linux/amd64\"}");
    return 1;
  }
  if (method == "GET" && path == "/openapi/v2") {
    // An OpenAPI document without schemas: what `kubectl apply` needs before it writes (it
    // downloads the document to validate with; it skips the kinds the document does not describe,
    // and the server validates them anyway). kubectl asks for the protobuf encoding
    // (gnostic's openapi_v2.Document: swagger = 1, info = 2 {title = 1, version = 2}); other
    // clients get the JSON form.
    if (accept.find("protobuf") != std::string::npos) {
      static const char kDoc[] =
          "\x0a\x03"
          "2.0"
          "\x12\x15\x0a\x0a"
          "Kubernetes"
          "\x12\x07"
          "v1.30.0";
      Send(conn, 200, std::string(kDoc, sizeof(kDoc) - 1),
           "application/com.github.proto-openapi.spec.v2.v1.0+protobuf");
    } else {
      Send(conn, 200,
           "{\"swagger\":\"2.0\",\"info\":{\"title\":\"Kubernetes\",\"version\":\"v1.30.0\"},"
           "\"paths\":{},\"definitions\":{}}");
    }
    return 1;
  }
  if (method == "GET" && (path == "/api" || path == "/api/")) {
    Send(conn, 200,
         "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"],\"serverAddressByClientCIDRs\":[{"
         "\"clientCIDR\":"
         "\"0.0.0.0/0\",\"serverAddress\":\"127.0.0.1:" +
             std::to_string(port_) + "\"}]}");
    return 1;
  }
  // Discovery of the API groups the simulator serves, generated from one table as the API server
  // does from its registry: /apis lists each group, /apis/<group> and /apis/<group>/<version>
  // describe it. Policy and apps come with pods, events.k8s.io with events.
  struct Group {
    const char* name;
    const char* version;
    bool served;
    const char* resources;  // the APIResourceList's resources, JSON
  };
  const Group groups[] = {
      {"apps", "v1", pods_ != nullptr,
       "[{\"name\":\"daemonsets\",\"singularName\":\"daemonset\",\"namespaced\":true,"
       "\"kind\":\"DaemonSet\",\"verbs\":[\"get\",\"list\",\"watch\"],\"shortNames\":[\"ds\"],"
       "\"categories\":[\"all\"]},{\"name\":\"deployments\",\"singularName\":\"deployment\","
       "\"namespaced\":true,\"kind\":\"Deployment\",\"verbs\":[\"get\",\"list\",\"watch\"],"
       "\"shortNames\":[\"deploy\"],\"categories\":[\"all\"]},{\"name\":\"replicasets\","
       "\"singularName\":\"replicaset\",\"namespaced\":true,\"kind\":\"ReplicaSet\",\"verbs\":"
       "[\"get\",\"list\"],\"shortNames\":[\"rs\"],\"categories\":[\"all\"]},{\"name\":"
       "\"statefulsets\",\"singularName\":\"statefulset\",\"namespaced\":true,\"kind\":"
       "\"StatefulSet\",\"verbs\":[\"get\",\"list\",\"watch\"],\"shortNames\":[\"sts\"],"
       "\"categories\":[\"all\"]}]"},
      {"autoscaling", "v2", hpas_ != nullptr,
       "[{\"name\":\"horizontalpodautoscalers\",\"singularName\":"
       "\"horizontalpodautoscaler\",\"namespaced\":true,\"kind\":\"HorizontalPodAutoscaler\","
       "\"verbs\":[\"create\",\"delete\",\"get\",\"list\"],\"shortNames\":[\"hpa\"],"
       "\"categories\":[\"all\"]},{\"name\":\"horizontalpodautoscalers/status\","
       "\"singularName\":\"\",\"namespaced\":true,\"kind\":\"HorizontalPodAutoscaler\","
       "\"verbs\":[\"get\",\"patch\",\"update\"]}]"},
      {"coordination.k8s.io", "v1", true,
       "[{\"name\":\"leases\",\"singularName\":\"lease\",\"namespaced\":true,\"kind\":"
       "\"Lease\",\"verbs\":[\"create\",\"delete\",\"get\",\"list\",\"update\"]}]"},
      {"policy", "v1", pods_ != nullptr,
       "[{\"name\":\"poddisruptionbudgets\",\"singularName\":\"poddisruptionbudget\","
       "\"namespaced\":true,\"kind\":\"PodDisruptionBudget\",\"verbs\":[\"create\","
       "\"delete\",\"get\",\"list\",\"update\"],\"shortNames\":[\"pdb\"]}]"},
      {"events.k8s.io", "v1", events_ != nullptr,
       "[{\"name\":\"events\",\"singularName\":\"event\",\"namespaced\":true,\"kind\":"
       "\"Event\",\"verbs\":[\"create\",\"delete\",\"get\",\"list\",\"patch\","
       "\"watch\"],\"shortNames\":[\"ev\"]}]"},
      // The review APIs (sim_server_auth.cc): create-only, cluster-scoped.
      {"authentication.k8s.io", "v1", true,
       "[{\"name\":\"selfsubjectreviews\",\"singularName\":\"selfsubjectreview\","
       "\"namespaced\":false,\"kind\":\"SelfSubjectReview\",\"verbs\":[\"create\"]},"
       "{\"name\":\"tokenreviews\",\"singularName\":\"tokenreview\",\"namespaced\":false,"
       "\"kind\":\"TokenReview\",\"verbs\":[\"create\"]}]"},
      {"authorization.k8s.io", "v1", true,
       "[{\"name\":\"selfsubjectaccessreviews\",\"singularName\":\"selfsubjectaccessreview\","
       "\"namespaced\":false,\"kind\":\"SelfSubjectAccessReview\",\"verbs\":[\"create\"]},"
       "{\"name\":\"subjectaccessreviews\",\"singularName\":\"subjectaccessreview\","
       "\"namespaced\":false,\"kind\":\"SubjectAccessReview\",\"verbs\":[\"create\"]}]"},
  };
  auto group_json = [](const Group& g) {  // the fields of an APIGroup, without braces
    const std::string name = g.name, version = g.version;
    const std::string gv =
        "{\"groupVersion\":\"" + name + "/" + version + "\",\"version\":\"" + version + "\"}";
    return "\"name\":\"" + name + "\",\"versions\":[" + gv + "],\"preferredVersion\":" + gv;
  };
  if (method == "GET" && (path == "/apis" || path == "/apis/")) {
    std::string list;
    for (const Group& g : groups)
      if (g.served) list += (list.empty() ? "{" : ",{") + group_json(g) + "}";
    Send(conn, 200, "{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\",\"groups\":[" + list + "]}");
    return 1;
  }
  for (const Group& g : groups) {
    if (!g.served || method != "GET") continue;
    const std::string base = std::string("/apis/") + g.name;
    // With or without a trailing slash, as the API server answers (the Python client asks
    // for "/apis/<group>/<version>/").
    if (path == base || path == base + "/") {
      Send(conn, 200, "{\"kind\":\"APIGroup\",\"apiVersion\":\"v1\"," + group_json(g) + "}");
      return 1;
    }
    if (path == base + "/" + g.version || path == base + "/" + g.version + "/") {
      Send(conn, 200,
           "{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\",\"groupVersion\":\"" +
               std::string(g.name) + "/" + g.version + "\",\"resources\":" + g.resources + "}");
      return 1;
    }
  }
  if (path.rfind("/apis/coordination.k8s.io/v1/", 0) == 0) {
    HandleLease(conn, method, path, user, table);
    return 1;
  }
  if (HandleReviews(conn, method, path, user, caller)) return 1;
  if (HandlePdbs(conn, method, path, user, table)) return 1;
  if (HandleApps(conn, method, path, query, user, table)) return 1;
  if (HandleHpas(conn, method, path, query, user, table)) return 1;
  if (HandlePods(conn, method, path, query, user, table, faulted ? fault.drop_watch_seconds : 0,
                 faulted ? fault.pad_bytes : 0))
    return 1;
  if (HandleEvents(conn, method, path, query, user, table, faulted ? fault.drop_watch_seconds : 0,
                   faulted ? fault.pad_bytes : 0))
    return 1;
  if (HandleVolumes(conn, method, path, query, user, table)) return 1;
  if (HandleServices(conn, method, path, query, user, table)) return 1;
  if (HandleServiceProxy(conn, method, path, query, user)) return 1;
  if (method == "GET" && (path == "/api/v1" || path == "/api/v1/")) {
    Send(
        conn, 200,
        "{\"kind\":\"APIResourceList\",\"groupVersion\":\"v1\",\"resources\":[{\"name\":\"nodes\","
        "\"singularName\":\"node\",\"namespaced\":false,\"kind\":\"Node\",\"verbs\":[\"create\","
        "\"delete\","
        "\"get\",\"list\",\"patch\",\"update\",\"watch\"],\"shortNames\":[\"no\"]}" +
            std::string(pods_ == nullptr ? ""
                                         : ",{\"name\":\"pods\",\"singularName\":\"pod\","
                                           "\"namespaced\":true,\"kind\":\"Pod\",\"verbs\":["
                                           "\"create\",\"delete\",\"get\",\"list\",\"watch\"],"
                                           "\"shortNames\":[\"po\"],\"categories\":[\"all\"]},"
                                           "{\"name\":\"pods/eviction\",\"singularName\":\"\","
                                           "\"namespaced\":true,\"group\":\"policy\",\"version\":"
                                           "\"v1\",\"kind\":\"Eviction\",\"verbs\":[\"create\"]}") +
            std::string(events_ == nullptr ? ""
                                           : ",{\"name\":\"events\",\"singularName\":\"event\","
                                             "\"namespaced\":true,\"kind\":\"Event\",\"verbs\":["
                                             "\"create\",\"delete\",\"get\",\"list\","
                                             "\"watch\"],\"shortNames\":[\"ev\"]}") +
            std::string(services_ == nullptr
                            ? ""
                            : ",{\"name\":\"endpoints\",\"singularName\":\"endpoints\","
                              "\"namespaced\":true,\"kind\":\"Endpoints\",\"verbs\":[\"create\","
                              "\"delete\",\"get\",\"list\",\"patch\",\"update\"],\"shortNames\":["
                              "\"ep\"]},{\"name\":\"services\",\"singularName\":\"service\","
                              "\"namespaced\":true,\"kind\":\"Service\",\"verbs\":[\"create\","
                              "\"delete\",\"get\",\"list\",\"patch\",\"update\"],\"shortNames\":["
                              "\"svc\"],\"categories\":[\"all\"]},{\"name\":\"services/proxy\","
                              "\"singularName\":\"\",\"namespaced\":true,\"kind\":"
                              "\"ServiceProxyOptions\",\"verbs\":[\"create\",\"delete\",\"get\","
                              "\"patch\",\"update\"]}") +
            std::string(volumes_ == nullptr
                            ? ""
                            : ",{\"name\":\"persistentvolumeclaims\",\"singularName\":"
                              "\"persistentvolumeclaim\",\"namespaced\":true,\"kind\":"
                              "\"PersistentVolumeClaim\",\"verbs\":[\"create\",\"delete\",\"get\","
                              "\"list\"],\"shortNames\":[\"pvc\"]},{\"name\":"
                              "\"persistentvolumes\",\"singularName\":\"persistentvolume\","
                              "\"namespaced\":false,\"kind\":\"PersistentVolume\",\"verbs\":["
                              "\"create\",\"delete\",\"get\",\"list\"],\"shortNames\":[\"pv\"]}") +
            "]}");
    return 1;
  }

  // Namespaces exist implicitly (the simulator stores no namespaced objects but Leases); kubectl
  // looks its namespace up after a namespaced NotFound to word the error.
  if (method == "GET" && path.rfind("/api/v1/namespaces/", 0) == 0 &&
      path.find('/', std::string("/api/v1/namespaces/").size()) == std::string::npos) {
    std::string ns = path.substr(std::string("/api/v1/namespaces/").size());
    rapidjson::StringBuffer sb;
    ds::JsonWriter w(sb);
    w.StartObject();
    w.Key("kind");
    w.String("Namespace");
    w.Key("apiVersion");
    w.String("v1");
    w.Key("metadata");
    w.StartObject();
    w.Key("name");
    ds::WriteString(w, ns);
    w.EndObject();
    w.Key("status");
    w.StartObject();
    w.Key("phase");
    w.String("Active");
    w.EndObject();
    w.EndObject();
    Send(conn, 200, sb.GetString());
    return 1;
  }
  const std::string prefix = "/api/v1/nodes";
  if (path.rfind(prefix, 0) != 0 || (path.size() > prefix.size() && path[prefix.size()] != '/')) {
    SendError(conn,
              ApiError{404, "NotFound", "the server could not find the requested resource", ""});
    return 1;
  }
  std::string name = path.size() > prefix.size() + 1 ? path.substr(prefix.size() + 1) : "";
  bool is_write = method != "GET" && method != "HEAD";
  if (is_write && user.read_only) {
    std::string verb = method == "POST"    ? "create"
                       : method == "PUT"   ? "update"
                       : method == "PATCH" ? "patch"
                                           : "delete";
    SendError(conn, ApiError{403, "Forbidden",
                             (name.empty() ? std::string("nodes") : "nodes \"" + name + "\"") +
                                 " is forbidden: User \"" + user.name + "\" cannot " + verb +
                                 " resource \"nodes\" in API group \"\" at the cluster scope",
                             ""});
    return 1;
  }

  if (name.empty()) {
    if (method == "POST") {
      std::string body = ReadBody(conn), out;
      ApiError e = store_->Create(body, &out);
      LogWrite(conn, "CREATE", "", user.name, "application/json", body, e.ok() ? 201 : e.code,
               e.ok());
      if (!e.ok())
        SendError(conn, e);
      else
        Send(conn, 201, out);
      return 1;
    }
    if (method != "GET") {
      SendError(conn,
                ApiError{405, "MethodNotAllowed",
                         "the server does not allow this method on the requested resource", ""});
      return 1;
    }
    if (ParseBool(QueryParam(query, "watch"))) {
      Watch(conn, query, table, faulted ? fault.drop_watch_seconds : 0,
            faulted ? fault.pad_bytes : 0);
      return 1;
    }
    auto sel = LabelSelectorParam(conn, query);
    if (!sel) return 1;
    auto paging = ListPagingParams(conn, query, store_->compacted_rv());
    if (!paging) return 1;
    const size_t limit = paging->limit;
    const std::string& after = paging->after;
    uint64_t list_rv = paging->list_rv;
    std::string next;
    uint64_t rv = 0;
    size_t remaining = 0;
    auto items = store_->List(*sel, limit, after, &next, &rv, &remaining);
    if (list_rv == 0) list_rv = rv;
    std::string next_token = next.empty() ? "" : MakeContinue(list_rv, next);
    if (table) {
      Send(conn, 200, TableJson(items, list_rv, next_token, true));
      return 1;
    }
    std::string body =
        "{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"" +
        std::to_string(list_rv) + "\"";
    if (!next_token.empty())
      body += ",\"continue\":\"" + next_token +
              "\",\"remainingItemCount\":" + std::to_string(remaining);
    body += "},\"items\":[";
    for (size_t i = 0; i < items.size(); ++i) body += (i ? "," : "") + items[i];
    Send(conn, 200, body + "]}");
    return 1;
  }

  std::string out;
  if (method == "GET") {
    ApiError e = store_->Get(name, &out);
    if (!e.ok())
      SendError(conn, e);
    else if (table)
      Send(conn, 200, TableJson({out}, store_->CurrentRv(), "", true));
    else
      Send(conn, 200, out);
    return 1;
  }
  const char* ct_h = mg_get_header(conn, "Content-Type");
  std::string ct = ct_h ? ct_h : "";
  std::string body = ReadBody(conn);
  ApiError e;
  bool changed = true;
  if (method == "PUT") {
    e = store_->Replace(name, body, &out);
  } else if (method == "PATCH") {
    PatchType pt;
    if (ct.rfind("application/merge-patch+json", 0) == 0)
      pt = PatchType::kMerge;
    else if (ct.rfind("application/strategic-merge-patch+json", 0) == 0)
      pt = PatchType::kStrategic;
    else if (ct.rfind("application/json-patch+json", 0) == 0)
      pt = PatchType::kJson;
    else {
      e = ApiError{415, "UnsupportedMediaType",
                   "the body of the request was in an unknown format - accepted media types "
                   "include: application/json-patch+json, application/merge-patch+json, "
                   "application/apply-patch+yaml, application/strategic-merge-patch+json",
                   ""};
      LogWrite(conn, method, name, user.name, ct, body, e.code, false);
      SendError(conn, e);
      return 1;
    }
    e = store_->Patch(name, pt, body, &out, &changed);
  } else if (method == "DELETE") {
    e = store_->Delete(name, &out);
  } else {
    e = ApiError{405, "MethodNotAllowed",
                 "the server does not allow this method on the requested resource", ""};
  }
  LogWrite(conn, method, name, user.name, ct, body, e.ok() ? 200 : e.code, e.ok() && changed);
  if (!e.ok())
    SendError(conn, e);
  else
    Send(conn, 200, out);
  return 1;
}

void Server::HandleLease(mg_connection* conn, const std::string& method, const std::string& path,
                         const User& user, bool table) {
  // /apis/coordination.k8s.io/v1/leases (all namespaces, list only) or
  // /apis/coordination.k8s.io/v1/namespaces/NS/leases[/NAME]
  std::vector<std::string> parts;
  for (size_t i = std::string("/apis/coordination.k8s.io/v1/").size(); i <= path.size();) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    parts.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  std::string ns, name;
  bool ok = false;
  if (parts.size() == 1 && parts[0] == "leases") {
    ok = method == "GET";
  } else if ((parts.size() == 3 || parts.size() == 4) && parts[0] == "namespaces" &&
             parts[2] == "leases" && !parts[1].empty()) {
    ns = parts[1];
    if (parts.size() == 4) name = parts[3];
    ok = parts.size() == 3 || !name.empty();
  }
  if (!ok) {
    SendError(conn,
              ApiError{404, "NotFound", "the server could not find the requested resource", ""});
    return;
  }
  bool is_write = method != "GET" && method != "HEAD";
  if (is_write && user.read_only) {
    std::string verb = method == "POST"    ? "create"
                       : method == "PUT"   ? "update"
                       : method == "PATCH" ? "patch"
                                           : "delete";
    SendError(
        conn,
        ApiError{
            403, "Forbidden",
            (name.empty() ? std::string("leases.coordination.k8s.io")
                          : "leases.coordination.k8s.io \"" + name + "\"") +
                " is forbidden: User \"" + user.name + "\" cannot " + verb +
                " resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"" +
                ns + "\"",
            ""});
    return;
  }
  std::string out;
  ApiError e;
  if (method == "GET" && name.empty()) {
    uint64_t rv = 0;
    auto items = store_->ListLeases(ns, &rv);
    if (table) {
      Send(conn, 200, LeaseTableJson(items, rv));
      return;
    }
    std::string body =
        "{\"kind\":\"LeaseList\",\"apiVersion\":\"coordination.k8s.io/v1\",\"metadata\":{"
        "\"resourceVersion\":\"" +
        std::to_string(rv) + "\"},\"items\":[";
    for (size_t i = 0; i < items.size(); ++i) body += (i ? "," : "") + items[i];
    Send(conn, 200, body + "]}");
    return;
  }
  int ok_code = 200;
  if (method == "GET") {
    e = store_->GetLease(ns, name, &out);
    if (e.ok() && table) {
      Send(conn, 200, LeaseTableJson({out}, store_->CurrentRv()));
      return;
    }
  } else if (method == "POST" && name.empty()) {
    e = store_->CreateLease(ns, ReadBody(conn), &out);
    ok_code = 201;
  } else if (method == "PUT" && !name.empty()) {
    e = store_->ReplaceLease(ns, name, ReadBody(conn), &out);
  } else if (method == "DELETE" && !name.empty()) {
    e = store_->DeleteLease(ns, name, &out);
  } else {
    e = ApiError{405, "MethodNotAllowed",
                 "the server does not allow this method on the requested resource", ""};
  }
  if (!e.ok())
    SendError(conn, e);
  else
    Send(conn, ok_code, out);
}

void Server::Watch(mg_connection* conn, const std::string& query, bool table, double drop_after,
                   size_t pad) {
  auto sel = LabelSelectorParam(conn, query);
  if (!sel) return;
  WatchSource src;
  src.kind = "Node";
  src.list = [&](uint64_t* list_rv) {
    std::string next;
    size_t rem;
    return store_->List(*sel, 0, "", &next, list_rv, &rem);
  };
  src.events = [&](uint64_t rv, int wait_ms, std::vector<WatchSource::Event>* out, bool* expired) {
    std::vector<Event> evs;
    store_->EventsAfter(rv, wait_ms, &evs, expired);
    for (auto& ev : evs)  // a DELETED event's new labels are its old ones
      out->push_back({ev.rv, std::move(ev.type), std::move(ev.json), sel->Matches(ev.old_labels),
                      sel->Matches(ev.new_labels)});
  };
  src.compacted_rv = [&] { return store_->compacted_rv(); };
  src.table = [](const std::string& json, bool first) { return TableJson({json}, 0, "", first); };
  ServeWatch(conn, query, table, drop_after, pad, src);
}

void Server::ServeWatch(mg_connection* conn, const std::string& query, bool table,
                        double drop_after, size_t pad, const WatchSource& src) {
  const bool bookmarks = ParseBool(QueryParam(query, "allowWatchBookmarks"));
  std::string rv_param = QueryParam(query, "resourceVersion");
  long timeout_s = 1800;
  if (std::string t = QueryParam(query, "timeoutSeconds"); !t.empty())
    timeout_s = std::strtol(t.c_str(), nullptr, 10);
  uint64_t from = rv_param.empty() || rv_param == "0"
                      ? store_->CurrentRv()
                      : std::strtoull(rv_param.c_str(), nullptr, 10);
  const uint64_t epoch = watch_epoch_.load();
  ++open_watches_;
  std::string head =
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
      "Cache-Control: no-cache, private\r\nConnection: close\r\n\r\n";
  mg_write(conn, head.data(), head.size());
  bool first_table = true;
  auto encode = [&](const std::string& type, const std::string& obj_json) {
    std::string obj = obj_json;
    if (pad > 0) {  // a huge annotation makes this event's line `pad` bytes longer
      rapidjson::Document d;
      d.Parse(obj.c_str());
      auto& a = d.GetAllocator();
      auto& meta = d["metadata"];
      if (!meta.HasMember("annotations"))
        meta.AddMember("annotations", rapidjson::Value(rapidjson::kObjectType), a);
      std::string filler(pad, 'x');
      meta["annotations"].AddMember("sim.example.com/pad", rapidjson::Value(filler.c_str(), a), a);
      obj = ds::JsonToString(d);
    }
    if (table) {
      obj = src.table(obj_json, first_table);
      first_table = false;
    }
    return "{\"type\":\"" + type + "\",\"object\":" + obj + "}\n";
  };
  auto bookmark = [&](uint64_t rv) {
    return "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"" + src.kind + "\",\"apiVersion\":\"" +
           src.api_version + "\",\"metadata\":{\"resourceVersion\":\"" + std::to_string(rv) +
           "\"}}}\n";
  };
  bool alive = true;
  // resourceVersion unset or "0": start with the current state as ADDED events.
  if (rv_param.empty() || rv_param == "0") {
    for (const auto& obj : src.list(&from))
      if (!(alive = SendChunk(conn, encode("ADDED", obj)))) break;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  const auto drop_at =
      drop_after > 0 ? std::chrono::steady_clock::now() + std::chrono::duration<double>(drop_after)
                     : std::chrono::steady_clock::time_point::max();
  auto next_bookmark =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.bookmark_seconds);
  uint64_t last_sent = from;
  bool dropped = false;
  while (alive && !stopping_) {
    if (watch_epoch_.load() != epoch || std::chrono::steady_clock::now() >= drop_at) {
      // A connection cut mid-stream: half an event, then no terminating chunk.
      SendChunk(conn, "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"" + src.kind.substr(0, 2));
      dropped = true;
      break;
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) break;
    std::vector<WatchSource::Event> evs;
    bool expired = false;
    int wait_ms = static_cast<int>(std::min<long>(
        200, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1));
    src.events(last_sent, wait_ms, &evs, &expired);
    if (expired) {
      ApiError e{410, "Expired",
                 "too old resource version: " + std::to_string(last_sent) + " (" +
                     std::to_string(src.compacted_rv()) + ")",
                 ""};
      SendChunk(conn, "{\"type\":\"ERROR\",\"object\":" + StatusJson(e) + "}\n");
      break;
    }
    for (const auto& ev : evs) {
      std::string type = ev.type;
      if (ev.type == "ADDED" && !ev.is)
        type.clear();
      else if (ev.type == "DELETED" && !(ev.was || ev.is))
        type.clear();
      else if (ev.type == "MODIFIED") {
        if (ev.was && !ev.is)
          type = "DELETED";
        else if (!ev.was && ev.is)
          type = "ADDED";
        else if (!ev.was && !ev.is)
          type.clear();
      }
      last_sent = ev.rv;
      if (!type.empty() && !(alive = SendChunk(conn, encode(type, ev.json)))) break;
    }
    if (bookmarks && !table && std::chrono::steady_clock::now() >= next_bookmark) {
      alive = SendChunk(conn, bookmark(last_sent));
      next_bookmark = std::chrono::steady_clock::now() +
                      std::chrono::duration<double>(options_.bookmark_seconds);
    }
  }
  if (alive && !dropped) {
    if (bookmarks && !table) SendChunk(conn, bookmark(last_sent));
    mg_send_chunk(conn, "", 0);  // terminating chunk: a clean end of the watch
  }
  --open_watches_;
}

}  // namespace sim
