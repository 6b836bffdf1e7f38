// Where the eviction ledger (rebalance/eviction_ledger.h) lives: an annotation of a Lease of its
// own in the controller's namespace (by default the leader election's lease name with
// "-evictions"), so the RBAC it needs is exactly get/update of that one object (and create in the
// namespace, which leases already have). Not the leader's Lease itself: the elector renews that
// one every few seconds with a resourceVersion precondition, and every eviction's write would
// race it. Every write carries the resourceVersion it read, so two replicas that both think they
// lead cannot lose each other's entries: the loser re-reads and merges.
// Called from the cycle's thread only.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kube/kube_api.h"
#include "rebalance/decision_trail.h"
#include "rebalance/eviction_ledger.h"

namespace ds {

// The annotation that holds the ledger.
inline constexpr const char* kLedgerAnnotation = "dynamic-scheduler.io/evictions";

struct LedgerPlace {
  std::string ns = "default";
  std::string name = "dynamic-scheduler-evictions";
};

// What the ledger and the trail may take of the Lease's annotations together: the API refuses an
// object whose annotations exceed 256 KiB, and a refused write would stop every eviction. A full
// ledger (kLedgerMaxEntries) is about 170 KB with long node names; the trail gets what is left,
// its oldest records dropped first (TrailWithin).
inline constexpr size_t kAnnotationBudget = 200 * 1024;
// `trail` encoded (EncodeTrail) in at most `bytes`, without as many of its oldest records as it
// takes ("[]" when none fits).
std::string TrailWithin(std::deque<EvictionRecord> trail, size_t bytes);

class EvictionLedgerStore {
 public:
  // `kube` must outlive this. `timeout_seconds` bounds each GET and PUT. `keep_decisions`: the
  // trail's length (rebalance/decision_trail.h), 0: none kept.
  EvictionLedgerStore(KubeApi* kube, LedgerPlace place, double timeout_seconds = 10,
                      size_t keep_decisions = 0);

  // The ledger as stored (TrimLedger'd at now_wall). A Lease that does not exist yet is an empty
  // ledger; one that cannot be read, or holds an annotation that cannot be decoded, is an error
  // (the caller evicts nothing until it reads).
  StatusOr<std::vector<LedgerEntry>> Read(double now_wall);
  // Adds `entry` and writes the ledger back before the eviction is sent (write-ahead): OK only
  // once the API server has it. `gate` (optional) is asked before each write (false: kCancelled,
  // nothing written). A conflict (another writer) re-reads and merges, a few times.
  Status Append(const LedgerEntry& entry, double now_wall, const std::function<bool()>& gate);
  // Takes the entry of `pod` (namespace/name) written at `at_wall` back out: the eviction was
  // refused for sure (a PDB, the pod gone), so no limit is charged for it. A failure leaves it in
  // (erring toward counting one too many).
  Status Remove(const std::string& pod, double at_wall, double now_wall,
                const std::function<bool()>& gate);

  const LedgerPlace& place() const { return place_; }

  // The trail (rebalance/decision_trail.h). Note: this replica's record of an eviction (a newer
  // one replaces the record of the same pod and time), written with the next Append or Remove,
  // or by Flush. Trail: the stored trail as last read or written, with what is noted.
  void Note(const EvictionRecord& r);
  // Takes back a note whose eviction was never sent (the write-ahead failed, or the gate closed).
  void Forget(const std::string& pod, double at_wall);
  std::deque<EvictionRecord> Trail() const;
  // Writes the trail when a note is not written yet (one PUT; none otherwise).
  Status Flush(double now_wall, const std::function<bool()>& gate);

 private:
  // Reads the Lease into record_ (nullopt after a 404: it is created by the first write).
  Status Load();
  // `change` applied to the ledger read, then written with the read's resourceVersion.
  Status Update(const std::function<void(std::vector<LedgerEntry>*)>& change, double now_wall,
                const std::function<bool()>& gate);

  KubeApi* const kube_;
  const LedgerPlace place_;
  const double timeout_;
  bool loaded_ = false;
  std::optional<LeaseRecord> record_;  // as last read or written; nullopt: no Lease yet
  const size_t keep_;
  std::deque<EvictionRecord> noted_;  // this replica's records, the newest keep_
  bool unwritten_ = false;            // a note since the last write
};

}  // namespace ds
