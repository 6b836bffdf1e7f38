#include "kube/node_cache.h"

#include <gtest/gtest.h>

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
  FakeClock clock;
  NodeCache cache(&api, &clock, NodeCacheOptions{});
  ASSERT_TRUE(cache.ListOnce().ok());
  std::string v = "presure";
  auto written = api.PatchNodeLabel("n1", "status", &v);
  ASSERT_TRUE(written.ok());
  cache.ApplyWriteResult(*written);
  FakeKubeApi::WatchScript s;
  s.events.push_back(Ev(WatchEventType::kModified, Node("n1", "1")));  // older than our write
  s.end = Status::OK();
  api.AddWatchScript(std::move(s));
  RunToEnd(&api, &cache);
  EXPECT_NE(FindLabel(cache.Snapshot()->nodes[0]->labels, "status"), nullptr);
}

TEST(NodeCache, FailedWatchBacksOffOnTheClockAndRewatchesFromItsVersion) {
  FakeKubeApi api;
  api.AddNode(Node("n1"));
  FakeClock clock;
  NodeCache cache(&api, &clock, NodeCacheOptions{});
  for (int i = 0; i < 3; ++i)
    api.AddWatchScript({{}, Status::Unavailable("connection refused"), {}});
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
    api.AddWatchScript({{}, Status::OK(), [&] { clock.AdvanceSeconds(250); }});
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

TEST(ResourceVersionNewer, Numeric) {
  EXPECT_TRUE(ResourceVersionNewer("10", "9"));
  EXPECT_FALSE(ResourceVersionNewer("9", "10"));
  EXPECT_FALSE(ResourceVersionNewer("10", "10"));
  EXPECT_TRUE(ResourceVersionNewer("abc", "10")) << "opaque versions: trust delivery order";
}

}  // namespace
}  // namespace ds
