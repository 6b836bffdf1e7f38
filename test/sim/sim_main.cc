// kube-sim: a Kubernetes API simulator for Nodes, for the tests and the demo.
//
//   kube-sim -dir /tmp/sim -nodes 6           # TLS on a free port, writes kubeconfigs into -dir
//   kube-sim -plain -port 8080 -nodes 100     # plain HTTP, anonymous admin (local tests only)
//
// -dir receives: ca.crt, server.pem, port, and kubeconfigs:
//   kubeconfig        client certificate, CN=dynamic-scheduler
//   kubeconfig-token  bearer token of user "dynamic-scheduler"
//   kubeconfig-admin  client certificate, CN=admin
//   kubeconfig-readonly  token of a user that may only get/list/watch
//   kubeconfig-anonymous no credentials (gets 401)
#include <dlfcn.h>
#include <gflags/gflags.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "common/base64.h"
#include "test/sim/sim_server.h"

DEFINE_string(dir, "", "Working directory for certificates, kubeconfigs and the port file.");
DEFINE_int32(port, 0, "Port to listen on (0 = any free port; see <dir>/port).");
DEFINE_bool(plain, false, "Plain HTTP with anonymous admin access instead of TLS.");
DEFINE_int32(nodes, 3, "Nodes to create at start.");
DEFINE_int32(control_plane, 0, "How many of them are control-plane nodes.");
DEFINE_string(prefix, "node", "Node name prefix.");
DEFINE_int32(window, 20000,
             "Watch events kept; watches from older resourceVersions get 410 Expired.");
DEFINE_double(bookmark_seconds, 5, "Seconds between BOOKMARK events on watches that allow them.");
DEFINE_double(heartbeat_seconds, 0,
              "If > 0, every node's heartbeat is updated this often (MODIFIED events).");
DEFINE_int32(threads, 64,
             "HTTP worker threads (each open watch holds one; with -keep_alive, so does each idle "
             "connection, for up to 90 s).");
DEFINE_bool(keep_alive, false,
            "Keep connections open between requests as API servers do (for benchmarks; a "
            "simulated watch drop then may not reach the client).");
DEFINE_bool(
    request_log, false,
    "Append every authenticated request (time, user, method, target) to <dir>/requests.log: "
    "what a "
    "benchmark counts of a client's requests on kept-alive connections.");
DEFINE_int32(server_cert_days, 3650,
             "Validity of the generated server certificate in days; negative: already "
             "expired (to test clients' verification).");
DEFINE_string(
    rbac, "",
    "JSON file of RBAC rules per user (see sim_rbac.h); users it lists get only those rules.");
DEFINE_double(pod_grace_seconds, 1,
              "Simulated time a graceful pod deletion (DELETE or eviction) takes before the pod "
              "is gone; 0 = at once. Never longer than the pod's own grace period.");
DEFINE_double(pod_start_seconds, 0.5,
              "Time from binding a pod to a node until it is Running and Ready.");
DEFINE_double(vm_migration_seconds, 5,
              "Simulated time a VM launcher's live migration (KubeVirt's background eviction) "
              "takes before the source pod goes; a pod's annotation "
              "sim.dynamic-scheduler.io/live-migration-seconds overrides it.");
DEFINE_string(token, "sim-token", "Bearer token of the user dynamic-scheduler.");
DEFINE_int32(events_max, 10000,
             "core/v1 Events kept; beyond this the oldest is dropped (as the API server's "
             "--event-ttl would); 0 = no limit.");

namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// See civetweb_openssl3_compat.cc: must be loaded before CivetWeb dlopens "libssl.so".
bool LoadOpenSsl3Shim() {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return false;
  std::string dir(exe, static_cast<size_t>(n));
  dir = dir.substr(0, dir.rfind('/'));
  std::string path = dir + "/libcivetweb_openssl3_compat.so";
  if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    std::cerr << "kube-sim: cannot load " << path << ": " << dlerror() << "\n";
    return false;
  }
  return true;
}

bool Exists(const std::string& p) { return std::ifstream(p).good(); }

// Creates a CA, a server certificate for 127.0.0.1/localhost and client certificates.
bool MakeCerts(const std::string& d) {
  if (Exists(d + "/server.pem") && Exists(d + "/client.crt")) return true;
  std::string cmd =
      "set -e; cd '" + d +
      "'; "
      "O='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes'; "
      "openssl req -x509 $O -keyout ca.key -out ca.crt -days 3650 -subj /CN=kube-sim-ca "
      "2>/dev/null; "
      "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\nextendedKeyUsage=serverAuth\\n' > "
      "server.ext; "
      "openssl req $O -keyout server.key -out server.csr -subj /CN=kube-sim 2>/dev/null; "
      "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt "
      "-days " +
      std::to_string(FLAGS_server_cert_days) +
      " "
      "-extfile server.ext 2>/dev/null; cat server.key server.crt > server.pem; "
      "printf 'extendedKeyUsage=clientAuth\\n' > client.ext; "
      "for u in client:dynamic-scheduler admin:admin; do f=${u%%:*}; cn=${u#*:}; "
      "openssl req $O -keyout $f.key -out $f.csr -subj \"/O=sim/CN=$cn\" 2>/dev/null; "
      "openssl x509 -req -in $f.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out $f.crt -days "
      "3650 "
      "-extfile client.ext 2>/dev/null; done";
  return std::system(cmd.c_str()) == 0;
}

