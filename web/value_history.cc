#include "web/value_history.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "web/json_values.h"

namespace ds {
namespace {

constexpr float kNoThreshold = std::numeric_limits<float>::quiet_NaN();

// Four significant digits: what a sparkline can show, and a third of the bytes of a full double.
double Round4(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, 3 - std::floor(std::log10(std::fabs(v))));
  return std::round(v * scale) / scale;
}

void WriteRounded(JsonWriter& w, double v) {
  if (std::isfinite(v))
    w.Double(Round4(v));
  else
    w.Null();
}

}  // namespace

void ValueHistory::Record(const NodeTable* table, double wall, size_t marked,
                          uint64_t evicted_total) {
  MutexLock l(&mu_);
  Advance(static_cast<int64_t>(std::floor(wall / 60)));
  ClusterMinute& c = cluster_[static_cast<size_t>(minute_) % kClusterMinutes];
  c.marked = std::max(c.marked, static_cast<int32_t>(std::min<size_t>(marked, INT32_MAX)));
  // The counter's increase; a counter that went down (a new Rebalancer) starts over from it.
  if (evicted_known_ && evicted_total >= evicted_total_)
    c.evictions +=
        static_cast<uint32_t>(std::min<uint64_t>(evicted_total - evicted_total_, 1u << 30));
  evicted_total_ = evicted_total;
  evicted_known_ = true;
  if (table == nullptr) return;
  size_t hot = 0;
  for (NodeTable::State s : table->states) hot += s == NodeTable::State::kHot;
  c.hot = std::max(c.hot, static_cast<int32_t>(std::min<size_t>(hot, INT32_MAX)));

  AlignRules(*table);
  const std::vector<size_t> row = AlignNodes(*table);
  const size_t slot = static_cast<size_t>(minute_) % kNodeMinutes, nr = rules_.size();
  for (size_t r = 0; r < nr; ++r) {
    const NodeTable::Column& col = table->rules[r];
    rules_[r].threshold[slot] = static_cast<float>(col.threshold);
    rules_[r].clear[slot] = static_cast<float>(col.clear_threshold);
  }
  for (size_t i = 0; i < table->names.size(); ++i) {
    seen_[row[i]] = minute_;
    for (size_t r = 0; r < nr; ++r) {
      const double v = table->Value(i, r);
      if (std::isfinite(v)) Put(series_[row[i] * nr + r], slot, v, rules_[r].op == "<");
    }
  }
}

void ValueHistory::Advance(int64_t minute) {
  if (minute_ < 0) {
    minute_ = minute;
    return;
  }
  if (minute <= minute_) return;
  const int64_t skipped = minute - minute_;
  for (int64_t k = 1; k <= std::min<int64_t>(skipped, kClusterMinutes); ++k)
    cluster_[static_cast<size_t>(minute_ + k) % kClusterMinutes] = ClusterMinute{};
  for (int64_t k = 1; k <= std::min<int64_t>(skipped, kNodeMinutes); ++k) {
    const size_t slot = static_cast<size_t>(minute_ + k) % kNodeMinutes;
    for (RuleLine& r : rules_) r.threshold[slot] = r.clear[slot] = kNoThreshold;
    for (Series& s : series_) s.code[slot] = kEmpty;
  }
  minute_ = minute;
  // Once a minute: nodes unseen for an hour go, and a range the hour's values use less than half
  // of shrinks to them, so a spike that has left does not flatten the rest of the line.
  const size_t nr = rules_.size();
  size_t kept = 0;
  for (size_t i = 0; i < names_.size(); ++i) {
    if (minute_ - seen_[i] >= static_cast<int64_t>(kNodeMinutes)) continue;
    if (kept != i) {
      names_[kept] = std::move(names_[i]);
      seen_[kept] = seen_[i];
      std::copy_n(series_.begin() + static_cast<ptrdiff_t>(i * nr), nr,
                  series_.begin() + static_cast<ptrdiff_t>(kept * nr));
    }
    ++kept;
  }
  names_.resize(kept);
  seen_.resize(kept);
  series_.resize(kept * nr);
  for (Series& s : series_) {
    uint8_t lo = kEmpty, hi = 0;
    for (uint8_t c : s.code)
      if (c != kEmpty) lo = std::min(lo, c), hi = std::max(hi, c);
    if (lo == kEmpty) {
      s.lo = s.hi = std::numeric_limits<float>::quiet_NaN();  // empty: the next value sets it
      continue;
    }
    if (hi - lo >= kLevels / 2) continue;  // the line still uses half the range: keep it
    const double span = static_cast<double>(s.hi) - s.lo;
    const double new_lo = s.lo + span * lo / kLevels, new_hi = s.lo + span * hi / kLevels;
    for (uint8_t& c : s.code)
      if (c != kEmpty)
        c = new_hi == new_lo
                ? 0
                : static_cast<uint8_t>(std::lround((s.lo + span * c / kLevels - new_lo) /
                                                   (new_hi - new_lo) * kLevels));
    s.lo = static_cast<float>(new_lo);
    s.hi = static_cast<float>(new_hi);
  }
}

