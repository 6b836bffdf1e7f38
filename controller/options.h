// Command-line flags, copied once into a validated Options struct; nothing else reads FLAGS_.
#pragma once

#include <string>

#include "common/status.h"
#include "controller/leader_elector.h"
#include "controller/reconciler.h"
#include "rules/rule_config.h"

namespace ds {

struct Options {
  std::string rule_file;
  bool check_only = false;  // -check_config: validate and exit
  std::string prometheus_url;
  std::string prometheus_token_file;
  double query_timeout_seconds = 5;
  std::string kubeconfig;
  std::string context;
  std::string web_addr;
  double resync_seconds = 600;
  double watch_idle_timeout_seconds = 150;
  ReconcilerOptions reconciler;
  bool leader_elect = false;
  // lease_namespace empty: POD_NAMESPACE, then the kubeconfig context's or service account's
  // namespace, then "default" (main resolves it once the REST config is known).
  LeaderElectionOptions leader_election;
  RuleConfig rules;
};

// Parses argv (gflags; single- and double-dash forms), loads the rule file, and validates.
// On error returns a message that names the flag or file.
StatusOr<Options> ParseOptions(int* argc, char*** argv);

}  // namespace ds
