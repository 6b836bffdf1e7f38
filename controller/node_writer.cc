#include "controller/node_writer.h"

#include <glog/logging.h>

#include <algorithm>
#include <optional>
#include <thread>

#include "common/backoff.h"
#include "common/log_fields.h"

namespace ds {

NodeWriter::NodeWriter(WriteLimits limits, Mark mark, KubeApi* kube, const Clock* clock)
    : limits_(limits),
      mark_(std::move(mark)),
      kube_(kube),
      clock_(clock),
      limiter_(limits.qps, limits.burst, clock) {}

NodeEdit EditFor(const MarkWrite& w, const Mark& graded) {
  const Mark mark = graded.Below(w.below_hottest);
  NodeEdit e;
  e.label.key = mark.key;
  e.label.value = mark.value;
  e.annotation.key = kHeldByAnnotation;
  e.annotation.value = w.record;
  const NodeEdit::Op label = mark.UsesLabel() ? NodeEdit::Op::kSet : NodeEdit::Op::kKeep;
  switch (w.kind) {
    case ChangeKind::kMark:
      e.label.op = label;
      e.annotation.op = NodeEdit::Op::kSet;
      break;
    case ChangeKind::kRecord:
      e.annotation.op = NodeEdit::Op::kSet;
      break;
    case ChangeKind::kUnmark:
      if (w.owned.label) e.label.op = NodeEdit::Op::kRemove;
      if (w.had_record) e.annotation.op = NodeEdit::Op::kRemove;
      break;
    case ChangeKind::kForget:
      e.annotation.op = NodeEdit::Op::kRemove;
      break;
  }
  // A removal that leaves the taints alone (ours is not there, or no record names it) does not
  // rewrite the list: the label's removal is then a conditional JSON Patch of its own.
  if (mark.UsesTaint() &&
      (w.kind == ChangeKind::kMark || (w.kind == ChangeKind::kUnmark && w.owned.taint))) {
    e.set_taints = true;
    e.resource_version = w.read.resource_version;
    e.taints = w.kind == ChangeKind::kMark ? mark.WithTaint(w.read.taints)
                                           : mark.WithoutTaint(w.read.taints);
  }
  return e;
}

WriteCounters NodeWriter::Counters() const {
  MutexLock l(&mu_);
  return counters_;
}

std::vector<const MarkWrite*> NodeWriter::Select(const std::vector<MarkWrite>& writes,
                                                 WriteOutcome* out) {
  std::vector<const MarkWrite*> due;
  {
    MutexLock l(&mu_);
    const TimePoint now = clock_->Now();
    for (const MarkWrite& w : writes) {
      auto it = failing_.find(w.node);
      if (it != failing_.end() && now < it->second.until) {
        ++out->held_back;
        continue;
      }
      due.push_back(&w);
    }
  }
  if (limits_.max_per_cycle == 0 || due.size() <= limits_.max_per_cycle) {
    resume_after_.clear();
    return due;
  }
  // Over the cap: start after the node the previous capped batch stopped at, so that the budget
  // goes round all nodes instead of always to the first ones by name.
  size_t start = 0;
  if (!resume_after_.empty()) {
    auto it = std::find_if(due.begin(), due.end(),
                           [&](const MarkWrite* w) { return w->node > resume_after_; });
    start = it == due.end() ? 0 : static_cast<size_t>(it - due.begin());
  }
  std::vector<const MarkWrite*> chosen;
  for (size_t k = 0; k < limits_.max_per_cycle; ++k)
    chosen.push_back(due[(start + k) % due.size()]);
  out->deferred += due.size() - chosen.size();
  resume_after_ = chosen.back()->node;
  LOG(WARNING) << "label changes deferred to the next cycle (max_writes_per_cycle)"
               << Fields("deferred", due.size() - chosen.size());
  return chosen;
}

WriteOutcome NodeWriter::Write(const std::vector<MarkWrite>& writes, const WriteHooks& hooks,
                               const std::atomic<bool>* stop) {
  WriteOutcome out;
  std::vector<const MarkWrite*> chosen = Select(writes, &out);
  if (out.held_back > 0 && throttle_.ShouldLog("held-back", clock_->Now()))
    LOG(WARNING) << "label changes held back: their node's last write was refused (backoff)"
                 << Fields("held_back", out.held_back);
  if (limits_.dry_run) {
    for (const MarkWrite* w : chosen)
      LOG(INFO) << "dry-run: would " << DescribeNodeEdit(EditFor(*w, mark_))
                << Fields("node", w->node, "reason", w->reason);
    return out;
  }
  Mutex out_mu;
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next++) < chosen.size() && !stop->load();) {
      Result r = WriteOne(*chosen[i], hooks, stop);
      if (hooks.on_progress) hooks.on_progress();
      if (hooks.on_done) {
        WriteEnd end = r == Result::kOk        ? WriteEnd::kWritten
                       : r == Result::kGone    ? WriteEnd::kGone
                       : r == Result::kChanged ? WriteEnd::kChanged
                                               : WriteEnd::kRetryLater;
        if (r == Result::kFailed && IsBackedOff(chosen[i]->node)) end = WriteEnd::kRefused;
        hooks.on_done(*chosen[i], end);
      }
      MutexLock l(&out_mu);
      if (r == Result::kOk)
        ++out.ok;
      else if (r == Result::kFailed)
        ++out.failed;
      else if (r == Result::kDeferred)
        ++out.deferred;
      else if (r == Result::kChanged)
        ++out.changed;
    }
  };
  size_t threads =
      std::min<size_t>(static_cast<size_t>(std::max(1, limits_.concurrency)), chosen.size());
  std::vector<std::thread> workers;
  for (size_t i = 1; i < threads; ++i) workers.emplace_back(worker);
  if (threads > 0) worker();  // this thread is one of the writers
  for (auto& t : workers) t.join();
  return out;
}

