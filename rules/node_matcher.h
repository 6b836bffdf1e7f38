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
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/sample.h"
#include "rules/rule.h"

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
  std::vector<Slot> slots_;  // power-of-two size, at most three quarters full
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
  // The rule's maxAge: the nodes whose value was dropped as too old (their values are NaN), each
  // with the age in seconds of its newest update; NaN when an ageQuery gave it no update time.
  std::vector<std::pair<size_t, double>> stale;
  // Only when the accumulator judges ages (maxAge without ageQuery): per node, the timestamp of
  // the oldest fresh sample in values[i] (NaN: none), so a reused answer can be aged later
  // (rules/rule_scope.h).
  std::vector<double> times;
};

// Folds samples into MatchedValues one at a time (a SampleSink for streaming decoders).
class MatchAccumulator final : public SampleSink {
 public:
  // `matcher` and `rule` must outlive the accumulator. `now` (Unix seconds) is what the age of a
  // sample's timestamp is measured against when the rule has a maxAge and no ageQuery; a sample
  // older than maxAge then counts as absent. NaN (or no maxAge, or an ageQuery): ages are not
  // judged here.
  MatchAccumulator(const NodeMatcher* matcher, const Rule* rule,
                   double now = std::numeric_limits<double>::quiet_NaN());
  void Reset() override;
  // A sample without a timestamp is taken as fresh.
  void Add(const LabelViews& labels, double value) override;
  void AddAt(const LabelViews& labels, double value, double timestamp) override;
  // What was folded so far, with `stale` filled in: the nodes left without a fresh value that
  // had a too old one.
  MatchedValues& result();

 private:
  int AddIndexed(const LabelViews& labels, double value);  // the node's index, or -1

  const NodeMatcher* matcher_;
  const Rule* rule_;
  const double now_;
  // Samples with an older timestamp are too old; -Inf when ages are not judged, so that the one
  // comparison per sample is all a rule without maxAge pays.
  const double oldest_;
  MatchedValues out_;
  std::vector<double> newest_too_old_;  // per node, only when ages are judged; NaN: none
};

// Folds an ageQuery's samples into the age of each node's newest update: a sample's timestamp
// (the evaluation time Prometheus reports) minus its value (the Unix time of the update, e.g.
// push_time_seconds), so the clocks of Prometheus and this controller need not agree. Several
// series for one node: the newest update counts. Series are matched to nodes as the rule's own
// (its nodeLabel, or the default labels).
class UpdateAgeAccumulator final : public SampleSink {
 public:
  // `matcher` and `rule` must outlive the accumulator.
  UpdateAgeAccumulator(const NodeMatcher* matcher, const Rule* rule);
  void Reset() override;
  // Without a timestamp there is no evaluation time to measure against: ignored.
  void Add(const LabelViews& labels, double value) override;
  void AddAt(const LabelViews& labels, double value, double timestamp) override;
  // ages()[i]: seconds since node i's newest update; NaN when no series named it.
  const std::vector<double>& ages() const { return ages_; }
  size_t unmatched() const { return unmatched_; }

 private:
  const NodeMatcher* matcher_;
  const Rule* rule_;
  std::vector<double> ages_;
  size_t unmatched_ = 0;
};

// Applies a rule's maxAge with update ages from its ageQuery (UpdateAgeAccumulator::ages): a
// node's value whose update is older than max_age_seconds, or that has no update age at all,
// becomes NaN (missing data) and is listed in m->stale. Nodes without a value are left alone.
// REQUIRES: ages.size() == m->values.size(); max_age_seconds > 0.
void DropStaleValues(const std::vector<double>& ages, double max_age_seconds, MatchedValues* m);

// Aligns a query's samples to nodes. When several series name one node the most severe value
// wins (max for '>', min for '<'); NaN samples count as absent.
MatchedValues MatchSamples(const NodeMatcher& matcher, const std::vector<Sample>& samples,
                           const Rule& rule);

}  // namespace ds
