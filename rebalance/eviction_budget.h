// Every limit on evicting, in one place (as the NodeWriter holds every limit on writing labels):
// the allowed time windows, evictions per cycle and per hour cluster-wide, per node per hour, a
// per-node cool-down after an eviction (see its effect before evicting more), per namespace per
// hour, and per workload at most N evicted and not yet replaced. Pure: time comes in as numbers
// (epoch seconds, and the local weekday and minute for the windows, converted at the edge).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "kube/pod_object.h"
#include "rebalance/eviction_ledger.h"

namespace ds {

// Days (bit 0 = Sunday ... bit 6 = Saturday) and [start, end) minutes of the day; end <= start
// wraps past midnight (22:00-06:00), the days naming the day the window starts.
struct TimeWindow {
  uint8_t days = 0x7f;
  int start_minute = 0;
  int end_minute = 24 * 60;
};

struct EvictionLimits {
  size_t per_cycle = 2;
  size_t per_hour = 20;  // cluster-wide
  size_t per_node_per_hour = 3;
  double node_cooldown_seconds = 180;
  size_t per_namespace_per_hour = 0;  // 0: no limit
  size_t per_workload_unreplaced = 1;
  // An eviction whose replacement was never reported counts against its workload this long.
  double unreplaced_expiry_seconds = 600;
  std::vector<TimeWindow> windows;  // empty: at any time
};

enum class Limit {
  kNone,  // allowed
  kWindow,
  kCycle,
  kHour,
  kNodeHour,
  kNodeCooldown,
  kNamespace,
  kWorkload,
};

const char* LimitName(Limit l);  // "window", "per_cycle", ... for /metrics

// True when (weekday, minute) falls in one of `windows` (or there are none).
bool InWindow(const std::vector<TimeWindow>& windows, int weekday, int minute_of_day);

class EvictionBudget {
 public:
  explicit EvictionBudget(EvictionLimits limits);

  // Starts a cycle at `now_wall`, local time (weekday 0 = Sunday, minute of the day).
  void StartCycle(double now_wall, int weekday, int minute_of_day);
  // The first limit that forbids evicting `pod` now, or kNone.
  Limit Check(const PodInfo& pod) const;
  // An eviction the API server accepted: it counts against every limit.
  void Record(const PodInfo& pod);
  // A replacement of `workload` (PodInfo::Workload) is running: one fewer unreplaced.
  void Replaced(const std::string& workload);
  // Starts again from `ledger` (rebalance/eviction_ledger.h: the evictions of the last hour, by
  // whichever replica led), as a new leader or a restarted controller must: every limit counts
  // them -- the hour's, the node's, the namespace's, the node cool-downs, and each workload's
  // unreplaced evictions (until Replaced or their expiry). What this replica counted before is
  // replaced: the ledger has it too, as every eviction is written there first.
  void Restore(const std::vector<LedgerEntry>& ledger);

  size_t evicted_this_cycle() const { return cycle_count_; }

 private:
  struct Eviction {
    double at = 0;
    std::string node, ns, workload;
  };
  void Expire();

  // A node's last eviction, and the cycle it was in: the pods one cycle picks for a node are one
  // plan, so the cool-down starts with the next cycle -- told by the cycle's number, not by
  // comparing times, which a wall clock stepped back would turn into no cool-down at all.
  struct Last {
    double at = 0;
    uint64_t cycle = 0;
  };

  const EvictionLimits limits_;
  double now_ = 0;
  uint64_t cycle_ = 0;
  bool in_window_ = true;
  size_t cycle_count_ = 0;
  std::deque<Eviction> last_hour_;                        // oldest first
  std::map<std::string, Last> node_last_;                 // node -> its last eviction
  std::map<std::string, std::deque<double>> unreplaced_;  // workload -> eviction times
};

}  // namespace ds
