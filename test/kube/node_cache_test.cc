#include "kube/node_cache.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "test/fakes/fake_clock.h"
#include "test/fakes/fake_kube_api.h"

namespace ds {
namespace {

NodeInfo Node(const std::string& name, const std::string& rv = "", Labels labels = {}) {
  NodeInfo n;
  n.name = name;
  n.resource_version = rv;
  n.labels = std::move(labels);
  n.addresses = {"10.0.0." + name.substr(name.size() - 1)};
  return n;
}

WatchEvent Ev(WatchEventType t, NodeInfo n) {
  WatchEvent e;
  e.type = t;
  e.node = std::move(n);
  return e;
}

WatchEvent Bookmark(const std::string& rv) {
  WatchEvent e;
  e.type = WatchEventType::kBookmark;
  e.node.resource_version = rv;
  return e;
}

// A watch that delivers `events` and then ends with `end` (OK: the server closed it), after
// `before_end` (e.g. advancing the fake clock: how long the watch lived).
FakeKubeApi::WatchScript Watch(std::vector<WatchEvent> events, Status end,
                               std::function<void()> before_end = {}) {
  FakeKubeApi::WatchScript s;
  s.events = std::move(events);
  s.end = std::move(end);
  s.before_end = std::move(before_end);
  return s;
}

// A watch that delivers `events` and then stays open, one fake second per tick, until the cache
// cancels it or the server ends it (OK) at `timeout_seconds`. *lived counts its seconds.
FakeKubeApi::WatchScript OpenWatch(FakeClock* clock, int timeout_seconds, int* lived,
                                   std::vector<WatchEvent> events = {}) {
  FakeKubeApi::WatchScript s;
  s.events = std::move(events);
  s.end = Status::Cancelled("cancelled by the cache");
  s.tick = [clock, timeout_seconds, lived] {
    clock->AdvanceSeconds(1);
    return ++*lived < timeout_seconds;
  };
  return s;
}

Status TooManyRequests(double retry_after_seconds) {
  return Status(StatusCode::kTooManyRequests, "list nodes: 429 Too Many Requests")
      .set_retry_after_seconds(retry_after_seconds);
}

// Runs the cache's list/watch loop on this thread, on fake time, until the scripted watches
// are used up.
void RunToEnd(FakeKubeApi* api, NodeCache* cache) {
  std::atomic<bool> stop{false};
  api->StopWhenScriptsRunOut(&stop);
  cache->Run(&stop);
}

TEST(NodeCache, PagedListThenWatchEvents) {
  FakeKubeApi api;
  for (int i = 1; i <= 7; ++i) api.AddNode(Node("n" + std::to_string(i)));
  NodeCacheOptions opts;
  opts.page_size = 3;
  FakeClock clock;
  NodeCache cache(&api, &clock, opts);
  ASSERT_TRUE(cache.ListOnce().ok());
  EXPECT_EQ(api.list_calls(), 3) << "7 nodes in pages of 3";
  EXPECT_EQ(cache.Snapshot()->nodes.size(), 7u);
  EXPECT_TRUE(cache.Synced());

  FakeKubeApi::WatchScript s;
  s.events.push_back(Ev(WatchEventType::kAdded, Node("n8", "200")));
  s.events.push_back(Ev(WatchEventType::kModified, Node("n1", "201", {{"x", "y"}})));
  s.events.push_back(Ev(WatchEventType::kDeleted, Node("n2", "202")));
  WatchEvent bm;
  bm.type = WatchEventType::kBookmark;
  bm.node.resource_version = "250";
  s.events.push_back(bm);
  s.end = Status::OK();  // server closes the watch
  api.AddWatchScript(std::move(s));
  RunToEnd(&api, &cache);
  ASSERT_EQ(api.watch_rvs().size(), 2u) << "the scripted watch, then the re-watch";
  auto snap = cache.Snapshot();
  ASSERT_EQ(snap->nodes.size(), 7u);
  EXPECT_EQ(snap->nodes[0]->name, "n1");
  EXPECT_EQ(*FindLabel(snap->nodes[0]->labels, "x"), "y");
  EXPECT_EQ(snap->nodes.back()->name, "n8");
  auto rvs = api.watch_rvs();
  EXPECT_EQ(rvs[1], "250") << "the re-watch starts from the bookmark's resourceVersion";
  EXPECT_EQ(cache.Stats().bookmarks, 1u);
}

// A resync LIST keeps the objects of the nodes that did not change (the same resourceVersion), so
// 10,000 long-lived objects are not replaced every 10 minutes (memory: the heap fragmented after
// each resync); a changed node is replaced, a node gone is dropped.
TEST(NodeCache, ResyncKeepsTheObjectsOfUnchangedNodes) {
  FakeKubeApi api;
  for (int i = 1; i <= 5; ++i) api.AddNode(Node("n" + std::to_string(i), "10"));
  NodeCacheOptions opts;
  opts.page_size = 2;
  FakeClock clock;
  NodeCache cache(&api, &clock, opts);
  ASSERT_TRUE(cache.ListOnce().ok());
  const auto before = cache.Snapshot();
  api.AddNode(Node("n2", "11", {{"x", "y"}}));
  api.RemoveNode("n5");
  ASSERT_TRUE(cache.ListOnce().ok());
  const auto after = cache.Snapshot();
  ASSERT_EQ(after->nodes.size(), 4u);
  EXPECT_EQ(after->nodes[0], before->nodes[0]) << "n1 unchanged: the same object";
  EXPECT_NE(after->nodes[1], before->nodes[1]) << "n2 changed";
  EXPECT_EQ(*FindLabel(after->nodes[1]->labels, "x"), "y");
  EXPECT_EQ(after->nodes[2], before->nodes[2]);
  EXPECT_EQ(after->nodes[3], before->nodes[3]);
  EXPECT_EQ(after->Find("n5"), nullptr);
}

// 10,000 nodes' pods, hugepages and GPUs would be kept for nothing: only the rebalancer's
// destinations need them, and it reads those whole.
TEST(NodeCache, DropsAllocatableBeyondCpuAndMemory) {
  FakeKubeApi api;
  NodeInfo n = Node("n1");
  n.allocatable_cpu = 4;
  n.allocatable_other = {{"pods", 110}, {"nvidia.com/gpu", 2}};
  api.AddNode(n);
  FakeClock clock;
  NodeCache cache(&api, &clock, NodeCacheOptions{});
  ASSERT_TRUE(cache.ListOnce().ok());
  auto snap = cache.Snapshot();
  ASSERT_EQ(snap->nodes.size(), 1u);
  EXPECT_EQ(snap->nodes[0]->allocatable_cpu, 4);
  EXPECT_TRUE(snap->nodes[0]->allocatable_other.empty());
}

// Taint mode's second watch: every node comes by, only those the filter holds for are kept; a
// node that loses what the filter looks for leaves, one that gains it comes in.
TEST(NodeCache, KeepIfKeepsOnlyTheNodesThatPass) {
  const Taint ours{"example.com/hot", "yes", "PreferNoSchedule"};
  FakeKubeApi api;
  for (int i = 1; i <= 5; ++i) {
    NodeInfo n = Node("n" + std::to_string(i), std::to_string(100 + i));
    if (i == 2 || i == 4) n.taints = {ours};
    api.AddNode(n);
  }
  NodeCacheOptions opts;
  opts.page_size = 2;
  opts.keep_departures = false;
  opts.keep_if = [ours](const NodeInfo& n) {
    return std::find(n.taints.begin(), n.taints.end(), ours) != n.taints.end();
  };
  FakeClock clock;
  NodeCache cache(&api, &clock, opts);
  ASSERT_TRUE(cache.ListOnce().ok());
  auto names = [&cache] {
    std::vector<std::string> out;
    for (const auto& n : cache.Snapshot()->nodes) out.push_back(n->name);
    return out;
  };
  EXPECT_EQ(names(), (std::vector<std::string>{"n2", "n4"}));

  NodeInfo gained = Node("n3", "201");
  gained.taints = {ours};
  NodeInfo stale = Node("n4", "99");  // older than what the cache holds: ignored
  api.AddWatchScript(
      Watch({Ev(WatchEventType::kModified, gained),
             Ev(WatchEventType::kModified, Node("n2", "202")),  // taint removed
             Ev(WatchEventType::kModified, stale), Ev(WatchEventType::kAdded, Node("n6", "203"))},
            Status::OK()));
  RunToEnd(&api, &cache);
  EXPECT_EQ(names(), (std::vector<std::string>{"n3", "n4"}));
  EXPECT_TRUE(cache.TakeDepartures().empty()) << "a filtered-out node is no departure";
}

TEST(NodeCache, ExpiredRelistsAndKeepsServing) {
  FakeKubeApi api;
  api.AddNode(Node("n1"));
  FakeClock clock;
  NodeCache cache(&api, &clock, NodeCacheOptions{});
  FakeKubeApi::WatchScript s;
  s.end = Status(StatusCode::kExpired, "too old resource version: 1 (5)");
  api.AddWatchScript(std::move(s));
  RunToEnd(&api, &cache);
  EXPECT_EQ(api.list_calls(), 2);
  EXPECT_TRUE(cache.Synced());
  EXPECT_EQ(cache.Stats().relists_expired, 1u);
  EXPECT_EQ(cache.Snapshot()->nodes.size(), 1u);
}

TEST(NodeCache, StaleEventDoesNotOverwriteNewerWrite) {
  FakeKubeApi api;
  api.AddNode(Node("n1"));
  const uint64_t listed_rv = std::stoull(api.nodes()["n1"].resource_version);
  FakeClock clock;
  NodeCache cache(&api, &clock, NodeCacheOptions{});
  // While the first watch is open, somebody else changes n1 (its event is still on the way), then
  // the controller labels n1 and writes the PATCH response back. The second watch delivers the
  // other change: newer than the LIST, older than our write. The write-back alone puts the label
  // in the cache (the LIST ran before the write); the version check alone keeps it there.
  const NodeInfo theirs = Node("n1", std::to_string(listed_rv + 1), {{"other", "x"}});
  std::string written_rv;
  auto write = [&] {
    NodeEdit other, ours;
    other.label = {NodeEdit::Op::kSet, "other", "x"};
    ours.label = {NodeEdit::Op::kSet, "status", "pressure"};
    auto changed = api.PatchNode("n1", other);
    ASSERT_TRUE(changed.ok());
    ASSERT_EQ(changed->resource_version, theirs.resource_version);
    auto written = api.PatchNode("n1", ours);
    ASSERT_TRUE(written.ok());
    written_rv = written->resource_version;
    cache.ApplyWriteResult(*written);
  };
  api.AddWatchScript(Watch({}, Status::OK(), write));
  api.AddWatchScript(Watch({Ev(WatchEventType::kModified, theirs)}, Status::OK()));
  RunToEnd(&api, &cache);
  ASSERT_EQ(api.list_calls(), 1) << "no LIST after the write: only the write-back can show it";
  auto snap = cache.Snapshot();
  ASSERT_EQ(snap->nodes.size(), 1u);
  const std::string* status = FindLabel(snap->nodes[0]->labels, "status");
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(*status, "pressure");
  EXPECT_EQ(snap->nodes[0]->resource_version, written_rv) << "the stale event was dropped";
}

TEST(NodeCache, WriteResultDoesNotReinsertANodeTheCacheDropped) {
  FakeKubeApi api;
  api.AddNode(Node("n1"));
  api.AddNode(Node("n2"));
  FakeClock clock;
  NodeCache cache(&api, &clock, NodeCacheOptions{});
  // n2 is deleted (or stops matching the label selector: the watch then sends DELETED too) while
  // a PATCH to it is in flight; its response, newer than anything the cache saw, arrives after.
  api.AddWatchScript(Watch({Ev(WatchEventType::kDeleted, Node("n2", "300"))}, Status::OK(), [&] {
    cache.ApplyWriteResult(Node("n2", "301", {{"status", "x"}}));
  }));
  RunToEnd(&api, &cache);
  auto snap = cache.Snapshot();
  ASSERT_EQ(snap->nodes.size(), 1u);
  EXPECT_EQ(snap->nodes[0]->name, "n1");
  cache.ApplyWriteResult(Node("n1", "302", {{"status", "x"}}));
  EXPECT_NE(FindLabel(cache.Snapshot()->nodes[0]->labels, "status"), nullptr)
      << "a node the cache holds is still updated";
}

TEST(NodeCache, FailedWatchBacksOffOnTheClockAndRewatchesFromItsVersion) {
  FakeKubeApi api;
  api.AddNode(Node("n1"));
  FakeClock clock;
  NodeCache cache(&api, &clock, NodeCacheOptions{});
  for (int i = 0; i < 3; ++i)
    api.AddWatchScript(Watch({}, Status::Unavailable("connection refused")));
  RunToEnd(&api, &cache);
  auto sleeps = clock.sleeps();
  ASSERT_EQ(sleeps.size(), 3u) << "one backoff wait after each failed watch";
  EXPECT_GE(ToSeconds(sleeps[0]), 0.8);
  EXPECT_LE(ToSeconds(sleeps[0]), 1.2);
  EXPECT_GE(ToSeconds(sleeps[2]), 3.2) << "the backoff doubles: 0.8, 1.6, 3.2 s (+ jitter)";
  EXPECT_EQ(api.list_calls(), 1) << "a dropped watch resumes from its resourceVersion, no LIST";
  for (const auto& rv : api.watch_rvs()) EXPECT_EQ(rv, api.watch_rvs()[0]);
  EXPECT_FALSE(cache.LastError().empty());
}

TEST(NodeCache, ResyncListsAgainOnceThePeriodHasPassed) {
  FakeKubeApi api;
  api.AddNode(Node("n1"));
  FakeClock clock;
  NodeCacheOptions opts;
  opts.resync_seconds = 600;
  NodeCache cache(&api, &clock, opts);
  // Each watch lives 250 s of fake time before the server ends it.
  for (int i = 0; i < 3; ++i)
    api.AddWatchScript(Watch({}, Status::OK(), [&] { clock.AdvanceSeconds(250); }));
  RunToEnd(&api, &cache);
  EXPECT_EQ(api.list_calls(), 2) << "listed at 0 s, and again after the watch ending at 750 s";
  EXPECT_EQ(cache.Stats().lists, 2u);
}

TEST(NodeCache, TopologyOnlyBumpsOnMembershipOrAddresses) {
  FakeKubeApi api;
  api.AddNode(Node("n1"));
  FakeClock clock;
  NodeCache cache(&api, &clock, NodeCacheOptions{});
  ASSERT_TRUE(cache.ListOnce().ok());
  uint64_t topo = cache.Snapshot()->topology;
  cache.ApplyWriteResult(Node("n1", "900", {{"a", "b"}}));
  EXPECT_EQ(cache.Snapshot()->topology, topo);
  NodeInfo moved = Node("n1", "901");
  moved.addresses = {"10.9.9.9"};
  cache.ApplyWriteResult(moved);
  EXPECT_NE(cache.Snapshot()->topology, topo);
}

// Item: a failed resync LIST (429s from API Priority and Fairness on a large LIST) must not stop
// the watch: the cache keeps watching from its last resourceVersion and retries the LIST later.
TEST(NodeCache, FailedResyncListKeepsWatchingAndRetriesTheListWithBackoff) {
  FakeKubeApi api;
  api.AddNode(Node("n1"));
  FakeClock clock;
  NodeCacheOptions opts;
  opts.resync_seconds = 600;
  opts.watch_timeout_min = opts.watch_timeout_max = 3000;
  NodeCache cache(&api, &clock, opts);
  // The first watch lives past the resync period; the resync LIST then fails twice.
  api.AddWatchScript(Watch({Bookmark("150")}, Status::OK(), [&] {
    clock.AdvanceSeconds(700);
    api.FailNextLists({TooManyRequests(5), Status::Unavailable("list nodes: 503")});
  }));
  int lived[2] = {0, 0};
  api.AddWatchScript(OpenWatch(&clock, 3000, &lived[0], {Bookmark("160")}));
  api.AddWatchScript(OpenWatch(&clock, 3000, &lived[1]));
  RunToEnd(&api, &cache);
  EXPECT_EQ(api.list_calls(), 4) << "the first LIST, two failed resyncs, the retry that worked";
  EXPECT_EQ(cache.Stats().lists, 2u);
  auto rvs = api.watch_rvs();
  ASSERT_EQ(rvs.size(), 4u);
  EXPECT_EQ(rvs[1], "150") << "after the failed resync LIST, the watch goes on from its version";
  EXPECT_EQ(rvs[2], "160");
  EXPECT_EQ(rvs[3], rvs[0]) << "after the LIST that worked, the watch starts from its version";
  EXPECT_EQ(lived[0], 5) << "the LIST is retried after the server's Retry-After";
  EXPECT_GE(lived[1], 2) << "then after a backoff that grows: 1.6-2.4 s";
  EXPECT_LE(lived[1], 3);
  EXPECT_TRUE(clock.sleeps().empty()) << "no wait without a watch: the cache stayed current";
  EXPECT_TRUE(cache.Synced());
  EXPECT_TRUE(cache.LastError().empty());
}

TEST(NodeCache, FailedInitialListIsRetriedUntilItSucceedsBeforeAnyWatch) {
  FakeKubeApi api;
  api.AddNode(Node("n1"));
  api.FailNextLists({TooManyRequests(0), Status::Unavailable("list nodes: 503")});
  FakeClock clock;
  NodeCache cache(&api, &clock, NodeCacheOptions{});
  RunToEnd(&api, &cache);
  EXPECT_EQ(api.list_calls(), 3);
  EXPECT_EQ(clock.sleeps().size(), 2u) << "a backoff wait after each failed LIST";
  EXPECT_EQ(api.watch_rvs().size(), 1u) << "no watch before a LIST has worked";
  EXPECT_TRUE(cache.Synced());
}

TEST(NodeCache, ExpiredWatchListsBeforeWatchingAgainEvenWhenTheListFails) {
  FakeKubeApi api;
  api.AddNode(Node("n1"));
  FakeClock clock;
  NodeCache cache(&api, &clock, NodeCacheOptions{});
  api.AddWatchScript(Watch({}, Status(StatusCode::kExpired, "too old resource version"),
                           [&] { api.FailNextLists({TooManyRequests(0)}); }));
  RunToEnd(&api, &cache);
  EXPECT_EQ(api.list_calls(), 3) << "the first LIST, the failed one after 410, its retry";
  EXPECT_EQ(api.watch_rvs().size(), 2u) << "no watch from the expired version";
  EXPECT_EQ(cache.Stats().lists, 2u);
}

// Item: freshness for /status.
TEST(NodeCache, LastProgressIsTheLastListOrWatchEvent) {
  FakeKubeApi api;
  api.AddNode(Node("n1"));
  FakeClock clock;
  NodeCache cache(&api, &clock, NodeCacheOptions{});
  const Duration bound = FromSeconds(300);
  EXPECT_EQ(cache.LastProgress(), TimePoint{}) << "nothing yet";
  EXPECT_TRUE(cache.Stale(clock.Now(), bound));
  const TimePoint t0 = clock.Now();
  // A quiet watch of 60 s, then one that gets a BOOKMARK, stays silent 200 s and drops.
  api.AddWatchScript(Watch({}, Status::OK(), [&] { clock.AdvanceSeconds(60); }));
  api.AddWatchScript(Watch({Bookmark("150")}, Status::Unavailable("idle timeout"),
                           [&] { clock.AdvanceSeconds(200); }));
  RunToEnd(&api, &cache);
  const TimePoint bookmark_at = t0 + FromSeconds(60);
  EXPECT_EQ(cache.LastProgress(), bookmark_at) << "the bookmark; watch ends are not progress";
  EXPECT_FALSE(cache.Stale(bookmark_at + FromSeconds(299), bound));
  EXPECT_TRUE(cache.Stale(bookmark_at + FromSeconds(301), bound));
  clock.AdvanceSeconds(1000);
  ASSERT_TRUE(cache.ListOnce().ok());
  EXPECT_EQ(cache.LastProgress(), clock.Now()) << "a LIST is progress";
  EXPECT_FALSE(cache.Stale(clock.Now(), bound));
}

// Item: a watch that ends at once with nothing (an API server shutting down, a proxy) must not
// be re-opened in a tight loop.
TEST(NodeCache, WatchesThatEndAtOnceWithNothingBackOff) {
  FakeKubeApi api;
  api.AddNode(Node("n1"));
  FakeClock clock;
  NodeCache cache(&api, &clock, NodeCacheOptions{});
  for (int i = 0; i < 10; ++i) api.AddWatchScript(Watch({}, Status::OK()));
  RunToEnd(&api, &cache);
  auto sleeps = clock.sleeps();
  ASSERT_EQ(sleeps.size(), 10u) << "a backoff wait after each empty watch";
  EXPECT_GE(ToSeconds(sleeps[0]), 0.8);
  EXPECT_LE(ToSeconds(sleeps[0]), 1.2);
  double base = 0.8;
  for (size_t i = 0; i < sleeps.size(); ++i, base = std::min(30.0, base * 2))
    EXPECT_GE(ToSeconds(sleeps[i]), base) << "0.8, 1.6, 3.2 ... up to 30 s (+ jitter), wait " << i;
  EXPECT_EQ(api.list_calls(), 1) << "an empty watch is re-opened from its version, no LIST";
}

TEST(NodeCache, OnlyAWatchThatLivedResetsTheBackoff) {
  FakeKubeApi api;
  api.AddNode(Node("n1"));
  FakeClock clock;
  NodeCache cache(&api, &clock, NodeCacheOptions{});
  for (int i = 0; i < 4; ++i) api.AddWatchScript(Watch({}, Status::Unavailable("refused")));
  // Lived: it delivered a bookmark.
  api.AddWatchScript(Watch({Bookmark("150")}, Status::Unavailable("dropped")));
  for (int i = 0; i < 3; ++i) api.AddWatchScript(Watch({}, Status::Unavailable("refused")));
  // Lived: open for a minute, nothing received.
  api.AddWatchScript(Watch({}, Status::Unavailable("dropped"), [&] { clock.AdvanceSeconds(60); }));
  // Lived and ended by the server: re-opened at once.
  api.AddWatchScript(Watch({}, Status::OK(), [&] { clock.AdvanceSeconds(60); }));
  RunToEnd(&api, &cache);
  auto sleeps = clock.sleeps();
  ASSERT_EQ(sleeps.size(), 9u);
  EXPECT_GE(ToSeconds(sleeps[3]), 6.4) << "0.8, 1.6, 3.2, 6.4 s (+ jitter)";
  EXPECT_LE(ToSeconds(sleeps[4]), 1.2) << "the bookmark reset the backoff";
  EXPECT_GE(ToSeconds(sleeps[7]), 3.2) << "and it grew again";
  EXPECT_LE(ToSeconds(sleeps[8]), 1.2) << "a watch open for a minute reset it";
}

TEST(NodeCache, RepeatedExpiredRelistRoundsArePaced) {
  FakeKubeApi api;
  api.AddNode(Node("n1"));
  FakeClock clock;
  NodeCache cache(&api, &clock, NodeCacheOptions{});
  for (int i = 0; i < 8; ++i)
    api.AddWatchScript(Watch({}, Status(StatusCode::kExpired, "too old resource version")));
  RunToEnd(&api, &cache);
  EXPECT_EQ(cache.Stats().relists_expired, 8u);
  EXPECT_EQ(api.list_calls(), 9);
  auto sleeps = clock.sleeps();
  ASSERT_EQ(sleeps.size(), 8u) << "a backoff wait before each re-LIST";
  EXPECT_GE(ToSeconds(sleeps[0]), 0.8);
  EXPECT_GE(ToSeconds(sleeps[7]), 30) << "a LIST that is at once expired again is not healthy";
}

// Item: the resync runs at its period, not at the next watch end (600 s used to mean 600-1200 s,
// and a period below the watch timeout could not be honoured).
TEST(NodeCache, ResyncRunsOnItsOwnScheduleNotAtTheNextWatchEnd) {
  FakeKubeApi api;
  api.AddNode(Node("n1"));
  FakeClock clock;
  NodeCacheOptions opts;
  opts.resync_seconds = 120;
  opts.watch_timeout_min = opts.watch_timeout_max = 300;
  NodeCache cache(&api, &clock, opts);
  const TimePoint t0 = clock.Now();
  int lived[2] = {0, 0};
  api.AddWatchScript(OpenWatch(&clock, 300, &lived[0], {Bookmark("150")}));
  api.AddWatchScript(OpenWatch(&clock, 300, &lived[1]));
  RunToEnd(&api, &cache);
  EXPECT_EQ(lived[0], 120) << "the open watch was ended for the resync at 120 s, not at 300 s";
  EXPECT_EQ(lived[1], 120);
  EXPECT_EQ(api.list_calls(), 3) << "LISTs at 0, 120 and 240 s";
  EXPECT_EQ(clock.Now() - t0, FromSeconds(240));
  EXPECT_TRUE(clock.sleeps().empty()) << "ending a watch for the resync is no failure";
  EXPECT_EQ(cache.LastProgress(), t0 + FromSeconds(240));
}

TEST(ResourceVersionNewer, Numeric) {
  EXPECT_TRUE(ResourceVersionNewer("10", "9"));
  EXPECT_FALSE(ResourceVersionNewer("9", "10"));
  EXPECT_FALSE(ResourceVersionNewer("10", "10"));
  EXPECT_TRUE(ResourceVersionNewer("abc", "10")) << "opaque versions: trust delivery order";
}

NodeInfo Recorded(NodeInfo n) {
  n.annotations = {{"dynamic-scheduler.io/held-by", "{}"}};
  return n;
}

// A node that leaves the label selector (a changed nodeSelector, a node that became control-
// plane) arrives as DELETED: the cache must say so when it carried our record, or nobody would
// ever take the mark off it.
TEST(NodeCache, NodesThatLeaveWithOurRecordAreReported) {
  FakeKubeApi api;
  api.AddNode(Recorded(Node("n1", "", {{"status", "presure"}})));
  api.AddNode(Node("n2"));
  api.AddNode(Recorded(Node("n3")));
  api.AddNode(Recorded(Node("n4")));
  FakeClock clock;
  NodeCacheOptions opts;
  opts.keep_label_keys = {"status"};
  NodeCache cache(&api, &clock, opts);
  ASSERT_TRUE(cache.ListOnce().ok());
  EXPECT_TRUE(cache.TakeDepartures().empty());
  NodeInfo last = Recorded(Node("n1", "300", {{"status", "presure"}, {"other", "x"}}));
  api.AddWatchScript(
      Watch({Ev(WatchEventType::kDeleted, last), Ev(WatchEventType::kDeleted, Node("n2", "301")),
             Ev(WatchEventType::kDeleted, Recorded(Node("n3", "302"))),
             Ev(WatchEventType::kAdded, Recorded(Node("n3", "303")))},
            Status::OK()));
  RunToEnd(&api, &cache);
  std::vector<NodeInfo> left = cache.TakeDepartures();
  ASSERT_EQ(left.size(), 1u) << "n2 had no record; n3 came back";
  EXPECT_EQ(left[0].name, "n1");
  EXPECT_EQ(left[0].labels, (Labels{{"status", "presure"}})) << "as it left, trimmed";
  EXPECT_EQ(left[0].annotations.size(), 1u);
  EXPECT_TRUE(cache.TakeDepartures().empty()) << "taken once";

  // One that left while no watch was open: the next LIST no longer returns it.
  api.RemoveNode("n4");
  ASSERT_TRUE(cache.ListOnce().ok());
  left = cache.TakeDepartures();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].name, "n4");
}

}  // namespace
}  // namespace ds
