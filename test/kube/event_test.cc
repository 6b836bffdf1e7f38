#include "kube/event.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <string>

#include "test/fakes/make_event.h"

namespace ds {
namespace {

rapidjson::Document Parse(const std::string& json) {
  rapidjson::Document d;
  d.Parse(json.c_str());
  EXPECT_FALSE(d.HasParseError()) << json;
  return d;
}

TEST(EventTest, ANodeEventIsAnEventsV1EventInDefaultWithTheRequiredFields) {
  EventInfo e =
      MakeEvent("Node", "node-1", "", "Marked", "Marked status=hot: rule cpu value 95 > 80",
                "Normal", 1795435200.5, "n-uid");
  e.action = "Mark";
  e.event_name = "node-1.1";
  auto d = Parse(EncodeEvent(e, "dynamic-scheduler", "dynamic-scheduler-pod-a"));
  EXPECT_STREQ(d["apiVersion"].GetString(), "events.k8s.io/v1");
  EXPECT_STREQ(d["kind"].GetString(), "Event");
  EXPECT_STREQ(d["metadata"]["name"].GetString(), "node-1.1");
  EXPECT_STREQ(d["metadata"]["namespace"].GetString(), "default")
      << "a cluster-scoped object's events live in default";
  EXPECT_STREQ(d["eventTime"].GetString(), "2026-11-23T12:00:00.500000Z") << "a MicroTime";
  EXPECT_STREQ(d["reportingController"].GetString(), "dynamic-scheduler");
  EXPECT_STREQ(d["reportingInstance"].GetString(), "dynamic-scheduler-pod-a");
  EXPECT_STREQ(d["action"].GetString(), "Mark");
  EXPECT_STREQ(d["reason"].GetString(), "Marked");
  EXPECT_STREQ(d["type"].GetString(), "Normal");
  EXPECT_STREQ(d["note"].GetString(), "Marked status=hot: rule cpu value 95 > 80");
  EXPECT_STREQ(d["regarding"]["apiVersion"].GetString(), "v1");
  EXPECT_STREQ(d["regarding"]["kind"].GetString(), "Node");
  EXPECT_STREQ(d["regarding"]["name"].GetString(), "node-1");
  EXPECT_STREQ(d["regarding"]["uid"].GetString(), "n-uid");
  EXPECT_FALSE(d["regarding"].HasMember("namespace")) << "a Node has none";
  for (const char* absent : {"series", "related", "involvedObject", "message", "source",
                             "firstTimestamp", "lastTimestamp", "count", "deprecatedCount",
                             "deprecatedSource", "deprecatedFirstTimestamp"})
    EXPECT_FALSE(d.HasMember(absent)) << absent << ": the API refuses deprecated fields on create";
}

TEST(EventTest, APodEventNamesItsNamespaceAndRelatedNode) {
  EventInfo e = MakeEvent("Pod", "web-1", "shop", "RebalanceEviction", "m", "Normal", 1, "");
  e.action = "Evict";
  e.related_kind = "Node";
  e.related_name = "node-1";
  auto d = Parse(EncodeEvent(e, "dynamic-scheduler", "i"));
  EXPECT_EQ(EventNamespace(e), "shop");
  EXPECT_STREQ(d["metadata"]["namespace"].GetString(), "shop");
  EXPECT_STREQ(d["regarding"]["namespace"].GetString(), "shop");
  EXPECT_FALSE(d["regarding"].HasMember("uid")) << "unknown: left out";
  EXPECT_STREQ(d["related"]["kind"].GetString(), "Node");
  EXPECT_STREQ(d["related"]["name"].GetString(), "node-1");
  EXPECT_FALSE(d["related"].HasMember("namespace"));
}

TEST(EventTest, NamesAreUniqueAndStartWithTheObjectsName) {
  EventInfo e = MakeEvent("Node", "node-1", "", "Marked", "m", "Normal", 1795435200, "");
  const std::string a = EventName(e), b = EventName(e);
  EXPECT_NE(a, b) << "two events in one instant must not collide (409)";
  // "<name>.<hex nanoseconds>": 1795435200 s is 0x18eaaacd413b8000 ns.
  EXPECT_EQ(a.rfind("node-1.18eaaacd413b8", 0), 0u) << a;
}

TEST(EventTest, NoteAndInstanceAreCutToTheApiServersLimitsOnACharacterBoundary) {
  std::string note(1023, 'x');
  note += "\xc3\xa9";  // a two-byte character across the 1024-byte limit
  EventInfo e = MakeEvent("Node", "n", "", "Marked", note, "Normal", 1, "");
  e.action = "Mark";
  auto d = Parse(EncodeEvent(e, "dynamic-scheduler", std::string(300, 'i')));
  EXPECT_EQ(d["note"].GetStringLength(), 1023u) << "the character is dropped whole";
  EXPECT_EQ(d["reportingInstance"].GetStringLength(), kEventFieldLimit);
}

TEST(EventTest, SeriesOnCreateAndAsAPatch) {
  EventInfo e = MakeEvent("Node", "n", "", "Marked", "m", "Normal", 100, "");
  e.action = "Mark";
  e.series_count = 4;
  e.series_last_wall = 160.000001;
  auto d = Parse(EncodeEvent(e, "dynamic-scheduler", "i"));
  EXPECT_EQ(d["series"]["count"].GetInt(), 4);
  EXPECT_STREQ(d["series"]["lastObservedTime"].GetString(), "1970-01-01T00:02:40.000001Z");
  EXPECT_EQ(EncodeEventSeriesPatch(2, 0.9999996),
            R"({"series":{"count":2,"lastObservedTime":"1970-01-01T00:00:01.000000Z"}})")
      << "rounded microseconds carry into the seconds";
}

}  // namespace
}  // namespace ds
