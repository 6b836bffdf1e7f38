#include "app/plugin.h"

#include <gtest/gtest.h>

namespace ds {
namespace {

TEST(Plugin, IsFoundUnderKubectlsPluginName) {
  EXPECT_TRUE(IsPluginName("/usr/local/bin/kubectl-dynamic_scheduler"));
  EXPECT_TRUE(IsPluginName("kubectl-dynamic_scheduler"));
  EXPECT_FALSE(IsPluginName("/usr/bin/dynamic-scheduler"));
  EXPECT_FALSE(IsPluginName("kubectl-dynamic_scheduler-old"));
}

TEST(Plugin, ParsesKubectlStyleArguments) {
  auto a = ParsePluginArgs({"explain", "pod/web-1", "-n", "shop", "-o", "json"});
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->command, "explain");
  EXPECT_EQ(a->kind, "pod");
  EXPECT_EQ(a->name, "web-1");
  EXPECT_EQ(a->ns, "shop");
  EXPECT_EQ(a->output, "json");
  auto n = ParsePluginArgs({"explain", "no/node-1", "--namespace=x", "--scheme=https"});
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->kind, "node");
  EXPECT_EQ(ServiceProxyPath(*n, "/explain?node=node-1"),
            "/api/v1/namespaces/dynamic-scheduler/services/https%3Adynamic-scheduler%3Ahttp/"
            "proxy/explain?node=node-1");
  EXPECT_TRUE(ParsePluginArgs({"status"}).ok());
  auto joined = ParsePluginArgs({"explain", "pod/x", "-nshop", "-ojson"});
  ASSERT_TRUE(joined.ok()) << joined.status().message();
  EXPECT_EQ(joined->ns, "shop") << "kubectl's joined short flags";
  EXPECT_EQ(joined->output, "json");
  EXPECT_EQ(ParsePluginArgs({"explain", "-h"}).status().code(), StatusCode::kNotFound)
      << "help: the usage, exit 0";
  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{{},
                                             {"explain"},
                                             {"explain", "deployment/x"},
                                             {"explain", "pod/"},
                                             {"status", "extra"},
                                             {"nodes", "-o", "yaml"},
                                             {"status", "--bogus", "1"},
                                             {"explain", "pod/x", "-n"}})
    EXPECT_FALSE(ParsePluginArgs(bad).ok()) << (bad.empty() ? "" : bad[0]);
}

TEST(Plugin, ExplainsAPodInTextWithTheCyclesWords) {
  const std::string json = R"({"pod":"shop/big","source":"cycle","decided":"2026-12-08T02:00:00Z",
    "decision":{"pod":"shop/big","verdict":"waits","stage":"eviction","reason":"blocked_by_pdb",
      "because":"its PodDisruptionBudget allows no disruption now","change":"relax it",
      "checks":[{"check":"evictable","result":"passed"},
                {"check":"eviction","result":"stopped","reason":"blocked_by_pdb"},
                {"check":"x","result":"not_reached"}]},
    "eviction":{"pod":"shop/big","node":"node-1","result":"blocked_by_pdb","to":"node-2",
      "rule":"cpu","usage":50,"load":95,"goal":60,"unit":"percent","at":"2026-12-08T02:00:00Z"},
    "nodeState":{"node":"node-1","state":"hot","verdict":"relieved","because":"relieved",
      "rules":[{"rule":"cpu","op":">","value":95,"threshold":80,"clearThreshold":60,
                "unit":"percent"}]}})";
  const std::string text = ExplainText(json);
  EXPECT_NE(text.find("verdict: waits (blocked_by_pdb"), std::string::npos) << text;
  EXPECT_NE(text.find("PodDisruptionBudget"), std::string::npos) << text;
  EXPECT_NE(text.find("checks: evictable=ok eviction=blocked_by_pdb\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rule cpu at 95, goal 60 (percent)"), std::string::npos) << text;
  EXPECT_NE(text.find("Node node-1 (hot)"), std::string::npos) << text;
  EXPECT_EQ(ExplainText(R"({"error":"no node"})"), "error: no node\n");
  EXPECT_EQ(ExplainText("not json"), "not json");
}

}  // namespace
}  // namespace ds
