// dynamic-scheduler: labels nodes that Prometheus says are busy so that workloads with a soft
// node-affinity term avoid them. main only wires: parse, start, wait for a stop signal, stop.
#include <glog/logging.h>
#include <malloc.h>
#include <signal.h>

#include <iostream>
#include <string>
#include <vector>

#include "app/cleanup.h"
#include "app/controller.h"
#include "app/once.h"
#include "app/options.h"
#include "app/plugin.h"
#include "app/replay.h"
#include "common/log_fields.h"

int main(int argc, char** argv) {
  // Installed as kubectl-dynamic_scheduler: `kubectl dynamic-scheduler ...` (app/plugin.h); its
  // `replay` is the replay, as `dynamic-scheduler replay`.
  if (argc > 0 && ds::IsPluginName(argv[0]) && !(argc > 1 && std::string(argv[1]) == "replay")) {
    FLAGS_logtostderr = true;
    google::InitGoogleLogging(argv[0]);
    return ds::RunPlugin(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
  }
  // Each cycle runs its queries and writes on short-lived threads; with glibc's default of up to
  // 8 arenas per core every one of them can keep its own heap of freed response buffers. Two
  // arenas keep the resident size close to what is live (bench/RESULTS.md: RSS at 10,000 nodes).
  mallopt(M_ARENA_MAX, 2);
  // A fixed mmap threshold: blocks of 128 KiB and more (a rule's response body, about 1.2 MB at
  // 10,000 nodes; the cycle's per-node vectors) are mapped and unmapped, so freeing one gives
  // its pages back at once. glibc's default threshold is dynamic: it rises to the size of the
  // largest block freed, after which those bodies come from the heap and leave it fragmented
  // (bench/RESULTS.md, memory: 10,000 nodes under churn, 41 MB mean without it, 36 MB with it).
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  // Block the stop signals in every thread (those started below inherit the mask); main waits
  // for them with sigwait.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGHUP);  // reload rule.yaml now
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  auto options = ds::ParseOptions(&argc, &argv);
  // The log format before anything is logged, and whatever else is wrong with the options: with
  // -log_format=json a start-up error is a JSON line too. (An invalid -log_format is reported in
  // text: it is the error.)
  const auto log_format = ds::LogFormatFlag();
  const bool json_logs = log_format.ok() && *log_format == ds::LogFormat::kJson;
  if (json_logs) ds::UseJsonLogs();
  if (options.ok() && options->check_only) {
    std::cout << ds::DescribeConfig(*options);
    return 0;
  }
  if (options.ok() && options->cleanup) return ds::RunCleanupCommand(*options, std::cout);
  if (options.ok() && options->once) {
    // One pass of a few seconds: a stop signal ends it at once (the next pass finishes what it
    // left; an eviction is written ahead in the ledger first).
    pthread_sigmask(SIG_UNBLOCK, &sigs, nullptr);
    return ds::RunOnceCommand(*options, std::cout, std::cerr);
  }
  if (options.ok() && options->replay.on)
    return ds::RunReplayCommand(*options, std::cout, std::cerr);
  ds::Status started = options.status();
  std::unique_ptr<ds::Controller> controller;
  if (started.ok()) {
    controller = std::make_unique<ds::Controller>(*options);
    started = controller->Start();
  }
  if (!started.ok()) {
    if (json_logs) {
      LOG(ERROR) << "dynamic-scheduler: not started" << ds::Fields("err", started.message());
    } else {
      std::cerr << "dynamic-scheduler: " << started.message() << "\n";
    }
    return 2;
  }
  int sig = 0;
  while (sigwait(&sigs, &sig) == 0 && sig == SIGHUP) {
    LOG(INFO) << "SIGHUP: reading the rule file again" << ds::Fields("file", options->rule_file);
    controller->ReloadRules();
  }
  LOG(INFO) << "received a stop signal, stopping" << ds::Fields("signal", sig);
  controller->Stop();
  LOG(INFO) << "stopped";
  return 0;
}
