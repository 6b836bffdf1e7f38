// Microbenchmarks of the per-cycle computation at 10,000 nodes (Google Benchmark):
// decoding a 10,000-sample Prometheus response, matching it to nodes, deciding 10,000 nodes x 4
// rules, planning. Targets (bench/README.md): decode <= 5 ms; decode+match+decide+plan <= 10 ms.
#include <benchmark/benchmark.h>

#include <cmath>
#include <string>
#include <vector>

#include "promql/fast_vector_decoder.h"
#include "promql/response_decoder.h"
#include "rules/decider.h"
#include "rules/node_matcher.h"
#include "rules/planner.h"
#include "test/fakes/fake_clock.h"

namespace ds {
namespace {

constexpr int kNodes = 10000;
constexpr int kRules = 4;

std::string NodeName(int i) {
  char b[32];
  snprintf(b, sizeof(b), "node-%05d", i);
  return b;
}

std::string Ip(int i) {
  return "10." + std::to_string(i / 65536 % 256) + "." + std::to_string(i / 256 % 256) + "." +
         std::to_string(i % 256);
}

// A body shaped like Prometheus 2.42's answer for a pushgateway-fed metric (~115 B/sample).
std::string VectorBody(int rule) {
  std::string b = R"({"status":"success","data":{"resultType":"vector","result":[)";
  for (int i = 1; i <= kNodes; ++i) {
    if (i > 1) b += ",";
    b += R"({"metric":{"__name__":"bench_metric_)" + std::to_string(rule) + R"(","instance":")" +
         NodeName(i) + R"(","ip":")" + Ip(i) + R"(","job":"bench","node":")" + NodeName(i) +
         R"("},"value":[1795303219.437,")" + std::to_string((i * 7 + rule * 13) % 100) + ".5\"]}";
  }
  return b + "]}}";
}

std::vector<NodeIdentity> Identities() {
  std::vector<NodeIdentity> ids;
  for (int i = 1; i <= kNodes; ++i) ids.push_back({NodeName(i), {Ip(i), NodeName(i)}});
  return ids;
}

std::vector<Rule> Rules() {
  std::vector<Rule> rules;
  for (int r = 0; r < kRules; ++r) {
    Rule x;
    x.name = "rule" + std::to_string(r);
    x.threshold = 80;
    x.clear_threshold = 70;
    rules.push_back(x);
  }
  return rules;
}

void BM_DecodeVector10k(benchmark::State& state) {
  const std::string body = VectorBody(0);
  const LabelFilter keep = MatchLabels(Rule{});
  const bool filtered = state.range(0) == 1;
  for (auto _ : state) {
    auto r = DecodeQueryResponse(body, 200, filtered ? &keep : nullptr);
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(body.size()));
  state.SetLabel(filtered ? "matching labels only" : "all labels");
}
BENCHMARK(BM_DecodeVector10k)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// What the controller does per rule: one streaming pass from body bytes to per-node values.
void BM_ScanMatch10k(benchmark::State& state) {
  const std::string body = VectorBody(0);
  Rule rule = Rules()[0];
  const LabelFilter keep = MatchLabels(rule);
  NodeMatcher m(Identities());
  for (auto _ : state) {
    MatchAccumulator acc(&m, &rule);
    bool ok =
        ScanVector(body, &keep, [&](const LabelViews& l, double v, double) { acc.Add(l, v); });
    if (!ok) state.SkipWithError("scan failed");
    benchmark::DoNotOptimize(acc.result());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(body.size()));
}
BENCHMARK(BM_ScanMatch10k)->Unit(benchmark::kMillisecond);

void BM_MatchSamples10k(benchmark::State& state) {
  const LabelFilter keep = MatchLabels(Rule{});
  auto r = DecodeQueryResponse(VectorBody(0), 200, &keep);
  NodeMatcher m(Identities());
  Rule rule = Rules()[0];
  for (auto _ : state) benchmark::DoNotOptimize(MatchSamples(m, r->samples, rule));
}
BENCHMARK(BM_MatchSamples10k)->Unit(benchmark::kMillisecond);

void BM_BuildMatcher10k(benchmark::State& state) {
  auto ids = Identities();
  for (auto _ : state) benchmark::DoNotOptimize(NodeMatcher(ids));
}
BENCHMARK(BM_BuildMatcher10k)->Unit(benchmark::kMillisecond);

void BM_DecidePlan10kx4(benchmark::State& state) {
  Decider decider(Rules(), FromSeconds(30));
  std::vector<std::string> names;
  for (int i = 1; i <= kNodes; ++i) names.push_back(NodeName(i));
  std::vector<std::vector<double>> values(kRules, std::vector<double>(kNodes));
  std::vector<RuleInput> inputs(kRules);
  for (int r = 0; r < kRules; ++r) {
    for (int i = 0; i < kNodes; ++i) values[r][i] = (i * 7 + r * 13) % 100 + 0.5;
    inputs[r] = RuleInput{false, &values[r]};
  }
  std::vector<NodeInput> nodes(kNodes);
  std::vector<PlanNode> plan_nodes(kNodes);
  for (int i = 0; i < kNodes; ++i) {
    nodes[i] = NodeInput{names[i], false};
    plan_nodes[i] = PlanNode{names[i], false};
  }
  FakeClock clock;
  for (auto _ : state) {
    clock.AdvanceSeconds(10);
    auto d = decider.Decide(clock.Now(), nodes, inputs);
    auto p = PlanChanges(plan_nodes, d);
    benchmark::DoNotOptimize(p);
  }
}
BENCHMARK(BM_DecidePlan10kx4)->Unit(benchmark::kMillisecond);

// Everything a cycle computes for 4 rules once the bodies have arrived, on one thread (the
// controller runs the 4 scans in parallel, so its wall time is lower on 2+ cores).
void BM_CycleCompute10kx4(benchmark::State& state) {
  std::vector<std::string> bodies;
  for (int r = 0; r < kRules; ++r) bodies.push_back(VectorBody(r));
  auto rules = Rules();
  const LabelFilter keep = MatchLabels(rules[0]);
  NodeMatcher matcher(Identities());
  Decider decider(rules, FromSeconds(30));
  std::vector<std::string> names;
  for (int i = 1; i <= kNodes; ++i) names.push_back(NodeName(i));
  std::vector<NodeInput> nodes(kNodes);
  std::vector<PlanNode> plan_nodes(kNodes);
  for (int i = 0; i < kNodes; ++i) {
    nodes[i] = NodeInput{names[i], false};
    plan_nodes[i] = PlanNode{names[i], false};
  }
  FakeClock clock;
  for (auto _ : state) {
    std::vector<MatchedValues> mv(kRules);
    std::vector<RuleInput> inputs(kRules);
    for (int r = 0; r < kRules; ++r) {
      MatchAccumulator acc(&matcher, &rules[r]);
      ScanVector(bodies[r], &keep, [&](const LabelViews& l, double v, double) { acc.Add(l, v); });
      mv[r] = std::move(acc.result());
      inputs[r] = RuleInput{false, &mv[r].values};
    }
    clock.AdvanceSeconds(10);
    auto d = decider.Decide(clock.Now(), nodes, inputs);
    benchmark::DoNotOptimize(PlanChanges(plan_nodes, d));
  }
}
BENCHMARK(BM_CycleCompute10kx4)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ds

BENCHMARK_MAIN();
