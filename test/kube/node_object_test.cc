#include "kube/node_object.h"

#include <gtest/gtest.h>

#include "kube/kube_api.h"

namespace ds {
namespace {

const char* kNode =
    R"({"kind":"Node","apiVersion":"v1","metadata":{"name":"n1","resourceVersion":"42","labels":{"a":"b","node-role.kubernetes.io/control-plane":""}},"spec":{"unschedulable":true},"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.1"},{"type":"Hostname","address":"n1"},{"type":"InternalDNS","address":"n1.internal"}]}})";

TEST(DecodeNode, Fields) {
  auto n = DecodeNode(kNode);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(n->name, "n1");
  EXPECT_EQ(n->resource_version, "42");
  EXPECT_EQ(*FindLabel(n->labels, "a"), "b");
  EXPECT_TRUE(n->unschedulable);
  EXPECT_TRUE(n->IsControlPlane());
  EXPECT_EQ(n->addresses, (std::vector<std::string>{"10.0.0.1", "n1"}));
}

TEST(DecodeNodeList, Page) {
  std::string body =
      std::string(
          R"({"kind":"NodeList","metadata":{"resourceVersion":"77","continue":"tok"},"items":[)") +
      kNode + "]}";
  auto p = DecodeNodeList(body);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->resource_version, "77");
  EXPECT_EQ(p->continue_token, "tok");
  EXPECT_EQ(p->items.size(), 1u);
  EXPECT_FALSE(DecodeNodeList(R"({"items":[]})").ok())
      << "a list without resourceVersion cannot start a watch";
  EXPECT_FALSE(
      DecodeNodeList(R"({"metadata":{"resourceVersion":"1"},"items":[{"metadata":{}}]})").ok());
  EXPECT_FALSE(DecodeNodeList("{truncated").ok());
}

TEST(DecodeWatchEvent, Types) {
  auto added = DecodeWatchEvent(std::string(R"({"type":"ADDED","object":)") + kNode + "}");
  ASSERT_TRUE(added.ok());
  EXPECT_EQ(added->type, WatchEventType::kAdded);
  EXPECT_EQ(added->node.name, "n1");
  auto bm = DecodeWatchEvent(
      R"({"type":"BOOKMARK","object":{"kind":"Node","apiVersion":"v1","metadata":{"resourceVersion":"99"}}})");
  ASSERT_TRUE(bm.ok());
  EXPECT_EQ(bm->type, WatchEventType::kBookmark);
  EXPECT_EQ(bm->node.resource_version, "99");
  auto err = DecodeWatchEvent(
      R"J({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 5 (10)","reason":"Expired","code":410}})J");
  ASSERT_TRUE(err.ok());
  EXPECT_EQ(err->type, WatchEventType::kError);
  EXPECT_EQ(err->error.code(), StatusCode::kExpired);
  EXPECT_NE(err->error.message().find("too old resource version"), std::string::npos);
  EXPECT_FALSE(DecodeWatchEvent(R"({"type":"WHAT","object":{}})").ok());
  EXPECT_FALSE(DecodeWatchEvent(R"({"type":"ADDED"})").ok());
}

TEST(WatchLineSplitter, ArbitraryChunking) {
  std::string stream = "{\"a\":1}\n{\"b\":2}\r\n\n{\"c\":3}\n{\"partial\"";
  for (size_t chunk = 1; chunk <= stream.size(); ++chunk) {
    WatchLineSplitter s;
    std::vector<std::string> lines;
    for (size_t i = 0; i < stream.size(); i += chunk)
      ASSERT_TRUE(s.Feed(stream.substr(i, chunk), &lines));
    ASSERT_EQ(lines.size(), 3u) << "chunk " << chunk;
    EXPECT_EQ(lines[1], "{\"b\":2}");
    EXPECT_EQ(s.buffered(), std::string("{\"partial\"").size())
        << "a partial last line is never returned";
  }
}

