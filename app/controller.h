// The running controller: builds every part from validated Options, starts their threads, and
// stops them in the order that keeps the guarantees (no write after the loop stopped; the lease
// released only once no write can start). main() only parses, starts, waits and stops.
#pragma once

#include <atomic>
#include <memory>
#include <thread>

#include "app/options.h"
#include "app/rule_file_watcher.h"
#include "app/web_guard.h"
#include "common/clock.h"
#include "common/http_transport.h"
#include "common/web_server.h"
#include "controller/reconciler.h"
#include "election/leader_elector.h"
#include "kube/kube_api.h"
#include "kube/node_cache.h"
#include "promql/prometheus_client.h"
#include "web/controller_view.h"
#include "web/value_history.h"

namespace ds {

// The transport to Prometheus the options describe (TLS files re-read when they change): the
// controller's and replay's.
std::unique_ptr<HttpTransport> MakePromTransport(const Options& o);

// The rebalancer the options describe (null without a `rebalance:` section), with its ledger
// beside the leader election's lease: the controller's, and a one-pass run's (app/once.h), so the
// eviction limits of one run hold in the next.
std::unique_ptr<Rebalancer> MakeRebalancer(const Options& o, KubeApi* kube, PrometheusClient* prom,
                                           const Clock* clock);

// How often rule.yaml is read for changes (SIGHUP reads it at once).
inline constexpr double kRuleFilePollSeconds = 2;

class Controller {
 public:
  // `options` must outlive the controller.
  explicit Controller(const Options& options);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Starts the HTTP endpoints, the node cache, the evaluation loop and (with -leader_elect) the
  // elector. An error (the web address cannot be bound) leaves nothing running.
  Status Start();
  // Stops everything; returns once every thread has ended. Idempotent.
  void Stop();

  // SIGHUP: read rule.yaml again now (app/rule_file_watcher.h). Thread-safe.
  void ReloadRules() { rule_watcher_.Poke(); }

  // What the HTTP endpoints show, gathered now. Thread-safe.
  ControllerView View() const;
  int web_port() const { return web_.port(); }
  int probe_port() const { return probe_.port(); }  // 0 without -probeaddr

 private:
  // A published cycle into history_, with the nodes the cache shows marked and the evictions.
  void RecordHistory(const CycleReport& report);

  const Options& options_;
  RealClock clock_;
  CurlTransport kube_transport_;
  // A TlsFilesTransport when TLS files are configured (they rotate), else a CurlTransport.
  std::unique_ptr<HttpTransport> prom_transport_;
  HttpKubeApi kube_;
  HttpPrometheusClient prom_;
  NodeCache cache_;
  std::unique_ptr<NodeCache> marked_cache_;  // Options::marked_cache; null when unused
  std::unique_ptr<LeaderElector> elector_;   // null without -leader_elect
  std::unique_ptr<Rebalancer> rebalancer_;   // null without a `rebalance:` section
  ValueHistory history_;                     // the page's charts; fed by every published cycle
  Reconciler reconciler_;
  RuleFileWatcher rule_watcher_;
  std::unique_ptr<WebGuard> web_guard_;  // -web_auth=kubernetes; null without
  WebServer web_;
  WebServer probe_;  // -probeaddr: /healthz and /status only, on workers of their own

  std::atomic<bool> stop_{false};
  // Stop() releases the lease first (a leader's Run then ends by itself); this flag ends a
  // standby's Run, after the evaluation loop has stopped.
  std::atomic<bool> stop_election_{false};
  std::thread cache_thread_, marked_cache_thread_, loop_thread_, election_thread_, reload_thread_;
};

}  // namespace ds