bool NodeWriter::WaitForRetryAfter(const WriteHooks& hooks, const std::atomic<bool>* stop) {
  for (;;) {
    TimePoint not_before;
    {
      MutexLock l(&mu_);
      not_before = not_before_;
    }
    if (stop->load()) return false;
    const TimePoint now = clock_->Now();
    if (now >= not_before) return true;
    // In slices, so that a long Retry-After still shows a live loop; another writer may also
    // push the time further meanwhile.
    if (!clock_->SleepUntil(std::min(not_before, now + std::chrono::seconds(10)), stop))
      return false;
    if (hooks.on_progress) hooks.on_progress();
  }
}

bool NodeWriter::IsBackedOff(const std::string& node) const {
  MutexLock l(&mu_);
  auto it = failing_.find(node);
  return it != failing_.end() && clock_->Now() < it->second.until;
}

void NodeWriter::RecordFailure(const std::string& node) {
  MutexLock l(&mu_);
  NodeBackoff& b = failing_[node];
  const Duration max = FromSeconds(limits_.failed_node_backoff_max_seconds);
  b.delay = b.delay == Duration::zero() ? FromSeconds(limits_.failed_node_backoff_seconds)
                                        : std::min(max, b.delay * 2);
  b.until = clock_->Now() + b.delay;
}

bool NodeWriter::GateClosed(const WriteHooks& hooks) {
  if (!hooks.gate || hooks.gate()) return false;
  if (throttle_.ShouldLog("gate", clock_->Now()))
    LOG(WARNING) << "not the leader any more (or stopping): the remaining label writes of "
                    "this cycle are dropped";
  return true;
}

std::optional<NodeWriter::Result> NodeWriter::WaitToSend(const WriteHooks& hooks,
                                                         const std::atomic<bool>* stop) {
  // Asked before the waits too: a write that will be dropped must not wait for, or use up, a
  // rate-limit token.
  if (GateClosed(hooks)) return Result::kDeferred;
  if (!WaitForRetryAfter(hooks, stop)) return Result::kStopped;
  if (!limiter_.Acquire(stop)) return Result::kStopped;
  // Leadership can end while a cycle writes (renew deadline passed): a standby may take over
  // once the lease expires, so no write may start after that.
  if (GateClosed(hooks)) return Result::kDeferred;
  return std::nullopt;
}

NodeWriter::Result NodeWriter::Written(const MarkWrite& w, const NodeEdit& edit,
                                       const NodeInfo& node, const std::string& what,
                                       const WriteHooks& hooks) {
  if (hooks.on_written) hooks.on_written(node);
  LOG(INFO) << what;
  MutexLock l(&mu_);
  // A taint-mode write changes no label: it counts as a taint write only, so that the label
  // counters (dynamic_scheduler_label_writes_total) say how often labels changed.
  if (w.kind == ChangeKind::kRecord)
    ++counters_.records;
  else if (edit.label.op != NodeEdit::Op::kKeep)
    ++(w.kind == ChangeKind::kMark ? counters_.sets : counters_.removals);
  if (edit.set_taints)
    ++(w.kind == ChangeKind::kMark ? counters_.taint_sets : counters_.taint_removals);
  failing_.erase(w.node);
  return Result::kOk;
}

std::optional<NodeWriter::Result> NodeWriter::Refused(const MarkWrite& w, const Mark& mark,
                                                      const NodeEdit& edit, const Status& st,
                                                      bool last_attempt) {
  // Deleted meanwhile: the watch tells the cache; nothing failed.
  if (st.code() == StatusCode::kNotFound) return Result::kGone;
  // A conditional removal whose test failed: someone changed our key (or removed our record)
  // since the snapshot this was planned from. Nothing was written, and nothing is wrong with
  // the node: the next cycle plans again from what the watch shows.
  if (w.kind == ChangeKind::kUnmark && RemovalFoundChanges(st)) {
    if (throttle_.ShouldLog("changed:" + w.node, clock_->Now()))
      LOG(INFO) << "not unmarked: " << mark.key << " or the record changed since the cycle began"
                << Fields("node", w.node, "err", st.message());
    MutexLock l(&mu_);
    ++counters_.changed;
    return Result::kChanged;
  }
  return Failed(w.node, edit, st, last_attempt);
}

