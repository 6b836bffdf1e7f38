// The one evictor: every eviction of the rebalancer (relief and drain) and every Event it posts
// leave through here, as the descheduler's PodEvictor holds dry-run and the limits. It owns
//   the budget   every limit (rebalance/eviction_budget.h), counted from the durable ledger
//                (rebalance/eviction_ledger.h, controller/eviction_ledger_store.h): read at the
//                first cycle and at each new leadership term, so the limits an approver signs
//                hold across restarts and failovers;
//   write-ahead  the ledger entry, then the node's record (controller/eviction_records.h), each
//                landed before the POST, and both taken back after a definite no;
//   the POST     .../pods/NAME/eviction, never DELETE; in dry-run only reported;
//   in motion    the pods evicted and still leaving their nodes (rebalance/in_motion.h), with
//                the usage they take away; rebuilt from the ledger by a new leader;
//   replacements the evictions whose replacement has not been seen running (perWorkload);
//   Events       on the pod, its node and its owner, through an EventLimiter.
// The cycle's reads (controller/cluster_reads.h) say which pods in motion are gone and which
// replacements run; the evictor only keeps the books. Call from the cycle's thread only.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/log_throttle.h"
#include "controller/event_limiter.h"
#include "controller/eviction_ledger_store.h"
#include "controller/eviction_records.h"
#include "controller/node_writer.h"
#include "controller/rebalance_tally.h"
#include "kube/kube_api.h"
#include "rebalance/eviction_budget.h"
#include "rebalance/in_motion.h"
#include "rebalance/rebalance_config.h"

namespace ds {

// What the cycle lends the rebalancer for one Relieve: its term, its gate, and the writers every
// node write goes through (controller/node_writer.h): the underused marks, and each eviction's
// time in the node's record.
struct ReliefWrites {
  NodeWriter* writer = nullptr;
  EvictionRecords* records = nullptr;  // REQUIRED: the write-ahead of every eviction
  // gate: asked before each eviction, Event and write (leader in the cycle's term, not
  // stopping); on_written: the cache takes each write through; on_progress: liveness.
  WriteHooks hooks;
  const std::atomic<bool>* stop = nullptr;
  // The leadership term the cycle runs in (0 without leader election): a new one reads the
  // ledger again, as another replica may have evicted meanwhile.
  uint64_t term = 0;
};

// An eviction awaiting its replacement (the last effectWindow's).
struct AwaitedReplacement {
  std::string workload, node;
  std::string selector;  // the evicted pod's labels, which its replacement has too
  double at_wall = 0;
  bool drain = false;  // of the mirror mode: releases perWorkload, not in the effect figures
};

class Evictor {
 public:
  // An evicted pod still listed this long after its eviction holds the node's mark no longer,
  // and is counted as gone from then on (stuck on an unreachable node, or never evicted).
  static constexpr double kInFlightLimitSeconds = 600;
  // RebalanceReport::problem stays this long after it was last seen (or until an eviction goes
  // through).
  static constexpr double kProblemSeconds = 900;
  // The longest replacement selector the ledger keeps (bytes).
  static constexpr size_t kLedgerMaxSelector = 256;
  // The `rule` of an eviction that drains an underused node.
  static constexpr const char* kUnderusedRule = "underused";

  // `max_settle_seconds`: the longest settle time of the rules (in_motion.h): a pod in motion is
  // forgotten once gone that long. All pointers must outlive the Evictor.
  Evictor(const RebalanceConfig& cfg, KubeApi* kube, const Clock* clock, LedgerPlace ledger,
          double max_settle_seconds, RebalanceTally* tally);

  // Starts a cycle at now_wall (local weekday and minute for the windows). At the first cycle and
  // in each new term, reads the ledger and rebuilds the budget, the pods in motion and the
  // awaited replacements from it. False when the ledger could not be read (or decoded): nothing
  // is evicted this cycle (logged, counted as ledger_unreadable).
  bool StartCycle(double now_wall, int weekday, int minute_of_day, uint64_t term);
  // The ledger part of StartCycle alone, for the start of a cycle before its marks are planned
  // (Rebalancer::BeginCycle); read once per term.
  bool ReadLedger(double now_wall, uint64_t term);

  // --- the budget ---
  // The first limit that forbids evicting `pod` now.
  Limit Check(const PodInfo& pod) const { return budget_.Check(pod); }
  // The limit that stops every eviction from `node` now (the record's lastEviction, written by
  // whichever replica led, has its cool-down too).
  Limit NodeLimit(const std::string& node, double recorded_eviction_wall, double now_wall) const;
  // Evictions this cycle may still make (perCycle).
  size_t RoomThisCycle() const;

  // --- in motion ---
  const std::vector<LeavingPod>& leaving() const { return leaving_; }
  // The pods of `node` evicted and still listed (within kInFlightLimitSeconds), and its last
  // eviction (0: none known to this replica).
  size_t InFlight(const std::string& node, double now_wall) const;
  double LastEviction(const std::string& node) const;
  // Is `pod` one this controller evicted that is still listed (its eviction may yet take effect:
  // an answer that never came, a move in the background)? Such a pod is no candidate again.
  bool StillListed(const PodInfo& pod) const;
  // The reads found pod `uid` (LeavingPod::uid, else its namespace/name) gone from its node.
  void Gone(const std::string& id, double now_wall);
  // Pods to look up this cycle: listed at the last look, within kInFlightLimitSeconds. Those past
  // it are counted as gone from now on (with a warning): they hold the mark no longer.
  std::vector<const LeavingPod*> ToLookUp(double now_wall);

