// Scripted PrometheusClient: per query expression, a result or an error. Records queries.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "promql/prometheus_client.h"

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

 private:
  Mutex mu_;
  std::map<std::string, QueryResult> results_ GUARDED_BY(mu_);
  std::map<std::pair<std::string, double>, QueryResult> results_at_ GUARDED_BY(mu_);
  std::vector<std::pair<std::string, double>> queries_at_ GUARDED_BY(mu_);
  std::map<std::string, Status> errors_ GUARDED_BY(mu_);
  std::map<std::string, int> calls_ GUARDED_BY(mu_);
  std::map<std::string, std::function<void()>> hooks_ GUARDED_BY(mu_);
};

}  // namespace ds
