// `dynamic-scheduler -cleanup`: takes off every node what this controller put there, for an
// uninstall or before changing the label key. Looks at every node (no label selector: nodes that
// left the managed set too). What is ours: our mark (the rule file's key with its value, or with
// graded marks any level's value, as the node carries it: rules/mark.h), the
// mark an ownership record names (the key and value of an earlier configuration) while the node
// still has it, the taint a record names while the node has it (never a taint without a record:
// this controller may not have set it), and the record itself. A foreign value under our key is
// kept. Removals are conditional (kube/node_edit.h): a value changed meanwhile is left alone and
// reported. Run it with the controller stopped (scaled to zero): a running leader would mark nodes
// again.
#pragma once

#include <atomic>
#include <cstddef>
#include <optional>
#include <ostream>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "kube/kube_api.h"
#include "rules/mark.h"

namespace ds {

struct CleanupCounts {
  size_t nodes = 0;      // looked at
  size_t unmarked = 0;   // a mark removed (with its record, if any)
  size_t forgotten = 0;  // a record removed from a node without a mark of ours
  size_t kept = 0;       // a foreign value under our key left alone
  size_t changed = 0;    // changed between the LIST and the PATCH: left alone
  size_t failed = 0;     // a PATCH failed
};

// What -cleanup does to one node, as listed; nullopt when it carries nothing of ours. `note`
// explains it (and names a foreign value that is kept).
struct CleanupStep {
  std::optional<NodeEdit> edit;
  std::string note;
};
// `underused_value` (rebalance.underused's, "" when the mode is off): our key with that value is
// the mirror mode's mark, removed too.
CleanupStep PlanCleanup(const NodeInfo& node, const Mark& mark,
                        const std::string& underused_value = "");

struct CleanupOptions {
  Mark mark;
  std::string underused_value;  // see PlanCleanup
  bool dry_run = false;         // print what would be done, write nothing
  double qps = 100;             // writes per second (and burst)
};

// Lists all nodes (paged) and applies PlanCleanup to each, printing one line per node it acts on
// and a summary to `out`. Fails only when the nodes cannot be listed; failed PATCHes are counted.
StatusOr<CleanupCounts> RunCleanup(KubeApi* kube, const Clock* clock, const CleanupOptions& o,
                                   std::ostream& out);

struct Options;
// -cleanup as main runs it: connects as Options say, runs RunCleanup, and returns the exit
// status (0: all done; 1: some node could not be cleaned, or changed meanwhile and should be
// looked at again; 2: the nodes could not be listed).
int RunCleanupCommand(const Options& options, std::ostream& out);

}  // namespace ds
