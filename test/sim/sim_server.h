// HTTP front of the Kubernetes API simulator (CivetWeb): discovery, Nodes CRUD, list paging,
// chunked watch streams with bookmarks and 410s, server-side Table output for kubectl, token
// and client-certificate auth over TLS, and a /sim/ admin API for tests (write log, forced
// compaction, dropping watches).
#pragma once

#include <atomic>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "test/sim/sim_auth.h"
#include "test/sim/sim_events.h"
#include "test/sim/sim_hpa.h"
#include "test/sim/sim_http.h"
#include "test/sim/sim_pods.h"
#include "test/sim/sim_rbac.h"
#include "test/sim/sim_services.h"
#include "test/sim/sim_store.h"
#include "test/sim/sim_volumes.h"

struct mg_context;
struct mg_connection;

namespace sim {

struct User {
  std::string name;
  bool read_only = false;
  std::string uid;                  // a TokenReview's status.user.uid ("" for none)
  std::vector<std::string> groups;  // besides those the API server adds (see AuthenticatedUser)
};

// A fault injected into requests of one class (POST /sim/faults). See sim_server.cc.
struct Fault {
  // list, watch, get, patch, put, create, delete (of nodes), lease, evict (a pod's eviction),
  // discovery (any other path), all
  std::string match = "all";
  int status = 0;                 // answer with this HTTP code and a Status object (0: no error)
  double retry_after = 0;         // Retry-After seconds with the error
  int latency_ms = 0;             // added before handling
  bool hang = false;              // never answer (until the fault is cleared or 120 s pass)
  double drop_watch_seconds = 0;  // watches: cut the stream mid-event after this long
  size_t pad_bytes = 0;           // watches: every event carries an annotation this long
  int count = 0;                  // stop after this many requests (0: unlimited)
  double until = 0;               // steady-clock seconds after which the fault expires (0: never)
  // Only requests whose labelSelector contains this (the controller watches the managed nodes
  // and, apart, the nodes carrying its label).
  std::string selector_contains;
};

struct ServerOptions {
  std::string listen = "127.0.0.1:0";
  bool tls = false;
  std::string server_pem;  // key + certificate
  std::string ca_file;     // verifies client certificates
  bool anonymous = false;  // plain-HTTP test mode: everyone is admin
  // Keep connections open between requests, as API servers do (benchmarks: a client's cost per
  // request without a TLS handshake each). Off by default: see Server::Start.
  bool keep_alive = false;
  std::map<std::string, User> tokens;
  // Users listed here get only these rules (and the defaults of system:authenticated).
  RbacUsers rbac;
  int threads = 64;
  double bookmark_seconds = 5;
  std::string write_log_file;  // JSON lines; also kept in memory for /sim/writes
  // Every authenticated API request as "<epoch seconds> <user> <METHOD> <path>[?<query>]", one per
  // line: what a benchmark counts of a client's requests on kept-alive connections. Empty: none.
  std::string request_log_file;
};

// What one watch stream serves (Nodes, Pods); Server::ServeWatch does the framing, bookmarks, 410s,
// faults and the ADDED/DELETED translation for objects that start or stop matching the selectors.
struct WatchSource {
  struct Event {
    uint64_t rv = 0;
    std::string type;  // ADDED, MODIFIED, DELETED
    std::string json;
    bool was = false;  // the object before the event matched the watch's selectors
    bool is = false;   // the object after it matches them
  };
  std::string kind;  // "Node", "Pod": the bookmarks' kind; a cut stream ends inside it
  std::string api_version = "v1";  // the bookmarks' apiVersion
  // The objects that match now (resourceVersion unset or "0"), and the rv of that list.
  std::function<std::vector<std::string>(uint64_t* list_rv)> list;
  // Events after `rv`, waiting up to `wait_ms` for one; `expired` when `rv` is compacted away.
  std::function<void(uint64_t rv, int wait_ms, std::vector<Event>* out, bool* expired)> events;
  std::function<uint64_t()> compacted_rv;
  // One object as a server-side Table (`first`: the first event, which carries the columns).
  std::function<std::string(const std::string& json, bool first)> table;
};

class Server {
 public:
  // `pods` (optional, not owned) serves Pods, evictions, PodDisruptionBudgets and the apps/v1
  // workload objects; `events` (optional, not owned) serves core/v1 Events; `volumes` (optional,
  // not owned) serves PersistentVolumeClaims and PersistentVolumes; `hpas` (optional, not owned)
  // serves autoscaling/v2 HorizontalPodAutoscalers; `services` (optional, not owned) serves
  // Services, Endpoints and the services/proxy subresource (whose endpoints must be pods of
  // `pods`).
  Server(Store* store, ServerOptions options, PodStore* pods = nullptr,
         EventStore* events = nullptr, VolumeStore* volumes = nullptr, HpaStore* hpas = nullptr,
         ServiceStore* services = nullptr);
  ~Server();
  bool Start(std::string* error);
  void Stop();
  int port() const { return port_; }

