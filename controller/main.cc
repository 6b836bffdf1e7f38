// dynamic-scheduler: labels nodes that Prometheus says are busy so that workloads with a soft
// node-affinity term avoid them.
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include "controller/kube_api.h"
#include "controller/kubeconfig.h"
#include "controller/leader_elector.h"
#include "controller/node_cache.h"
#include "controller/options.h"
#include "controller/reconciler.h"
#include "controller/web_server.h"
#include "promql/prometheus_client.h"

using namespace ds;  // NOLINT: main only

namespace {
// Resident set size from /proc/self/statm (pages), for /metrics.
double ResidentBytes() {
  std::ifstream in("/proc/self/statm");
  long size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}
}  // namespace

int main(int argc, char** argv) {
  // Each cycle runs its queries and writes on short-lived threads; with glibc's default of up to
  // 8 arenas per core every one of them can keep its own heap of freed response buffers. Two
  // arenas keep the resident size close to what is live (bench/RESULTS.md: RSS at 10,000 nodes).
  mallopt(M_ARENA_MAX, 2);
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  auto opts_or = ParseOptions(&argc, &argv);
  if (!opts_or.ok()) {
    std::cerr << "dynamic-scheduler: " << opts_or.status().message() << "\n";
    return 2;
  }
  const Options& opts = *opts_or;
  if (opts.check_only) {
    std::cout << opts.rule_file << ": OK: " << opts.rules.rules.size() << " rules ("
              << (opts.rules.legacy ? "legacy" : "current") << " format), label " << opts.reconciler.label_key << "="
              << opts.reconciler.label_value << ", managed nodes: "
              << (opts.rules.node_selector.empty() ? "all" : opts.rules.node_selector) << "\n";
    for (const auto& r : opts.rules.rules)
      std::cout << "  " << r.name << ": " << (r.op == Comparison::kGreater ? ">" : "<") << " " << r.threshold
                << " (clears at " << r.clear_threshold << ", for " << r.for_seconds << " s): " << r.query << "\n";
    return 0;
  }
  auto rest = ResolveRestConfig(opts.kubeconfig, opts.context);
  if (!rest.ok()) {
    std::cerr << "dynamic-scheduler: " << rest.status().message() << "\n";
    return 2;
  }
  std::string label_selector = opts.rules.node_selector;
  LOG(INFO) << "kubernetes: " << rest->description;
  if (rest->tls.insecure_skip_verify)
    LOG(WARNING) << "kubeconfig asks for insecure-skip-tls-verify: the API server's certificate is NOT verified";
  LOG(INFO) << "prometheus: " << opts.prometheus_url << "; rules from " << opts.rule_file << " ("
            << opts.rules.rules.size() << " rules, " << (opts.rules.legacy ? "legacy" : "current")
            << " format); interval " << opts.reconciler.interval_seconds << " s; label "
            << opts.reconciler.label_key << "=" << opts.reconciler.label_value << "; managed nodes: "
            << (label_selector.empty() ? "all" : label_selector) << (opts.reconciler.dry_run ? "; DRY RUN" : "");

  std::string prom_token;
  if (!opts.prometheus_token_file.empty()) {
    std::ifstream in(opts.prometheus_token_file);
    if (!in) {
      std::cerr << "dynamic-scheduler: -prom_token_file: cannot read " << opts.prometheus_token_file << "\n";
      return 2;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    prom_token = ss.str();
    while (!prom_token.empty() && std::isspace(static_cast<unsigned char>(prom_token.back()))) prom_token.pop_back();
  }

  // Block the stop signals in every thread; main waits for them with sigwait.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  RealClock clock;
  CurlTransport kube_transport(rest->tls);
  CurlTransport prom_transport;
  LeaderElectionOptions le_opts = opts.leader_election;
  if (le_opts.lease_namespace.empty()) {
    const char* pod_ns = std::getenv("POD_NAMESPACE");
    le_opts.lease_namespace = pod_ns != nullptr && *pod_ns != '\0' ? pod_ns
                              : !rest->namespace_name.empty()     ? rest->namespace_name
                                                                  : "default";
  }
  if (opts.leader_elect) {
    if (std::string why = ValidateLeaderElection(le_opts); !why.empty()) {
      std::cerr << "dynamic-scheduler: " << why << "\n";
      return 2;
    }
  }
  // The identity in the User-Agent lets audit logs tell the replicas' writes apart.
  HttpKubeApi kube(&kube_transport, *rest, &clock, 30,
                   "dynamic-scheduler/0.1 (" + (opts.leader_elect ? le_opts.identity : std::string("single")) + ")");
  HttpPrometheusClient prom(&prom_transport, opts.prometheus_url, opts.query_timeout_seconds, prom_token);
  NodeCacheOptions cache_opts;
  cache_opts.label_selector = label_selector;
  cache_opts.resync_seconds = opts.resync_seconds;
  cache_opts.keep_label_keys = {opts.reconciler.label_key};
  NodeCache cache(&kube, cache_opts);
  std::unique_ptr<LeaderElector> elector;
  if (opts.leader_elect) {
    elector = std::make_unique<LeaderElector>(&kube, &clock, le_opts);
    LOG(INFO) << "leader election: lease " << le_opts.lease_namespace << "/" << le_opts.lease_name << ", identity "
              << le_opts.identity << ", duration " << le_opts.lease_duration_seconds << " s, renew deadline "
              << le_opts.renew_deadline_seconds << " s, retry " << le_opts.retry_period_seconds << " s";
  }
  kube.SetWriteGate(elector.get());
  kube.SetWatchIdleTimeout(opts.watch_idle_timeout_seconds);
  Reconciler reconciler(opts.rules, opts.reconciler, &cache, &prom, &kube, &clock, elector.get());

  WebServer web;
  auto handler = [&](const WebRequest& req) {
    ControllerView v;
    v.cache_synced = cache.Synced();
    v.cache_error = cache.LastError();
    v.cache_stats = cache.Stats();
    v.nodes = cache.Snapshot();
    v.last_cycle = reconciler.LastReport();
    v.counters = reconciler.Counters();
    TimePoint end = reconciler.LastCycleEnd();
    v.seconds_since_cycle = end == TimePoint{} ? -1 : ToSeconds(clock.Now() - end);
    v.interval_seconds = opts.reconciler.interval_seconds;
    v.label_key = opts.reconciler.label_key;
    v.label_value = opts.reconciler.label_value;
    v.rss_bytes = ResidentBytes();
    if (elector != nullptr) {
      auto ev = elector->GetView();
      v.leader_election = true;
      v.is_leader = ev.leader;
      v.identity = ev.identity;
      v.leader_holder = ev.holder;
      v.leader_terms = ev.terms;
    }
    return HandleRequest(req, v, [&] { reconciler.Trigger(); });
  };
  if (Status st = web.Start(opts.web_addr, handler, /*threads=*/16); !st.ok()) {
    std::cerr << "dynamic-scheduler: " << st.message() << "\n";
    return 2;
  }
  LOG(INFO) << "http: listening on port " << web.port() << " (/status /healthz /nodes /metrics /webhook)";

  std::atomic<bool> stop{false};
  std::thread cache_thread([&] { cache.Run(&stop); });
  std::thread loop_thread([&] { reconciler.Run(&stop); });
  // The elector stops after the evaluation loop (its own flag), so that the lease is released
  // only once no write can start any more.
  std::atomic<bool> stop_election{false};
  std::thread election_thread;
  if (elector != nullptr)
    election_thread = std::thread([&] {
      elector->Run(&stop_election, [&](bool leader) {
        if (leader) reconciler.Trigger();  // evaluate at once instead of waiting for the interval
      });
    });
  int sig = 0;
  sigwait(&sigs, &sig);
  LOG(INFO) << "received signal " << sig << ", stopping";
  stop = true;
  reconciler.Wake();
  loop_thread.join();
  stop_election = true;
  if (election_thread.joinable()) election_thread.join();
  cache_thread.join();
  web.Stop();
  LOG(INFO) << "stopped";
  return 0;
}