  // --- replacements ---
  const std::vector<AwaitedReplacement>& awaited() const { return awaited_; }
  // A replacement of the awaited eviction at index `i` runs (on `node`): perWorkload released.
  void Replaced(size_t i);
  void ExpireAwaited(double now_wall);

  // --- evicting ---
  struct Outcome {
    bool open = true;      // false: the gate closed (no longer the leader, stopping)
    bool moved = false;    // evicted, or may have been (an answer that never came), or planned
    bool evicted = false;  // the API server accepted it (or dry-run planned it)
    // Why, in the counters' words: the eviction's result ("evicted", "blocked_by_pdb", ...), or
    // what kept it from being sent (a limit's name, "ledger_failed", ...); "" when the gate closed.
    std::string result;
  };
  // One chosen pod: its limits, the ledger and the node's record written ahead, the POST (or,
  // in dry-run, its report), the answer's bookkeeping and Events. `rec` says why (rule, load,
  // goal, destination); cpu and memory are the usage it takes off its node (LeavingPod).
  Outcome Evict(const PodInfo& pod, EvictionRecord rec, double cpu, double memory,
                const ReliefWrites& io);

  // --- Events ---
  // Posts `e` if the limiter admits it (per object and per cycle); counted otherwise.
  void Post(const EventInfo& e, const ReliefWrites& io);
  // A Warning Event on `pod`, naming `node`: something about it an operator must act on.
  void WarnOnPod(const PodInfo& pod, const std::string& node, const char* reason,
                 const char* action, std::string message, double at_wall, const ReliefWrites& io);
  // An Event on the owner of `pod` (its workload; none for a bare pod).
  void EventOnOwner(const PodInfo& pod, const std::string& type, const char* reason,
                    const char* action, std::string message, double at_wall,
                    const std::string& related_node, const ReliefWrites& io);

  // Writes the results of this cycle's evictions to the decision trail (one write at the end of a
  // cycle that evicted; the refused ones went with their take-back). Logged when it fails.
  void FlushTrail(const std::function<bool()>& gate);

  // What keeps every eviction from going through until an operator acts (RBAC's 403), "" none.
  std::string Problem(double now_wall);

 private:
  // The node's record (held-by lastEviction) or, for a drain, its last-drain annotation.
  WriteEnd WriteRecord(const std::string& node, bool drain, double at_wall, const ReliefWrites& io,
                       double* previous = nullptr);
  // The answer to an eviction: its result in *rec, its bookkeeping, and whether the pod may have
  // been evicted (false only for a definite no: a PDB, a 4xx, the pod gone).
  bool Answered(const PodInfo& pod, const EvictionResult& res, EvictionRecord* rec, double cpu,
                double memory, const ReliefWrites& io);
  // An eviction that happened, or may have: charged to every limit, in motion from its node.
  void Charge(const PodInfo& pod, const std::string& node, double at_wall, double cpu,
              double memory);
  void Forbidden(const PodInfo& pod, const EvictionRecord& rec, const Status& st,
                 const ReliefWrites& io);
  // Events on the pod, on the node and (a relief's) on the pod's owner, with the rule, its load and
  // its goal.
  void Announce(const PodInfo& evicted, const EvictionRecord& r, const ReliefWrites& io);
  void Restore(const std::vector<LedgerEntry>& ledger, double now_wall);
  // Takes a refused eviction's entry back out of the ledger; a failure is logged and counted.
  void TakeBack(const PodInfo& pod, double at_wall, const std::function<bool()>& gate);

  // Constant after construction.
  const RebalanceConfig cfg_;
  KubeApi* const kube_;
  const Clock* const clock_;
  const double max_settle_;
  RebalanceTally* const tally_;

  // The cycle's thread only.
  EvictionLedgerStore ledger_;
  bool ledger_read_ = false;
  uint64_t term_ = 0;
  EvictionBudget budget_;
  EventLimiter events_;
  LogThrottle throttle_{300};
  std::vector<LeavingPod> leaving_;
  std::map<std::string, double> last_eviction_;  // node -> this replica's last (or the ledger's)
  std::vector<AwaitedReplacement> awaited_;
  std::set<std::string> multiple_budgets_logged_;
  std::string problem_;
  double problem_at_ = 0;
};

// The annotations on each Eviction request (its metadata, which admission webhooks and the API
// server's audit log see; the pod itself is not changed): why (EvictionReason), who asks, and
// for a relief the rule, its value and its goal as the rule measures them, and where the
// replacement fits.
inline constexpr const char* kEvictionReasonAnnotation = "dynamic-scheduler.io/reason";
inline constexpr const char* kEvictionRequesterAnnotation = "dynamic-scheduler.io/requested-by";
inline constexpr const char* kEvictionRuleAnnotation = "dynamic-scheduler.io/rule";
inline constexpr const char* kEvictionValueAnnotation = "dynamic-scheduler.io/value";
inline constexpr const char* kEvictionGoalAnnotation = "dynamic-scheduler.io/goal";
inline constexpr const char* kEvictionDestinationAnnotation = "dynamic-scheduler.io/destination";
Labels EvictionAnnotations(const EvictionRecord& rec, bool drain);

// The label selector an evicted pod's replacement will match too: the owner's stable hash label
// when there is one, else all its labels.
std::string ReplacementSelector(const PodInfo& pod);

}  // namespace ds