 private:
  static int Handle(mg_connection* conn, void* self);
  int Dispatch(mg_connection* conn);
  // coordination.k8s.io/v1 Leases: get, list, create, update (PUT), delete.
  void HandleLease(mg_connection* conn, const std::string& method, const std::string& path,
                   const User& user, bool table);
  // Pods (sim_server_pods.cc): false when the path is not theirs.
  bool HandlePods(mg_connection* conn, const std::string& method, const std::string& path,
                  const std::string& query, const User& user, bool table, double drop_after,
                  size_t pad);
  bool HandlePdbs(mg_connection* conn, const std::string& method, const std::string& path,
                  const User& user, bool table);
  void PodWatch(mg_connection* conn, const std::string& ns, const std::string& query, bool table,
                double drop_after, size_t pad);
  // core/v1 Events (sim_server_events.cc): false when the path is not theirs.
  bool HandleEvents(mg_connection* conn, const std::string& method, const std::string& path,
                    const std::string& query, const User& user, bool table, double drop_after,
                    size_t pad);
  // PersistentVolumeClaims and PersistentVolumes (sim_server_volumes.cc): false when the path
  // is not theirs.
  bool HandleVolumes(mg_connection* conn, const std::string& method, const std::string& path,
                     const std::string& query, const User& user, bool table);
  // apps/v1 Deployments, ReplicaSets, StatefulSets, DaemonSets (get, list) and autoscaling/v2
  // HorizontalPodAutoscalers (sim_server_apps.cc): false when the path is not theirs.
  bool HandleApps(mg_connection* conn, const std::string& method, const std::string& path,
                  const std::string& query, const User& user, bool table);
  bool HandleHpas(mg_connection* conn, const std::string& method, const std::string& path,
                  const std::string& query, const User& user, bool table);
  // core/v1 Services and Endpoints (sim_server_services.cc): false when the path is not theirs.
  bool HandleServices(mg_connection* conn, const std::string& method, const std::string& path,
                      const std::string& query, const User& user, bool table);
  // The services/proxy subresource (sim_server_proxy.cc), for an authenticated and authorized
  // request: false when the path is not a service proxy path.
  bool HandleServiceProxy(mg_connection* conn, const std::string& method, const std::string& path,
                          const std::string& query, const User& user);
  // The review APIs (sim_server_auth.cc): TokenReview, SelfSubjectReview, SubjectAccessReview,
  // SelfSubjectAccessReview. `caller` is who sent the request. False when the path is not theirs.
  bool HandleReviews(mg_connection* conn, const std::string& method, const std::string& path,
                     const User& user, const UserInfo& caller);
  void EventWatch(mg_connection* conn, const std::string& ns, const std::string& query, bool v1,
                  bool table, double drop_after, size_t pad);
  void Watch(mg_connection* conn, const std::string& query, bool table, double drop_after,
             size_t pad);
  // The chunked stream of a watch: resourceVersion, timeoutSeconds and allowWatchBookmarks from
  // `query`; a drop after `drop_after` s; a `pad`-byte annotation on every event.
  void ServeWatch(mg_connection* conn, const std::string& query, bool table, double drop_after,
                  size_t pad, const WatchSource& src);
  // The fault that applies to a request of this class, if any (consumes one of its `count`).
  bool TakeFault(const std::string& request_class, const std::string& selector, Fault* out);
  void Refuse(double seconds);  // stop listening for a while (connections are refused)
  void LogWrite(mg_connection* conn, const std::string& verb, const std::string& name,
                const std::string& user, const std::string& content_type, const std::string& body,
                int code, bool changed);

  Store* const store_;
  PodStore* const pods_;
  EventStore* const events_;
  VolumeStore* const volumes_;
  HpaStore* const hpas_;
  ServiceStore* const services_;
  const ServerOptions options_;
  ConnectionPolicy policy_{options_.keep_alive};  // mg_start's user data (CivetWeb wants void*)
  mg_context* ctx_ = nullptr;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> watch_epoch_{0};  // bumping it drops every open watch
  std::atomic<int> open_watches_{0};
  ds::Mutex log_mu_;
  std::vector<std::string> writes_ GUARDED_BY(log_mu_);
  std::map<std::string, uint64_t> requests_ GUARDED_BY(log_mu_);  // by "VERB kind"
  std::ofstream request_log_ GUARDED_BY(log_mu_);
  ds::Mutex fault_mu_;
  std::vector<Fault> faults_ GUARDED_BY(fault_mu_);
  std::atomic<uint64_t> fault_epoch_{0};  // bumps when faults are cleared (releases hung requests)
  // Bearer tokens: options_.tokens, then what /sim/tokens adds and revokes (credential rotation
  // and revocation, as an exec plugin's short-lived tokens see them).
  ds::Mutex token_mu_;
  std::map<std::string, User> tokens_ GUARDED_BY(token_mu_);
};

}  // namespace sim
