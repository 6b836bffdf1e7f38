#include "rules/prediction.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ds {
namespace {

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// The epoch second of local midnight starting `day`. Local time is t + offset(t); solving it for
// t takes the offset at a guess, then at the answer (an offset change near midnight moves it).
int64_t Midnight(int64_t day, const TimeZone& zone) {
  const int64_t local = day * 86400;
  const int64_t t0 = local - zone.OffsetAt(local);
  return local - zone.OffsetAt(t0);
}

// A series' identity: its kept labels, sorted, as one string.
std::string SeriesKey(Labels labels) {
  std::sort(labels.begin(), labels.end());
  std::string key;
  for (const auto& [k, v] : labels) {
    key += k;
    key += '\0';
    key += v;
    key += '\0';
  }
  return key;
}

}  // namespace

int64_t LocalDay(double epoch_seconds, const TimeZone& zone) {
  const auto t = static_cast<int64_t>(std::floor(epoch_seconds));
  return FloorDiv(t + zone.OffsetAt(t), 86400);
}

DayWindow DayBounds(int64_t day, const TimeZone& zone) {
  return DayWindow{static_cast<double>(Midnight(day, zone)),
                   static_cast<double>(Midnight(day + 1, zone))};
}

int64_t LastFinishedDay(double now_epoch_seconds, const TimeZone& zone) {
  return LocalDay(now_epoch_seconds - kPredictSettleSeconds, zone) - 1;
}

std::string DayName(int64_t day) {
  // civil_from_days (Howard Hinnant's algorithm).
  const int64_t z = day + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t d = doy - (153 * mp + 2) / 5 + 1;
  const int64_t m = mp < 10 ? mp + 3 : mp - 9;
  const int64_t y = yoe + era * 400 + (m <= 2);
  char buf[80];  // room for any int64 year, so the compiler sees no truncation
  std::snprintf(buf, sizeof(buf), "%04lld-%02lld-%02lld", static_cast<long long>(y),
                static_cast<long long>(m), static_cast<long long>(d));
  return buf;
}

DayQuery MakeDayQuery(const std::string& query, const PredictConfig& cfg, const DayWindow& w) {
  char head[64], range[80];
  std::snprintf(head, sizeof(head), "quantile_over_time(%.10g, (", cfg.quantile);
  std::snprintf(range, sizeof(range), ")[%llds:%llds])",
                static_cast<long long>(std::llround(w.end - w.start)),
                static_cast<long long>(std::llround(cfg.resolution_seconds)));
  // The query on lines of its own: a trailing `# comment` in it must not swallow the ")[...]".
  return DayQuery{std::string(head) + "\n" + query + "\n" + range, w.end - 0.001};
}

double DayWeight(int64_t age, double half_life_seconds) {
  return std::exp2(-static_cast<double>(age) * 86400.0 / half_life_seconds);
}

std::vector<int64_t> DayHistory::Missing(int64_t last, size_t days) const {
  std::vector<int64_t> out;
  for (size_t k = 0; k < days; ++k)
    if (!Has(last - static_cast<int64_t>(k))) out.push_back(last - static_cast<int64_t>(k));
  return out;
}

void DayHistory::Put(int64_t day, const std::vector<Sample>& samples, bool keep_highest) {
  std::map<uint32_t, double> values;
  for (const Sample& s : samples) {
    if (!std::isfinite(s.value)) continue;
    auto [it, added] = index_.emplace(SeriesKey(s.metric), static_cast<uint32_t>(series_.size()));
    if (added) series_.push_back(s.metric);
    auto [v, first] = values.emplace(it->second, s.value);
    if (!first)
      v->second = keep_highest ? std::max(v->second, s.value) : std::min(v->second, s.value);
  }
  days_[day].assign(values.begin(), values.end());
}

void DayHistory::EvictBefore(int64_t oldest) {
  auto end = days_.lower_bound(oldest);
  if (end == days_.begin()) return;
  days_.erase(days_.begin(), end);
  // Renumber the series still named, in their old order.
  std::vector<uint32_t> renumber(series_.size(), UINT32_MAX);
  for (const auto& [day, values] : days_)
    for (const auto& [s, v] : values) renumber[s] = 0;
  std::vector<Labels> kept;
  for (size_t s = 0; s < series_.size(); ++s) {
    if (renumber[s] == UINT32_MAX) continue;
    renumber[s] = static_cast<uint32_t>(kept.size());
    kept.push_back(std::move(series_[s]));
  }
  series_ = std::move(kept);
  for (auto it = index_.begin(); it != index_.end();) {
    if (renumber[it->second] == UINT32_MAX) {
      it = index_.erase(it);
    } else {
      it->second = renumber[it->second];
      ++it;
    }
  }
  for (auto& [day, values] : days_)
    for (auto& sv : values) sv.first = renumber[sv.first];
}

std::vector<DayHistory::Predicted> DayHistory::Combine(int64_t last,
                                                       const PredictConfig& cfg) const {
  struct Sum {
    double weight = 0, weighted = 0;
    size_t days = 0;
  };
  std::vector<Sum> sums(series_.size());
  const int64_t first = last - static_cast<int64_t>(cfg.days) + 1;
  for (auto it = days_.lower_bound(first); it != days_.end() && it->first <= last; ++it) {
    const double w = DayWeight(last - it->first, cfg.half_life_seconds);
    for (const auto& [s, v] : it->second) {
      sums[s].weight += w;
      sums[s].weighted += w * v;
      ++sums[s].days;
    }
  }
  std::vector<Predicted> out;
  for (size_t s = 0; s < sums.size(); ++s) {
    if (sums[s].days == 0 || sums[s].days < cfg.min_days) continue;
    out.push_back(Predicted{&series_[s], sums[s].weighted / sums[s].weight, sums[s].days});
  }
  return out;
}

}  // namespace ds