void ValueHistory::AlignRules(const NodeTable& table) {
  bool same = table.rules.size() == rules_.size();
  for (size_t r = 0; same && r < rules_.size(); ++r) same = table.rules[r].rule == rules_[r].name;
  if (same) {
    for (size_t r = 0; r < rules_.size(); ++r) {  // a reload may change them under the same name
      rules_[r].op = table.rules[r].op;
      rules_[r].unit = table.rules[r].unit;
    }
    return;
  }
  // A reload added, removed or reordered rules: carry each kept rule's lines over by name.
  const size_t old_nr = rules_.size(), nr = table.rules.size();
  std::vector<RuleLine> rules(nr);
  std::vector<size_t> from(nr, SIZE_MAX);
  for (size_t r = 0; r < nr; ++r) {
    for (size_t o = 0; o < old_nr; ++o)
      if (rules_[o].name == table.rules[r].rule) from[r] = o;
    if (from[r] != SIZE_MAX) {
      rules[r] = rules_[from[r]];
    } else {
      rules[r].threshold.fill(kNoThreshold);
      rules[r].clear.fill(kNoThreshold);
    }
    rules[r].name = table.rules[r].rule;
    rules[r].op = table.rules[r].op;
    rules[r].unit = table.rules[r].unit;
  }
  std::vector<Series> series(names_.size() * nr);
  for (size_t i = 0; i < names_.size(); ++i)
    for (size_t r = 0; r < nr; ++r)
      if (from[r] != SIZE_MAX) series[i * nr + r] = series_[i * old_nr + from[r]];
  rules_ = std::move(rules);
  series_ = std::move(series);
}

std::vector<size_t> ValueHistory::AlignNodes(const NodeTable& table) {
  // Both lists are sorted: one walk finds every row, and the common case (no new node) ends there.
  std::vector<size_t> row(table.names.size());
  size_t missing = 0;
  for (size_t i = 0, j = 0; i < table.names.size(); ++i) {
    while (j < names_.size() && names_[j] < table.names[i]) ++j;
    if (j < names_.size() && names_[j] == table.names[i])
      row[i] = j;
    else
      ++missing;
  }
  if (missing == 0) return row;
  const size_t nr = rules_.size(), total = names_.size() + missing;
  std::vector<std::string> names;
  std::vector<int64_t> seen;
  std::vector<Series> series;
  names.reserve(total);  // exactly: at 10,000 nodes a doubling would waste megabytes
  seen.reserve(total);
  series.reserve(total * nr);
  size_t i = 0, j = 0;
  while (i < table.names.size() || j < names_.size()) {
    const bool take_old =
        j < names_.size() && (i == table.names.size() || names_[j] <= table.names[i]);
    if (take_old) {
      if (i < table.names.size() && names_[j] == table.names[i]) row[i++] = names.size();
      names.push_back(std::move(names_[j]));
      seen.push_back(seen_[j]);
      series.insert(series.end(), series_.begin() + static_cast<ptrdiff_t>(j * nr),
                    series_.begin() + static_cast<ptrdiff_t>((j + 1) * nr));
      ++j;
    } else {
      row[i] = names.size();
      names.push_back(table.names[i++]);
      seen.push_back(minute_);
      series.resize(series.size() + nr);
    }
  }
  names_ = std::move(names);
  seen_ = std::move(seen);
  series_ = std::move(series);
  return row;
}

void ValueHistory::Put(Series& s, size_t slot, double v, bool lower_is_worse) const {
  if (std::isnan(s.lo)) s.lo = s.hi = static_cast<float>(v);  // the series' first value
  auto decode = [&s](uint8_t c) { return s.lo + (static_cast<double>(s.hi) - s.lo) * c / kLevels; };
  if (s.code[slot] != kEmpty) {
    const double old = decode(s.code[slot]);
    if (lower_is_worse ? old <= v : old >= v) return;  // the minute's worst stays
  }
  if (v < s.lo || v > s.hi) {  // widen the range, moving the minutes already held into it
    // With a quarter of the span to spare: a rising line would otherwise move every minute at
    // every step, each move rounding once more. Advance takes the spare back once it is most of it.
    const double spare = (std::max<double>(s.hi, v) - std::min<double>(s.lo, v)) / 4;
    const double new_lo = v < s.lo ? v - spare : s.lo, new_hi = v > s.hi ? v + spare : s.hi;
    for (uint8_t& c : s.code)
      if (c != kEmpty)
        c = static_cast<uint8_t>(std::lround((decode(c) - new_lo) / (new_hi - new_lo) * kLevels));
    s.lo = static_cast<float>(new_lo);
    s.hi = static_cast<float>(new_hi);
  }
  const double span = static_cast<double>(s.hi) - s.lo;
  s.code[slot] = span <= 0 ? 0 : static_cast<uint8_t>(std::lround((v - s.lo) / span * kLevels));
}

