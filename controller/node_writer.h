// The one place every node PATCH leaves from, holding every limit on writing nodes, as
// descheduler's single evictor holds all of its eviction limits: dry-run, the per-cycle cap (shared
// fairly: it starts where the last capped batch stopped), the rate limit, how many writes are in
// flight, retries with backoff, the API server's Retry-After, a backoff per node whose write was
// refused, and the write gate (leadership). A cycle hands it the planned changes of the mark
// (Write); the rebalancer's underused marks and eviction records and -cleanup's removals are
// single edits (WriteEdit) under the same limits. The writer decides how many are written, how
// fast, and whether at all. What to change is the planner's business (rules/planner.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/backoff.h"
#include "common/clock.h"
#include "common/log_throttle.h"
#include "common/mutex.h"
#include "controller/rate_limiter.h"
#include "kube/kube_api.h"
#include "rules/mark.h"
#include "rules/ownership.h"
#include "rules/planner.h"

namespace ds {

struct WriteLimits {
  bool dry_run = false;      // decide and log, never write
  size_t max_per_cycle = 0;  // 0 = unlimited; the rest waits for the next cycle
  double qps = 100;          // <= 0: unlimited
  double burst = 100;
  int attempts = 5;  // per change, for retryable errors (429, 5xx, 409)
  // PATCHes in flight at once (all share the rate limit): a slow API server must not turn the
  // rate limit into 1/latency.
  int concurrency = 4;
  // A node whose write failed for good (403, 422, retries used up) is left out for this long,
  // doubling with each further failure up to the maximum, so that it cannot take the per-cycle
  // budget from every other node cycle after cycle.
  double failed_node_backoff_seconds = 10;
  double failed_node_backoff_max_seconds = 600;
};

// One planned change of our mark (and its ownership record) on one node.
struct MarkWrite {
  std::string node;
  ChangeKind kind = ChangeKind::kMark;
  std::string record;       // kMark, kRecord: the ownership annotation's new value
  bool had_record = false;  // kUnmark: the node carries the annotation, removed with the mark
  std::string reason;       // for the log line of the change
  // Taint mode (kMark, kUnmark): the node as the plan read it. The taint is a read-modify-write
  // of the whole list at this resourceVersion (kube/node_edit.h); when the API server answers
  // 409 (someone wrote the node since), the writer reads the node again and edits afresh.
  struct Read {
    std::string resource_version;
    Labels labels;
    std::vector<Taint> taints;
  };
  Read read;
  // kUnmark: the parts of the mark that are ours (OwnedMarkParts, from the read that planned
  // it): only these are removed. A taint no record of ours names stays, even when the label
  // beside it goes.
  OwnedParts owned;
  // Graded marks: the level the change is about (Mark::Below): the one set (kMark), or the one
  // removed (kUnmark). 0 without levels.
  size_t below_hottest = 0;
};

// The PATCH for one change: kUnmark is conditional (only if the mark is still ours) and removes
// only w.owned. With a taint, kMark, and a kUnmark that removes our taint, carry the node's whole
// taint list as it must become, ours added or removed and every other taint kept as read,
// conditional on w.read.resource_version. The mark is `mark` at the level w.below_hottest.
NodeEdit EditFor(const MarkWrite& w, const Mark& mark);

// How one write ended, for a caller that keeps changes of its own (WriteHooks::on_done).
enum class WriteEnd {
  kWritten,
  kGone,        // the node was deleted
  kChanged,     // a removal found the node changed since it was planned: nothing written
  kRefused,     // refused for good (403, 422): the node is backed off; do not insist
  kRetryLater,  // not written, may be tried again: deferred, gate closed, stopped, brownout
};

// What became of one batch.
struct WriteOutcome {
  size_t ok = 0;
  size_t failed = 0;     // refused for good, or retries used up
  size_t deferred = 0;   // over the per-cycle cap, or not sent because the gate closed
  size_t held_back = 0;  // their node's last write failed for good: waiting out its backoff
  size_t changed = 0;    // a removal found the node changed since it was planned: not written
};

struct WriteCounters {
  // Writes that set or removed our label (a write of our taint alone counts only below).
  uint64_t sets = 0, removals = 0, errors = 0, retries = 0;
  uint64_t records = 0;  // ownership records written or removed without a change of the mark
  uint64_t changed = 0;  // removals not written: the node changed since they were planned
  uint64_t taint_sets = 0, taint_removals = 0;  // of sets and removals: those with our taint
  uint64_t taint_conflicts = 0;  // 409s on a taint edit (someone wrote the node): read again
};

// What the caller hooks into a batch; each may be empty.
struct WriteHooks {
  // Asked before each write starts, just before its bytes leave (after connecting) and while its
  // answer is awaited: false drops the write (or abandons it in flight). With leader election:
  // "this replica still leads, in the term the batch was planned in, and is not stopping".
  std::function<bool()> gate;
  // Gets how each write of the batch ended. Called from writer threads.
  std::function<void(const MarkWrite&, WriteEnd)> on_done;
  // Gets each PATCH response, so the caller's cache can take the write through before the watch
  // event arrives. Called from writer threads.
  std::function<void(const NodeInfo&)> on_written;
  // Called whenever a write attempt ends or a long wait wakes: the loop is alive (liveness).
  // Called from writer threads.
  std::function<void()> on_progress;
};

// One edit outside the mark's plan (NodeWriter::WriteEdit).
struct NodeWrite {
  std::string node;
  NodeEdit edit;
  std::string reason;   // for the log line
  bool record = false;  // the ownership record alone: counted as a record write
};

// How a single edit ended.
struct EditOutcome {
  WriteEnd end = WriteEnd::kRetryLater;
  std::optional<NodeInfo> node;  // kWritten: the node as the API server answered the PATCH
  Status status;                 // why not, for the caller's own report
  bool dry_run = false;          // nothing sent: the writer only logged it
};

class NodeWriter {
 public:
  // `kube` and `clock` must outlive the writer.
  NodeWriter(WriteLimits limits, Mark mark, KubeApi* kube, const Clock* clock);

