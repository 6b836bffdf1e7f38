#include "rules/rule_scope.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

namespace ds {

RuleScope::RuleScope(const std::vector<Rule>& rules) {
  for (const Rule& r : rules) {
    if (r.node_selector.empty()) {
      selectors_.emplace_back();
      none_.push_back(false);
      continue;
    }
    auto sel = LabelSelector::Parse(r.node_selector);
    none_.push_back(!sel.ok());
    selectors_.emplace_back(sel.ok() ? std::optional<LabelSelector>(std::move(*sel))
                                     : std::nullopt);
  }
}

std::vector<std::vector<uint8_t>> RuleScope::Applies(
    const std::vector<const Labels*>& nodes) const {
  std::vector<std::vector<uint8_t>> out(selectors_.size());
  for (size_t r = 0; r < selectors_.size(); ++r) {
    if (!selectors_[r] && !none_[r]) continue;
    out[r].resize(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i)
      out[r][i] = selectors_[r] && selectors_[r]->Matches(*nodes[i]) ? 1 : 0;
  }
  return out;
}

std::vector<std::string> RuleSelectorKeys(const std::vector<Rule>& rules) {
  std::vector<std::string> keys;
  for (const Rule& r : rules) {
    if (r.node_selector.empty()) continue;
    auto sel = LabelSelector::Parse(r.node_selector);
    if (!sel.ok()) continue;
    for (std::string& k : sel->Keys()) keys.push_back(std::move(k));
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

void MaskOutOfScope(const std::vector<uint8_t>& applies, std::vector<double>* values) {
  if (applies.empty()) return;
  for (size_t i = 0; i < values->size() && i < applies.size(); ++i)
    if (!applies[i]) (*values)[i] = std::numeric_limits<double>::quiet_NaN();
}

bool RuleDue(const Rule& rule, std::optional<TimePoint> last_ok, TimePoint now,
             double cycle_interval_seconds) {
  if (rule.interval_seconds <= 0 || !last_ok) return true;
  // A cycle starts when the one before started plus the interval, give or take the scheduler:
  // a cycle a few milliseconds early must not push the query a whole cycle later.
  const double slack = 0.1 * cycle_interval_seconds;
  return now - *last_ok >= FromSeconds(rule.interval_seconds - slack);
}

Duration RuleGrace(const Rule& rule, Duration grace) {
  return std::max(grace, FromSeconds(3 * rule.interval_seconds));
}

RuleAnswer KeepAnswer(const Rule& rule, TimePoint started, double now_wall,
                      std::vector<std::string> names, const MatchedValues& matched,
                      const std::vector<double>& ages, size_t samples) {
  RuleAnswer a;
  a.started = started;
  a.names = std::move(names);
  a.values = matched.values;
  a.samples = samples;
  a.unmatched = matched.unmatched;
  a.duplicates = matched.duplicates;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (rule.max_age_seconds <= 0) return a;
  a.updated_wall.assign(a.values.size(), nan);
  for (size_t i = 0; i < a.values.size(); ++i) {
    if (std::isnan(a.values[i])) continue;
    if (!rule.age_query.empty()) {
      if (i < ages.size()) a.updated_wall[i] = now_wall - ages[i];
    } else if (i < matched.times.size()) {
      a.updated_wall[i] = matched.times[i];  // NaN: a sample without a time, taken as fresh
    }
  }
  for (const auto& [node, age] : matched.stale) a.stale.emplace_back(node, now_wall - age);
  return a;
}

MatchedValues ReuseAnswer(const Rule& rule, const RuleAnswer& answer,
                          const std::vector<std::string_view>& names, double now_wall) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  MatchedValues m;
  m.unmatched = answer.unmatched;
  m.duplicates = answer.duplicates;
  m.values.assign(names.size(), nan);
  // from[i]: node i's position in the answer, or -1. The same nodes in the same order is the
  // usual case, and needs no index.
  std::vector<int64_t> from(names.size(), -1);
  bool same = names.size() == answer.names.size();
  for (size_t i = 0; same && i < names.size(); ++i) same = names[i] == answer.names[i];
  if (same) {
    for (size_t i = 0; i < names.size(); ++i) from[i] = static_cast<int64_t>(i);
  } else {
    std::unordered_map<std::string_view, size_t> index;
    for (size_t k = 0; k < answer.names.size(); ++k) index.emplace(answer.names[k], k);
    for (size_t i = 0; i < names.size(); ++i)
      if (auto it = index.find(names[i]); it != index.end())
        from[i] = static_cast<int64_t>(it->second);
  }
  std::vector<int64_t> to(answer.names.size(), -1);
  for (size_t i = 0; i < names.size(); ++i)
    if (from[i] >= 0) to[static_cast<size_t>(from[i])] = static_cast<int64_t>(i);
  for (size_t i = 0; i < names.size(); ++i) {
    if (from[i] < 0) continue;
    const size_t k = static_cast<size_t>(from[i]);
    const double v = answer.values[k];
    if (std::isnan(v)) continue;
    const double updated = k < answer.updated_wall.size() ? answer.updated_wall[k] : nan;
    // Judged as a fresh query would judge it now; an unknown time was taken as fresh.
    if (rule.max_age_seconds > 0 && std::isfinite(updated) &&
        now_wall - updated > rule.max_age_seconds) {
      m.stale.emplace_back(i, now_wall - updated);
      continue;
    }
    m.values[i] = v;
  }
  for (const auto& [k, updated] : answer.stale)
    if (k < to.size() && to[k] >= 0)
      m.stale.emplace_back(static_cast<size_t>(to[k]), now_wall - updated);
  std::sort(m.stale.begin(), m.stale.end());
  return m;
}

std::vector<size_t> SharedQueries(const std::vector<Rule>& rules) {
  std::vector<size_t> by(rules.size());
  for (size_t r = 0; r < rules.size(); ++r) {
    by[r] = r;
    if (rules[r].below_hottest == 0) continue;
    for (size_t b = 0; b < r && by[r] == r; ++b) {
      if (by[b] != b) continue;
      Rule as_level = rules[b];
      as_level.name = rules[r].name;
      as_level.threshold = rules[r].threshold;
      as_level.clear_threshold = rules[r].clear_threshold;
      as_level.for_seconds = rules[r].for_seconds;
      as_level.below_hottest = rules[r].below_hottest;
      as_level.resource = rules[r].resource;
      if (as_level == rules[r]) by[r] = b;
    }
  }
  return by;
}

}  // namespace ds
