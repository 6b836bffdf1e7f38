// The page's memory: per node and rule the last hour of values, and for the cluster the last
// hours of marked nodes, hot nodes and evictions. The state JSON holds one cycle; this is what
// the page draws its sparklines and its cluster chart from (GET /api/v1/history, web/routes.h).
//
// Bounded by construction, so that 10,000 nodes x 4 rules stay within about 3 MB:
//  - per node and rule, one value a minute for the last kNodeMinutes: the minute's worst (the
//    highest for '>', the lowest for '<'), so a crossing within a minute still shows. A value is
//    one byte within its series' own range (lo..hi as floats): 68 bytes a series. A sparkline is
//    some 16 pixels high; 255 levels keep 0.4 % of the range, and the range follows the series
//    (it shrinks back once a spike has left the hour), not the cluster's spread.
//  - per rule and minute, the thresholds the values were judged by (a relative rule's move).
//  - for the cluster, per minute for kClusterMinutes: the most nodes marked and hot, and the
//    evictions.
// A node that left the cluster keeps its series for kDepartedMinutes, then they go: the page
// asks only for the nodes it lists, which are the cluster's, so a departed node's line serves
// only a node that comes back under its name (a re-created machine); kept for the hour, the
// nodes that churn through a large cluster grew the history by megabytes an hour. For the same
// reason a node gets its lines with its first value, and they go once the hour holds none.
//
// Record runs on the evaluation loop's thread, RenderJson on the web server's: both lock.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/json_util.h"
#include "common/mutex.h"
#include "common/value_format.h"
#include "controller/reconciler.h"

namespace ds {

class ValueHistory {
 public:
  static constexpr size_t kNodeMinutes = 60;
  static constexpr size_t kClusterMinutes = 6 * 60;
  // At most this many nodes in one request (the page asks for the rows it shows, 500 at most).
  static constexpr size_t kMaxNodesPerRequest = 1000;

  // One cycle at `wall` (epoch seconds). `table` is null when the cycle judged no node (standby,
  // cache not synced). `marked`: nodes carrying the mark now; `evicted_total`: the rebalancer's
  // evictions since start (its increase is the minute's evictions).
  void Record(const NodeTable* table, double wall, size_t marked, uint64_t evicted_total)
      EXCLUDES(mu_);

  // The history as JSON (docs/reference.md, GET /api/v1/history): the rules with their
  // thresholds per minute, the series of the named nodes it knows (others are left out), and the
  // cluster's minutes. Arrays run oldest first; null is a minute without a value.
  std::string RenderJson(const std::vector<std::string>& nodes) const EXCLUDES(mu_);

  // Heap and object bytes held (bench/ and the size test).
  size_t Bytes() const EXCLUDES(mu_);

 private:
  static constexpr uint8_t kEmpty = 255;  // a minute without a value
  static constexpr double kLevels = 254;  // codes 0..254
  // A wall clock that goes back further than this starts the history over (Advance).
  static constexpr int64_t kClockBackMinutes = 5;
  // How long a node that left keeps its series.
  static constexpr int64_t kDepartedMinutes = 10;

  struct Series {
    // The range the codes span; NaN while every code is kEmpty (the next value sets it).
    float lo = std::numeric_limits<float>::quiet_NaN(), hi = lo;
    std::array<uint8_t, kNodeMinutes> code;
    Series() { code.fill(kEmpty); }
  };
  struct RuleLine {
    std::string name, op;
    ValueUnit unit = ValueUnit::kNone;
    std::array<float, kNodeMinutes> threshold, clear;  // NaN: no cycle in that minute
  };
  struct ClusterMinute {
    int32_t marked = -1, hot = -1;  // -1: no cycle in that minute
    uint32_t evictions = 0;
  };

  // Moves the clock to `minute` (epoch minutes), emptying the slots of the minutes it skips and
  // tightening the ranges; a clock that goes back keeps writing into the current minute.
  void Advance(int64_t minute) REQUIRES(mu_);
  // The rules of `table` by name: a rule kept keeps its series, a new one starts empty.
  void AlignRules(const NodeTable& table) REQUIRES(mu_);
  // Each of table.names' row in names_ (adding the new nodes that have a value), or kNoRow.
  static constexpr size_t kNoRow = SIZE_MAX;
  std::vector<size_t> AlignNodes(const NodeTable& table) REQUIRES(mu_);
  void Put(Series& s, size_t slot, double v, bool lower_is_worse) const;
  static bool Recordable(double v);                  // a value a series can hold
  static uint8_t Encode(const Series& s, double v);  // v's code within s's range, 0..254
  static double Decode(const Series& s, uint8_t c);  // the value code c stands for
  static void RenderSeries(JsonWriter& w, const Series& s, int64_t minute);
  // RenderJson's "rules" array and "cluster" object, each array ending at `minute`.
  static void RenderRules(JsonWriter& w, const std::vector<RuleLine>& rules, int64_t minute);
  static void RenderCluster(JsonWriter& w,
                            const std::array<ClusterMinute, kClusterMinutes>& cluster,
                            int64_t minute);

  mutable Mutex mu_;
  int64_t minute_ GUARDED_BY(mu_) = -1;  // the current minute; -1 before the first Record
  std::vector<RuleLine> rules_ GUARDED_BY(mu_);
  std::vector<std::string> names_ GUARDED_BY(mu_);  // sorted
  std::vector<int64_t> seen_ GUARDED_BY(mu_);       // per node: the last minute a cycle had it
  std::vector<Series> series_ GUARDED_BY(mu_);      // names_.size() x rules_.size(), row-major
  std::array<ClusterMinute, kClusterMinutes> cluster_ GUARDED_BY(mu_);
  uint64_t evicted_total_ GUARDED_BY(mu_) = 0;
  bool evicted_known_ GUARDED_BY(mu_) = false;
};

}  // namespace ds
