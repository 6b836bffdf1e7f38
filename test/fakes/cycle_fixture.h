// The stack every test of the cycle needs, wired as app/controller.cc wires it (sample-controller's
// newFixture is the model): the fake API server, Prometheus and clock; the node cache with the
// production options (CycleCacheOptions: the managed nodes only, and of their labels only those
// the controller reads, so a test cannot pass on a label the controller would never see); a
// rebalancer when rule.yaml has `rebalance:`; and the reconciler. Build() again is another
// replica taking over: a fresh cache, rebalancer and reconciler over the same fake cluster.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "common/time_zone.h"
#include "config/rule_config.h"
#include "controller/rebalancer.h"
#include "controller/reconciler.h"
#include "kube/node_cache.h"
#include "rules/ownership.h"
#include "test/fakes/fake_clock.h"
#include "test/fakes/fake_kube_api.h"
#include "test/fakes/fake_prometheus.h"

namespace ds {

class CycleFixture : public ::testing::Test {
 protected:
  CycleFixture() { opts_.writes.qps = 0; }  // unlimited: the tests' own limits are set by them

  // Builds the stack from cfg_ and opts_ (opts_.mark is rule.yaml's, as in production).
  void Build() {
    opts_.mark = cfg_.mark;
    cache_ = std::make_unique<NodeCache>(&api_, &clock_, CycleCacheOptions(cfg_));
    ASSERT_TRUE(cache_->ListOnce().ok());
    rebalancer_.reset();
    if (cfg_.rebalance.enabled)
      rebalancer_ =
          std::make_unique<Rebalancer>(cfg_, &api_, &prom_, &clock_, TimeZone::Utc(),
                                       RebalancerOptions{ledger_, opts_.interval_seconds});
    rec_ = std::make_unique<Reconciler>(cfg_, opts_, cache_.get(), &prom_, &api_, &clock_,
                                        leadership_, rebalancer_.get());
  }
  // `value` under our key on `node`, as the API server has it.
  bool Labelled(const std::string& node, const std::string& value = "presure") {
    const NodeInfo n = api_.nodes()[node];  // a copy: the map returned is a temporary
    const std::string* v = FindLabel(n.labels, cfg_.mark.key);
    return v != nullptr && *v == value;
  }
  // The node's ownership record as the API server has it; nullopt without a readable one.
  std::optional<Ownership> RecordOf(const std::string& node) {
    const NodeInfo n = api_.nodes()[node];
    const std::string* text = FindLabel(n.annotations, kHeldByAnnotation);
    if (text == nullptr) return std::nullopt;
    auto o = ParseOwnership(*text);
    if (!o.ok()) return std::nullopt;
    return *o;
  }

  FakeKubeApi api_;
  FakePrometheus prom_;
  FakeClock clock_;
  RuleConfig cfg_;
  ReconcilerOptions opts_;
  const Leadership* leadership_ = nullptr;  // null: no leader election
  LedgerPlace ledger_{"dynamic-scheduler", "dynamic-scheduler-evictions"};  // as app/ makes it
  std::unique_ptr<NodeCache> cache_;
  std::unique_ptr<Rebalancer> rebalancer_;  // null unless cfg_.rebalance.enabled
  std::unique_ptr<Reconciler> rec_;
  std::atomic<bool> stop_{false};
};

}  // namespace ds
