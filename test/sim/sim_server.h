// HTTP front of the Kubernetes API simulator (CivetWeb): discovery, Nodes CRUD, list paging,
// chunked watch streams with bookmarks and 410s, server-side Table output for kubectl, token
// and client-certificate auth over TLS, and a /sim/ admin API for tests (write log, forced
// compaction, dropping watches).
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "test/sim/sim_store.h"

struct mg_context;
struct mg_connection;

namespace sim {

struct User {
  std::string name;
  bool read_only = false;
};

struct ServerOptions {
  std::string listen = "127.0.0.1:0";
  bool tls = false;
  std::string server_pem;  // key + certificate
  std::string ca_file;     // verifies client certificates
  bool anonymous = false;  // plain-HTTP test mode: everyone is admin
  std::map<std::string, User> tokens;
  int threads = 64;
  double bookmark_seconds = 5;
  std::string write_log_file;  // JSON lines; also kept in memory for /sim/writes
};

class Server {
 public:
  Server(Store* store, ServerOptions options);
  ~Server();
  bool Start(std::string* error);
  void Stop();
  int port() const { return port_; }

 private:
  static int Handle(mg_connection* conn, void* self);
  int Dispatch(mg_connection* conn);
  void Watch(mg_connection* conn, const std::string& query, bool table);
  void LogWrite(const std::string& verb, const std::string& name, const std::string& user,
                const std::string& content_type, const std::string& body, int code, bool changed);

  Store* const store_;
  const ServerOptions options_;
  mg_context* ctx_ = nullptr;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> watch_epoch_{0};  // bumping it drops every open watch
  std::atomic<int> open_watches_{0};
  std::mutex log_mu_;
  std::vector<std::string> writes_;  // GUARDED_BY(log_mu_)
  std::map<std::string, uint64_t> requests_;  // by "VERB kind", GUARDED_BY(log_mu_)
};

}  // namespace sim
