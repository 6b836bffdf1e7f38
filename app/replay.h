// `dynamic-scheduler replay`: what the controller would have done over a stretch of Prometheus'
// history (replay/replay_engine.h), with the managed nodes of today. The I/O shell: it lists
// the nodes (or reads a saved `kubectl get nodes -o json`), asks Prometheus for each rule's
// history in chunks, hands them to the engine, and writes replay.json and report.html (with the
// right-sizing of replay/right_sizing.h from the pods listed now, and with -compare the second
// rule file replayed on the same history and nodes: replay/compare.h). It never writes to the
// cluster: its only Kubernetes calls are the node and pod LISTs.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "app/options.h"
#include "common/status.h"
#include "kube/node_object.h"
#include "kube/pod_object.h"
#include "replay/replay_engine.h"

namespace ds {

// The managed nodes of a NodeList body (rule.yaml's nodeSelector applied, as the node cache
// does on the server). Errors name `source`.
StatusOr<std::vector<ReplayNode>> ManagedReplayNodes(std::string node_list_json,
                                                     const std::string& selector,
                                                     const std::string& source);
// The same nodes whole (allocatable, taints, ...), as the rebalancer's estimate needs them.
StatusOr<std::vector<NodeInfo>> ManagedNodeInfos(std::string node_list_json,
                                                 const std::string& selector,
                                                 const std::string& source);

// The pods of a saved `kubectl get pods -A -o json` (-pods_file). Errors name `source`.
StatusOr<std::vector<PodInfo>> SavedPods(std::string pod_list_json, const std::string& source);

// Runs the replay the options describe, writes <out_dir>/replay.json and report.html, prints the
// summary and
// where the time went to `out`. Returns the exit code: 0 done, 2 an error (printed to `err`,
// naming the file, flag, rule or answer).
int RunReplayCommand(const Options& options, std::ostream& out, std::ostream& err);

}  // namespace ds