void ValueHistory::RenderSeries(JsonWriter& w, const Series& s) const {
  w.StartArray();
  for (size_t k = 1; k <= kNodeMinutes; ++k) {  // oldest first, the current minute last
    const uint8_t c = s.code[static_cast<size_t>(minute_ + static_cast<int64_t>(k)) % kNodeMinutes];
    if (c == kEmpty)
      w.Null();
    else
      WriteRounded(w, s.lo + (static_cast<double>(s.hi) - s.lo) * c / kLevels);
  }
  w.EndArray();
}

std::string ValueHistory::RenderJson(const std::vector<std::string>& nodes) const {
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  MutexLock l(&mu_);
  w.StartObject();
  w.Key("stepSeconds");
  w.Uint(60);
  if (minute_ < 0) {  // no cycle yet: the same keys, empty
    w.Key("rules");
    w.StartArray();
    w.EndArray();
    w.Key("nodes");
    w.StartObject();
    w.EndObject();
    w.Key("cluster");
    w.StartObject();
    for (const char* key : {"marked", "hot", "evictions"}) {
      w.Key(key);
      w.StartArray();
      w.EndArray();
    }
    w.EndObject();
    w.EndObject();
    return JsonBody(sb);
  }
  // The node series' first minute; the last element of every array is the current minute.
  w.Key("start");
  w.Int64((minute_ - static_cast<int64_t>(kNodeMinutes) + 1) * 60);
  w.Key("rules");
  w.StartArray();
  for (const RuleLine& r : rules_) {
    w.StartObject();
    w.Key("name");
    WriteString(w, r.name);
    w.Key("operator");
    WriteString(w, r.op);
    w.Key("unit");
    w.String(ValueUnitName(r.unit));
    for (const auto& [key, line] :
         {std::pair{"threshold", &r.threshold}, {"clearThreshold", &r.clear}}) {
      w.Key(key);
      w.StartArray();
      for (size_t k = 1; k <= kNodeMinutes; ++k)
        WriteRounded(
            w, (*line)[static_cast<size_t>(minute_ + static_cast<int64_t>(k)) % kNodeMinutes]);
      w.EndArray();
    }
    w.EndObject();
  }
  w.EndArray();
  w.Key("nodes");
  w.StartObject();
  const size_t nr = rules_.size();
  for (const std::string& name : nodes) {
    auto it = std::lower_bound(names_.begin(), names_.end(), name);
    if (it == names_.end() || *it != name) continue;
    const size_t i = static_cast<size_t>(it - names_.begin());
    WriteString(w, name);  // as a key: the writer takes a string in key position
    w.StartArray();
    for (size_t r = 0; r < nr; ++r) RenderSeries(w, series_[i * nr + r]);
    w.EndArray();
  }
  w.EndObject();
  w.Key("cluster");
  w.StartObject();
  w.Key("start");
  w.Int64((minute_ - static_cast<int64_t>(kClusterMinutes) + 1) * 60);
  for (const char* key : {"marked", "hot", "evictions"}) {
    w.Key(key);
    w.StartArray();
    for (size_t k = 1; k <= kClusterMinutes; ++k) {
      const ClusterMinute& c =
          cluster_[static_cast<size_t>(minute_ + static_cast<int64_t>(k)) % kClusterMinutes];
      const std::string_view which = key;
      if (which == "evictions" && (c.marked >= 0 || c.evictions > 0))
        w.Uint(c.evictions);
      else if (which == "evictions")
        w.Null();
      else if (const int32_t v = which == "marked" ? c.marked : c.hot; v < 0)
        w.Null();
      else
        w.Int(v);
    }
    w.EndArray();
  }
  w.EndObject();
  w.EndObject();
  return JsonBody(sb);
}

size_t ValueHistory::Bytes() const {
  MutexLock l(&mu_);
  size_t b = sizeof(*this) + rules_.capacity() * sizeof(RuleLine) +
             names_.capacity() * sizeof(std::string) + seen_.capacity() * sizeof(int64_t) +
             series_.capacity() * sizeof(Series);
  for (const RuleLine& r : rules_) b += r.name.capacity() + r.op.capacity();
  for (const std::string& n : names_)
    if (n.capacity() > std::string().capacity()) b += n.capacity() + 1;
  return b;
}

}  // namespace ds
