// The rebalancer's ledger: every eviction of the last hour, written ahead of the eviction where
// the next leader (or this controller after a restart) reads it. The limits an approver signs
// ("at most 20 evictions an hour", per node, per namespace, per workload) are counted from it, so
// they hold across restarts and failovers rather than per process lifetime; and the pods still
// leaving their nodes (rebalance/in_motion.h) are rebuilt from it by a new leader. This is the
// ledger's content and its wire form (a JSON array, kept in an annotation of a Lease in the
// controller's namespace: controller/eviction_ledger_store.h). Pure: values and bytes.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/status.h"

namespace ds {

struct LedgerEntry {
  double at_wall = 0;  // when it was written, just before the eviction was sent
  std::string node;
  std::string pod;  // namespace/name
  std::string uid;
  std::string workload;  // PodInfo::Workload(): namespace/Kind/name, "" for a bare pod
  std::string selector;  // the labels its replacement will match (its workload's stable hash)
  // Its usage as counted against the node (LeavingPod): cores and bytes.
  double cpu = 0, memory = 0;
  bool drain = false;  // the mirror mode's (rebalance.underused), not a hot node's relief

  std::string ns() const { return pod.substr(0, pod.find('/')); }
};

// The ledger keeps an hour (the longest limit's window) and at most this many entries, the
// oldest dropped first: an annotation must stay far below the API's 256 KiB for all of an
// object's annotations (an entry is about 200 bytes).
inline constexpr double kLedgerSpanSeconds = 3600;
inline constexpr size_t kLedgerMaxEntries = 500;

// The entries of `entries` still within the span at now_wall, oldest first, at most
// kLedgerMaxEntries. An entry "in the future" (the wall clock stepped back) is kept.
std::vector<LedgerEntry> TrimLedger(std::vector<LedgerEntry> entries, double now_wall);

// The annotation's value: a JSON array of objects with short keys
// ({"t","n","p","u","w","s","c","m","d"}). EncodeLedger(DecodeLedger(x)) keeps every entry.
std::string EncodeLedger(const std::vector<LedgerEntry>& entries);
// "" decodes as an empty ledger. Errors say which entry and field is wrong; an entry of a kind
// this code does not know (a missing field) is an error, never a guess: the caller then does not
// evict until it can read the ledger.
StatusOr<std::vector<LedgerEntry>> DecodeLedger(const std::string& text);

}  // namespace ds