void WriteKubeconfig(const std::string& path, const std::string& server, const std::string& ca,
                     const std::string& user_yaml) {
  std::ofstream out(path);
  out << "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster:\n    server: " << server
      << "\n";
  if (!ca.empty()) out << "    certificate-authority-data: " << ds::Base64Encode(ca) << "\n";
  out << "users:\n- name: sim-user\n  user:\n"
      << user_yaml
      << "contexts:\n- name: sim\n  context:\n    cluster: sim\n    user: "
         "sim-user\ncurrent-context: sim\n";
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage("Kubernetes API simulator for Nodes (tests and demo)");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (FLAGS_dir.empty()) {
    std::cerr << "kube-sim: -dir is required\n";
    return 2;
  }
  std::system(("mkdir -p '" + FLAGS_dir + "'").c_str());
  if (!FLAGS_plain && !LoadOpenSsl3Shim()) return 2;
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  sim::Store store(static_cast<size_t>(FLAGS_window));
  store.Populate(static_cast<size_t>(FLAGS_nodes), static_cast<size_t>(FLAGS_control_plane),
                 FLAGS_prefix);
  sim::PodStoreOptions pod_opts;
  pod_opts.window = static_cast<size_t>(FLAGS_window);
  pod_opts.grace_seconds = FLAGS_pod_grace_seconds;
  pod_opts.start_seconds = FLAGS_pod_start_seconds;
  pod_opts.migration_seconds = FLAGS_vm_migration_seconds;
  sim::PodStore pods(&store, pod_opts);
  sim::VolumeStore volumes(&store);
  pods.UseVolumes(&volumes);
  sim::EventStoreOptions event_opts;
  event_opts.max_events = static_cast<size_t>(std::max(FLAGS_events_max, 0));
  event_opts.window = static_cast<size_t>(FLAGS_window);
  sim::EventStore events(&store, event_opts);
  sim::HpaStore hpas(&store);
  sim::ServiceStore services(&store);
  sim::ServerOptions opts;
  opts.listen = "127.0.0.1:" + std::to_string(FLAGS_port);
  opts.threads = FLAGS_threads;
  opts.keep_alive = FLAGS_keep_alive;
  opts.bookmark_seconds = FLAGS_bookmark_seconds;
  opts.write_log_file = FLAGS_dir + "/writes.jsonl";
  if (FLAGS_request_log) opts.request_log_file = FLAGS_dir + "/requests.log";
  opts.tokens[FLAGS_token] = sim::User{"dynamic-scheduler", false, "", {}};
  opts.tokens["sim-readonly-token"] = sim::User{"viewer", true, "", {}};
  if (!FLAGS_rbac.empty()) {
    std::string err;
    if (!sim::LoadRbac(ReadAll(FLAGS_rbac), &opts.rbac, &err)) {
      std::cerr << "kube-sim: -rbac " << FLAGS_rbac << ": " << err << "\n";
      return 2;
    }
  }
  if (FLAGS_plain) {
    opts.anonymous = true;
  } else {
    if (!MakeCerts(FLAGS_dir)) {
      std::cerr << "kube-sim: could not create certificates with openssl in " << FLAGS_dir << "\n";
      return 2;
    }
    opts.tls = true;
    opts.server_pem = FLAGS_dir + "/server.pem";
    opts.ca_file = FLAGS_dir + "/ca.crt";
  }
  std::remove(opts.write_log_file.c_str());
  if (!opts.request_log_file.empty()) std::remove(opts.request_log_file.c_str());
  sim::Server server(&store, opts, &pods, &events, &volumes, &hpas, &services);
  std::string err;
  if (!server.Start(&err)) {
    std::cerr << "kube-sim: " << err << "\n";
    return 2;
  }
  std::string url =
      std::string(FLAGS_plain ? "http" : "https") + "://127.0.0.1:" + std::to_string(server.port());
  std::string ca = FLAGS_plain ? "" : ReadAll(FLAGS_dir + "/ca.crt");
  auto cert_user = [&](const std::string& f) {
    return "    client-certificate-data: " +
           ds::Base64Encode(ReadAll(FLAGS_dir + "/" + f + ".crt")) +
           "\n    client-key-data: " + ds::Base64Encode(ReadAll(FLAGS_dir + "/" + f + ".key")) +
           "\n";
  };
  if (FLAGS_plain) {
    WriteKubeconfig(FLAGS_dir + "/kubeconfig", url, "", "    {}\n");
  } else {
    WriteKubeconfig(FLAGS_dir + "/kubeconfig", url, ca, cert_user("client"));
    WriteKubeconfig(FLAGS_dir + "/kubeconfig-admin", url, ca, cert_user("admin"));
    WriteKubeconfig(FLAGS_dir + "/kubeconfig-token", url, ca, "    token: " + FLAGS_token + "\n");
    WriteKubeconfig(FLAGS_dir + "/kubeconfig-readonly", url, ca, "    token: sim-readonly-token\n");
    WriteKubeconfig(FLAGS_dir + "/kubeconfig-anonymous", url, ca, "    {}\n");
  }
  {
    std::ofstream(FLAGS_dir + "/port.tmp") << server.port() << "\n";
    std::rename((FLAGS_dir + "/port.tmp").c_str(), (FLAGS_dir + "/port").c_str());
  }
  std::cout << "kube-sim: serving " << FLAGS_nodes << " nodes on " << url << " (kubeconfigs in "
            << FLAGS_dir << ")" << std::endl;

  std::atomic<bool> stop{false};
  std::thread heartbeat([&] {
    if (FLAGS_heartbeat_seconds <= 0) return;
    while (!stop) {
      for (int i = 0; i < FLAGS_heartbeat_seconds * 10 && !stop; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (!stop) store.Heartbeat();
    }
  });
  // The controllers the simulator stands in for (apps, scheduler, kubelet, disruption, KubeVirt).
  std::thread controllers([&] {
    while (!stop) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      pods.Tick();
    }
  });
  int sig;
  sigwait(&sigs, &sig);
  stop = true;
  heartbeat.join();
  controllers.join();
  server.Stop();
  return 0;
}
