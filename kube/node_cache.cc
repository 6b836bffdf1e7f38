#include "kube/node_cache.h"

#include <charconv>
#include <random>

#include "common/log_fields.h"

namespace ds {
namespace {

bool ParseRv(const std::string& s, uint64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool SameTopology(const NodeInfo& a, const NodeInfo& b) { return a.addresses == b.addresses; }

// A watch that delivered nothing counts as healthy (and resets the backoff) once it has stayed
// open this long. client-go's reflector calls a watch that ends within 1 s with nothing received
// "very short" and backs off. 10 s is stricter, so an API server shutting down or a proxy that
// cuts watches within seconds is paced (at worst one immediate re-open per 10 s); yet it is well
// below the ~60 s between BOOKMARKs, so a quiet watch that a load balancer's idle timeout (commonly
// 30-60 s) or the server's timeoutSeconds ends is re-opened at once.
constexpr double kWatchLivedSeconds = 10;

// The wait before the next attempt after `st`: the next backoff step, or the server's
// Retry-After when that is longer.
Duration RetryDelay(Backoff* backoff, const Status& st) {
  Duration d = backoff->Next();
  if (st.retry_after_seconds() > 0) d = std::max(d, FromSeconds(st.retry_after_seconds()));
  return d;
}

}  // namespace

bool ResourceVersionNewer(const std::string& a, const std::string& b) {
  uint64_t x, y;
  if (ParseRv(a, &x) && ParseRv(b, &y)) return x > y;
  return true;
}

NodeCache::NodeCache(KubeApi* api, const Clock* clock, NodeCacheOptions options)
    : api_(api), clock_(clock), options_(std::move(options)) {}

std::shared_ptr<const NodeSnapshot> NodeCache::Snapshot() const {
  MutexLock l(&mu_);
  if (snapshot_ == nullptr || snapshot_->generation != generation_) {
    auto s = std::make_shared<NodeSnapshot>();
    s->nodes.reserve(nodes_.size());
    for (const auto& [name, n] : nodes_) s->nodes.push_back(n);
    s->generation = generation_;
    s->topology = topology_;
    snapshot_ = std::move(s);
  }
  return snapshot_;
}

std::string NodeCache::LastError() const {
  MutexLock l(&mu_);
  return last_error_;
}

NodeCacheStats NodeCache::Stats() const {
  MutexLock l(&mu_);
  return stats_;
}

TimePoint NodeCache::LastProgress() const {
  MutexLock l(&mu_);
  return last_progress_;
}

bool NodeCache::Stale(TimePoint now, Duration bound) const {
  MutexLock l(&mu_);
  return last_progress_ == TimePoint{} || now - last_progress_ > bound;
}

void NodeCache::SetError(const Status& st) {
  MutexLock l(&mu_);
  last_error_ = st.ok() ? "" : st.ToString();
}

Status NodeCache::ListOnce() {
  std::map<std::string, std::shared_ptr<const NodeInfo>> fresh;
  std::string cont, rv;
  do {
    auto page = api_->ListNodes(options_.label_selector, options_.page_size, cont);
    if (!page.ok()) {
      // An expired continue token (410) means restart the list from the beginning.
      return page.status();
    }
    if (rv.empty()) rv = page->resource_version;  // later pages are a snapshot at the first's RV
    // A node the cache holds at the same resourceVersion is the same object: it is kept, and the
    // decoded copy freed at once. A resync (every 10 minutes) then replaces only what changed,
    // instead of 10,000 long-lived objects, which left the heap fragmented and the resident
    // size a few MB higher after each one (bench/RESULTS.md, memory at 10,000 nodes).
    std::vector<std::shared_ptr<const NodeInfo>> held(page->items.size());
    {
      MutexLock l(&mu_);
      for (size_t i = 0; i < page->items.size(); ++i)
        if (auto it = nodes_.find(page->items[i].name);
            it != nodes_.end() && !page->items[i].resource_version.empty() &&
            it->second->resource_version == page->items[i].resource_version)
          held[i] = it->second;
    }
    for (size_t i = 0; i < page->items.size(); ++i) {
      NodeInfo& n = page->items[i];
      if (options_.keep_if && !options_.keep_if(n)) continue;
      std::string name = n.name;
      if (held[i] != nullptr) {
        fresh[name] = std::move(held[i]);
        continue;
      }
      Trim(&n);
      fresh[name] = std::make_shared<const NodeInfo>(std::move(n));
    }
    cont = page->continue_token;
  } while (!cont.empty());
  MutexLock l(&mu_);
  // Nodes the LIST no longer returns left while no watch told us (deleted, or out of the selector).
  for (const auto& [name, node] : nodes_)
    if (!fresh.count(name)) NoteDeparture(*node);
  for (const auto& [name, node] : fresh) departed_.erase(name);
  nodes_.swap(fresh);
  resource_version_ = rv;
  ++generation_;
  ++topology_;
  ++stats_.lists;
  last_error_.clear();
  last_progress_ = clock_->Now();
  synced_ = true;
  return Status::OK();
}

void NodeCache::Trim(NodeInfo* node) const {
  node->allocatable_other.clear();
  node->allocatable_other.shrink_to_fit();
  if (options_.keep_label_keys.empty()) return;
  Labels kept;
  for (auto& kv : node->labels)
    for (const auto& k : options_.keep_label_keys)
      if (kv.first == k) kept.push_back(std::move(kv));
  node->labels = std::move(kept);
  node->labels.shrink_to_fit();
}

void NodeCache::Upsert(NodeInfo&& node, bool only_if_present) {
  if (options_.keep_if && !options_.keep_if(node)) {
    // Filtered out: a node that no longer passes goes, as if out of the selector; no departure
    // (nothing of ours left with it: what the filter looks for is gone).
    MutexLock l(&mu_);
    auto it = nodes_.find(node.name);
    if (it == nodes_.end() ||
        !ResourceVersionNewer(node.resource_version, it->second->resource_version))
      return;
    nodes_.erase(it);
    ++generation_;
    ++topology_;
    return;
  }
  Trim(&node);
  MutexLock l(&mu_);
  auto it = nodes_.find(node.name);
  if (it == nodes_.end() && only_if_present) return;
  if (it != nodes_.end()) {
    if (!ResourceVersionNewer(node.resource_version, it->second->resource_version)) return;
    bool topo = !SameTopology(*it->second, node);
    it->second = std::make_shared<const NodeInfo>(std::move(node));
    if (topo) ++topology_;
  } else {
    std::string name = node.name;
    departed_.erase(name);  // back in the managed set
    nodes_.emplace(std::move(name), std::make_shared<const NodeInfo>(std::move(node)));
    ++topology_;
  }
  ++generation_;
}

void NodeCache::NoteDeparture(const NodeInfo& node) {
  if (!options_.keep_departures) return;
  bool ours = !node.annotations.empty();
  for (const auto& [key, value] : options_.departure_labels)
    if (const std::string* v = FindLabel(node.labels, key); v != nullptr && *v == value)
      ours = true;
  if (ours) departed_[node.name] = node;
}

std::vector<NodeInfo> NodeCache::TakeDepartures() {
  MutexLock l(&mu_);
  std::vector<NodeInfo> out;
  out.reserve(departed_.size());
  for (auto& [name, node] : departed_) out.push_back(std::move(node));
  departed_.clear();
  return out;
}

void NodeCache::Remove(NodeInfo&& last) {
  Trim(&last);
  MutexLock l(&mu_);
  // The DELETED event carries the node's last state: what it had on when it left.
  NoteDeparture(last);
  if (nodes_.erase(last.name) > 0) {
    ++generation_;
    ++topology_;
  }
}

// A PATCH response is no evidence that the node belongs in the cache: the watch may have removed
// it (deleted, or no longer matching the label selector) while the PATCH was in flight.
void NodeCache::ApplyWriteResult(const NodeInfo& node) {
  Upsert(NodeInfo(node), /*only_if_present=*/true);
}

Status NodeCache::WatchOnce(const std::atomic<bool>* stop, TimePoint list_due, uint64_t* received) {
  static thread_local std::mt19937 rng{std::random_device{}()};
  std::uniform_int_distribution<int> dist(options_.watch_timeout_min, options_.watch_timeout_max);
  std::string rv;
  {
    MutexLock l(&mu_);
    rv = resource_version_;
  }
  auto on_event = [&](WatchEvent&& ev) {
    std::string ev_rv = ev.node.resource_version;
    switch (ev.type) {
      case WatchEventType::kAdded:
      case WatchEventType::kModified:
        Upsert(std::move(ev.node), /*only_if_present=*/false);
        break;
      case WatchEventType::kDeleted:
        Remove(std::move(ev.node));
        break;
      case WatchEventType::kBookmark:
      case WatchEventType::kError:
        break;
    }
    ++*received;
    MutexLock l(&mu_);
    if (!ev_rv.empty()) resource_version_ = ev_rv;
    last_progress_ = clock_->Now();
    if (ev.type == WatchEventType::kBookmark)
      ++stats_.bookmarks;
    else
      ++stats_.events;
  };
  // The resync is due on its own schedule, not whenever the server ends the watch (300-600 s
  // later): end the watch when it comes.
  return api_->WatchNodes(options_.label_selector, rv, dist(rng), on_event,
                          [&] { return stop->load() || clock_->Now() >= list_due; });
}

void NodeCache::Run(const std::atomic<bool>* stop) {
  // Paces the loop while it makes no progress: failed LISTs that must succeed, failed or empty
  // watches, 410 re-lists. Only a watch that lived resets it (client-go resets after 2 min without
  // a failure; a watch that lived says the same sooner), not a LIST: a LIST that succeeds and
  // whose watch at once gets 410 again is no recovery.
  Backoff backoff;
  // Paces retries of a failed resync LIST while the watch goes on; reset by a LIST that succeeds.
  // Apart from `backoff`, so a healthy watch does not turn a LIST that API Priority and Fairness
  // keeps rejecting into an attempt every second.
  Backoff resync_backoff;
  const TimePoint run_start = clock_->Now();
  bool need_list = true;                  // kEmpty: no resourceVersion to watch from
  TimePoint list_due = TimePoint::max();  // the next resync LIST (or its retry)
  while (!stop->load()) {
    if (need_list || clock_->Now() >= list_due) {
      Status st = ListOnce();
      if (st.ok()) {
        {
          MutexLock l(&mu_);
          if (stats_.lists == 1) stats_.initial_sync_seconds = ToSeconds(clock_->Now() - run_start);
        }
        LOG(INFO) << "node cache: listed " << Snapshot()->nodes.size() << " nodes"
                  << Fields("nodes", Snapshot()->nodes.size());
        need_list = false;
        resync_backoff.Reset();
        list_due = options_.resync_seconds > 0
                       ? clock_->Now() + FromSeconds(options_.resync_seconds)
                       : TimePoint::max();
      } else if (need_list) {
        SetError(st);
        LOG(WARNING) << "node cache: list failed" << Fields("err", st);
        clock_->SleepFor(RetryDelay(&backoff, st), stop);
        continue;
      } else {
        // The cache is still current through its watch; the resync can wait.
        SetError(st);
        Duration d = RetryDelay(&resync_backoff, st);
        LOG(WARNING) << "node cache: resync list failed; still watching, next try in "
                     << ToSeconds(d) << " s" << Fields("err", st);
        list_due = clock_->Now() + d;
      }
    }
    const TimePoint opened = clock_->Now();
    uint64_t received = 0;
    Status st = WatchOnce(stop, list_due, &received);
    if (stop->load()) break;
    {
      MutexLock l(&mu_);
      ++stats_.watch_restarts;
    }
    const bool lived = received > 0 || clock_->Now() - opened >= FromSeconds(kWatchLivedSeconds);
    if (lived) backoff.Reset();
    if (st.code() == StatusCode::kCancelled && clock_->Now() >= list_due) {
      continue;  // ended for the resync LIST: no failure
    }
    if (st.code() == StatusCode::kExpired) {
      LOG(INFO) << "node cache: watch expired; re-listing" << Fields("err", st.message());
      {
        MutexLock l(&mu_);
        ++stats_.relists_expired;
      }
      need_list = true;
      clock_->SleepFor(RetryDelay(&backoff, st), stop);
      continue;
    }
    if (st.ok() && lived) continue;  // the server ended the watch: re-watch from its version
    if (st.ok()) {
      LOG(WARNING) << "node cache: watch ended after " << ToSeconds(clock_->Now() - opened)
                   << " s with nothing received; backing off";
    } else {
      SetError(st);
      LOG(WARNING) << "node cache: watch ended" << Fields("err", st);
    }
    clock_->SleepFor(RetryDelay(&backoff, st), stop);
  }
}

}  // namespace ds
