#include "controller/prediction_source.h"

#include <glog/logging.h>

#include <utility>

namespace ds {

PredictionSource::PredictionSource(PrometheusClient* prom, const Clock* clock,
                                   size_t max_fetches_per_cycle)
    : prom_(prom), clock_(clock), max_fetches_(max_fetches_per_cycle) {}

namespace {

// Whether the days fetched for `was` hold for `now`: what a day's query asks and how its series
// are read (the query, the predict block, which of two series for one node is the more severe,
// and the label naming the node). A threshold, `for` or a pool may change and keep up to 90
// days of history; refetching them costs a day-long subquery each.
bool SameHistory(const Rule& was, const Rule& now) {
  return was.query == now.query && was.predict == now.predict && was.op == now.op &&
         was.node_label == now.node_label;
}

}  // namespace

PredictionSource::History* PredictionSource::Find(const Rule& rule) {
  MutexLock l(&mu_);
  auto& h = histories_[rule.name];
  if (h == nullptr || !SameHistory(h->rule, rule)) {
    // A changed query, quantile or zone makes every stored day wrong: start over.
    if (h != nullptr)
      LOG(INFO) << "rule " << rule.name << ": predict: the rule changed; its history of "
                << h->held.load() << " day(s) is dropped";
    h = std::make_unique<History>();
    h->rule = rule;
  }
  return h.get();
}

StatusOr<QueryResult> PredictionSource::Query(const Rule& rule, const LabelFilter* keep,
                                              SampleSink* sink) {
  History* h = Find(rule);
  MutexLock l(&h->mu);
  const PredictConfig& cfg = rule.predict;
  if (!h->zone) {
    auto zone = TimeZone::Load(cfg.time_zone);
    if (!zone.ok()) return zone.status().Prepend("predict.timeZone");
    h->zone = std::move(*zone);
  }
  const int64_t last = LastFinishedDay(clock_->WallSeconds(), *h->zone);
  h->days.EvictBefore(last - static_cast<int64_t>(cfg.days) + 1);

  QueryResult out;
  out.result_type = "vector";
  std::vector<int64_t> missing = h->days.Missing(last, cfg.days);
  Status failed = Status::OK();
  size_t fetched = 0;
  for (int64_t day : missing) {
    if (fetched == max_fetches_) break;
    const DayQuery q = MakeDayQuery(rule.query, cfg, DayBounds(day, *h->zone));
    auto res = prom_->QueryAt(q.expr, q.eval_time, keep);
    if (!res.ok()) {
      // Not kept as a day without data: that would predict from a gap for `days` days.
      failed = res.status().Prepend("predict: day " + DayName(day));
      break;
    }
    ++fetched;
    out.fetch_seconds += res->fetch_seconds;
    out.decode_seconds += res->decode_seconds;
    out.body_bytes += res->body_bytes;
    out.warnings.insert(out.warnings.end(), res->warnings.begin(), res->warnings.end());
    h->days.Put(day, res->samples, rule.op == Comparison::kGreater);
    ++days_fetched_;
    LOG(INFO) << "rule " << rule.name << ": predict: fetched day " << DayName(day) << " ("
              << res->samples.size() << " series, " << res->fetch_seconds * 1000 << " ms); "
              << h->days.size() << " of " << cfg.days << " days held";
  }
  h->held = h->days.size();
  if (h->days.size() < cfg.days) {
    std::string why = "predict: " + std::to_string(h->days.size()) + " of " +
                      std::to_string(cfg.days) + " days of history fetched (at most " +
                      std::to_string(max_fetches_) + " a cycle)";
    if (!failed.ok()) why += "; " + failed.ToString();
    return Status::Unavailable(why);
  }

  sink->Reset();
  LabelViews views;
  for (const DayHistory::Predicted& p : h->days.Combine(last, cfg)) {
    views.clear();
    for (const auto& [k, v] : *p.labels) views.emplace_back(k, v);
    sink->Add(views, p.value);
    ++out.sample_count;
  }
  return out;
}

void PredictionSource::Retain(const std::vector<Rule>& rules) {
  MutexLock l(&mu_);
  for (auto it = histories_.begin(); it != histories_.end();) {
    bool kept = false;
    for (const Rule& r : rules)
      kept = kept || (r.name == it->first && SameHistory(it->second->rule, r));
    it = kept ? std::next(it) : histories_.erase(it);
  }
}

uint64_t PredictionSource::days_fetched() const { return days_fetched_.load(); }

size_t PredictionSource::DaysHeld(const std::string& rule) const {
  MutexLock l(&mu_);
  auto it = histories_.find(rule);
  return it == histories_.end() ? 0 : it->second->held.load();
}

}  // namespace ds