TEST(WatchLineSplitter, LineLimit) {
  WatchLineSplitter s(10);
  std::vector<std::string> lines;
  EXPECT_FALSE(s.Feed(std::string(11, 'x'), &lines));
}

TEST(StatusFromResponse, StatusObjectAndRetryAfter) {
  Status st = StatusFromResponse(
      429,
      R"({"kind":"Status","status":"Failure","message":"too many requests","reason":"TooManyRequests","code":429,"details":{"retryAfterSeconds":2}})",
      "", "patch node n1");
  EXPECT_EQ(st.code(), StatusCode::kTooManyRequests);
  EXPECT_EQ(st.retry_after_seconds(), 2);
  EXPECT_EQ(st.message(), "patch node n1: TooManyRequests: too many requests");
  Status h = StatusFromResponse(503, "upstream down", "7", "list nodes");
  EXPECT_EQ(h.code(), StatusCode::kUnavailable);
  EXPECT_EQ(h.retry_after_seconds(), 7);
  EXPECT_EQ(StatusFromResponse(
                403, R"({"kind":"Status","code":403,"reason":"Forbidden","message":"no"})", "", "x")
                .code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(StatusFromResponse(
                410, R"({"kind":"Status","code":410,"reason":"Expired","message":"old"})", "", "x")
                .code(),
            StatusCode::kExpired);
  EXPECT_EQ(StatusFromResponse(422, "{}", "", "x").code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(StatusFromResponse(422, "{}", "", "x").IsRetryable());
  EXPECT_TRUE(StatusFromResponse(409, "{}", "", "x").IsRetryable());
}

TEST(NodeEdit, SettingIsAMergePatchOfOurKeysOnly) {
  NodeEdit e;
  e.label = {NodeEdit::Op::kSet, "status", "pre\"sure"};
  e.annotation = {NodeEdit::Op::kSet, "dynamic-scheduler.io/held-by", "{\"a\":1}"};
  EncodedPatch p = *EncodeNodeEdit(e);
  EXPECT_EQ(p.content_type, "application/merge-patch+json");
  EXPECT_EQ(p.body, R"({"metadata":{"labels":{"status":"pre\"sure"},)"
                    R"("annotations":{"dynamic-scheduler.io/held-by":"{\"a\":1}"}}})");
  NodeEdit forget;
  forget.annotation = {NodeEdit::Op::kRemove, "dynamic-scheduler.io/held-by", ""};
  EXPECT_EQ(EncodeNodeEdit(forget)->body,
            R"({"metadata":{"annotations":{"dynamic-scheduler.io/held-by":null}}})");
}

TEST(NodeEdit, RemovalIsAJsonPatchThatTestsTheValueFirst) {
  NodeEdit e;
  e.label = {NodeEdit::Op::kRemove, "example.com/busy~x", "presure"};
  e.annotation = {NodeEdit::Op::kRemove, "dynamic-scheduler.io/held-by", ""};
  EncodedPatch p = *EncodeNodeEdit(e);
  EXPECT_EQ(p.content_type, "application/json-patch+json");
  EXPECT_EQ(p.body,
            R"([{"op":"test","path":"/metadata/labels/example.com~1busy~0x","value":"presure"},)"
            R"({"op":"remove","path":"/metadata/labels/example.com~1busy~0x"},)"
            R"({"op":"remove","path":"/metadata/annotations/dynamic-scheduler.io~1held-by"}])");
  e.annotation.op = NodeEdit::Op::kKeep;
  EXPECT_EQ(EncodeNodeEdit(e)->body.find("annotations"), std::string::npos);
  EXPECT_EQ(DescribeNodeEdit(e), "remove example.com/busy~x (if still presure)");
}

