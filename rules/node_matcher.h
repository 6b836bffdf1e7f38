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

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
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
  // One open-addressing table for names and addresses: a lookup costs one probe into a flat
  // array and one compare in the key arena. (With std::unordered_map, 40,000 lookups a cycle
  // spent most of their time on cache misses chasing bucket and node pointers.)
  struct Slot {
    uint32_t tag = 0;         // high half of the key's hash
    uint32_t key = kEmpty;    // offset of the key in keys_ (length-prefixed), kEmpty if free
    int32_t by_name = -1;     // node with this name, or -1
    int32_t by_address = -1;  // node with this address, -1, or -2 if two nodes share it
  };
  static constexpr uint32_t kEmpty = 0xffffffffu;
  template <typename L>
  int MatchImpl(const L& metric, const std::string& node_label) const;
  int Lookup(std::string_view value) const;
  const Slot* Find(std::string_view key, uint64_t hash) const;
  Slot& Insert(std::string_view key);
  size_t size_;
  std::vector<Slot> slots_;  // power-of-two size, at most half full
  std::string keys_;         // each key: 4-byte length, then its bytes
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
