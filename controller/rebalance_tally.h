// What the rebalancer's parts (controller/cluster_reads.h, evictor.h, drainer.h, rebalancer.h)
// report and count, in one place behind one mutex: /rebalance, /metrics and the page read copies
// from other threads; the parts write from the cycle's thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "common/mutex.h"
#include "rebalance/report.h"

namespace ds {

class RebalanceTally {
 public:
  static constexpr size_t kRecentEvictions = 100;  // unless SetKeep (rebalance.keepDecisions)
  // The evictions kept (rebalance.keepDecisions).
  void SetKeep(size_t n) {
    MutexLock l(&mu_);
    keep_ = n;
  }

  void Count(std::map<std::string, uint64_t> RebalanceCounters::*which, const std::string& key,
             uint64_t n = 1) {
    MutexLock l(&mu_);
    (counters_.*which)[key] += n;
  }
  void Count(uint64_t RebalanceCounters::*which, uint64_t n = 1) {
    MutexLock l(&mu_);
    counters_.*which += n;
  }
  void CountPodList(bool ok) {
    MutexLock l(&mu_);
    ++report_.pod_lists;
    if (!ok) ++counters_.list_errors;
  }
  // An eviction attempted (or planned, in dry-run): among the last kRecentEvictions.
  void Remember(EvictionRecord r) {
    MutexLock l(&mu_);
    report_.recent.push_back(std::move(r));
    while (report_.recent.size() > keep_) report_.recent.pop_front();
  }
  // Changes the report under the lock (the cycle's end writes its parts).
  template <typename F>
  void Edit(F&& f) {
    MutexLock l(&mu_);
    f(&report_);
  }

  RebalanceReport Report() const {
    MutexLock l(&mu_);
    return report_;
  }
  RebalanceCounters Counters() const {
    MutexLock l(&mu_);
    return counters_;
  }

 private:
  mutable Mutex mu_;
  RebalanceReport report_ GUARDED_BY(mu_);
  RebalanceCounters counters_ GUARDED_BY(mu_);
  size_t keep_ GUARDED_BY(mu_) = kRecentEvictions;
};

}  // namespace ds
