#include "replay/report_html.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <string>

#include "common/rfc3339.h"
#include "replay/compare.h"

namespace ds {
namespace {

constexpr double kFrom = 1795132800;  // 2026-11-20T00:00:00Z

std::string At(double offset) { return "\"" + FormatRfc3339(kFrom + offset) + "\""; }
std::string Text(double offset) { return FormatRfc3339(kFrom + offset); }

// A mark from `start` to `end` seconds after kFrom (end < 0: still marked at `to`).
std::string Mark(double start, double end, const std::string& rules) {
  return "{\"start\":" + At(start) + ",\"end\":" + (end < 0 ? "null" : At(end)) + ",\"rules\":[" +
         rules + "]}";
}

std::string Doc(const std::string& nodes, const std::string& extra = "", double to = 3000) {
  return "{\"from\":" + At(0) + ",\"to\":" + At(to) +
         ",\"step_seconds\":60,\"rules\":[\"cpu\",\"mem\"]," + "\"nodes\":{" + nodes +
         "},\"totals\":{\"marks\":5,\"marked_node_seconds\":2360," +
         "\"max_marked_at_once\":2,\"capped_node_seconds\":0,\"unmatched_series\":1}" + extra + "}";
}

// n1: three marks; the second starts 400 s after the first ended (a flap), the third 1300 s
// after the second (no flap) and is still on at `to` (3000): 1000 s, the longest.
// n2: two marks 940 s apart: no flap.
const std::string kNodes = "\"n1\":{\"marks\":[" + Mark(0, 100, "\"cpu\"") + "," +
                           Mark(500, 700, "\"cpu\",\"mem\"") + "," + Mark(2000, -1, "\"mem\"") +
                           "],\"marked_seconds\":1300,\"cap_hits\":4}," + "\"n2\":{\"marks\":[" +
                           Mark(0, 60, "\"cpu\"") + "," + Mark(1000, 1100, "\"cpu\"") +
                           "],\"marked_seconds\":160},\"n3\":{\"marks\":[],\"marked_seconds\":0}";

TEST(NodeStatsTest, MarksFlapsLongestAndCapHits) {
  auto stats = NodeStatsOf(Doc(kNodes));
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  ASSERT_EQ(stats->size(), 2u);  // n3 was never marked
  const NodeStats& n1 = (*stats)[0];
  EXPECT_EQ(n1.name, "n1");
  EXPECT_EQ(n1.marks, 3u);
  EXPECT_EQ(n1.flaps, 1u);
  EXPECT_EQ(n1.longest_seconds, 1000);
  EXPECT_EQ(n1.marked_seconds, 1300);
  EXPECT_EQ(n1.cap_hits, 4);
  const NodeStats& n2 = (*stats)[1];
  EXPECT_EQ(n2.flaps, 0u);
  EXPECT_EQ(n2.longest_seconds, 100);
  EXPECT_EQ(n2.cap_hits, -1);  // not in the document
}

TEST(NodeStatsTest, AFlapIsWithinTenMinutesInclusive) {
  auto at =
      NodeStatsOf(Doc("\"n\":{\"marks\":[" + Mark(0, 100, "") + "," + Mark(700, 800, "") + "]}"));
  auto past =
      NodeStatsOf(Doc("\"n\":{\"marks\":[" + Mark(0, 100, "") + "," + Mark(701, 800, "") + "]}"));
  ASSERT_TRUE(at.ok() && past.ok());
  EXPECT_EQ((*at)[0].flaps, 1u);
  EXPECT_EQ((*past)[0].flaps, 0u);
}

size_t Occurrences(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(RenderReportHtmlTest, ChartsPerRuleCountTheMarkedNodes) {
  auto html = RenderReportHtml(Doc(kNodes));
  ASSERT_TRUE(html.ok()) << html.status().ToString();
  // Any rule: n1 and n2 are both marked over [0, 60). cpu: the same. mem: only n1, once at a time.
  EXPECT_NE(html->find("<title>marked nodes, any rule</title>"), std::string::npos);
  EXPECT_EQ(Occurrences(*html, "<svg"), 3u);
  EXPECT_EQ(Occurrences(*html, "data-max=\"2\""), 2u);
  EXPECT_EQ(Occurrences(*html, "data-max=\"1\""), 1u);
  EXPECT_NE(
      html->find("<td>n1</td><td class=\"num\">3</td><td class=\"num\">21m 40s</td>"
                 "<td class=\"num\">1</td><td class=\"num\">4</td><td class=\"num\">16m 40s</td>"),
      std::string::npos);
  EXPECT_NE(html->find("2 of 3 nodes were marked"), std::string::npos);
}

TEST(RenderReportHtmlTest, SelfContainedAndEveryNameEscaped) {
  const std::string evil = "<script>alert(1)</script>";
  std::string doc =
      "{\"from\":" + At(0) + ",\"to\":" + At(600) +
      ",\"step_seconds\":60,\"rules\":[\"a&b\"],\"nodes\":{\"" +
      "<script>alert(1)<\\/script>\":{\"marks\":[" + Mark(0, 60, "\"a&b\"") +
      "],\"marked_seconds\":60}},\"workloads\":[{\"namespace\":\"x\\\"y\",\"kind\":" +
      "\"Deployment\",\"name\":\"<img src=x>\",\"cpu_p95_cores\":2," +
      "\"cpu_request_cores\":0.5,\"memory_p95_bytes\":null,\"memory_request_bytes\":0," +
      "\"hot_node_seconds_share\":1}]}";
  auto html = RenderReportHtml(doc);
  ASSERT_TRUE(html.ok()) << html.status().ToString();
  EXPECT_EQ(html->find(evil), std::string::npos);
  EXPECT_EQ(html->find("<img"), std::string::npos);
  EXPECT_NE(html->find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html->find("marked by a&amp;b"), std::string::npos);
  EXPECT_NE(html->find("x&quot;y/Deployment/&lt;img src=x&gt;"), std::string::npos);
  EXPECT_NE(html->find("<span class=\"over\">4.00&times;</span>"), std::string::npos);
  // Nothing fetched from elsewhere: no script, no link, no src; the style is inline.
  for (const char* external : {"<script", "<link", "src=\"", "href=", "@import", "url("})
    EXPECT_EQ(html->find(external), std::string::npos) << external;
  EXPECT_NE(html->find("<style>:root"), std::string::npos);
}

TEST(RenderReportHtmlTest, TopTwentyWorkloads) {
  std::string workloads;
  for (int i = 0; i < 25; ++i)
    workloads += std::string(i ? "," : "") + "{\"namespace\":\"ns\",\"kind\":\"Deployment\"," +
                 "\"name\":\"wl-" + std::to_string(i) + "-end\",\"cpu_p95_cores\":1}";
  auto html = RenderReportHtml(Doc(kNodes, ",\"workloads\":[" + workloads + "]"));
  ASSERT_TRUE(html.ok());
  EXPECT_EQ(Occurrences(*html, "-end</td>"), 20u);
  EXPECT_NE(html->find("wl-19-end"), std::string::npos);
  EXPECT_EQ(html->find("wl-20-end"), std::string::npos);
  EXPECT_NE(html->find("The top 20 of 25 workloads"), std::string::npos);
}

TEST(RenderReportHtmlTest, TheRebalancerEstimatedUnderItsNote) {
  const std::string block =
      ",\"rebalance\":{\"note\":\"the scheduler is not replayed <really>\",\"episodes\":["
      "{\"node\":\"n1\",\"start\":" +
      At(0) + ",\"qualified_at\":" + At(120) +
      ",\"qualification\":\"qualifies\",\"evictions\":[{\"namespace\":\"shop\",\"pod\":\"<p>\","
      "\"at\":" +
      At(120) + "},{\"namespace\":\"shop\",\"pod\":\"web-2\",\"at\":" + At(180) +
      "}],"
      "\"held_back\":[{\"namespace\":\"shop\",\"pod\":\"db-0\",\"limit\":\"per_hour\"}]},"
      "{\"node\":\"n2\",\"start\":" +
      At(0) +
      ",\"qualified_at\":null,"
      "\"qualification\":\"not_long_enough\",\"evictions\":[],\"held_back\":[]}]}";
  auto html = RenderReportHtml(Doc(kNodes, block));
  ASSERT_TRUE(html.ok()) << html.status().ToString();
  EXPECT_NE(html->find("<p class=\"note\">the scheduler is not replayed &lt;really&gt;</p>"),
            std::string::npos);
  // The qualifying cycle's eviction as it is, a later cycle's with its time (a limit held it).
  EXPECT_NE(html->find("<td>shop/&lt;p&gt;<br>shop/web-2 (at " + Text(180) +
                       ")</td><td>shop/db-0 (per_hour)</td>"),
            std::string::npos)
      << *html;
  EXPECT_NE(html->find("<td>no: not_long_enough</td><td>&mdash;</td>"), std::string::npos);
  // Without the block, no section.
  auto plain = RenderReportHtml(Doc(kNodes));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->find("The rebalancer, estimated"), std::string::npos);
}

TEST(RenderReportHtmlTest, AMissingEstimateSaysWhyNotNoHotEpisode) {
  auto html = RenderReportHtml(
      Doc(kNodes, ",\"rebalance\":{\"note\":\"n\",\"missing\":\"the pod LIST failed: <403>\"}"));
  ASSERT_TRUE(html.ok()) << html.status().ToString();
  EXPECT_NE(html->find("<p>Not estimated: the pod LIST failed: &lt;403&gt;</p>"),
            std::string::npos);
  EXPECT_EQ(html->find("No hot episode"), std::string::npos);
}

TEST(RenderReportHtmlTest, MalformedDocumentsAreErrorsThatSayWhat) {
  struct Case {
    std::string doc, want;
  } cases[] = {
      {"not json", "replay.json: invalid JSON"},
      {"[]", "want an object"},
      {"{\"to\":" + At(0) + ",\"nodes\":{}}", "from: want an RFC 3339 time"},
      {"{\"from\":" + At(10) + ",\"to\":" + At(0) + ",\"nodes\":{}}", "to is before from"},
      {"{\"from\":" + At(0) + ",\"to\":" + At(10) + "}", "nodes: want an object"},
      {Doc("\"n\":{\"marks\":[{\"end\":null}]}"), "nodes.n.marks[].start"},
      {Doc("\"n\":{\"marks\":[" + Mark(100, 50, "") + "]}"), "a mark ends before it starts"},
      {Doc("\"n\":{\"marks\":[{\"start\":" + At(0) + ",\"rules\":[1]}]}"),
       "rules: want an array of names"},
      {Doc("\"n\":{}"), "nodes.n.marks: want an array"},
      {Doc(kNodes, ",\"compare\":{\"files\":[\"a\"]}"), "compare.files: want two names"},
  };
  for (const Case& c : cases) {
    auto html = RenderReportHtml(c.doc);
    ASSERT_FALSE(html.ok()) << c.doc;
    EXPECT_NE(html.status().ToString().find(c.want), std::string::npos)
        << html.status().ToString() << " / want " << c.want;
  }
}

TEST(CompareTest, TotalsSideBySideAndTheNodesMarkedDifferently) {
  // b: n1 marked once for 100 s, n2 as in a, n4 newly marked.
  std::string b_nodes = "\"n1\":{\"marks\":[" + Mark(0, 100, "\"cpu\"") +
                        "],\"marked_seconds\":100}," + "\"n2\":{\"marks\":[" +
                        Mark(0, 60, "\"cpu\"") + "," + Mark(1000, 1100, "\"cpu\"") +
                        "],\"marked_seconds\":160},\"n4\":{\"marks\":[" + Mark(0, 30, "") +
                        "],\"marked_seconds\":30}";
  auto both = AddCompare(Doc(kNodes), "rule.yaml", Doc(b_nodes), "tuned<1>.yaml");
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  rapidjson::Document d;
  d.Parse(both->c_str());
  ASSERT_TRUE(d.HasMember("compare"));
  const rapidjson::Value& c = d["compare"];
  EXPECT_STREQ(c["files"][1].GetString(), "tuned<1>.yaml");
  EXPECT_EQ(c["totals"]["marks"][0].GetDouble(), 5);
  EXPECT_EQ(c["totals"]["flaps"][0].GetUint64(), 1u);
  EXPECT_EQ(c["totals"]["flaps"][1].GetUint64(), 0u);
  ASSERT_EQ(c["nodes"].Size(), 2u);                       // n2 is the same in both
  EXPECT_STREQ(c["nodes"][0]["name"].GetString(), "n1");  // 1200 s apart, before n4's 30
  EXPECT_EQ(c["nodes"][0]["marks"][0].GetUint64(), 3u);
  EXPECT_EQ(c["nodes"][0]["marks"][1].GetUint64(), 1u);
  EXPECT_EQ(c["nodes"][0]["marked_seconds"][1].GetDouble(), 100);
  EXPECT_STREQ(c["nodes"][1]["name"].GetString(), "n4");
  EXPECT_EQ(c["nodes"][1]["marks"][0].GetUint64(), 0u);
  EXPECT_TRUE(c["other"]["nodes"].HasMember("n4"));

  auto html = RenderReportHtml(*both);
  ASSERT_TRUE(html.ok()) << html.status().ToString();
  EXPECT_NE(html->find("<h2>Compare: rule.yaml and tuned&lt;1&gt;.yaml</h2>"), std::string::npos);
  EXPECT_NE(html->find("<tr><th>flaps</th><td class=\"num\">1</td><td class=\"num\">0</td>"
                       "<td class=\"num\">&minus;1</td></tr>"),
            std::string::npos);
  EXPECT_NE(
      html->find("<tr><th>most marked at once</th><td class=\"num\">2</td><td class=\"num\">2</td>"
                 "<td class=\"num\">0</td></tr>"),
      std::string::npos);
  EXPECT_EQ(Occurrences(*html, "class=\"line b\""), 1u);  // b's chart beside a's
}

TEST(CompareTest, DifferentHistoryIsAnError) {
  auto r = AddCompare(Doc(kNodes), "a.yaml", Doc(kNodes, "", 6000), "b.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("differ in to"), std::string::npos);
  EXPECT_FALSE(AddCompare(Doc(kNodes), "a.yaml", "{", "b.yaml").ok());
}

}  // namespace
}  // namespace ds
