#include "kube/exec_credential.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "common/base64.h"
#include "common/json_util.h"
#include "common/rfc3339.h"

extern char** environ;

namespace ds {
namespace {

// Real credentials are a few KiB; this bounds a plugin that prints without end.
constexpr size_t kMaxOutputBytes = 4u << 20;
// A plugin that fails is not started again for this long: requests fail fast meanwhile.
constexpr double kFailureHoldSeconds = 5;
// A credential is renewed when min(5 min, 20 % of its lifetime) is left (ExecCredentialCache).
constexpr double kRenewLeadMaxSeconds = 300;
constexpr double kRenewLeadShare = 0.2;

std::string FirstLine(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_first_of("\r\n", b);
  std::string line = s.substr(b, e == std::string::npos ? std::string::npos : e - b);
  if (line.size() > 300) line = line.substr(0, 300) + "...";
  return line;
}

// "users[u].user.exec (command \"aws\")", the name every plugin error carries.
std::string PluginName(const ExecConfig& exec) {
  return exec.where + " (command \"" + exec.command + "\")";
}

}  // namespace

std::string EncodeExecInfo(const ExecConfig& exec, const RestConfig& cluster) {
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.StartObject();
  w.Key("apiVersion");
  WriteString(w, exec.api_version);
  w.Key("kind");
  w.String("ExecCredential");
  w.Key("spec");
  w.StartObject();
  w.Key("interactive");
  w.Bool(false);
  if (exec.provide_cluster_info) {
    w.Key("cluster");
    w.StartObject();
    w.Key("server");
    WriteString(w, cluster.server);
    if (!cluster.tls.server_name.empty()) {
      w.Key("tls-server-name");
      WriteString(w, cluster.tls.server_name);
    }
    if (!cluster.tls.ca_pem.empty()) {
      w.Key("certificate-authority-data");
      WriteString(w, Base64Encode(cluster.tls.ca_pem));
    }
    if (cluster.tls.insecure_skip_verify) {
      w.Key("insecure-skip-tls-verify");
      w.Bool(true);
    }
    if (!cluster.proxy_url.empty()) {
      w.Key("proxy-url");
      WriteString(w, cluster.proxy_url);
    }
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  return sb.GetString();
}

StatusOr<ExecCredential> DecodeExecCredential(const std::string& out,
                                              const std::string& api_version) {
  rapidjson::Document d;
  d.Parse(out.c_str(), out.size());
  if (d.HasParseError())
    return Status::InvalidArgument("output is not an ExecCredential: " + JsonParseError(d));
  if (!d.IsObject()) return Status::InvalidArgument("output is not a JSON object");
  const std::string got_version = JsonString(d, "apiVersion");
  if (got_version != api_version)
    return Status::InvalidArgument("output has apiVersion \"" + got_version +
                                   "\", the kubeconfig asks for \"" + api_version + "\"");
  if (JsonString(d, "kind") != "ExecCredential")
    return Status::InvalidArgument("output has kind \"" + JsonString(d, "kind") +
                                   "\", not ExecCredential");
  const rapidjson::Value* status = JsonMember(d, "status");
  if (status == nullptr || !status->IsObject())
    return Status::InvalidArgument("output has no status object");
  auto str = [&](const char* key, std::string* v) -> Status {
    const rapidjson::Value* m = JsonMember(*status, key);
    if (m == nullptr || m->IsNull()) return Status::OK();
    if (!m->IsString())
      return Status::InvalidArgument(std::string("status.") + key + " is not a string");
    *v = std::string(m->GetString(), m->GetStringLength());
    return Status::OK();
  };
  ExecCredential c;
  std::string expiry;
  RETURN_NOT_OK(str("token", &c.token));
  RETURN_NOT_OK(str("clientCertificateData", &c.client_cert_pem));
  RETURN_NOT_OK(str("clientKeyData", &c.client_key_pem));
  RETURN_NOT_OK(str("expirationTimestamp", &expiry));
  if (c.client_cert_pem.empty() != c.client_key_pem.empty())
    return Status::InvalidArgument(
        "status has only one of clientCertificateData and clientKeyData; both are needed");
  if (c.token.empty() && c.client_cert_pem.empty())
    return Status::InvalidArgument(
        "status has neither a token nor clientCertificateData and clientKeyData");
  for (const auto* pem : {&c.client_cert_pem, &c.client_key_pem})
    if (!pem->empty() && pem->find("-----BEGIN") == std::string::npos)
      return Status::InvalidArgument(
          std::string("status.") +
          (pem == &c.client_cert_pem ? "clientCertificateData" : "clientKeyData") +
          " is not PEM (no -----BEGIN line)");
  if (!expiry.empty() && !ParseRfc3339(expiry, &c.expires_at))
    return Status::InvalidArgument("status.expirationTimestamp \"" + expiry +
                                   "\" is not an RFC 3339 time");
  return c;
}

namespace {

using SteadyClock = std::chrono::steady_clock;

// The controller's environment without the variables the plugin is given (exec.env and
// KUBERNETES_EXEC_INFO), then those.
std::vector<std::string> PluginEnvironment(const ExecConfig& exec, const std::string& exec_info) {
  auto overridden = [&](const char* entry) {
    std::string_view e(entry);
    auto eq = e.find('=');
    std::string_view name = e.substr(0, eq);
    if (name == "KUBERNETES_EXEC_INFO") return true;
    for (const auto& [n, v] : exec.env)
      if (n == name) return true;
    return false;
  };
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e)
    if (!overridden(*e)) env.emplace_back(*e);
  for (const auto& [n, v] : exec.env) env.push_back(n + "=" + v);
  env.push_back("KUBERNETES_EXEC_INFO=" + exec_info);
  return env;
}

// The null-terminated array posix_spawn takes for argv and envp; it points into `strings`.
std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The pipes of the plugin's stdout and stderr; none is left open when the second fails.
Status OpenPipes(int out_pipe[2], int err_pipe[2]) {
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return Status::Internal("exec plugin: pipe failed");
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return Status::Internal("exec plugin: pipe failed");
  }
  return Status::OK();
}

// Starts the plugin with stdin from /dev/null and its stdout and stderr on out_fd and err_fd.
// Returns posix_spawnp's result: 0 when *pid runs.
int SpawnPlugin(const std::vector<char*>& argv, const std::vector<char*>& envp, int out_fd,
                int err_fd, pid_t* pid) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
  posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so that a timeout kills whatever the plugin started too; default
  // signal handling and mask, whatever the controller's threads set up.
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGINT);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  int rc = posix_spawnp(pid, argv[0], &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  return rc;
}