std::optional<NodeWriter::Result> NodeWriter::Failed(const std::string& node, const NodeEdit& edit,
                                                     const Status& st, bool last_attempt) {
  // Not sent, or abandoned while waiting for the answer: the gate closed. An abandoned write
  // may still have been applied; the watch will show it, and the cycle that follows plans from
  // what the cluster says.
  if (st.code() == StatusCode::kCancelled) {
    LOG(WARNING) << "write to a node not completed" << Fields("node", node, "err", st.message());
    return Result::kDeferred;
  }
  if (st.retry_after_seconds() > 0) {
    MutexLock l(&mu_);
    not_before_ = std::max(not_before_, clock_->Now() + FromSeconds(st.retry_after_seconds()));
  }
  if (!st.IsRetryable() || last_attempt) {
    if (throttle_.ShouldLog("write:" + node + ":" + std::to_string(st.http_status()),
                            clock_->Now()))
      LOG(WARNING) << "could not " << DescribeNodeEdit(edit) << Fields("node", node, "err", st);
    // Only a refusal backs the node off: a brownout (5xx, 429) that used up the retries says
    // nothing about this node, and its change must go out as soon as the server recovers.
    if (!st.IsRetryable()) RecordFailure(node);
    MutexLock l(&mu_);
    ++counters_.errors;
    return Result::kFailed;
  }
  MutexLock l(&mu_);
  ++counters_.retries;
  if (edit.set_taints && st.code() == StatusCode::kConflict) ++counters_.taint_conflicts;
  return std::nullopt;  // to be tried again
}

Duration NodeWriter::RetryWait(const Status& st, Backoff* backoff) {
  // A conflict is retried at once (a label's merge patch has no precondition, and a taint edit
  // was made afresh); anything else backs off, at least as long as the server asked.
  Duration wait = st.code() == StatusCode::kConflict ? Duration::zero() : backoff->Next();
  if (st.retry_after_seconds() > 0) wait = std::max(wait, FromSeconds(st.retry_after_seconds()));
  return wait;
}

EditOutcome NodeWriter::WriteEdit(const NodeWrite& w, const WriteHooks& hooks,
                                  const std::atomic<bool>* stop) {
  EditOutcome out;
  const std::string what =
      DescribeNodeEdit(w.edit) + Fields("node", w.node, "reason", w.reason).Encoded();
  if (limits_.dry_run) {
    LOG(INFO) << "dry-run: would " << DescribeNodeEdit(w.edit)
              << Fields("node", w.node, "reason", w.reason);
    out.dry_run = true;
    return out;
  }
  if (IsBackedOff(w.node)) {
    out.status = Status(StatusCode::kUnavailable, "held back: the node's last write was refused");
    return out;
  }
  Backoff backoff(0.2, 5);
  for (int attempt = 1; attempt <= limits_.attempts; ++attempt) {
    if (WaitToSend(hooks, stop)) {
      out.status = Status(StatusCode::kCancelled, "not sent: the gate closed, or stopping");
      return out;
    }
    auto res = kube_->PatchNode(w.node, w.edit, hooks.gate);
    if (res.ok()) {
      if (hooks.on_written) hooks.on_written(*res);
      LOG(INFO) << what;
      MutexLock l(&mu_);
      if (w.record) ++counters_.records;
      failing_.erase(w.node);
      out.end = WriteEnd::kWritten;
      out.node = std::move(*res);
      return out;
    }
    out.status = res.status();
    const Status& st = out.status;
    if (st.code() == StatusCode::kNotFound) {
      out.end = WriteEnd::kGone;
      return out;
    }
    // A condition of the edit failed: its removal's test, or the resourceVersion it was made at.
    // Nothing was written; the caller reads the node again if it still wants the edit.
    const bool removes =
        w.edit.label.op == NodeEdit::Op::kRemove || w.edit.annotation.op == NodeEdit::Op::kRemove;
    if ((removes && RemovalFoundChanges(st)) ||
        (!w.edit.resource_version.empty() && st.code() == StatusCode::kConflict)) {
      MutexLock l(&mu_);
      ++counters_.changed;
      out.end = WriteEnd::kChanged;
      return out;
    }
    if (auto end = Failed(w.node, w.edit, st, attempt == limits_.attempts)) {
      if (*end == Result::kFailed && IsBackedOff(w.node)) out.end = WriteEnd::kRefused;
      return out;
    }
    if (hooks.on_progress) hooks.on_progress();
    if (!clock_->SleepFor(RetryWait(st, &backoff), stop)) return out;
  }
  return out;  // not reached: the last attempt returns above
}

