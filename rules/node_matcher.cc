#include "rules/node_matcher.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "common/same_bytes.h"

namespace ds {

namespace {
constexpr const char* kDefaultNodeLabels[] = {"node", "instance", "ip", "nodename"};
constexpr size_t kMaxExamples = 5;
}  // namespace

std::string_view StripPort(std::string_view s) {
  if (!s.empty() && s.front() == '[') {
    auto close = s.find(']');
    if (close != std::string_view::npos) return s.substr(1, close - 1);
    return s;
  }
  // Most values (node names, bare addresses) have no colon: one memchr says so.
  if (s.empty() || std::memchr(s.data(), ':', s.size()) == nullptr) return s;
  auto colon = s.rfind(':');
  // More than one colon without brackets: a bare IPv6 address, no port.
  if (s.find(':') != colon) return s;
  std::string_view port = s.substr(colon + 1);
  if (port.empty()) return s.substr(0, colon);
  for (char c : port)
    if (c < '0' || c > '9') return s;
  return s.substr(0, colon);
}

namespace {

// A fast hash for short keys (node names, addresses): 8 bytes per multiply, a strong final mix.
// Keys come from the Kubernetes API and Prometheus, not from an adversary.
uint64_t HashKey(std::string_view s) {
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ull;
  uint64_t h = s.size() * kMul;
  const char* p = s.data();
  size_t n = s.size();
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
  }
  if (n > 0) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = (h ^ w) * kMul;
  }
  // splitmix64's finaliser: every input bit reaches the low bits (the slot) and the tag.
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

}  // namespace

NodeMatcher::NodeMatcher(const std::vector<NodeIdentity>& nodes) : size_(nodes.size()) {
  size_t keys = 0, bytes = 0;
  for (const auto& n : nodes) {
    keys += 1 + n.addresses.size();
    bytes += 4 + n.name.size();
    for (const auto& a : n.addresses) bytes += 4 + a.size();
  }
  // At most three quarters full: with the tag compare, a lookup still costs about two probes,
  // and at 10,000 nodes the table is half the size (and the resident memory) of a half-full one.
  size_t capacity = 16;
  while (4 * keys > 3 * capacity) capacity *= 2;
  slots_.resize(capacity);
  keys_.reserve(bytes);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const int index = static_cast<int>(i);
    Slot& s = Insert(nodes[i].name);
    if (s.by_name < 0) s.by_name = index;  // a repeated name: the first node keeps it
    for (const auto& a : nodes[i].addresses) {
      Slot& t = Insert(a);
      if (t.by_address == -1)
        t.by_address = index;
      else if (t.by_address != index)
        t.by_address = -2;  // ambiguous
    }
  }
}

const NodeMatcher::Slot* NodeMatcher::Find(std::string_view key, uint64_t hash) const {
  const size_t mask = slots_.size() - 1;
  const uint32_t tag = static_cast<uint32_t>(hash >> 32);
  for (size_t i = static_cast<size_t>(hash) & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.key == kEmpty) return nullptr;
    if (s.tag != tag) continue;
    uint32_t len;
    std::memcpy(&len, keys_.data() + s.key, 4);
    if (len == key.size() && SameBytes(keys_.data() + s.key + 4, key.data(), len)) return &s;
  }
}

NodeMatcher::Slot& NodeMatcher::Insert(std::string_view key) {
  const uint64_t hash = HashKey(key);
  if (const Slot* found = Find(key, hash)) return slots_[static_cast<size_t>(found - &slots_[0])];
  const size_t mask = slots_.size() - 1;
  size_t i = static_cast<size_t>(hash) & mask;
  while (slots_[i].key != kEmpty) i = (i + 1) & mask;
  Slot& s = slots_[i];
  s.tag = static_cast<uint32_t>(hash >> 32);
  s.key = static_cast<uint32_t>(keys_.size());
  const auto len = static_cast<uint32_t>(key.size());
  keys_.append(reinterpret_cast<const char*>(&len), 4);
  keys_.append(key);
  return s;
}

int NodeMatcher::Lookup(std::string_view value) const {
  std::string_view key = StripPort(value);
  const Slot* s = Find(key, HashKey(key));
  if (s == nullptr) return -1;
  if (s->by_name >= 0) return s->by_name;
  return s->by_address >= 0 ? s->by_address : -1;
}

int NodeMatcher::Match(const Labels& metric, const std::string& node_label) const {
  return MatchImpl(metric, node_label);
}

int NodeMatcher::Match(const LabelViews& metric, const std::string& node_label) const {
  return MatchImpl(metric, node_label);
}

template <typename L>
int NodeMatcher::MatchImpl(const L& metric, const std::string& node_label) const {
  if (!node_label.empty()) {
    const auto* v = FindLabel(metric, node_label);
    return v == nullptr ? -1 : Lookup(*v);
  }
  // The first label present decides, even when it names no managed node: a later label (often
  // `instance`, the exporter's address) may name a different node than the one measured.
  for (const char* l : kDefaultNodeLabels) {
    const auto* v = FindLabel(metric, l);
    if (v == nullptr || v->empty()) continue;  // Prometheus: an empty value is no label
    return Lookup(*v);
  }
  return -1;
}

std::vector<std::string> MatchLabels(const Rule& rule) {
  if (!rule.node_label.empty()) return {rule.node_label};
  return std::vector<std::string>(std::begin(kDefaultNodeLabels), std::end(kDefaultNodeLabels));
}

