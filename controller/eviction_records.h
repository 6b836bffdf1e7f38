// The rebalancer's evictions in each node's ownership record ("lastEviction", rules/ownership.h):
// a new leader or a restarted controller reads it, keeps holding the node's mark and waits out
// its cool-down instead of evicting again at once. Written through the node writer (every write
// limit, the term gate), from the node as the cache has it at that moment, so that this cycle's
// own writes of the record (a rule added to it, say) are kept.
#pragma once

#include <atomic>
#include <string>

#include "controller/node_writer.h"
#include "kube/node_cache.h"
#include "rules/mark.h"

namespace ds {

// A drain's time (the mirror mode, rebalance.underused): the underused mark has no ownership
// record, so the time of its node's last drain eviction has an annotation of its own, written
// only while our key carries the underused value and removed with that mark.
inline constexpr const char* kLastDrainAnnotation = "dynamic-scheduler.io/last-drain";

// The last drain eviction recorded on `node` (epoch seconds; 0: none or unreadable). The record
// keeps whole seconds: a second is added, so a cool-down counted from it never ends early.
double RecordedDrain(const NodeInfo& node);

class EvictionRecords {
 public:
  // All pointers must outlive this.
  EvictionRecords(Mark mark, NodeCache* cache, NodeWriter* writer);

  // Writes `at_wall` as `node`'s last eviction into its record (0 removes the field); the value
  // it replaces in *previous (optional). Nothing is written, and kRefused returned, when the node
  // has no readable record naming our mark: then there is no mark of ours to hold either. The
  // hooks' gate is the caller's term. A dry run (the writer's) counts as written.
  WriteEnd Write(const std::string& node, double at_wall, const WriteHooks& hooks,
                 const std::atomic<bool>* stop, double* previous = nullptr);
  // The same for a drain: `at_wall` into kLastDrainAnnotation (0 removes it), only while the
  // node carries our key with `underused_value` (else kRefused). *previous as read, without the
  // added second.
  WriteEnd WriteDrain(const std::string& node, const std::string& underused_value, double at_wall,
                      const WriteHooks& hooks, const std::atomic<bool>* stop,
                      double* previous = nullptr);

 private:
  const Mark mark_;
  NodeCache* const cache_;
  NodeWriter* const writer_;
};

}  // namespace ds
