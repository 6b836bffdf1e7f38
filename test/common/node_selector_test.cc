// Node affinity as kube-scheduler's NodeAffinity filter reads it (nodeaffinity.go in
// k8s.io/component-helpers): every operator, matchFields, ORed terms, and the empty term.
#include "common/node_selector.h"

#include <gtest/gtest.h>

namespace ds {
namespace {

NodeSelectorRequirement Req(std::string key, std::string op, std::vector<std::string> values = {}) {
  return NodeSelectorRequirement{std::move(key), std::move(op), std::move(values)};
}

TEST(NodeSelector, EachOperatorAsTheSchedulerReadsIt) {
  const Labels labels = {{"zone", "a"}, {"cores", "16"}, {"status", "presure"}};
  EXPECT_TRUE(RequirementMatches(Req("zone", "In", {"a", "b"}), labels));
  EXPECT_FALSE(RequirementMatches(Req("zone", "In", {"b"}), labels));
  EXPECT_FALSE(RequirementMatches(Req("pool", "In", {"a"}), labels)) << "absent: In fails";
  EXPECT_TRUE(RequirementMatches(Req("zone", "NotIn", {"b"}), labels));
  EXPECT_FALSE(RequirementMatches(Req("status", "NotIn", {"presure"}), labels));
  EXPECT_TRUE(RequirementMatches(Req("pool", "NotIn", {"a"}), labels)) << "absent: NotIn holds";
  EXPECT_TRUE(RequirementMatches(Req("zone", "Exists"), labels));
  EXPECT_FALSE(RequirementMatches(Req("pool", "Exists"), labels));
  EXPECT_TRUE(RequirementMatches(Req("pool", "DoesNotExist"), labels));
  EXPECT_FALSE(RequirementMatches(Req("zone", "DoesNotExist"), labels));
  EXPECT_TRUE(RequirementMatches(Req("cores", "Gt", {"8"}), labels));
  EXPECT_FALSE(RequirementMatches(Req("cores", "Gt", {"16"}), labels));
  EXPECT_TRUE(RequirementMatches(Req("cores", "Lt", {"32"}), labels));
  EXPECT_FALSE(RequirementMatches(Req("zone", "Gt", {"1"}), labels)) << "not an integer";
  EXPECT_FALSE(RequirementMatches(Req("pool", "Lt", {"1"}), labels)) << "absent";
  EXPECT_FALSE(RequirementMatches(Req("zone", "Matches", {"a"}), labels)) << "unknown operator";
}

TEST(NodeSelector, TermsAreAndedWithinAndOredAcross) {
  const Labels labels = {{"zone", "a"}, {"pool", "general"}};
  NodeSelectorTerm both{{Req("zone", "In", {"a"}), Req("pool", "In", {"general"})}, {}};
  NodeSelectorTerm wrong_pool{{Req("zone", "In", {"a"}), Req("pool", "In", {"gpu"})}, {}};
  EXPECT_TRUE(TermMatches(both, "n1", labels));
  EXPECT_FALSE(TermMatches(wrong_pool, "n1", labels));
  EXPECT_TRUE(RequiredTermsMatch({wrong_pool, both}, "n1", labels));
  EXPECT_FALSE(RequiredTermsMatch({wrong_pool}, "n1", labels));
  EXPECT_TRUE(RequiredTermsMatch({}, "n1", labels)) << "no required affinity: every node";
  EXPECT_FALSE(TermMatches(NodeSelectorTerm{}, "n1", labels)) << "an empty term matches nothing";
  EXPECT_FALSE(RequiredTermsMatch({NodeSelectorTerm{}}, "n1", labels));
}

TEST(NodeSelector, MatchFieldsNamesTheNode) {
  NodeSelectorTerm pinned{{}, {Req("metadata.name", "In", {"node-7"})}};
  EXPECT_TRUE(TermMatches(pinned, "node-7", {}));
  EXPECT_FALSE(TermMatches(pinned, "node-8", {}));
  NodeSelectorTerm not_there{{}, {Req("metadata.name", "NotIn", {"node-7"})}};
  EXPECT_FALSE(TermMatches(not_there, "node-7", {}));
  EXPECT_TRUE(TermMatches(not_there, "node-8", {}));
  NodeSelectorTerm other_field{{}, {Req("metadata.uid", "In", {"x"})}};
  EXPECT_FALSE(TermMatches(other_field, "x", {})) << "only metadata.name is a node field";
}

TEST(NodeSelector, ValidationNamesWhatTheApiWouldRefuse) {
  EXPECT_EQ(ValidateRequirement(Req("zone", "In", {"a"}), false), "");
  EXPECT_EQ(ValidateRequirement(Req("zone", "In"), false), "In needs values");
  EXPECT_EQ(ValidateRequirement(Req("zone", "Exists", {"a"}), false), "Exists takes no values");
  EXPECT_EQ(ValidateRequirement(Req("cores", "Gt", {"x"}), false), "Gt needs one integer value");
  EXPECT_NE(ValidateRequirement(Req("zone", "Near", {"a"}), false), "");
  EXPECT_EQ(ValidateRequirement(Req("metadata.name", "In", {"n"}), true), "");
  EXPECT_NE(ValidateRequirement(Req("metadata.name", "Exists"), true), "");
  EXPECT_NE(ValidateRequirement(Req("spec.unschedulable", "In", {"true"}), true), "");
}

// What steering asks of a term: can it match a node whose `status` is `presure`?
TEST(NodeSelector, ATermExcludesAValueWhenARequirementOnItsKeyFails) {
  auto term = [](NodeSelectorRequirement r) { return NodeSelectorTerm{{std::move(r)}, {}}; };
  EXPECT_TRUE(TermExcludes(term(Req("status", "NotIn", {"presure"})), "status", "presure"));
  EXPECT_FALSE(TermExcludes(term(Req("status", "NotIn", {"warm"})), "status", "presure"));
  EXPECT_TRUE(TermExcludes(term(Req("status", "DoesNotExist")), "status", "presure"));
  EXPECT_TRUE(TermExcludes(term(Req("status", "In", {"cool"})), "status", "presure"));
  EXPECT_FALSE(TermExcludes(term(Req("status", "Exists")), "status", "presure"));
  EXPECT_FALSE(TermExcludes(term(Req("zone", "NotIn", {"presure"})), "status", "presure"))
      << "another key says nothing about ours";
  NodeSelectorTerm mixed{{Req("zone", "In", {"a"}), Req("status", "NotIn", {"presure"})}, {}};
  EXPECT_TRUE(TermExcludes(mixed, "status", "presure"));
}

}  // namespace
}  // namespace ds