std::optional<NodeWriter::Result> NodeWriter::ReadAgain(MarkWrite* w, const Mark& mark,
                                                        bool* fresh_read) {
  *fresh_read = false;
  auto fresh = kube_->GetNode(w->node);
  if (!fresh.ok() && fresh.status().code() == StatusCode::kNotFound) return Result::kGone;
  if (!fresh.ok()) {
    // The read failed (a brownout): the old edit is sent again, answered 409 again, and the
    // read tried again, within the attempts.
    if (throttle_.ShouldLog("reread:" + w->node, clock_->Now()))
      LOG(WARNING) << "could not read the node again after a conflict; the stale edit is sent "
                      "again"
                   << Fields("node", w->node, "err", fresh.status());
    return std::nullopt;
  }
  *fresh_read = true;
  w->read = MarkWrite::Read{fresh->resource_version, fresh->labels, fresh->taints};
  std::optional<Ownership> record;
  if (const std::string* text = FindLabel(fresh->annotations, kHeldByAnnotation))
    if (auto parsed = ParseOwnership(*text); parsed.ok()) record = std::move(*parsed);
  const OwnedParts now =
      OwnedMarkParts(mark, fresh->labels, fresh->taints, record ? &*record : nullptr);
  if (w->kind == ChangeKind::kMark) {
    // Whether a taint equal to ours is there but not ours (put there by hand) is what the fresh
    // node says: the record must not adopt one added meanwhile, nor disown ours once theirs was
    // taken off.
    if (auto planned = ParseOwnership(w->record); planned.ok()) {
      planned->taint_not_ours = mark.TaintOn(fresh->taints) && !now.taint;
      w->record = FormatOwnership(*planned);
    }
  }
  if (w->kind == ChangeKind::kUnmark) {
    // Ours is what the fresh node's record says now, and never more than was planned: a record
    // gone meanwhile, or our taint taken off and put back by hand, leaves nothing of the taint
    // ours.
    w->owned.label = w->owned.label && now.label;
    w->owned.taint = w->owned.taint && now.taint;
    w->had_record = w->had_record && FindLabel(fresh->annotations, kHeldByAnnotation);
    if (!w->owned.any()) {
      // Nothing of ours is left to remove (taken off by hand, overwritten, or no longer named by
      // our record): as a failed removal test, the next cycle plans from what the watch shows.
      if (throttle_.ShouldLog("changed:" + w->node, clock_->Now()))
        LOG(INFO) << "not unmarked: nothing of " << mark.ToString()
                  << " is ours any more since the cycle began" << Fields("node", w->node);
      MutexLock l(&mu_);
      ++counters_.changed;
      return Result::kChanged;
    }
  }
  return std::nullopt;
}

NodeWriter::Result NodeWriter::WriteOne(const MarkWrite& planned, const WriteHooks& hooks,
                                        const std::atomic<bool>* stop) {
  MarkWrite w = planned;  // w.read is replaced by a fresh read after a taint edit's 409
  const Mark mark = mark_.Below(w.below_hottest);  // the level this write is about
  NodeEdit edit = EditFor(w, mark_);
  // The line logged once written: the change, then the node and why.
  std::string what = DescribeNodeEdit(edit) + Fields("node", w.node, "reason", w.reason).Encoded();
  Backoff backoff(0.2, 5);
  for (int attempt = 1; attempt <= limits_.attempts; ++attempt) {
    if (auto end = WaitToSend(hooks, stop)) return *end;
    auto res = kube_->PatchNode(w.node, edit, hooks.gate);
    if (res.ok()) return Written(w, edit, *res, what, hooks);
    const Status& st = res.status();
    if (auto end = Refused(w, mark, edit, st, attempt == limits_.attempts)) return *end;
    if (hooks.on_progress) hooks.on_progress();
    if (edit.set_taints && st.code() == StatusCode::kConflict) {
      // Someone wrote the node after it was read (another taint added, say): read it again and
      // make the edit afresh from what is there now, so that their change is kept.
      bool fresh_read = false;
      if (auto end = ReadAgain(&w, mark, &fresh_read)) return *end;
      if (fresh_read) {
        edit = EditFor(w, mark_);
        what = "node " + w.node + ": " + DescribeNodeEdit(edit) + ": " + w.reason;
        continue;  // at once: the edit now has the current resourceVersion
      }
    }
    if (!clock_->SleepFor(RetryWait(st, &backoff), stop)) return Result::kStopped;
  }
  return Result::kFailed;  // not reached: the last attempt returns above
}

}  // namespace ds
