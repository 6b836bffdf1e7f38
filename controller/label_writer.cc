#include "controller/label_writer.h"

#include <glog/logging.h>

#include <algorithm>
#include <thread>

#include "common/backoff.h"

namespace ds {

LabelWriter::LabelWriter(WriteLimits limits, Mark mark, KubeApi* kube, const Clock* clock)
    : limits_(limits),
      mark_(std::move(mark)),
      kube_(kube),
      clock_(clock),
      limiter_(limits.qps, limits.burst, clock) {}

WriteCounters LabelWriter::Counters() const {
  std::lock_guard<std::mutex> l(mu_);
  return counters_;
}

WriteOutcome LabelWriter::Write(const std::vector<MarkWrite>& writes, const WriteGate& gate,
                                const std::function<void(const NodeInfo&)>& on_written,
                                const std::atomic<bool>* stop) {
  WriteOutcome out;
  size_t n = writes.size();
  if (limits_.max_per_cycle != 0 && n > limits_.max_per_cycle) {
    out.deferred = n - limits_.max_per_cycle;
    n = limits_.max_per_cycle;
    LOG(WARNING) << out.deferred
                 << " label changes deferred to the next cycle (max_writes_per_cycle)";
  }
  if (limits_.dry_run) {
    for (size_t i = 0; i < n; ++i)
      LOG(INFO) << "dry-run: would have "
                << (writes[i].set ? "set " + mark_.ToString() + " on"
                                  : "removed " + mark_.key + " from")
                << " node " << writes[i].node << ": " << writes[i].reason;
    return out;
  }
  std::mutex out_mu;
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next++) < n && !stop->load();) {
      Result r = WriteOne(writes[i], gate, on_written, stop);
      std::lock_guard<std::mutex> l(out_mu);
      if (r == Result::kOk)
        ++out.ok;
      else if (r == Result::kFailed)
        ++out.failed;
      else if (r == Result::kDeferred)
        ++out.deferred;
    }
  };
  size_t threads = std::min<size_t>(static_cast<size_t>(std::max(1, limits_.concurrency)), n);
  std::vector<std::thread> workers;
  for (size_t i = 1; i < threads; ++i) workers.emplace_back(worker);
  if (threads > 0) worker();  // this thread is one of the writers
  for (auto& t : workers) t.join();
  return out;
}

bool LabelWriter::WaitForRetryAfter(const std::atomic<bool>* stop) {
  for (;;) {
    TimePoint not_before;
    {
      std::lock_guard<std::mutex> l(mu_);
      not_before = not_before_;
    }
    if (stop->load()) return false;
    if (clock_->Now() >= not_before) return true;
    // Another writer may push the time further meanwhile: look again after waking.
    if (!clock_->SleepUntil(not_before, stop)) return false;
  }
}

LabelWriter::Result LabelWriter::WriteOne(const MarkWrite& w, const WriteGate& gate,
                                          const std::function<void(const NodeInfo&)>& on_written,
                                          const std::atomic<bool>* stop) {
  const std::string* value = w.set ? &mark_.value : nullptr;
  const std::string what = w.set
                               ? "set " + mark_.ToString() + " on node " + w.node + ": " + w.reason
                               : "removed " + mark_.key + " from node " + w.node + ": " + w.reason;
  Backoff backoff(0.2, 5);
  for (int attempt = 1; attempt <= limits_.attempts; ++attempt) {
    if (!WaitForRetryAfter(stop)) return Result::kStopped;
    if (!limiter_.Acquire(stop)) return Result::kStopped;
    // Leadership can end while a cycle writes (renew deadline passed): a standby may take over
    // once the lease expires, so no write may start after that.
    if (gate && !gate()) {
      if (throttle_.ShouldLog("gate", clock_->Now()))
        LOG(WARNING)
            << "not the leader any more: the remaining label writes of this cycle are dropped";
      return Result::kDeferred;
    }
    auto res = kube_->PatchNodeLabel(w.node, mark_.key, value, gate);
    if (res.ok()) {
      if (on_written) on_written(*res);
      LOG(INFO) << what;
      std::lock_guard<std::mutex> l(mu_);
      ++(w.set ? counters_.sets : counters_.removals);
      return Result::kOk;
    }
    const Status& st = res.status();
    if (st.code() == StatusCode::kNotFound)
      return Result::kGone;  // deleted meanwhile; the watch tells
    if (st.code() == StatusCode::kCancelled)
      return Result::kDeferred;  // not sent: the gate closed while connecting
    if (st.retry_after_seconds() > 0) {
      std::lock_guard<std::mutex> l(mu_);
      not_before_ = std::max(not_before_, clock_->Now() + FromSeconds(st.retry_after_seconds()));
    }
    if (!st.IsRetryable() || attempt == limits_.attempts) {
      if (throttle_.ShouldLog("write:" + w.node + ":" + std::to_string(st.http_status()),
                              clock_->Now()))
        LOG(WARNING) << "could not " << (w.set ? "label" : "unlabel") << " node " << w.node << ": "
                     << st.ToString();
      std::lock_guard<std::mutex> l(mu_);
      ++counters_.errors;
      return Result::kFailed;
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      ++counters_.retries;
    }
    // A conflict is retried at once (the merge patch has no precondition); anything else backs
    // off, at least as long as the server asked.
    Duration wait = st.code() == StatusCode::kConflict ? Duration::zero() : backoff.Next();
    if (st.retry_after_seconds() > 0) wait = std::max(wait, FromSeconds(st.retry_after_seconds()));
    if (!clock_->SleepFor(wait, stop)) return Result::kStopped;
  }
  return Result::kFailed;  // not reached: the last attempt returns above
}

}  // namespace ds
