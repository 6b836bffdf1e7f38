// Informer-style cache of Nodes: a paged LIST, then a WATCH from the list's resourceVersion with
// bookmarks; 410 Expired -> re-list; disconnect -> re-watch from the last resourceVersion after
// a jittered backoff; a full re-list every resync period heals anything missed.
//
// States: kEmpty -> (list) -> kWatching -> (410 / resync) -> kEmpty ...
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/backoff.h"
#include "common/clock.h"
#include "kube/kube_api.h"

namespace ds {

struct NodeCacheOptions {
  std::string label_selector;  // server-side filter: the managed nodes
  // Label keys to keep in the cache; empty keeps all. The selector runs on the server, so the
  // controller only needs its own key, which keeps 10,000 nodes small.
  std::vector<std::string> keep_label_keys;
  size_t page_size = 500;
  double resync_seconds = 600;  // full re-list period; 0 = never
  int watch_timeout_min = 300;  // each watch asks the server to end after a random time in
  int watch_timeout_max = 600;  // [min, max] so many clients do not reconnect in step
};

// An immutable view of the cache at one moment. Nodes are sorted by name.
struct NodeSnapshot {
  std::vector<std::shared_ptr<const NodeInfo>> nodes;
  uint64_t generation = 0;  // bumps on any change
  uint64_t topology = 0;    // bumps when a node is added/removed or its addresses change
};

struct NodeCacheStats {
  uint64_t lists = 0;            // full LISTs completed
  uint64_t relists_expired = 0;  // LISTs caused by 410 Expired
  uint64_t watch_restarts = 0;
  uint64_t events = 0;
  uint64_t bookmarks = 0;
  double initial_sync_seconds = 0;  // from Run() to the first complete LIST
};

class NodeCache {
 public:
  // `api` and `clock` must outlive the cache. Backoff waits and the resync period run on `clock`.
  NodeCache(KubeApi* api, const Clock* clock, NodeCacheOptions options);

  // Runs the list/watch loop until *stop is true. Call from one thread.
  void Run(const std::atomic<bool>* stop);

  // True once the first LIST has completed.
  bool Synced() const { return synced_.load(); }
  std::string LastError() const;
  NodeCacheStats Stats() const;

  // Thread-safe. Cheap: shares the node objects.
  std::shared_ptr<const NodeSnapshot> Snapshot() const;

  // Writes through the object a PATCH returned, so the next cycle does not act on a stale view
  // while the watch event is still on its way. Ignored when older than what the cache holds.
  void ApplyWriteResult(const NodeInfo& node);

  // For tests: one LIST (all pages) and replace. Returns its status.
  Status ListOnce();

 private:
  Status WatchOnce(const std::atomic<bool>* stop);
  void Upsert(NodeInfo&& node);
  void Remove(const std::string& name);
  void SetError(const Status& st);
  void TrimLabels(NodeInfo* node) const;

  KubeApi* const api_;
  const Clock* const clock_;
  const NodeCacheOptions options_;
  std::atomic<bool> synced_{false};

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const NodeInfo>> nodes_;  // GUARDED_BY(mu_)
  std::string resource_version_;                                  // GUARDED_BY(mu_)
  uint64_t generation_ = 0;                                       // GUARDED_BY(mu_)
  uint64_t topology_ = 0;                                         // GUARDED_BY(mu_)
  mutable std::shared_ptr<const NodeSnapshot> snapshot_;          // GUARDED_BY(mu_)
  std::string last_error_;                                        // GUARDED_BY(mu_)
  NodeCacheStats stats_;                                          // GUARDED_BY(mu_)
};

// True if resource version a is strictly newer than b. resourceVersions are opaque strings, but
// etcd's are integers; when both parse as integers they are compared, otherwise a is taken as
// newer (the API's own order of delivery is then trusted).
bool ResourceVersionNewer(const std::string& a, const std::string& b);

}  // namespace ds
