// The effect analysis: did marking and evicting help? Fed with what the controller observes, it
// keeps the four figures users judge a rebalancer by:
//  - discovery rate: of the nodes a reference query calls hot, the share we had marked
//    (node-cycles, summed);
//  - eviction rate: of the hot episodes that qualified for relief, the share where at least one
//    pod could be evicted (PDBs, limits and fit stop the others);
//  - effectiveness: of the episodes with evictions, the share whose node fell below its clear
//    threshold within `effect_window` of the first eviction;
//  - bounce-backs: replacements of an evicted pod's workload bound to the node it left within
//    `effect_window` -- the loop marking first is there to break;
// and how the relief went:
//  - time to relief, per relieved episode: from the node's mark to the first cycle after its
//    first eviction that found it at or below its clear threshold (a histogram,
//    kTimeToReliefBuckets);
//  - the bounce-back ratio (bounce-backs per replacement seen);
//  - evictions per relieved episode;
//  - hot node-seconds: each cycle, the marked nodes not at or below their clear threshold, times
//    the time since the previous cycle (at most the cycle interval).
// An episode runs from a node qualifying for relief until its mark goes. Each eviction's own
// outcome (did its node clear within `effect_window` of it, where did its replacement run) is
// handed out once its window ends (TakeOutcomes), for an Event on the pod's owner. Pure.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ds {

// The upper bounds, in seconds, of the time-to-relief histogram. Relief takes minutes (`after`,
// the cool-down between a node's evictions, a rate window's settle time), and an effectWindow of
// 10 minutes to an hour bounds what counts as relieved.
inline constexpr std::array<double, 8> kTimeToReliefBuckets = {30,  60,  120,  300,
                                                               600, 900, 1800, 3600};

struct EffectFigures {
  size_t reference_hot = 0, reference_hot_marked = 0;  // node-cycles
  size_t episodes = 0, episodes_evicted = 0;
  size_t episodes_judged = 0, episodes_relieved = 0;  // evicted episodes whose window ended
  size_t evictions = 0, replacements = 0, bounce_backs = 0;
  // Time to relief of each relieved episode: from the node's mark (the ownership record's
  // `since`, so a restart or a new leader counts from the same moment) -- or, where the mark's
  // time is unknown, from the cycle the episode qualified -- to the first cycle after its first
  // eviction that found the node at or below its clear threshold. Observations per bucket of
  // kTimeToReliefBuckets, not cumulative; the last is over the last bound. Their count is
  // episodes_relieved.
  std::array<uint64_t, kTimeToReliefBuckets.size() + 1> time_to_relief = {};
  double time_to_relief_sum = 0;  // seconds
  // Evictions in the relieved episodes (one evicted after the node was relieved, in the same
  // episode, counts too).
  size_t relieved_evictions = 0;
  // Each cycle, the nodes carrying our mark and not at or below their clear threshold, times the
  // time since the previous cycle (at most the cycle interval: time not watched is not counted).
  double hot_node_seconds = 0;
  double DiscoveryRate() const { return Ratio(reference_hot_marked, reference_hot); }
  double EvictionRate() const { return Ratio(episodes_evicted, episodes); }
  double Effectiveness() const { return Ratio(episodes_relieved, episodes_judged); }
  double BounceBackRatio() const { return Ratio(bounce_backs, replacements); }
  double EvictionsPerRelief() const { return Ratio(relieved_evictions, episodes_relieved); }
  static double Ratio(size_t a, size_t b) { return b == 0 ? 0 : static_cast<double>(a) / b; }
};

// What became of one eviction, once its effect window ended.
struct EvictionOutcome {
  std::string node, workload, pod;
  std::string owner_api_version;  // the workload's (its Event is about it)
  double at = 0;
  double relieved_after = -1;    // seconds from the eviction to its node clearing; -1: not within
  std::string replacement_node;  // where its replacement was bound; empty: none seen
};

class EffectTracker {
 public:
  // `cycle_seconds`: the cycle interval (-s), the most one cycle's hot nodes count for; 0: no
  // bound (and the first cycle counts for nothing).
  explicit EffectTracker(double effect_window_seconds, double cycle_seconds = 0)
      : window_(effect_window_seconds), cycle_(cycle_seconds) {}

  // Each cycle: the nodes a reference query says are hot, the nodes carrying our mark, and those
  // of them at or below their clear threshold (`cooled`; the others are hot node-seconds).
  void OnCycle(double now, const std::vector<std::string>& reference_hot,
               const std::set<std::string>& marked, const std::set<std::string>& cooled = {});
  // Starts an episode (once). `marked_since`: when the node's mark was set (0: unknown, or later
  // than `now`: time to relief then counts from `now`).
  void OnQualified(const std::string& node, double now, double marked_since = 0);
  void OnEviction(const std::string& node, const std::string& workload, double now,
                  const std::string& pod = "", const std::string& owner_api_version = "");
  // A new pod of `workload` was bound to `node` (a replacement, if one of its pods was evicted
  // within the window).
  void OnPodBound(const std::string& workload, const std::string& node, double now);
  // The node is at or below its clear threshold now.
  void OnCleared(const std::string& node, double now);
  // Ends the node's episode. A node that cooled must be reported OnCleared first.
  void OnUnmarked(const std::string& node);

  EffectFigures Figures() const { return figures_; }
  // The outcomes of the evictions whose window ended since the last call, oldest first.
  std::vector<EvictionOutcome> TakeOutcomes();

 private:
  struct Episode {
    bool evicted = false, judged = false, relieved = false;
    double first_eviction = 0;
    double start = 0;  // the mark, or the qualification (time to relief counts from it)
    size_t evictions = 0;
  };
  struct Eviction {
    std::string node, workload, pod, owner_api_version;
    double at = 0;
    bool replaced = false;
    std::string replaced_on;
    double cleared_at = -1;  // the first cycle its node was at or below its clear threshold
  };
  void Judge(Episode* e, bool relieved, double now);
  void Expire(double now);

  static constexpr size_t kMaxOutcomes = 1000;
  const double window_;
  const double cycle_;
  EffectFigures figures_;
  // The previous OnCycle's time; -1: none yet.
  double last_cycle_ = -1;
  std::map<std::string, Episode> episodes_;  // open episodes, by node
  std::vector<Eviction> recent_;             // within the window
  std::vector<EvictionOutcome> outcomes_;    // windows ended, not taken yet
};

}  // namespace ds
