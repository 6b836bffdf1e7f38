// Scripted PrometheusClient: per query expression, a result or an error. Records queries.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "common/mutex.h"
#include "promql/prometheus_client.h"
#include "promql/range_query.h"

namespace ds {

class FakePrometheus : public PrometheusClient {
 public:
  // Sets `expr` to return one sample per (node label value, value).
  void SetValues(const std::string& expr, const std::vector<std::pair<std::string, double>>& values,
                 const std::string& label = "node") {
    QueryResult r;
    r.result_type = "vector";
    for (const auto& [node, v] : values) r.samples.push_back(Sample{{{label, node}}, v, 0});
    MutexLock l(&mu_);
    results_[expr] = r;
    errors_.erase(expr);
  }
  // Sets `expr` to return these series, e.g. per-pod usage with namespace and pod labels.
  void SetSamples(const std::string& expr, std::vector<Sample> samples) {
    QueryResult r;
    r.result_type = "vector";
    r.samples = std::move(samples);
    MutexLock l(&mu_);
    results_[expr] = std::move(r);
    errors_.erase(expr);
  }
  // Sets `expr` evaluated at `eval_time` (QueryAt) to return these values; other times of the
  // same expression answer as Query would.
  void SetValuesAt(const std::string& expr, double eval_time,
                   const std::vector<std::pair<std::string, double>>& values,
                   const std::string& label = "node") {
    QueryResult r;
    r.result_type = "vector";
    for (const auto& [node, v] : values) r.samples.push_back(Sample{{{label, node}}, v, eval_time});
    MutexLock l(&mu_);
    results_at_[{expr, eval_time}] = r;
  }
  // The evaluation times QueryAt was asked for, in order.
  std::vector<std::pair<std::string, double>> queries_at() {
    MutexLock l(&mu_);
    return queries_at_;
  }
  // Sets `expr`'s history for QueryRange: per node label value, the value at every time in
  // [since, until] (Unix seconds); a range query gets each node's value at each of its steps
  // within that span (no point outside it, as a series that did not exist yet).
  void SetHistory(const std::string& expr, const std::string& node, double value, double since,
                  double until, const std::string& label = "node") {
    MutexLock l(&mu_);
    history_[expr].push_back(Span{{{label, node}}, value, since, until});
    errors_.erase(expr);
  }
  // The (expr, start, end, step) of every QueryRange, in order.
  std::vector<std::tuple<std::string, double, double, double>> range_queries() {
    MutexLock l(&mu_);
    return range_queries_;
  }
  void SetError(const std::string& expr, Status st) {
    MutexLock l(&mu_);
    errors_[expr] = std::move(st);
  }
  int calls(const std::string& expr) {
    MutexLock l(&mu_);
    return calls_[expr];
  }
  // Called (outside the fake's lock) at the start of every query of `expr`.
  void OnQuery(const std::string& expr, std::function<void()> hook) {
    MutexLock l(&mu_);
    hooks_[expr] = std::move(hook);
  }
  StatusOr<QueryResult> Query(const std::string& expr, const LabelFilter* = nullptr,
                              SampleSink* sink = nullptr) override {
    std::function<void()> hook;
    {
      MutexLock l(&mu_);
      if (auto it = hooks_.find(expr); it != hooks_.end()) hook = it->second;
    }
    if (hook) hook();
    MutexLock l(&mu_);
    ++calls_[expr];
    if (auto it = errors_.find(expr); it != errors_.end()) return it->second;
    if (auto it = results_.find(expr); it != results_.end()) {
      if (sink == nullptr) return it->second;
      QueryResult r = it->second;
      DrainToSink(&r, sink);
      return r;
    }
    QueryResult empty;
    empty.result_type = "vector";
    return empty;
  }
  StatusOr<QueryResult> QueryAt(const std::string& expr, double eval_time,
                                const LabelFilter* = nullptr) override {
    {
      MutexLock l(&mu_);
      queries_at_.emplace_back(expr, eval_time);
      if (!errors_.count(expr))
        if (auto it = results_at_.find({expr, eval_time}); it != results_at_.end()) {
          ++calls_[expr];
          return it->second;
        }
    }
    return Query(expr);
  }
  StatusOr<RangeResult> QueryRange(const std::string& expr, double start, double end, double step,
                                   const LabelFilter* = nullptr) override {
    MutexLock l(&mu_);
    range_queries_.emplace_back(expr, start, end, step);
    ++calls_[expr];
    if (auto it = errors_.find(expr); it != errors_.end()) return it->second;
    RangeResult r;
    for (const Span& span : history_[expr]) {
      RangeSeries* series = nullptr;
      for (RangeSeries& s : r.series)
        if (s.metric == span.metric) series = &s;
      for (double t = start; t <= end + 1e-9; t += step) {
        if (t < span.since || t > span.until) continue;
        if (series == nullptr) {
          r.series.push_back(RangeSeries{span.metric, {}, {}});
          series = &r.series.back();
        }
        series->times.push_back(t);
        series->values.push_back(span.value);
      }
    }
    // Spans of one series may come in any order: its points must go forward in time.
    for (RangeSeries& s : r.series) {
      std::vector<size_t> order(s.times.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::sort(order.begin(), order.end(),
                [&](size_t a, size_t b) { return s.times[a] < s.times[b]; });
      RangeSeries sorted{s.metric, {}, {}};
      for (size_t i : order) {
        sorted.times.push_back(s.times[i]);
        sorted.values.push_back(s.values[i]);
      }
      s = std::move(sorted);
    }
    return r;
  }

 private:
  struct Span {
    Labels metric;
    double value, since, until;
  };
  Mutex mu_;
  std::map<std::string, std::vector<Span>> history_ GUARDED_BY(mu_);
  std::vector<std::tuple<std::string, double, double, double>> range_queries_ GUARDED_BY(mu_);
  std::map<std::string, QueryResult> results_ GUARDED_BY(mu_);
  std::map<std::pair<std::string, double>, QueryResult> results_at_ GUARDED_BY(mu_);
  std::vector<std::pair<std::string, double>> queries_at_ GUARDED_BY(mu_);
  std::map<std::string, Status> errors_ GUARDED_BY(mu_);
  std::map<std::string, int> calls_ GUARDED_BY(mu_);
  std::map<std::string, std::function<void()>> hooks_ GUARDED_BY(mu_);
};

}  // namespace ds
