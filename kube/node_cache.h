// Informer-style cache of Nodes: a paged LIST, then a WATCH from the list's resourceVersion with
// bookmarks; 410 Expired -> re-list; disconnect -> re-watch from the last resourceVersion after
// a jittered backoff; a full re-list every resync period heals anything missed.
//
// States: kEmpty -> (list) -> kWatching -> (410) -> kEmpty ...
//   kEmpty: no usable resourceVersion (at start, after a 410). LIST, retried with backoff until it
//     succeeds; nothing can be watched before.
//   kWatching: watch from the last resourceVersion. A resync is a LIST made while watching: the
//     watch is ended when it falls due (not when the watch happens to end), and if the LIST fails
//     (429s from API Priority and Fairness are likely on a 10,000-node LIST) the cache keeps
//     watching and retries the LIST later with a backoff of its own.
// Pacing (after client-go's reflector: 800 ms -> 30 s, jittered): every failed watch, every
// watch that ends at once with nothing received, and every 410 re-list waits for the next
// backoff step (or the server's Retry-After, if longer). Only a watch that lived resets the
// backoff, so an API server or proxy that closes each watch at once, or a 410 on every watch
// opened from a fresh LIST, cannot drive the cache into a tight loop.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/backoff.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "kube/kube_api.h"

namespace ds {

struct NodeCacheOptions {
  std::string label_selector;  // server-side filter: the managed nodes
  // A client-side filter for what no selector can find (a taint): only the nodes it holds for
  // are kept, and a node that stops passing leaves the cache (not as a departure). The watch
  // still decodes every node of the selector, one event at a time; only what passes is kept, so
  // a filter that few nodes pass keeps the cache small however many nodes there are. Empty: keep
  // every node the selector returns.
  std::function<bool(const NodeInfo&)> keep_if;
  // Label keys to keep in the cache; empty keeps all. The selector runs on the server, so the
  // controller only needs its own key, which keeps 10,000 nodes small.
  std::vector<std::string> keep_label_keys;
  size_t page_size = 500;
  double resync_seconds = 600;  // full re-list period, kept while watching; 0 = never
  int watch_timeout_min = 300;  // each watch asks the server to end after a random time in
  int watch_timeout_max = 600;  // [min, max] so many clients do not reconnect in step
  // Keep the nodes that left (TakeDepartures). Off for a cache nobody takes them from.
  bool keep_departures = true;
  // Also keep a node that leaves carrying one of these labels (key, value), though none of our
  // annotations: the mirror mode's mark has no record.
  std::vector<std::pair<std::string, std::string>> departure_labels;
};

// An immutable view of the cache at one moment. Nodes are sorted by name.
struct NodeSnapshot {
  std::vector<std::shared_ptr<const NodeInfo>> nodes;  // sorted by name
  uint64_t generation = 0;                             // bumps on any change
  uint64_t topology = 0;  // bumps when a node is added/removed or its addresses change

  // The node of this name, or null.
  const NodeInfo* Find(const std::string& name) const {
    auto pos = std::lower_bound(
        nodes.begin(), nodes.end(), name,
        [](const std::shared_ptr<const NodeInfo>& p, const std::string& n) { return p->name < n; });
    return pos != nodes.end() && (*pos)->name == name ? pos->get() : nullptr;
  }
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

  // Freshness, for /status. Thread-safe.
  // LastProgress(): the clock time of the last successful LIST or of the last watch event received
  // (ADDED/MODIFIED/DELETED or BOOKMARK); TimePoint{} before the first. The end of a watch, a
  // failed LIST or a failed watch is not progress.
  TimePoint LastProgress() const;
  // True when there has been no progress for longer than `bound` before `now` (or never any).
  // Choosing the bound: an API server sends a BOOKMARK on an open watch about every minute even
  // when no node changes, and a watch that receives nothing for the idle timeout (150 s by
  // default, -watch_idle_timeout) is cut and re-opened after one backoff step (about 1 s, as a
  // watch that lived resets the backoff; never over 45 s). So a healthy cache makes progress at
  // least every ~60 s, and one silent for idle timeout + 45 s + 60 s (~255 s by default) has failed
  // to re-open its watch. 300 s, or 2 x the idle timeout if that is larger, flags that without
  // flapping on one dropped watch. An API server without bookmarks would make a quiet cluster look
  // stale between resync LISTs: there, use a bound above the resync period.
  bool Stale(TimePoint now, Duration bound) const;

  // Thread-safe. Cheap: shares the node objects.
  std::shared_ptr<const NodeSnapshot> Snapshot() const;

  // Writes through the object a PATCH returned, so the next cycle does not act on a stale view
  // while the watch event is still on its way. Replaces only a node the cache still holds: one
  // that was deleted or left the label selector meanwhile (the watch said so) stays out. Ignored
  // too when older than what the cache holds. Thread-safe.
  void ApplyWriteResult(const NodeInfo& node);

  // Nodes that left the cache carrying one of our annotations (kOwnAnnotationPrefix) or one of
  // NodeCacheOptions::departure_labels, as they
  // were when they left: the watch said DELETED (the node was deleted, or its labels no longer
  // match the label selector: a changed nodeSelector, a node that became control-plane) or a
  // re-LIST no longer returned them. A node that comes back before they are taken is dropped from
  // them. The controller removes its mark from these (only where the record says it is ours):
  // nothing else would, and workloads would avoid the node for ever. Thread-safe.
  std::vector<NodeInfo> TakeDepartures();

  // One LIST (all pages) and replace, without a watch: a one-pass run (-once, app/once.h) reads
  // the nodes so, and tests seed the cache with it. Returns its status.
  Status ListOnce();

 private:
  // One watch from the saved resourceVersion, ended early by *stop or once `list_due` has come.
  // *received counts the events and bookmarks it delivered.
  Status WatchOnce(const std::atomic<bool>* stop, TimePoint list_due, uint64_t* received);
  // Adds or replaces `node` unless the cache holds a newer version; with `only_if_present`,
  // never adds.
  void Upsert(NodeInfo&& node, bool only_if_present) EXCLUDES(mu_);
  // `last`: the node as the DELETED event carried it.
  void Remove(NodeInfo&& last) EXCLUDES(mu_);
  void NoteDeparture(const NodeInfo& node) REQUIRES(mu_);
  void SetError(const Status& st) EXCLUDES(mu_);
  // Keeps what the controller reads: the labels of NodeCacheOptions, not allocatable_other.
  void Trim(NodeInfo* node) const;

  KubeApi* const api_;
  const Clock* const clock_;
  const NodeCacheOptions options_;
  std::atomic<bool> synced_{false};

  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<const NodeInfo>> nodes_ GUARDED_BY(mu_);
  std::string resource_version_ GUARDED_BY(mu_);
  uint64_t generation_ GUARDED_BY(mu_) = 0;
  uint64_t topology_ GUARDED_BY(mu_) = 0;
  mutable std::shared_ptr<const NodeSnapshot> snapshot_ GUARDED_BY(mu_);
  std::string last_error_ GUARDED_BY(mu_);
  TimePoint last_progress_ GUARDED_BY(mu_) = {};
  std::map<std::string, NodeInfo> departed_ GUARDED_BY(mu_);
  NodeCacheStats stats_ GUARDED_BY(mu_);
};

// True if resource version a is strictly newer than b. resourceVersions are opaque strings, but
// etcd's are integers; when both parse as integers they are compared, otherwise a is taken as
// newer (the API's own order of delivery is then trusted).
bool ResourceVersionNewer(const std::string& a, const std::string& b);

}  // namespace ds