  // Writes `writes` within every limit above: nodes in their failure backoff are held back; of
  // the rest at most limits.max_per_cycle, starting after the node where the previous capped
  // batch stopped. REQUIRES: `writes` sorted by node name (as a NodeSnapshot is), which is what
  // makes "after the node where it stopped" go round all nodes. Returns when all are done or
  // dropped, or early once *stop is set. Call from one thread at a time.
  WriteOutcome Write(const std::vector<MarkWrite>& writes, const WriteHooks& hooks,
                     const std::atomic<bool>* stop);

  // Writes one edit that is not a planned change of the mark, within the same limits as a batch
  // but the per-cycle cap (each is a decision of its own, and they are few): dry-run, the gate,
  // Retry-After, the rate limit, retries with backoff and the node's refusal backoff. kChanged:
  // a conditional edit found the node changed since it was read (a removal's test failed, or a
  // 409 on an edit made at a resourceVersion): nothing written, nothing wrong with the node.
  // kRetryLater also when the gate closed or *stop was set, or the node is backed off. The hooks'
  // on_written gets the answer as in a batch; on_done is not called. Thread-safe with Write.
  EditOutcome WriteEdit(const NodeWrite& w, const WriteHooks& hooks, const std::atomic<bool>* stop);

  WriteCounters Counters() const;  // thread-safe

 private:
  enum class Result { kOk, kGone, kChanged, kFailed, kDeferred, kStopped };
  // The writes of this batch in the order to try them, and the counts of those left out.
  std::vector<const MarkWrite*> Select(const std::vector<MarkWrite>& writes, WriteOutcome* out);
  Result WriteOne(const MarkWrite& w, const WriteHooks& hooks, const std::atomic<bool>* stop);
  // WriteOne's steps. Each returns how the write ends, or nothing to go on.
  bool GateClosed(const WriteHooks& hooks);  // the gate said no (logged, throttled)
  // Before each attempt: the gate, the server's Retry-After, a rate-limit token, the gate again.
  std::optional<Result> WaitToSend(const WriteHooks& hooks, const std::atomic<bool>* stop);
  Result Written(const MarkWrite& w, const NodeEdit& edit, const NodeInfo& node,
                 const std::string& what, const WriteHooks& hooks);
  // An error answer: the end it means, or nothing when the write is to be tried again.
  std::optional<Result> Refused(const MarkWrite& w, const Mark& mark, const NodeEdit& edit,
                                const Status& st, bool last_attempt);
  // The rest of an error answer, for any edit: gate closed (kDeferred), a refusal or the last
  // attempt (kFailed, a refusal backs the node off), or nothing when it is to be tried again.
  std::optional<Result> Failed(const std::string& node, const NodeEdit& edit, const Status& st,
                               bool last_attempt);
  // How long to wait before the next attempt after `st`.
  static Duration RetryWait(const Status& st, Backoff* backoff);
  // After a taint edit's 409: the node read again, and *w made afresh from it (*fresh_read); an
  // end when the node is gone or nothing of ours is left to remove.
  std::optional<Result> ReadAgain(MarkWrite* w, const Mark& mark, bool* fresh_read);
  void RecordFailure(const std::string& node);  // starts or doubles the node's backoff
  bool IsBackedOff(const std::string& node) const;
  // Waits until no Retry-After the server gave any writer is in force. False if stopped.
  bool WaitForRetryAfter(const WriteHooks& hooks, const std::atomic<bool>* stop);

  const WriteLimits limits_;
  const Mark mark_;
  KubeApi* const kube_;
  const Clock* const clock_;
  RateLimiter limiter_;
  LogThrottle throttle_{300};
  std::string resume_after_;  // Write's thread only: the node the last capped batch stopped at

  mutable Mutex mu_;
  WriteCounters counters_ GUARDED_BY(mu_);
  // The API server asked us (Retry-After) not to write before this time; every writer and every
  // later batch waits for it, not just the retry of the request that got the answer.
  TimePoint not_before_ GUARDED_BY(mu_){};
  struct NodeBackoff {
    TimePoint until{};
    Duration delay{};
  };
  std::map<std::string, NodeBackoff> failing_ GUARDED_BY(mu_);
};

}  // namespace ds
