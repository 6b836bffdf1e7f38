// The effect analysis: did marking and evicting help? Fed with what the controller observes, it
// keeps the four figures users judge a rebalancer by:
//  - discovery rate: of the nodes a reference query calls hot, the share we had marked
//    (node-cycles, summed);
//  - eviction rate: of the hot episodes that qualified for relief, the share where at least one
//    pod could be evicted (PDBs, limits and fit stop the others);
//  - effectiveness: of the episodes with evictions, the share whose node fell below its clear
//    threshold within `effect_window` of the first eviction;
//  - bounce-backs: replacements of an evicted pod's workload bound to the node it left within
//    `effect_window` -- the loop marking first is there to break.
// An episode runs from a node qualifying for relief until its mark goes. Each eviction's own
// outcome (did its node clear within `effect_window` of it, where did its replacement run) is
// handed out once its window ends (TakeOutcomes), for an Event on the pod's owner. Pure.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ds {

struct EffectFigures {
  size_t reference_hot = 0, reference_hot_marked = 0;  // node-cycles
  size_t episodes = 0, episodes_evicted = 0;
  size_t episodes_judged = 0, episodes_relieved = 0;  // evicted episodes whose window ended
  size_t evictions = 0, replacements = 0, bounce_backs = 0;
  double DiscoveryRate() const { return Ratio(reference_hot_marked, reference_hot); }
  double EvictionRate() const { return Ratio(episodes_evicted, episodes); }
  double Effectiveness() const { return Ratio(episodes_relieved, episodes_judged); }
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
  explicit EffectTracker(double effect_window_seconds) : window_(effect_window_seconds) {}

  // Each cycle: the nodes a reference query says are hot, and the nodes carrying our mark.
  void OnCycle(double now, const std::vector<std::string>& reference_hot,
               const std::set<std::string>& marked);
  void OnQualified(const std::string& node, double now);  // starts an episode (once)
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
    bool evicted = false, judged = false;
    double first_eviction = 0;
  };
  struct Eviction {
    std::string node, workload, pod, owner_api_version;
    double at = 0;
    bool replaced = false;
    std::string replaced_on;
    double cleared_at = -1;  // the first cycle its node was at or below its clear threshold
  };
  void Judge(Episode* e, bool relieved);
  void Expire(double now);

  static constexpr size_t kMaxOutcomes = 1000;
  const double window_;
  EffectFigures figures_;
  std::map<std::string, Episode> episodes_;  // open episodes, by node
  std::vector<Eviction> recent_;             // within the window
  std::vector<EvictionOutcome> outcomes_;    // windows ended, not taken yet
};

}  // namespace ds