namespace {

// The index of the node the series names, or -1 after counting it (with an example) unmatched.
int MatchOrCount(const NodeMatcher& matcher, const std::string& node_label,
                 const LabelViews& labels, size_t* unmatched, std::vector<std::string>* examples) {
  const int i = matcher.Match(labels, node_label);
  if (i >= 0) return i;
  ++*unmatched;
  if (examples != nullptr && examples->size() < kMaxExamples) {
    std::string name;
    for (const auto& [k, v] : labels) {  // only the matching labels are decoded
      if (k == "__name__") continue;
      // Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict for the
      // equivalent chain of operator+ on temporaries.
      if (!name.empty()) name += ',';
      name.append(k).append("=").append(v);
    }
    examples->push_back("{" + name + "}");
  }
  return -1;
}

double OldestFresh(const Rule& rule, double now) {
  if (rule.max_age_seconds <= 0 || !rule.age_query.empty() || std::isnan(now))
    return -std::numeric_limits<double>::infinity();
  return now - rule.max_age_seconds;
}

}  // namespace

MatchAccumulator::MatchAccumulator(const NodeMatcher* matcher, const Rule* rule, double now)
    : matcher_(matcher), rule_(rule), now_(now), oldest_(OldestFresh(*rule, now)) {
  Reset();
}

void MatchAccumulator::Reset() {
  out_ = MatchedValues{};
  out_.values.assign(matcher_->size(), std::numeric_limits<double>::quiet_NaN());
  if (std::isfinite(oldest_)) {
    newest_too_old_.assign(matcher_->size(), std::numeric_limits<double>::quiet_NaN());
    out_.times.assign(matcher_->size(), std::numeric_limits<double>::quiet_NaN());
  }
}

void MatchAccumulator::Add(const LabelViews& labels, double value) { AddIndexed(labels, value); }

int MatchAccumulator::AddIndexed(const LabelViews& labels, double value) {
  const int i =
      MatchOrCount(*matcher_, rule_->node_label, labels, &out_.unmatched, &out_.unmatched_names);
  if (i < 0 || std::isnan(value)) return -1;
  double& slot = out_.values[static_cast<size_t>(i)];
  if (std::isnan(slot)) {
    slot = value;
  } else {
    ++out_.duplicates;
    slot = rule_->op == Comparison::kGreater ? std::max(slot, value) : std::min(slot, value);
  }
  return i;
}

void MatchAccumulator::AddAt(const LabelViews& labels, double value, double timestamp) {
  if (!(timestamp < oldest_)) {
    const int i = AddIndexed(labels, value);
    if (i >= 0 && !out_.times.empty()) {
      double& t = out_.times[static_cast<size_t>(i)];
      if (std::isnan(t) || timestamp < t) t = timestamp;
    }
    return;
  }
  // Too old: absent, as a series missing from the answer would be; its time is kept to say so.
  const int i =
      MatchOrCount(*matcher_, rule_->node_label, labels, &out_.unmatched, &out_.unmatched_names);
  if (i < 0 || std::isnan(value)) return;
  double& newest = newest_too_old_[static_cast<size_t>(i)];
  if (std::isnan(newest) || timestamp > newest) newest = timestamp;
}

MatchedValues& MatchAccumulator::result() {
  out_.stale.clear();
  for (size_t i = 0; i < newest_too_old_.size(); ++i)
    if (std::isnan(out_.values[i]) && !std::isnan(newest_too_old_[i]))
      out_.stale.emplace_back(i, now_ - newest_too_old_[i]);
  return out_;
}

UpdateAgeAccumulator::UpdateAgeAccumulator(const NodeMatcher* matcher, const Rule* rule)
    : matcher_(matcher), rule_(rule) {
  Reset();
}

void UpdateAgeAccumulator::Reset() {
  ages_.assign(matcher_->size(), std::numeric_limits<double>::quiet_NaN());
  unmatched_ = 0;
}

void UpdateAgeAccumulator::Add(const LabelViews& /*labels*/, double /*value*/) {}

void UpdateAgeAccumulator::AddAt(const LabelViews& labels, double value, double timestamp) {
  const int i = MatchOrCount(*matcher_, rule_->node_label, labels, &unmatched_, nullptr);
  const double age = timestamp - value;
  if (i < 0 || !std::isfinite(age)) return;  // a NaN or infinite update time says nothing
  double& slot = ages_[static_cast<size_t>(i)];
  if (std::isnan(slot) || age < slot) slot = age;
}

void DropStaleValues(const std::vector<double>& ages, double max_age_seconds, MatchedValues* m) {
  for (size_t i = 0; i < m->values.size(); ++i) {
    if (std::isnan(m->values[i])) continue;
    // Not `age > max`: a node without an update time (NaN) is as unknown as one too old.
    if (ages[i] <= max_age_seconds) continue;
    m->values[i] = std::numeric_limits<double>::quiet_NaN();
    m->stale.emplace_back(i, ages[i]);
  }
}

MatchedValues MatchSamples(const NodeMatcher& matcher, const std::vector<Sample>& samples,
                           const Rule& rule) {
  MatchAccumulator acc(&matcher, &rule);
  LabelViews views;
  for (const auto& s : samples) {
    views.clear();
    for (const auto& [k, v] : s.metric) views.emplace_back(k, v);
    acc.AddAt(views, s.value, s.timestamp);
  }
  return std::move(acc.result());
}

}  // namespace ds
