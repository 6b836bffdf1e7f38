#include "web/value_history.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "web/json_values.h"

namespace ds {
namespace {

constexpr float kNoThreshold = std::numeric_limits<float>::quiet_NaN();

// A float's seven significant digits: the bounds are floats, so more would be noise, and fewer
// would undo a narrow range far from zero (16.000e9 to 16.004e9).
double Round7(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, 6 - std::floor(std::log10(std::fabs(v))));
  return std::round(v * scale) / scale;
}

void WriteRounded(JsonWriter& w, double v) {
  if (std::isfinite(v))
    w.Double(Round7(v));
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
  for (NodeTable::State s : table->states)  // as the page's "hot" card: the capped are hot too
    hot += s == NodeTable::State::kHot || s == NodeTable::State::kCapped;
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
    if (row[i] == kNoRow) continue;
    seen_[row[i]] = minute_;
    for (size_t r = 0; r < nr; ++r) {
      const double v = table->Value(i, r);
      if (Recordable(v)) Put(series_[row[i] * nr + r], slot, v, rules_[r].op == "<");
    }
  }
}

bool ValueHistory::Recordable(double v) {
  // Beyond a float's range a series' bounds would become infinite: no value, as NaN is.
  return std::isfinite(v) && std::fabs(v) <= std::numeric_limits<float>::max();
}

