#include "kube/node_cache.h"

#include <charconv>
#include <random>

namespace ds {
namespace {

bool ParseRv(const std::string& s, uint64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool SameTopology(const NodeInfo& a, const NodeInfo& b) { return a.addresses == b.addresses; }

}  // namespace

bool ResourceVersionNewer(const std::string& a, const std::string& b) {
  uint64_t x, y;
  if (ParseRv(a, &x) && ParseRv(b, &y)) return x > y;
  return true;
}

NodeCache::NodeCache(KubeApi* api, const Clock* clock, NodeCacheOptions options)
    : api_(api), clock_(clock), options_(std::move(options)) {}

std::shared_ptr<const NodeSnapshot> NodeCache::Snapshot() const {
  std::lock_guard<std::mutex> l(mu_);
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
  std::lock_guard<std::mutex> l(mu_);
  return last_error_;
}

NodeCacheStats NodeCache::Stats() const {
  std::lock_guard<std::mutex> l(mu_);
  return stats_;
}

void NodeCache::SetError(const Status& st) {
  std::lock_guard<std::mutex> l(mu_);
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
    for (auto& n : page->items) {
      TrimLabels(&n);
      std::string name = n.name;
      fresh[name] = std::make_shared<const NodeInfo>(std::move(n));
    }
    cont = page->continue_token;
  } while (!cont.empty());
  std::lock_guard<std::mutex> l(mu_);
  nodes_.swap(fresh);
  resource_version_ = rv;
  ++generation_;
  ++topology_;
  ++stats_.lists;
  last_error_.clear();
  synced_ = true;
  return Status::OK();
}

void NodeCache::TrimLabels(NodeInfo* node) const {
  if (options_.keep_label_keys.empty()) return;
  Labels kept;
  for (auto& kv : node->labels)
    for (const auto& k : options_.keep_label_keys)
      if (kv.first == k) kept.push_back(std::move(kv));
  node->labels = std::move(kept);
  node->labels.shrink_to_fit();
}

void NodeCache::Upsert(NodeInfo&& node) {
  TrimLabels(&node);
  std::lock_guard<std::mutex> l(mu_);
  auto it = nodes_.find(node.name);
  if (it != nodes_.end()) {
    if (!ResourceVersionNewer(node.resource_version, it->second->resource_version)) return;
    bool topo = !SameTopology(*it->second, node);
    it->second = std::make_shared<const NodeInfo>(std::move(node));
    if (topo) ++topology_;
  } else {
    std::string name = node.name;
    nodes_.emplace(std::move(name), std::make_shared<const NodeInfo>(std::move(node)));
    ++topology_;
  }
  ++generation_;
}

void NodeCache::Remove(const std::string& name) {
  std::lock_guard<std::mutex> l(mu_);
  if (nodes_.erase(name) > 0) {
    ++generation_;
    ++topology_;
  }
}

void NodeCache::ApplyWriteResult(const NodeInfo& node) { Upsert(NodeInfo(node)); }

Status NodeCache::WatchOnce(const std::atomic<bool>* stop) {
  static thread_local std::mt19937 rng{std::random_device{}()};
  std::uniform_int_distribution<int> dist(options_.watch_timeout_min, options_.watch_timeout_max);
  std::string rv;
  {
    std::lock_guard<std::mutex> l(mu_);
    rv = resource_version_;
  }
  auto on_event = [&](WatchEvent&& ev) {
    std::string ev_rv = ev.node.resource_version;
    switch (ev.type) {
      case WatchEventType::kAdded:
      case WatchEventType::kModified:
        Upsert(std::move(ev.node));
        break;
      case WatchEventType::kDeleted:
        Remove(ev.node.name);
        break;
      case WatchEventType::kBookmark:
      case WatchEventType::kError:
        break;
    }
    std::lock_guard<std::mutex> l(mu_);
    if (!ev_rv.empty()) resource_version_ = ev_rv;
    if (ev.type == WatchEventType::kBookmark)
      ++stats_.bookmarks;
    else
      ++stats_.events;
  };
  return api_->WatchNodes(options_.label_selector, rv, dist(rng), on_event,
                          [stop] { return stop->load(); });
}

void NodeCache::Run(const std::atomic<bool>* stop) {
  Backoff backoff;
  bool need_list = true;
  const TimePoint run_start = clock_->Now();
  TimePoint last_list = run_start;
  while (!stop->load()) {
    if (need_list) {
      Status st = ListOnce();
      if (!st.ok()) {
        SetError(st);
        LOG(WARNING) << "node cache: list failed: " << st.ToString();
        Duration d = backoff.Next();
        if (st.retry_after_seconds() > 0) d = std::max(d, FromSeconds(st.retry_after_seconds()));
        clock_->SleepFor(d, stop);
        continue;
      }
      {
        std::lock_guard<std::mutex> l(mu_);
        if (stats_.lists == 1) stats_.initial_sync_seconds = ToSeconds(clock_->Now() - run_start);
      }
      LOG(INFO) << "node cache: listed " << Snapshot()->nodes.size() << " nodes";
      need_list = false;
      last_list = clock_->Now();
      backoff.Reset();
    }
    Status st = WatchOnce(stop);
    if (stop->load()) break;
    {
      std::lock_guard<std::mutex> l(mu_);
      ++stats_.watch_restarts;
    }
    bool resync_due = options_.resync_seconds > 0 &&
                      clock_->Now() - last_list > FromSeconds(options_.resync_seconds);
    if (st.ok()) {
      backoff.Reset();
      if (resync_due) need_list = true;
      continue;  // the server ended the watch: re-watch from the saved resourceVersion
    }
    if (st.code() == StatusCode::kExpired) {
      LOG(INFO) << "node cache: " << st.message() << "; re-listing";
      std::lock_guard<std::mutex> l(mu_);
      ++stats_.relists_expired;
      need_list = true;
      continue;
    }
    SetError(st);
    LOG(WARNING) << "node cache: watch ended: " << st.ToString();
    if (resync_due) need_list = true;
    Duration d = backoff.Next();
    if (st.retry_after_seconds() > 0) d = std::max(d, FromSeconds(st.retry_after_seconds()));
    clock_->SleepFor(d, stop);
  }
}

}  // namespace ds