// Taint mode: the whole taints list, conditional on the resourceVersion it was read at (a merge
// patch with metadata.resourceVersion: 409 if the node changed). The label's removal rides along
// as a null: the precondition stands for its test.
TEST(NodeEdit, ATaintEditReplacesTheListOnlyIfTheNodeIsUnchanged) {
  NodeEdit e;
  e.set_taints = true;
  e.resource_version = "42";
  e.taints = {{"gpu", "", "NoSchedule"}, {"example.com/hot", "yes", "PreferNoSchedule"}};
  e.annotation = {NodeEdit::Op::kSet, "dynamic-scheduler.io/held-by", "{}"};
  EncodedPatch p = *EncodeNodeEdit(e);
  EXPECT_EQ(p.content_type, "application/merge-patch+json");
  EXPECT_EQ(p.body, R"({"metadata":{"resourceVersion":"42","annotations":)"
                    R"({"dynamic-scheduler.io/held-by":"{}"}},"spec":{"taints":[)"
                    R"({"key":"gpu","effect":"NoSchedule"},)"
                    R"({"key":"example.com/hot","value":"yes","effect":"PreferNoSchedule"}]}})");
  EXPECT_EQ(DescribeNodeEdit(e),
            "set annotation dynamic-scheduler.io/held-by and set taints [gpu:NoSchedule, "
            "example.com/hot=yes:PreferNoSchedule] (if still at resourceVersion 42)");
  NodeEdit off;
  off.set_taints = true;
  off.resource_version = "43";
  off.label = {NodeEdit::Op::kRemove, "status", "presure"};
  EXPECT_EQ(EncodeNodeEdit(off)->body,
            R"({"metadata":{"resourceVersion":"43","labels":{"status":null}},)"
            R"("spec":{"taints":null}})");
}

TEST(NodeEdit, AFailedTestIsAChangeButAnAdmissionDenialIsNot) {
  EXPECT_TRUE(RemovalFoundChanges(
      StatusFromResponse(422,
                         R"({"kind":"Status","code":422,"reason":"Invalid","message":"the server )"
                         R"(rejected our request due to an error in our request"})",
                         "", "patch node n1")));
  // A ValidatingAdmissionPolicy without `reason` denies with 422 too.
  EXPECT_FALSE(RemovalFoundChanges(StatusFromResponse(
      422,
      R"({"kind":"Status","code":422,"reason":"Invalid","message":"nodes \"n1\" is forbidden: )"
      R"(ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no"})",
      "", "patch node n1")));
  EXPECT_FALSE(RemovalFoundChanges(StatusFromResponse(403, "{}", "", "x")));
  EXPECT_FALSE(RemovalFoundChanges(StatusFromResponse(409, "{}", "", "x")));
}

TEST(NodeObject, TaintsAndAllocatableForPlacement) {
  auto n = DecodeNode(
      R"({"metadata":{"name":"n1"},"spec":{"taints":[{"key":"gpu","value":"true",)"
      R"("effect":"NoSchedule"},{"key":"node.kubernetes.io/unreachable","effect":"NoExecute",)"
      R"("timeAdded":"2026-11-26T01:02:03Z"}]},)"
      R"("status":{"allocatable":{"cpu":"3920m","memory":"15Gi","pods":"110"}}})");
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_EQ(n->taints.size(), 2u);
  EXPECT_EQ(n->taints[0].key, "gpu");
  EXPECT_EQ(n->taints[0].value, "true");
  EXPECT_EQ(n->taints[0].time_added, "");
  EXPECT_EQ(n->taints[1].effect, "NoExecute");
  // Kept to be written back unchanged with the rest of the list (kube/node_edit.h).
  EXPECT_EQ(n->taints[1].time_added, "2026-11-26T01:02:03Z");
  EXPECT_DOUBLE_EQ(n->allocatable_cpu, 3.92);
  EXPECT_DOUBLE_EQ(n->allocatable_memory, 15.0 * 1073741824);
  // The rest, for the fit check's pod count and extended resources.
  EXPECT_EQ(n->allocatable_other, (std::vector<std::pair<std::string, double>>{{"pods", 110}}));
}

