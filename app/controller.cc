#include "app/controller.h"

#include <glog/logging.h>
#include <unistd.h>

#include <fstream>

#include "app/version.h"
#include "common/log_fields.h"
#include "common/tls_files_transport.h"
#include "web/routes.h"

namespace ds {
namespace {

// Resident set size from /proc/self/statm (pages), for /metrics.
double ResidentBytes() {
  std::ifstream in("/proc/self/statm");
  long size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

std::unique_ptr<LeaderElector> MakeElector(const Options& o, KubeApi* kube, const Clock* clock) {
  if (!o.leader_elect) return nullptr;
  return std::make_unique<LeaderElector>(kube, clock, o.leader_election);
}

// The text the rules were loaded from: a reload compares the file with it. Read again here
// (Options keeps the parsed rules); a file changed in between is reloaded at the first check.
std::string RunningText(const Options& o) {
  auto text = ReadRuleFile(o.rule_file);
  return text.ok() ? *text : std::string();
}

}  // namespace

std::unique_ptr<Rebalancer> MakeRebalancer(const Options& o, KubeApi* kube, PrometheusClient* prom,
                                           const Clock* clock) {
  if (!o.rules.rebalance.enabled) return nullptr;
  auto zone = TimeZone::Load(o.rules.rebalance.time_zone);  // checked with the options
  if (!zone.ok()) {
    LOG(ERROR) << "rebalance.timeZone unusable; using UTC" << Fields("err", zone.status());
    zone = TimeZone::Utc();
  }
  // The ledger beside the leader election's lease (its namespace is resolved even without
  // -leader_elect: the controller's own, or the kubeconfig context's).
  RebalancerOptions ro;
  ro.ledger.ns = o.leader_election.lease_namespace;
  ro.ledger.name = o.leader_election.lease_name + "-evictions";
  ro.interval_seconds = o.reconciler.interval_seconds;
  return std::make_unique<Rebalancer>(o.rules, kube, prom, clock, std::move(*zone), std::move(ro));
}

std::unique_ptr<HttpTransport> MakePromTransport(const Options& o) {
  if (!o.prometheus_auth.has_tls_files()) return std::make_unique<CurlTransport>(o.prometheus_tls);
  return std::make_unique<TlsFilesTransport>(o.prometheus_auth, o.prometheus_tls_names);
}

Controller::Controller(const Options& options)
    : options_(options),
      kube_transport_(options.rest.tls, options.rest.proxy_url),
      prom_transport_(MakePromTransport(options)),
      kube_(&kube_transport_, options.rest, &clock_, options.api_timeout_seconds,
            options.user_agent),
      prom_(prom_transport_.get(), options.prometheus_url, options.query_timeout_seconds,
            options.prometheus_auth),
      cache_(&kube_, &clock_, options.cache),
      elector_(MakeElector(options, &kube_, &clock_)),
      rebalancer_(MakeRebalancer(options, &kube_, &prom_, &clock_)),
      reconciler_(options.rules, options.reconciler, &cache_, &prom_, &kube_, &clock_,
                  elector_.get(), rebalancer_.get()),
      rule_watcher_(
          options.rule_file, RunningText(options),
          [this](const RuleConfig& rules) { reconciler_.Reload(rules); }, &clock_) {
  kube_.SetWatchIdleTimeout(options.watch_idle_timeout_seconds);
  reconciler_.OnPublish([this](const CycleReport& report) { RecordHistory(report); });
  if (options.watch_marked)
    marked_cache_ = std::make_unique<NodeCache>(&kube_, &clock_, options.marked_cache);
  if (options.web_auth_kubernetes)
    web_guard_ = std::make_unique<WebGuard>(&kube_, &clock_, options.webhook_token,
                                            options.web_access_scope);
}

Controller::~Controller() { Stop(); }

void Controller::RecordHistory(const CycleReport& report) {
  size_t marked = 0;
  if (auto snap = cache_.Snapshot(); snap != nullptr)
    for (const auto& n : snap->nodes)
      marked += options_.reconciler.mark.AnyLevelIsOn(n->labels, n->taints);
  uint64_t evicted = 0;
  if (rebalancer_ != nullptr) {
    const RebalanceCounters c = rebalancer_->Counters();
    if (auto it = c.evictions.find("evicted"); it != c.evictions.end()) evicted = it->second;
  }
  history_.Record(report.table.get(), clock_.WallSeconds(), marked, evicted);
}

Status Controller::Start() {
  const Options& o = options_;
  LOG(INFO) << "kubernetes: " << o.rest.description;
  if (o.rest.tls.insecure_skip_verify)
    LOG(WARNING) << "kubeconfig asks for insecure-skip-tls-verify: the API server's certificate is "
                    "NOT verified";
  LOG(INFO) << DescribeStartup(o);
  if (o.prometheus_tls.insecure_skip_verify)
    LOG(WARNING) << "Prometheus' TLS certificate is NOT verified (insecure skip verify): anyone on "
                    "the path can read the credentials sent to it";
  for (const std::string& w : o.rules.warnings) LOG(WARNING) << w;
  if (o.web_auth_kubernetes && o.web.tls_cert_file.empty())
    LOG(WARNING) << "-web_auth=kubernetes without -web_tls_cert_file: callers' bearer tokens "
                    "cross the network in clear text";
  if (o.web_auth_kubernetes && o.probe_addr.empty())
    LOG(WARNING) << "-web_auth=kubernetes without -probeaddr: /healthz and /status on -webaddr "
                    "need a token too, so a kubelet probe there fails (401); give the probes "
                    "-probeaddr";
  if (elector_ != nullptr) {
    const LeaderElectionOptions& le = o.leader_election;
    LOG(INFO) << "leader election: lease " << le.lease_namespace << "/" << le.lease_name
              << ", identity " << le.identity << ", duration " << le.lease_duration_seconds
              << " s, renew deadline " << le.renew_deadline_seconds << " s, retry "
              << le.retry_period_seconds << " s"
              << Fields("lease", le.lease_namespace + "/" + le.lease_name, "identity", le.identity);
  }
  auto handler = [this](const WebRequest& req) {
    // -web_auth=kubernetes: the caller's token and rights first (app/web_guard.h).
    bool verified = false;
    if (web_guard_ != nullptr) {
      WebGuard::Verdict g = web_guard_->Admit(req);
      if (!g.pass) return g.denied;
      verified = g.verified;
    }
    return HandleRequest(
        req, View(), [this] { reconciler_.Trigger(); }, options_.webhook_token,
        [this](std::vector<Labels> alerts) { reconciler_.Alerted(std::move(alerts)); }, verified);
  };
  RETURN_NOT_OK(web_.Start(o.web_addr, handler, o.web));
  LOG(INFO)
      << "http: listening on port " << web_.port() << (o.web.tls_cert_file.empty() ? "" : " (TLS)")
      << " (the page at /; /api/v1/state /status /healthz /nodes /metrics /rebalance /webhook)";
  if (!o.probe_addr.empty()) {
    // The kubelet probes from the node's address, once every few seconds: two workers and a few
    // connections are plenty, and none of them can be taken by a client of the web port. The
    // node's address is also every hostNetwork pod's: a client over its share closes its own
    // oldest incomplete connection, so such a pod holding connections cannot lock the probes out.
    WebServerOptions probes;
    probes.workers = 2;
    probes.max_connections = 128;
    probes.max_connections_per_client = 32;
    probes.evict_within_client = true;
    probes.max_queued_requests = 16;
    probes.header_timeout_seconds = 1;
    probes.idle_timeout_seconds = 10;
    RETURN_NOT_OK(probe_.Start(
        o.probe_addr, [this](const WebRequest& req) { return HandleProbe(req, View()); }, probes));
    LOG(INFO) << "http: probes on port " << probe_.port() << " (/healthz /status)";
  }

  cache_thread_ = std::thread([this] { cache_.Run(&stop_); });
  if (marked_cache_ != nullptr)
    marked_cache_thread_ = std::thread([this] { marked_cache_->Run(&stop_); });
  loop_thread_ = std::thread([this] { reconciler_.Run(&stop_); });
  reload_thread_ = std::thread([this] { rule_watcher_.Run(&stop_, kRuleFilePollSeconds); });
  if (elector_ != nullptr)
    election_thread_ = std::thread([this] {
      elector_->Run(&stop_election_, [this](bool leader) {
        // Evaluate at once instead of waiting for the interval (or a webhook's spacing).
        if (leader) reconciler_.Trigger(/*spaced=*/false);
      });
    });
  return Status::OK();
}

void Controller::Stop() {
  // The lease first, within LeaderElector::kReleaseSeconds: the elector steps down at once, so no
  // write can start and a PATCH in flight is abandoned (its gate closes), and a standby can take
  // over within one retry period, however long the loop takes to wind down.
  if (elector_ != nullptr) elector_->Release();
  stop_ = true;
  reconciler_.Wake();
  rule_watcher_.Wake();
  if (loop_thread_.joinable()) loop_thread_.join();
  if (reload_thread_.joinable()) reload_thread_.join();
  stop_election_ = true;
  if (election_thread_.joinable()) election_thread_.join();
  if (cache_thread_.joinable()) cache_thread_.join();
  if (marked_cache_thread_.joinable()) marked_cache_thread_.join();
  web_.Stop();
  probe_.Stop();
}

ControllerView Controller::View() const {
  ControllerView v;
  v.cache_synced = cache_.Synced();
  v.cache_error = cache_.LastError();
  v.cache_stats = cache_.Stats();
  if (TimePoint p = cache_.LastProgress(); p != TimePoint{})
    v.cache_seconds_since_progress = ToSeconds(clock_.Now() - p);
  v.cache_stale = cache_.Stale(clock_.Now(), FromSeconds(options_.cache_stale_after_seconds));
  v.nodes = cache_.Snapshot();
  if (marked_cache_ != nullptr) v.marked_nodes = marked_cache_->Snapshot();
  v.last_cycle = reconciler_.LastReport();
  v.counters = reconciler_.Counters();
  TimePoint end = reconciler_.LastCycleEnd();
  v.seconds_since_cycle = end == TimePoint{} ? -1 : ToSeconds(clock_.Now() - end);
  TimePoint progress = reconciler_.LastProgress();
  v.seconds_since_progress = progress == TimePoint{} ? -1 : ToSeconds(clock_.Now() - progress);
  v.interval_seconds = options_.reconciler.interval_seconds;
  v.mark = options_.reconciler.mark;
  v.version = Version();
  v.commit = GitCommit();
  v.compiler = Compiler();
  v.durations = reconciler_.durations().Collect();
  v.rss_bytes = ResidentBytes();
  v.reload = rule_watcher_.GetView();
  v.history = &history_;
  if (web_guard_ != nullptr) v.web_denied = web_guard_->Counters();
  v.listeners.emplace_back("web", web_.stats());
  if (probe_.port() != 0) v.listeners.emplace_back("probes", probe_.stats());
  if (rebalancer_ != nullptr) {
    v.rebalance = rebalancer_->Report();
    v.rebalance_counters = rebalancer_->Counters();
  }
  if (elector_ != nullptr) {
    auto ev = elector_->GetView();
    v.leader_election = true;
    v.is_leader = ev.leader;
    v.identity = ev.identity;
    v.leader_holder = ev.holder;
    v.leader_terms = ev.terms;
  }
  return v;
}

}  // namespace ds
