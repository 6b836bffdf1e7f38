#include "controller/event_recorder.h"

#include <gtest/gtest.h>

#include "test/fakes/make_event.h"

namespace ds {
namespace {

TimePoint At(double seconds) { return TimePoint{} + FromSeconds(seconds); }

EventInfo Marked(const std::string& node, double wall, const std::string& note = "m") {
  EventInfo e = MakeEvent("Node", node, "", "Marked", note, "Normal", wall, "uid-" + node);
  e.action = "Mark";
  return e;
}

TEST(EventRecorderTest, TheFirstOccurrenceIsCreatedAndRepeatsPatchItsSeries) {
  EventRecorder r(360);
  auto w = r.Observe(Marked("n1", 1000, "value 95"), At(0), true);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->kind, EventWrite::Kind::kCreate);
  EXPECT_EQ(w->event.series_count, 0);
  const std::string name = w->event.event_name;
  EXPECT_EQ(name.rfind("n1.", 0), 0u) << name;

  w = r.Observe(Marked("n1", 1010, "value 97"), At(10), true);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->kind, EventWrite::Kind::kPatch);
  EXPECT_EQ(w->event.event_name, name);
  EXPECT_EQ(w->event.series_count, 2) << "the API server wants a series to count at least 2";
  EXPECT_EQ(w->event.series_last_wall, 1010);
  EXPECT_EQ(w->event.message, "value 95") << "the note is the first's: it is immutable";

  EventInfo other = Marked("n1", 1020);
  other.reason = "Unmarked";
  other.action = "Unmark";
  w = r.Observe(other, At(20), true);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->kind, EventWrite::Kind::kCreate) << "another reason and action: another series";
  w = r.Observe(Marked("n2", 1020), At(20), true);
  EXPECT_EQ(w->kind, EventWrite::Kind::kCreate) << "another node";
  EXPECT_EQ(r.open_series(), 3u);
}

TEST(EventRecorderTest, ASeriesKeepsEveryFieldOfItsFirstEvent) {
  // The series is kept packed (memory at 10,000 nodes); its writes carry the first Event whole.
  EventInfo e = MakeEvent("Deployment", "web", "shop", "RebalanceRelieved", "relieved after 3m",
                          "Warning", 1000, "uid-web");
  e.api_version = "apps/v1";
  e.action = "Evict";
  e.related_kind = "Node";
  e.related_name = "node-7";
  e.related_namespace = "";
  e.message += std::string("\0 and more", 10);  // any bytes
  EventRecorder r(360);
  auto created = r.Observe(e, At(0), true);
  ASSERT_TRUE(created);
  auto patch = r.Observe(e, At(5), true);
  ASSERT_TRUE(patch);
  for (const EventInfo* w : {&created->event, &patch->event}) {
    EXPECT_EQ(w->kind, e.kind);
    EXPECT_EQ(w->name, e.name);
    EXPECT_EQ(w->object_namespace, e.object_namespace);
    EXPECT_EQ(w->api_version, e.api_version);
    EXPECT_EQ(w->reason, e.reason);
    EXPECT_EQ(w->message, e.message);
    EXPECT_EQ(w->type, e.type);
    EXPECT_EQ(w->at_wall, e.at_wall);
    EXPECT_EQ(w->uid, e.uid);
    EXPECT_EQ(w->action, e.action);
    EXPECT_EQ(w->related_kind, e.related_kind);
    EXPECT_EQ(w->related_name, e.related_name);
    EXPECT_EQ(w->related_namespace, e.related_namespace);
    EXPECT_EQ(w->event_name, created->event.event_name);
  }
  EXPECT_FALSE(created->event.event_name.empty());
  EXPECT_EQ(patch->event.series_count, 2);
  EventInfo other = e;
  other.related_name = "node-8";
  EXPECT_EQ(r.Observe(other, At(6), true)->kind, EventWrite::Kind::kCreate)
      << "another related object: another series";
}

TEST(EventRecorderTest, HeldBackOccurrencesAreCountedAndWrittenLater) {
  EventRecorder r(360);
  EXPECT_FALSE(r.Observe(Marked("n1", 0), At(0), false)) << "held back: nothing to write";
  EXPECT_FALSE(r.Observe(Marked("n1", 5), At(5), false));
  auto w = r.Observe(Marked("n1", 9), At(9), true);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->kind, EventWrite::Kind::kCreate) << "never created yet";
  EXPECT_EQ(w->event.series_count, 3) << "created with the count of the held-back ones";
  EXPECT_EQ(w->event.series_last_wall, 9);
  EXPECT_EQ(w->event.at_wall, 0) << "eventTime: the first occurrence";
  EXPECT_FALSE(r.Observe(Marked("n1", 20), At(20), false));
  EXPECT_TRUE(r.Finish(At(300)).empty()) << "the series is still open";
  auto fin = r.Finish(At(381));
  ASSERT_EQ(fin.size(), 1u) << "closed with a count the server does not have";
  EXPECT_EQ(fin[0].kind, EventWrite::Kind::kPatch);
  EXPECT_EQ(fin[0].event.series_count, 4);
  EXPECT_EQ(r.open_series(), 0u);
}

TEST(EventRecorderTest, ASeriesClosesAfterTheWindowAndTheNextOccurrenceStartsAnother) {
  EventRecorder r(360);
  const std::string first = r.Observe(Marked("n1", 0), At(0), true)->event.event_name;
  EXPECT_TRUE(r.Finish(At(361)).empty()) << "a singleton closes without a write";
  auto w = r.Observe(Marked("n1", 400), At(400), true);
  EXPECT_EQ(w->kind, EventWrite::Kind::kCreate);
  EXPECT_NE(w->event.event_name, first);
  // Without Finish in between, a stale series is closed on the next occurrence too.
  w = r.Observe(Marked("n1", 800), At(800), true);
  EXPECT_EQ(w->kind, EventWrite::Kind::kCreate);
}

TEST(EventRecorderTest, NeverCreatedSeriesAreDroppedWhenTheyCloseAndFailuresForgotten) {
  EventRecorder r(360);
  r.Observe(Marked("n1", 0), At(0), false);
  r.Observe(Marked("n1", 1), At(1), false);
  EXPECT_TRUE(r.Finish(At(400)).empty())
      << "posting it late would undo the per-cycle cap after a cluster-wide spike";
  auto w = r.Observe(Marked("n2", 0), At(0), true);
  r.Failed(*w);
  EXPECT_EQ(r.Observe(Marked("n2", 1), At(1), true)->kind, EventWrite::Kind::kCreate)
      << "the failed create is not patched";
}

}  // namespace
}  // namespace ds