// Reads the plugin's stdout and stderr (each bounded) until both are closed or the deadline
// passes (run->timed_out); closes both.
void ReadOutput(int out_fd, int err_fd, SteadyClock::time_point deadline, PluginRun* run) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* sinks[2] = {&run->out, &run->err};
  int open_fds = 2;
  while (open_fds > 0 && !run->timed_out) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
    if (left.count() <= 0) {
      run->timed_out = true;
      break;
    }
    int n = poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2 && n > 0; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[8192];
      ssize_t r = read(fds[i].fd, buf, sizeof buf);
      if (r > 0) {
        // Keep draining past the bound so the plugin does not block on a full pipe.
        if (sinks[i]->size() < kMaxOutputBytes) sinks[i]->append(buf, static_cast<size_t>(r));
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
}

// Reaps the plugin and sets run->exit_code. Its output is closed, but the process may linger (or
// have left a child holding nothing): it is waited for within the same deadline, then killed with
// its process group (run->timed_out).
void WaitForExit(pid_t pid, SteadyClock::time_point deadline, PluginRun* run) {
  int wstatus = 0;
  while (!run->timed_out) {
    pid_t w = waitpid(pid, &wstatus, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    if (SteadyClock::now() >= deadline) {
      run->timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (run->timed_out) {
    kill(-pid, SIGKILL);
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    return;
  }
  run->exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
}

}  // namespace

StatusOr<PluginRun> RunPlugin(const ExecConfig& exec, const std::string& exec_info,
                              double timeout_seconds) {
  // Everything the child needs is built before it exists.
  std::vector<std::string> argv_s{exec.command};
  argv_s.insert(argv_s.end(), exec.args.begin(), exec.args.end());
  std::vector<std::string> env_s = PluginEnvironment(exec, exec_info);
  const std::vector<char*> argv = CStrings(argv_s), envp = CStrings(env_s);
  int out_pipe[2], err_pipe[2];
  RETURN_NOT_OK(OpenPipes(out_pipe, err_pipe));
  pid_t pid = -1;
  const int rc = SpawnPlugin(argv, envp, out_pipe[1], err_pipe[1], &pid);
  close(out_pipe[1]);
  close(err_pipe[1]);
  PluginRun run;
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    if (rc == ENOENT || rc == EACCES || rc == ENOEXEC || rc == ENOTDIR) {
      run.not_found = true;
      run.err = std::strerror(rc);
      return run;
    }
    return Status::Internal("exec plugin: cannot start \"" + exec.command +
                            "\": " + std::strerror(rc));
  }
  const auto deadline = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                                 std::chrono::duration<double>(timeout_seconds));
  ReadOutput(out_pipe[0], err_pipe[0], deadline, &run);
  WaitForExit(pid, deadline, &run);
  return run;
}

