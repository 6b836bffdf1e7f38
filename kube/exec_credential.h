// kubeconfig exec credential plugins (client.authentication.k8s.io ExecCredential, what EKS, GKE
// and AKS kubeconfigs use): the plugin's input and output formats (pure), running it (a child
// process, bounded in time and output), and the cache that decides when to run it again.
#pragma once

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "kube/kubeconfig.h"

namespace ds {

// What a plugin printed, decoded.
struct ExecCredential {
  std::string token;            // bearer token, or
  std::string client_cert_pem;  // a client certificate and its key
  std::string client_key_pem;
  double expires_at = 0;  // epoch seconds (expirationTimestamp); 0: valid while the process runs
};

// The KUBERNETES_EXEC_INFO value: an ExecCredential of exec.api_version with spec.interactive
// false (stdin is never a terminal) and, when exec.provide_cluster_info, spec.cluster from
// `cluster` (server, CA data, insecure-skip-tls-verify). Pure.
std::string EncodeExecInfo(const ExecConfig& exec, const RestConfig& cluster);

// Decodes the plugin's stdout. It must be an ExecCredential of `api_version` whose status has a
// token or clientCertificateData + clientKeyData (PEM), and optionally an RFC 3339
// expirationTimestamp. Errors say what is wrong with the output (the caller names the plugin).
// Pure.
StatusOr<ExecCredential> DecodeExecCredential(const std::string& out,
                                              const std::string& api_version);

// One run of a plugin process.
struct PluginRun {
  bool not_found = false;  // the command could not be started (ENOENT/EACCES)
  bool timed_out = false;  // killed (with its process group) after the time limit
  int exit_code = -1;      // exit status; -1 when killed by a signal
  std::string out, err;    // stdout (bounded) and stderr (bounded)
};

// Runs exec.command with exec.args, the controller's environment plus exec.env and
// KUBERNETES_EXEC_INFO=`exec_info`, stdin from /dev/null, in its own process group. Waits at most
// `timeout_seconds` (then kills the group). An error Status only when no process could be
// created (pipes, spawn failures other than not-found). Blocks; thread-safe.
StatusOr<PluginRun> RunPlugin(const ExecConfig& exec, const std::string& exec_info,
                              double timeout_seconds);

// Turns a run into a credential or into one error that names the plugin (exec.where and the
// command), its exit code or timeout, and the first line of its stderr; the installHint when the
// command was not found. Pure.
StatusOr<ExecCredential> CredentialFromRun(const ExecConfig& exec, const PluginRun& run);

// Runs the plugin and decodes its answer (RunPlugin + CredentialFromRun).
StatusOr<ExecCredential> ObtainExecCredential(const ExecConfig& exec, const RestConfig& cluster,
                                              double timeout_seconds);

// When to run the plugin: once, then again when the credential has expired (expirationTimestamp,
// read on clock->WallSeconds()) or was rejected with a 401. Concurrent callers share one run:
// Get holds the lock while the plugin runs, so the others wait for its result instead of starting
// their own. A failed run is remembered for a few seconds so that a broken plugin is not started
// by every request.
// A credential with an expiry is renewed ahead of it, in the background: from the time when
// min(5 min, 20 % of its lifetime) is left, the first Get starts the plugin on a thread of the
// cache and returns the current credential at once. A plugin may take up to its timeout (30 s),
// longer than a lease's renew deadline: run inline at expiry, it would stall every request of
// the elector and the watches, and cost the leadership. The old credential serves until the new
// one arrives; a failed renewal is retried after the same few seconds while the old one is valid.
// Thread-safe. The destructor waits for a renewal in flight (at most the plugin's timeout).
class ExecCredentialCache {
 public:
  using Obtain = std::function<StatusOr<ExecCredential>()>;
  ExecCredentialCache(Obtain obtain, const Clock* clock);
  ~ExecCredentialCache();
  ExecCredentialCache(const ExecCredentialCache&) = delete;
  ExecCredentialCache& operator=(const ExecCredentialCache&) = delete;

  // The cached credential, or the result of a new run when there is none (or it expired).
  StatusOr<ExecCredential> Get();
  // A request sent with `rejected` got 401: drop it so that the next Get runs the plugin. A
  // credential that another caller has already replaced is kept (one run per rejected credential,
  // however many requests carried it).
  void Invalidate(const ExecCredential& rejected);
  int runs() const;
  // A background renewal is in flight (its result not stored yet).
  bool renewing() const;

 private:
  void StoreLocked(const ExecCredential& c) REQUIRES(mu_);
  void StartRenewalLocked() REQUIRES(mu_);  // REQUIRES: !renewing_

  const Obtain obtain_;
  const Clock* const clock_;
  mutable Mutex mu_;
  bool have_ GUARDED_BY(mu_) = false;
  ExecCredential current_ GUARDED_BY(mu_);
  Status last_error_ GUARDED_BY(mu_);
  TimePoint failed_at_ GUARDED_BY(mu_) = {};
  int runs_ GUARDED_BY(mu_) = 0;
  double renew_at_ GUARDED_BY(mu_) = 0;    // wall seconds from which current_ is renewed
  bool renewing_ GUARDED_BY(mu_) = false;  // a background run is in flight
  CondVar renewed_;                        // signalled when a background run ends
  std::thread renewer_ GUARDED_BY(mu_);    // the last background run; joined before the next
};

}  // namespace ds