void ValueHistory::Advance(int64_t minute) {
  if (minute_ < 0) {
    minute_ = minute;
    return;
  }
  if (minute < minute_ - kClockBackMinutes) {
    // The wall clock went back far (a step after a bad jump forward): what was recorded ahead
    // of it would absorb every cycle for that long. Start over.
    rules_.clear();
    names_.clear();
    seen_.clear();
    series_.clear();
    cluster_.fill(ClusterMinute{});
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
  const int64_t last_cycle = minute_;  // the minute of the last Record
  minute_ = minute;
  // Once a minute: nodes that cycles have gone without for kDepartedMinutes go (counted in cycles:
  // a controller without cycles for a while, a standby, has seen no node leave), as does what is
  // older than the hour, and a row without a value left in the hour (a node gets one with its
  // first value: AlignNodes); and a range the hour's values use less than half
  // of shrinks to them, so a spike that has left does not flatten the rest of the line.
  const size_t nr = rules_.size();
  size_t kept = 0;
  for (size_t i = 0; i < names_.size(); ++i) {
    const auto first = series_.begin() + static_cast<ptrdiff_t>(i * nr);
    const bool valued = std::any_of(first, first + static_cast<ptrdiff_t>(nr), [](const Series& s) {
      return std::any_of(s.code.begin(), s.code.end(), [](uint8_t c) { return c != kEmpty; });
    });
    if (!valued || last_cycle - seen_[i] >= kDepartedMinutes ||
        minute_ - seen_[i] >= static_cast<int64_t>(kNodeMinutes))
      continue;
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
  // Room kept for far more rows than remain (the nodes of a churn that left, a smaller cluster)
  // would stay resident: the pages were written. Shrunk, the next join leaves room again.
  if (names_.capacity() > kept + kept / 4 + 64) {
    names_.shrink_to_fit();
    seen_.shrink_to_fit();
    series_.shrink_to_fit();
  }
  for (Series& s : series_) {
    uint8_t lo = kEmpty, hi = 0;
    for (uint8_t c : s.code)
      if (c != kEmpty) lo = std::min(lo, c), hi = std::max(hi, c);
    if (lo == kEmpty) {
      s.lo = s.hi = std::numeric_limits<float>::quiet_NaN();  // empty: the next value sets it
      continue;
    }
    if (hi - lo >= kLevels / 2) continue;  // the line still uses half the range: keep it
    const double new_lo = Decode(s, lo), new_hi = Decode(s, hi);
    Series tight = s;
    tight.lo = static_cast<float>(new_lo);
    tight.hi = static_cast<float>(new_hi);
    for (uint8_t& c : tight.code)
      if (c != kEmpty) c = Encode(tight, Decode(s, c));
    s = tight;
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
  // A node joins with its first value: one that never had any (a node no rule's query names, the
  // nodes a churn adds and removes) would hold an empty line, 300 bytes a node with 4 rules.
  const size_t nr = rules_.size();
  std::vector<size_t> row(table.names.size(), kNoRow);
  std::vector<size_t> joined;  // the table's nodes new to the history, in order
  for (size_t i = 0, j = 0; i < table.names.size(); ++i) {
    while (j < names_.size() && names_[j] < table.names[i]) ++j;
    if (j < names_.size() && names_[j] == table.names[i]) {
      row[i] = j;
      continue;
    }
    for (size_t r = 0; r < nr; ++r) {
      if (!Recordable(table.Value(i, r))) continue;
      joined.push_back(i);
      break;
    }
  }
  if (joined.empty()) return row;
  // Merged in place, from the back, into storage grown with room to spare: while nodes join a few
  // a cycle, a new copy of every series each cycle (3 MB at 10,000 nodes x 4 rules) had the
  // resident size jump by as much. The spare room costs no resident memory until it is used
  // (blocks this large are fresh mappings, and only the pages written are resident).
  const size_t old_n = names_.size(), total = old_n + joined.size();
  if (names_.capacity() < total) {
    const size_t room = old_n == 0 ? total : total + total / 8;  // the first nodes: exactly
    names_.reserve(room);
    seen_.reserve(room);
    series_.reserve(room * nr);
  }
  names_.resize(total);
  seen_.resize(total);
  series_.resize(total * nr);
  size_t j = old_n, k = total;  // old rows [0, j) not yet placed; rows [k, total) placed
  for (size_t n = joined.size(); n > 0;) {
    const std::string& name = table.names[joined[n - 1]];
    --k;
    if (j > 0 && names_[j - 1] > name) {  // the old row goes last
      --j;
      names_[k] = std::move(names_[j]);
      seen_[k] = seen_[j];
      std::copy_n(series_.begin() + static_cast<ptrdiff_t>(j * nr), nr,
                  series_.begin() + static_cast<ptrdiff_t>(k * nr));
    } else {  // the new node does
      row[joined[--n]] = k;
      names_[k] = name;
      seen_[k] = minute_;
      std::fill_n(series_.begin() + static_cast<ptrdiff_t>(k * nr), nr, Series());
    }
  }
  // The old rows the new ones were put among moved up: find the table's rows among them again.
  for (size_t i = 0, at = 0, n = 0; i < table.names.size(); ++i) {
    if (n < joined.size() && joined[n] == i) {
      ++n;
      continue;
    }
    if (row[i] == kNoRow) continue;  // no row, no value
    while (names_[at] != table.names[i]) ++at;
    row[i] = at;
  }
  return row;
}

void ValueHistory::Put(Series& s, size_t slot, double v, bool lower_is_worse) const {
  if (std::isnan(s.lo)) s.lo = s.hi = static_cast<float>(v);  // the series' first value
  if (s.code[slot] != kEmpty) {
    const double old = Decode(s, s.code[slot]);
    if (lower_is_worse ? old <= v : old >= v) return;  // the minute's worst stays
  }
  if (v < s.lo || v > s.hi) {  // widen the range, moving the minutes already held into it
    // With a quarter of the span to spare: a rising line would otherwise move every minute at
    // every step, each move rounding once more. Advance takes the spare back once it is most of it.
    const double spare = (std::max<double>(s.hi, v) - std::min<double>(s.lo, v)) / 4;
    const double new_lo = v < s.lo ? v - spare : s.lo, new_hi = v > s.hi ? v + spare : s.hi;
    Series widened = s;
    widened.lo = static_cast<float>(new_lo);
    widened.hi = static_cast<float>(new_hi);
    for (uint8_t& c : widened.code)
      if (c != kEmpty) c = Encode(widened, Decode(s, c));
    s = widened;
  }
  s.code[slot] = Encode(s, v);
}

double ValueHistory::Decode(const Series& s, uint8_t c) {
  return s.lo + (static_cast<double>(s.hi) - s.lo) * c / kLevels;
}

uint8_t ValueHistory::Encode(const Series& s, double v) {
  // Clamped: the bounds are floats, and v may lie a rounding step outside them (255 is kEmpty).
  const double span = static_cast<double>(s.hi) - s.lo;
  if (!(span > 0)) return 0;
  return static_cast<uint8_t>(std::clamp<long>(std::lround((v - s.lo) / span * kLevels), 0, 254));
}

void ValueHistory::RenderSeries(JsonWriter& w, const Series& s, int64_t minute) {
  w.StartArray();
  for (size_t k = 1; k <= kNodeMinutes; ++k) {  // oldest first, the current minute last
    const uint8_t c = s.code[static_cast<size_t>(minute + static_cast<int64_t>(k)) % kNodeMinutes];
    if (c == kEmpty)
      w.Null();
    else
      WriteRounded(w, Decode(s, c));
  }
  w.EndArray();
}

std::string ValueHistory::RenderJson(const std::vector<std::string>& nodes) const {
  // Copied under the lock and written after it: a request (any number of them, from anyone who
  // reaches the port) never holds the evaluation loop up while it formats. Each name once.
  std::vector<std::string> wanted = nodes;
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  int64_t minute;
  std::vector<RuleLine> rules;
  std::vector<std::pair<std::string, std::vector<Series>>> rows;
  std::array<ClusterMinute, kClusterMinutes> cluster;
  {
    MutexLock l(&mu_);
    minute = minute_;
    rules = rules_;
    cluster = cluster_;
    const size_t nr = rules_.size();
    for (std::string& name : wanted) {
      auto it = std::lower_bound(names_.begin(), names_.end(), name);
      if (it == names_.end() || *it != name) continue;
      const auto from = series_.begin() + (it - names_.begin()) * static_cast<ptrdiff_t>(nr);
      rows.emplace_back(std::move(name),
                        std::vector<Series>(from, from + static_cast<ptrdiff_t>(nr)));
    }
  }
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.StartObject();
  w.Key("stepSeconds");
  w.Uint(60);
  if (minute < 0) {  // no cycle yet: the same keys, empty
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
  w.Int64((minute - static_cast<int64_t>(kNodeMinutes) + 1) * 60);
  w.Key("rules");
  RenderRules(w, rules, minute);
  w.Key("nodes");
  w.StartObject();
  for (const auto& [name, series] : rows) {
    WriteString(w, name);  // as a key: the writer takes a string in key position
    w.StartArray();
    for (const Series& s : series) RenderSeries(w, s, minute);
    w.EndArray();
  }
  w.EndObject();
  w.Key("cluster");
  RenderCluster(w, cluster, minute);
  w.EndObject();
  return JsonBody(sb);
}

void ValueHistory::RenderRules(JsonWriter& w, const std::vector<RuleLine>& rules, int64_t minute) {
  w.StartArray();
  for (const RuleLine& r : rules) {
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
        WriteRounded(w,
                     (*line)[static_cast<size_t>(minute + static_cast<int64_t>(k)) % kNodeMinutes]);
      w.EndArray();
    }
    w.EndObject();
  }
  w.EndArray();
}

void ValueHistory::RenderCluster(JsonWriter& w,
                                 const std::array<ClusterMinute, kClusterMinutes>& cluster,
                                 int64_t minute) {
  w.StartObject();
  w.Key("start");
  w.Int64((minute - static_cast<int64_t>(kClusterMinutes) + 1) * 60);
  for (const char* key : {"marked", "hot", "evictions"}) {
    w.Key(key);
    w.StartArray();
    for (size_t k = 1; k <= kClusterMinutes; ++k) {
      const ClusterMinute& c =
          cluster[static_cast<size_t>(minute + static_cast<int64_t>(k)) % kClusterMinutes];
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