StatusOr<ExecCredential> CredentialFromRun(const ExecConfig& exec, const PluginRun& run) {
  const std::string name = PluginName(exec);
  const std::string err_line = FirstLine(run.err);
  const std::string stderr_part = err_line.empty() ? "" : ": " + err_line;
  if (run.not_found)
    return Status::Unavailable(name + ": cannot run it (" + run.err + ")" +
                               (exec.install_hint.empty() ? "" : "; " + exec.install_hint));
  if (run.timed_out) return Status::Unavailable(name + ": no answer in time; killed" + stderr_part);
  if (run.exit_code != 0)
    return Status::Unavailable(name + ": " +
                               (run.exit_code < 0
                                    ? std::string("killed by a signal")
                                    : "exit status " + std::to_string(run.exit_code)) +
                               stderr_part);
  auto c = DecodeExecCredential(run.out, exec.api_version);
  if (!c.ok()) return Status::Unavailable(name + ": " + c.status().message() + stderr_part);
  return c;
}

StatusOr<ExecCredential> ObtainExecCredential(const ExecConfig& exec, const RestConfig& cluster,
                                              double timeout_seconds) {
  ASSIGN_OR_RETURN(PluginRun run, RunPlugin(exec, EncodeExecInfo(exec, cluster), timeout_seconds));
  return CredentialFromRun(exec, run);
}

ExecCredentialCache::ExecCredentialCache(Obtain obtain, const Clock* clock)
    : obtain_(std::move(obtain)), clock_(clock) {}

ExecCredentialCache::~ExecCredentialCache() {
  std::thread t;
  {
    MutexLock l(&mu_);
    t = std::move(renewer_);
  }
  if (t.joinable()) t.join();
}

void ExecCredentialCache::StoreLocked(const ExecCredential& c) {
  current_ = c;
  have_ = true;
  last_error_ = Status::OK();
  if (c.expires_at > 0) {
    const double now = clock_->WallSeconds();
    const double lead = std::min(kRenewLeadMaxSeconds, kRenewLeadShare * (c.expires_at - now));
    renew_at_ = c.expires_at - std::max(0.0, lead);
  }
}

void ExecCredentialCache::StartRenewalLocked() {
  // The previous renewal has ended (renewing_ is false): joining only reaps its thread.
  if (renewer_.joinable()) renewer_.join();
  renewing_ = true;
  ++runs_;
  renewer_ = std::thread([this] {
    auto c = obtain_();
    MutexLock l(&mu_);
    if (c.ok()) {
      StoreLocked(*c);
    } else {
      // The old credential still serves; try again after the hold, as after a failed run.
      last_error_ = c.status();
      failed_at_ = clock_->Now();
    }
    renewing_ = false;
    renewed_.SignalAll();
  });
}

StatusOr<ExecCredential> ExecCredentialCache::Get() {
  MutexLock l(&mu_);
  auto failure_held = [&]() REQUIRES(mu_) {
    return !last_error_.ok() && clock_->Now() - failed_at_ < FromSeconds(kFailureHoldSeconds);
  };
  for (;;) {
    const double now = clock_->WallSeconds();
    if (have_ && (current_.expires_at == 0 || now < current_.expires_at)) {
      if (current_.expires_at > 0 && now >= renew_at_ && !renewing_ && !failure_held())
        StartRenewalLocked();
      return current_;
    }
    // Expired or rejected while a renewal is in flight: its result is the one to use.
    if (!renewing_) break;
    renewed_.Wait(&mu_);
  }
  if (failure_held()) return last_error_;
  ++runs_;
  auto c = obtain_();
  if (!c.ok()) {
    have_ = false;
    last_error_ = c.status();
    failed_at_ = clock_->Now();
    return c;
  }
  StoreLocked(*c);
  return c;
}

void ExecCredentialCache::Invalidate(const ExecCredential& rejected) {
  MutexLock l(&mu_);
  if (have_ && current_.token == rejected.token &&
      current_.client_cert_pem == rejected.client_cert_pem)
    have_ = false;
}

bool ExecCredentialCache::renewing() const {
  MutexLock l(&mu_);
  return renewing_;
}

int ExecCredentialCache::runs() const {
  MutexLock l(&mu_);
  return runs_;
}

}  // namespace ds
