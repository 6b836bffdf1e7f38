// A pod's node affinity (core/v1 NodeSelectorTerm) and how kube-scheduler's NodeAffinity filter
// matches it against a node: shared by the Kubernetes client (kube/), which decodes a pod's, and
// the rebalancer's pure decisions (rebalance/), which judge where a replacement may go and
// whether it avoids our mark. Semantics as in k8s.io/component-helpers/scheduling/corev1/
// nodeaffinity: requirements of a term are ANDed, terms are ORed, an empty term matches nothing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/labels.h"

namespace ds {

struct NodeSelectorRequirement {
  std::string key;
  std::string op;  // In, NotIn, Exists, DoesNotExist, Gt, Lt
  std::vector<std::string> values;
};

struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;  // on the node's labels
  std::vector<NodeSelectorRequirement> match_fields;       // metadata.name only (In, NotIn)
};

struct PreferredSchedulingTerm {
  int32_t weight = 0;  // 1-100
  NodeSelectorTerm preference;
};

// "" when `r` is a requirement the API accepts (a known operator with the values it needs; for a
// field, metadata.name with In or NotIn and one value), otherwise why not.
std::string ValidateRequirement(const NodeSelectorRequirement& r, bool field);

// Does the requirement hold on a node with these labels? In: the label is one of the values;
// NotIn: absent or none of them; Gt/Lt: present and an integer above/below the one value.
bool RequirementMatches(const NodeSelectorRequirement& r, const Labels& labels);

// Does the term hold on node `name` with `labels`? An empty term matches no node.
bool TermMatches(const NodeSelectorTerm& term, std::string_view name, const Labels& labels);

// requiredDuringSchedulingIgnoredDuringExecution: true when `terms` is empty (no constraint) or
// any of them matches.
bool RequiredTermsMatch(const std::vector<NodeSelectorTerm>& terms, std::string_view name,
                        const Labels& labels);

// Does `term` keep a pod off any node whose label `key` has `value`, whatever its other labels
// and its name? True when one of its label requirements on `key` fails for that value: the term
// then cannot match such a node.
bool TermExcludes(const NodeSelectorTerm& term, const std::string& key, const std::string& value);

}  // namespace ds
