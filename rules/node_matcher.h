// Maps Prometheus series to nodes. A series names its node through a label: the rule's
// `nodeLabel`, or by default the first of `node`, `instance`, `ip`, `nodename` that the series
// carries (an empty value counts as absent, as in Prometheus). A value such as "10.0.0.12:9100"
// or "node-3" matches a node by name or by any of its addresses (InternalIP, ExternalIP,
// Hostname) with the port stripped. When that first label names no managed node (a control-plane
// node, a node that left, an address two nodes share) the series is unmatched: later labels are
// not tried, because e.g. `instance` may be the exporter's address on another node, and falling
// through would give that node a value measured elsewhere. Series that match no node are
// reported, never labelled blindly.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/sample.h"
#include "rules/rule_config.h"

namespace ds {

struct NodeIdentity {
  std::string name;
  std::vector<std::string> addresses;
};

// "10.0.0.1:9100" -> "10.0.0.1", "[fd00::1]:9100" -> "fd00::1", "node-1" -> "node-1".
std::string_view StripPort(std::string_view s);

class NodeMatcher {
 public:
  // Indexes the nodes by name and address; indices refer to positions in `nodes`.
  explicit NodeMatcher(const std::vector<NodeIdentity>& nodes);
  // Index of the node the series names, or -1. node_label empty: the first default label the
  // series carries decides (see the top of this file).
  int Match(const Labels& metric, const std::string& node_label) const;
  int Match(const LabelViews& metric, const std::string& node_label) const;
  size_t size() const { return size_; }

 private:
  // Hash and equality that accept string_view, so lookups do not allocate.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Index = std::unordered_map<std::string, int, Hash, std::equal_to<>>;
  template <typename L>
  int MatchImpl(const L& metric, const std::string& node_label) const;
  int Lookup(std::string_view value) const;
  size_t size_;
  Index by_name_;
  Index by_address_;  // -2 marks an address shared by two nodes
};

// The series labels Match() may look at for this rule (its nodeLabel, or the default order).
std::vector<std::string> MatchLabels(const Rule& rule);

struct MatchedValues {
  // values[i] is the rule's value for node i; NaN when the node has no usable sample.
  std::vector<double> values;
  size_t unmatched = 0;                      // series naming no known node
  std::vector<std::string> unmatched_names;  // up to a few examples, for the log
  size_t duplicates = 0;                     // extra series for an already-matched node
};

// Folds samples into MatchedValues one at a time (a SampleSink for streaming decoders).
class MatchAccumulator : public SampleSink {
 public:
  // `matcher` and `rule` must outlive the accumulator.
  MatchAccumulator(const NodeMatcher* matcher, const Rule* rule) : matcher_(matcher), rule_(rule) {
    Reset();
  }
  void Reset() override;
  void Add(const LabelViews& labels, double value) override;
  MatchedValues& result() { return out_; }

 private:
  const NodeMatcher* matcher_;
  const Rule* rule_;
  MatchedValues out_;
};

// Aligns a query's samples to nodes. When several series name one node the most severe value
// wins (max for '>', min for '<'); NaN samples count as absent.
MatchedValues MatchSamples(const NodeMatcher& matcher, const std::vector<Sample>& samples,
                           const Rule& rule);

}  // namespace ds