TEST(NodeObject, KeepsOnlyOurOwnAnnotations) {
  auto n =
      DecodeNode(R"({"metadata":{"name":"n1","annotations":{"node.alpha.kubernetes.io/ttl":"0",)"
                 R"("dynamic-scheduler.io/held-by":"x"}}})");
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_EQ(n->annotations.size(), 1u);
  EXPECT_EQ(n->annotations[0].first, "dynamic-scheduler.io/held-by");
  EXPECT_EQ(n->annotations[0].second, "x");
  EXPECT_FALSE(
      DecodeNode(R"({"metadata":{"name":"n1","annotations":{"dynamic-scheduler.io/x":1}}})").ok());
}

}  // namespace
}  // namespace ds

namespace ds {
namespace {

TEST(WatchLineSplitter, TenMegabyteLineWithinLimit) {
  WatchLineSplitter s;  // default limit 16 MiB
  std::vector<std::string> lines;
  std::string big =
      "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"n\",\"annotations\":{\"a\":\"" +
      std::string(10 << 20, 'x') + "\"}}}}\n";
  for (size_t i = 0; i < big.size(); i += 65536)
    ASSERT_TRUE(s.Feed(std::string_view(big).substr(i, 65536), &lines));
  ASSERT_EQ(lines.size(), 1u);
  auto ev = DecodeWatchEvent(lines[0]);
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->node.name, "n");
  WatchLineSplitter small(1 << 20);
  lines.clear();
  EXPECT_FALSE(small.Feed(big, &lines))
      << "beyond the limit the stream is dropped, not buffered for ever";
}

TEST(DecodeNodeList, WrongTypesAreErrorsNotCrashes) {
  for (
      const char* body :
      {R"({"metadata":{"resourceVersion":"1"},"items":{}})",
       R"({"metadata":{"resourceVersion":"1"},"items":[1]})",
       R"({"metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":5}}]})",
       R"({"metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"a","labels":{"x":1}}}]})",
       R"({"metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"a"},"status":{"addresses":"x"}}]})",
       R"({"metadata":[],"items":[]})", "null", "[]", "\"str\""}) {
    auto r = DecodeNodeList(body);
    if (r.ok()) {
      for (const auto& n : r->items) EXPECT_FALSE(n.name.empty()) << body;
    }
  }
  EXPECT_FALSE(
      DecodeNodeList(R"({"metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":5}}]})")
          .ok());
}

// A foreign taint's timeAdded (the node lifecycle controller's NoExecute taints) goes back as it
// was read: the edit replaces the whole list, and a list without it changes their taint.
TEST(NodeEdit, ATaintEditKeepsEveryTaintsTimeAdded) {
  NodeEdit e;
  e.set_taints = true;
  e.resource_version = "7";
  e.taints = {{"node.kubernetes.io/unreachable", "", "NoExecute", "2026-11-26T01:02:03Z"},
              {"dynamic-scheduler.io/pressure", "presure", "PreferNoSchedule"}};
  EXPECT_EQ(EncodeNodeEdit(e)->body,
            R"({"metadata":{"resourceVersion":"7"},"spec":{"taints":[)"
            R"({"key":"node.kubernetes.io/unreachable","effect":"NoExecute",)"
            R"("timeAdded":"2026-11-26T01:02:03Z"},)"
            R"({"key":"dynamic-scheduler.io/pressure","value":"presure",)"
            R"("effect":"PreferNoSchedule"}]}})");
}

// Without the resourceVersion it was read at, a taint edit would be unconditional on the wire
// ("" means none to the API server): it is refused, never sent.
TEST(NodeEdit, ATaintEditWithoutAResourceVersionIsRefused) {
  NodeEdit e;
  e.set_taints = true;
  e.taints = {{"gpu", "", "NoSchedule"}};
  auto p = EncodeNodeEdit(e);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(p.status().IsRetryable());
}

}  // namespace
}  // namespace ds
