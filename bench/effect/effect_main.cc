// effect-sim: runs the effect simulation's scenarios and sweep for one parameter file and prints
// the figures as JSON (bench/effect/run_effect.py turns them into bench/EFFECT.md).
//
//   effect-sim PARAMS.yaml [--scenarios a,b,...] [--sweep] [--balance] [--no-scenarios]
//              [--nodes N] [--days D] [--seed S] [--grace SECONDS] [--jobs N] [--out FILE]
//   effect-sim PARAMS.yaml --trace FILE [--scenarios one] [--nodes N] [--days D]
//
// --balance runs the parameter file's `balance:` set (a new worker joins: balance.scenarios on a
// cluster that balance.join grows, once per balance.seeds); --nodes, --days and --seed replace its
// size and seeds too. Each balance run prints the spread of node cpu % around the join.
//
// --trace runs one scenario (default marks-w100) and writes, for every step, what each node's
// rules saw and which nodes carried the mark: the check against the real controller
// (test/integration/test_effect_check.py) replays those values through Prometheus.
//
// The simulation is pure; this shell reads the file, runs the simulations (on --jobs threads,
// each simulation on one) and measures their wall time.
#include <rapidjson/ostreamwrapper.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/effect/params.h"
#include "bench/effect/simulation.h"
#include "bench/effect/workload.h"

namespace {

struct Run {
  std::string kind, name, param;  // kind: scenario, sweep or seed
  double value = 0;
  effect::EffectParams params;
  effect::Scenario scenario;
  effect::Figures figures;
  double wall_seconds = 0;
  double cpu_seconds = 0;  // of the thread that ran it: what an idle core would take
};

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

int Usage(const char* why) {
  std::fprintf(stderr,
               "%s\nusage: effect-sim PARAMS.yaml [--scenarios a,b,...] [--sweep] [--balance] "
               "[--no-scenarios] [--nodes N] [--days D] [--seed S] [--grace SECONDS] [--jobs N] "
               "[--out FILE] [--default-spread]\n"
               "       effect-sim PARAMS.yaml --trace FILE [--scenarios one] [--nodes N] "
               "[--days D]\n",
               why);
  return 2;
}

// The rules a run judged nodes by, as the trace and the results file both list them.
template <typename W>
void WriteRules(W* w, const std::vector<ds::Rule>& rules) {
  w->StartArray();
  for (const ds::Rule& r : rules) {
    w->StartObject();
    w->Key("name");
    w->String(r.name.c_str());
    w->Key("resource");
    w->String(r.resource == ds::Rule::Resource::kCpu      ? "cpu"
              : r.resource == ds::Rule::Resource::kMemory ? "memory"
                                                          : "none");  // marks only
    w->Key("operator");
    w->String(r.op == ds::Comparison::kLess ? "<" : ">");
    w->Key("threshold");
    w->Double(r.threshold);
    w->Key("clear");
    w->Double(r.clear_threshold);
    w->Key("for");
    w->Double(r.for_seconds);
    w->EndObject();
  }
  w->EndArray();
}

template <typename W>
void WriteFigures(W* w, const Run& r) {
  const effect::Figures& f = r.figures;
  w->StartObject();
  w->Key("kind");
  w->String(r.kind.c_str());
  w->Key("name");
  w->String(r.name.c_str());
  if (r.kind != "scenario") {
    w->Key("param");
    w->String(r.param.c_str());
    w->Key("value");
    w->Double(r.value);
  }
  w->Key("nodes");
  w->Uint64(r.params.nodes.count);
  w->Key("days");
  w->Double(r.params.days);
  w->Key("wall_seconds");
  w->Double(r.wall_seconds);
  w->Key("cpu_seconds");
  w->Double(r.cpu_seconds);
  auto num = [&](const char* k, double v) {
    w->Key(k);
    w->Double(std::isfinite(v) ? v : 0);
  };
  num("node_minutes_cpu", f.node_minutes_cpu);
  num("node_minutes_memory", f.node_minutes_memory);
  num("memory_breaches", static_cast<double>(f.memory_breaches));
  num("breaches_at_bind", static_cast<double>(f.breaches_at_bind));
  num("kubelet_evictions", static_cast<double>(f.kubelet_evictions));
  num("kubelet_victims_over_request", static_cast<double>(f.kubelet_victims_over_request));
  num("kubelet_victims_within_request", static_cast<double>(f.kubelet_victims_within_request));
  num("evictions", static_cast<double>(f.evictions));
  num("bounce_backs", static_cast<double>(f.bounce_backs));
  num("pending_pod_minutes", f.pending_pod_minutes);
  num("pending_max", static_cast<double>(f.pending_max));
  num("pending_end", static_cast<double>(f.pending_end));
  num("pods_bound", static_cast<double>(f.pods_bound));
  num("label_writes", static_cast<double>(f.label_writes));
  num("size_label_writes", static_cast<double>(f.size_label_writes));
  num("capped_node_cycles", static_cast<double>(f.capped_node_cycles));
  num("marked_node_minutes", f.marked_node_minutes);
  num("marked_max", static_cast<double>(f.marked_max));
  num("spread_cpu", f.spread_cpu);
  num("spread_memory", f.spread_memory);
  num("node_minutes_over_mean", f.node_minutes_over_mean);
  num("landed_over_mean", static_cast<double>(f.landed_over_mean));
  num("landed_over_mean_pod_cpu", f.landed_over_mean_pod_cpu);
  num("landed_over_mean_pod_request", f.landed_over_mean_pod_request);
  num("replacements_bound", static_cast<double>(f.replacements_bound));
  num("replacements_as_planned", static_cast<double>(f.replacements_as_planned));
  if (r.params.join.nodes > 0) {
    const effect::JoinFigures& j = f.join;
    w->Key("join");
    w->StartObject();
    num("at", r.params.join.at_seconds);
    num("nodes", static_cast<double>(r.params.join.nodes));
    w->Key("joined");
    w->Bool(j.at >= 0);
    // Per moment (before, join, 1h, 6h, end): null where the run did not reach it.
    auto moments = [&](const char* key, const double* v) {
      w->Key(key);
      w->StartObject();
      for (int m = 0; m < effect::JoinFigures::kMoments; ++m) {
        w->Key(effect::JoinFigures::MomentName(m));
        if (std::isfinite(v[m])) {
          w->Double(v[m]);
        } else {
          w->Null();
        }
      }
      w->EndObject();
    };
    moments("sd_cpu", j.sd_cpu);
    moments("sd_memory", j.sd_memory);
    moments("mean_cpu", j.mean_cpu);
    num("evictions_before", static_cast<double>(j.evictions_before));
    num("evictions_hour", static_cast<double>(j.evictions_hour));
    num("joined_pods_end", static_cast<double>(j.joined_pods_end));
    num("joined_cpu_end", j.joined_cpu_end);
    num("joined_memory_end", j.joined_memory_end);
    w->EndObject();
  }
  num("discovery_rate", f.effect.DiscoveryRate());
  num("eviction_rate", f.effect.EvictionRate());
  num("effectiveness", f.effect.Effectiveness());
  num("episodes", static_cast<double>(f.effect.episodes));
  num("episodes_evicted", static_cast<double>(f.effect.episodes_evicted));
  num("effect_evictions", static_cast<double>(f.effect.evictions));
  // Evictions per episode with any (its mark to its clearing): the mean over every episode, and
  // over the episodes whose mark went before the end, their distribution.
  num("evictions_per_episode",
      ds::EffectFigures::Ratio(f.effect.evictions, f.effect.episodes_evicted));
  {
    std::vector<uint32_t> e = f.episode_evictions;
    std::sort(e.begin(), e.end());
    auto quantile = [&](double q) {
      return e.empty()
                 ? 0.0
                 : static_cast<double>(e[std::min(
                       e.size() - 1, static_cast<size_t>(q * static_cast<double>(e.size())))]);
    };
    size_t over[4] = {0, 0, 0, 0};  // episodes with 1, 2, 3, 4+ evictions
    for (uint32_t v : e) ++over[std::min<uint32_t>(v, 4) - 1];
    num("closed_episodes_evicted", static_cast<double>(e.size()));
    num("episode_evictions_median", quantile(0.5));
    num("episode_evictions_p90", quantile(0.9));
    num("episode_evictions_max", e.empty() ? 0.0 : static_cast<double>(e.back()));
    w->Key("episode_evictions_histogram");  // 1, 2, 3, 4 or more
    w->StartArray();
    for (size_t v : over) w->Uint64(v);
    w->EndArray();
  }
  num("in_motion_skips", static_cast<double>(f.in_motion_skips));
  num("evictions_while_leaving", static_cast<double>(f.evictions_while_leaving));
  num("terminating_max", static_cast<double>(f.terminating_max));
  num("series_seconds", f.series_seconds);
  // Each breach as it began (rare: a few dozen a week), to tell their causes apart.
  w->Key("breach_details");
  w->StartArray();
  for (const effect::BreachDetail& b : f.breach_details) {
    w->StartObject();
    num("at", b.at);
    num("node", b.node);
    w->Key("at_bind");
    w->Bool(b.at_bind);
    w->Key("marked");
    w->Bool(b.marked);
    w->Key("available_rule");
    w->Bool(b.available_rule);
    num("available_before", b.available_before);
    num("memory_percent_before", b.memory_percent_before);
    if (b.at_bind) {
      num("bound", static_cast<double>(b.bound));
      w->Key("origin");
      w->String(effect::OriginName(b.origin));
      num("request", b.request);
      num("working_set", b.working_set);
      num("safe_nodes", static_cast<double>(b.safe_nodes));
      num("safe_unmarked", static_cast<double>(b.safe_unmarked));
      num("feasible_unmarked", static_cast<double>(b.feasible_unmarked));
    }
    w->EndObject();
  }
  w->EndArray();
  if (r.kind == "scenario") {  // the sweep's are not plotted
    w->Key("hot_series");
    w->StartArray();
    for (int v : f.hot_series) w->Int(v);
    w->EndArray();
  }
  if (r.kind == "balance") {  // EFFECT.md plots the spread around the join
    for (const auto& [key, series] : {std::pair{"spread_cpu_series", &f.spread_cpu_series},
                                      std::pair{"spread_memory_series", &f.spread_memory_series}}) {
      w->Key(key);
      w->StartArray();
      for (double v : *series) w->Double(std::round(v * 100) / 100);
      w->EndArray();
    }
  }
  w->EndObject();
}

// One scenario, step by step: per step the time, and per node the cpu % its rule saw (through
// the rate lag), its real cpu % and memory %, and whether it was marked after that step's cycle.
int WriteTrace(const effect::EffectParams& p, const std::string& scenario,
               const std::string& path) {
  std::ofstream os(path);
  if (!os) {
    std::fprintf(stderr, "%s: cannot write\n", path.c_str());
    return 1;
  }
  effect::Simulation sim(p, effect::ScenarioNamed(scenario, p));
  rapidjson::OStreamWrapper osw(os);
  rapidjson::Writer<rapidjson::OStreamWrapper> w(osw);
  w.SetMaxDecimalPlaces(3);
  w.StartObject();
  w.Key("scenario");
  w.String(scenario.c_str());
  w.Key("seed");
  w.Uint64(p.seed);
  w.Key("step_seconds");
  w.Double(p.step_seconds);
  w.Key("interval_seconds");
  w.Double(p.rules.interval_seconds > 0 ? p.rules.interval_seconds : p.step_seconds);
  w.Key("max_marked_fraction");
  w.Double(p.rules.max_marked_fraction);
  w.Key("measure_cpu");
  w.Double(p.measure_cpu);
  w.Key("measure_memory");
  w.Double(p.measure_memory);
  w.Key("rules");
  WriteRules(&w, p.rules.rules);
  w.Key("steps");
  w.StartArray();
  std::vector<std::string> names;
  while (sim.Step()) {
    const auto views = sim.NodeViews();
    if (names.empty())
      for (const auto& v : views) names.push_back(v.name);
    w.StartObject();
    w.Key("t");
    w.Double(sim.now() - p.step_seconds);  // Step() has moved the clock past the step it ran
    using View = effect::Simulation::NodeView;
    auto column = [&](const char* key, double View::*field) {
      w.Key(key);
      w.StartArray();
      for (const View& v : views) w.Double(v.*field);
      w.EndArray();
    };
    column("cpu_seen", &View::cpu_seen);
    column("cpu", &View::cpu);
    column("memory", &View::memory);
    w.Key("marked");
    w.StartArray();
    for (size_t k = 0; k < views.size(); ++k)
      if (views[k].marked) w.Uint64(k);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("nodes");
  w.StartArray();
  for (const auto& n : names) w.String(n.c_str());
  w.EndArray();
  const effect::Figures& f = sim.figures();
  w.Key("node_minutes_cpu");
  w.Double(f.node_minutes_cpu);
  w.Key("node_minutes_memory");
  w.Double(f.node_minutes_memory);
  w.Key("marked_node_minutes");
  w.Double(f.marked_node_minutes);
  w.Key("pods_bound");
  w.Uint64(f.pods_bound);
  w.Key("kubelet_evictions");
  w.Uint64(f.kubelet_evictions);
  w.Key("evictions");
  w.Uint64(f.evictions);
  w.EndObject();
  os << "\n";
  return os ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage("missing the parameter file");
  std::string out_path, only, trace_path;
  bool sweep = false, scenarios = true, balance = false, default_spread = false;
  double nodes = 0, days = 0, jobs = 1, seed = 0, grace = -1;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    auto number = [&](double* out) {
      const char* v = value();
      char* end = nullptr;
      *out = v ? std::strtod(v, &end) : -1;
      return v != nullptr && *end == '\0' && *out > 0;
    };
    if (a == "--sweep") {
      sweep = true;
    } else if (a == "--default-spread") {
      default_spread = true;
    } else if (a == "--balance") {
      balance = true;
    } else if (a == "--no-scenarios") {
      scenarios = false;
    } else if (a == "--scenarios") {
      const char* v = value();
      if (!v) return Usage("--scenarios needs a list");
      only = v;
    } else if (a == "--trace") {
      const char* v = value();
      if (!v) return Usage("--trace needs a file");
      trace_path = v;
    } else if (a == "--out") {
      const char* v = value();
      if (!v) return Usage("--out needs a file");
      out_path = v;
    } else if (a == "--nodes") {
      if (!number(&nodes)) return Usage("--nodes needs a number > 0");
    } else if (a == "--days") {
      if (!number(&days)) return Usage("--days needs a number > 0");
    } else if (a == "--seed") {
      if (!number(&seed) || seed != std::floor(seed))
        return Usage("--seed needs a whole number > 0");
    } else if (a == "--grace") {  // controller.terminationGrace, for marks-lag*
      if (!number(&grace)) return Usage("--grace needs a number of seconds > 0");
    } else if (a == "--jobs") {
      if (!number(&jobs)) return Usage("--jobs needs a number > 0");
    } else {
      return Usage(("unknown argument " + a).c_str());
    }
  }
  auto loaded = effect::LoadEffectParams(argv[1]);
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s\n", loaded.status().message().c_str());
    return 1;
  }
  effect::EffectParams base = *loaded;
  if (nodes > 0) base.nodes.count = base.balance.nodes = static_cast<size_t>(nodes);
  if (days > 0) base.days = base.balance.days = days;
  if (seed > 0) {
    base.seed = static_cast<uint64_t>(seed);
    base.balance.seeds = {seed};
  }
  if (grace > 0) base.termination_grace_seconds = grace;
  base.default_spread = default_spread;
  if (!trace_path.empty()) {
    const std::string scenario = only.empty() ? "marks-w100" : only;
    bool known = false;
    for (const auto& k : effect::KnownScenarios()) known = known || k == scenario;
    if (!known) return Usage(("--trace runs one known scenario, not " + scenario).c_str());
    return WriteTrace(base, scenario, trace_path);
  }

  std::vector<Run> runs;
  if (scenarios) {
    std::vector<std::string> names = base.scenarios;
    if (!only.empty()) {
      names.clear();
      std::stringstream list(only);
      for (std::string n; std::getline(list, n, ',');) {
        bool known = false;
        for (const auto& k : effect::KnownScenarios()) known = known || k == n;
        if (!known) return Usage(("unknown scenario " + n).c_str());
        names.push_back(n);
      }
    }
    for (const auto& n : names)
      runs.push_back({"scenario", n, "", 0, base, effect::ScenarioNamed(n, base), {}, 0, 0});
  }
  if (sweep) {
    effect::EffectParams small = base;
    small.nodes.count = base.sweep.nodes;
    small.days = base.sweep.days;
    for (const char* n : {"none", "marks-rebalance"})
      runs.push_back({"sweep", n, "baseline", 0, small, effect::ScenarioNamed(n, small), {}, 0, 0});
    auto add = [&](const char* param, double v, effect::EffectParams p) {
      effect::Scenario s = effect::ScenarioNamed("marks-rebalance", p);
      if (std::string(param) == "affinityWeight") s.affinity_weight = static_cast<int>(v);
      runs.push_back({"sweep", "marks-rebalance", param, v, std::move(p), s, {}, 0, 0});
    };
    for (double v : base.sweep.threshold) {
      effect::EffectParams p = small;
      for (ds::Rule& r : p.rules.rules) {
        const double gap = r.threshold - r.clear_threshold;
        r.threshold = v;
        r.clear_threshold = v - gap;
      }
      add("threshold", v, std::move(p));
    }
    for (double v : base.sweep.clear_gap) {
      effect::EffectParams p = small;
      for (ds::Rule& r : p.rules.rules) r.clear_threshold = r.threshold - v;
      add("clearGap", v, std::move(p));
    }
    for (double v : base.sweep.affinity_weight) add("affinityWeight", v, small);
    for (double seed : base.sweep.seeds)
      for (const char* n : {"none", "marks-w100", "evict-usage", "marks-rebalance"}) {
        effect::EffectParams p = small;
        p.seed = static_cast<uint64_t>(seed);
        runs.push_back({"seed", n, "seed", seed, p, effect::ScenarioNamed(n, p), {}, 0, 0});
      }
    for (double v : base.sweep.per_hour) {
      effect::EffectParams p = small;
      p.rules.rebalance.limits.per_hour = static_cast<size_t>(v);
      add("perHour", v, std::move(p));
    }
    // The herd cap at the rule file's thresholds: 1 turns it off (every node may be marked).
    for (double v : base.sweep.max_marked_fraction) {
      effect::EffectParams p = small;
      p.rules.max_marked_fraction = v;
      add("maxMarkedFraction", v, std::move(p));
    }
    // The thresholds again with the herd cap off: where the cap binds (low thresholds), what it
    // changes against an uncapped controller.
    for (double v : base.sweep.threshold) {
      effect::EffectParams p = small;
      for (ds::Rule& r : p.rules.rules) {
        const double gap = r.threshold - r.clear_threshold;
        r.threshold = v;
        r.clear_threshold = v - gap;
      }
      p.rules.max_marked_fraction = 1;
      add("thresholdCapOff", v, std::move(p));
    }
    // marks-relief with its memory.available rule's threshold (bytes) moved, the clear threshold
    // keeping its gap: how far above the kubelet's threshold it must sit, and what that costs in
    // evictions. At the scenarios' size: kubelet kills are rare events.
    // One memory.available rule's threshold moved across `values` (the clear threshold keeps its
    // gap), in the rule file `rules_of` picks and the rules `moves` accepts.
    auto sweep_bytes_rule = [&](const std::vector<double>& values,
                                ds::RuleConfig effect::EffectParams::*rules_of,
                                const std::function<bool(const ds::Rule&)>& moves,
                                const char* scenario, const char* param) {
      for (double v : values) {
        effect::EffectParams p = base;
        for (ds::Rule& r : (p.*rules_of).rules) {
          if (!moves(r)) continue;
          const double gap = r.clear_threshold - r.threshold;
          r.threshold = v;
          r.clear_threshold = v + gap;
        }
        runs.push_back(
            {"sweep", scenario, param, v, p, effect::ScenarioNamed(scenario, p), {}, 0, 0});
      }
    };
    sweep_bytes_rule(
        base.sweep.relief_threshold, &effect::EffectParams::relief_rules,
        [](const ds::Rule& r) { return r.AvailableBytes(); }, "marks-relief", "reliefThreshold");
    // marks-early with its mark-only memory.available rule's threshold moved: how high the mark
    // must sit to keep large pods off nodes that cannot take them, and where it starts to herd.
    sweep_bytes_rule(
        base.sweep.early_threshold, &effect::EffectParams::early_rules,
        [](const ds::Rule& r) { return effect::SeesBytesAvailable(r) && !r.AvailableBytes(); },
        "marks-early", "earlyThreshold");
  }

  if (balance) {
    // The same join on the same workload for every scenario of a seed.
    effect::EffectParams b = base;
    if (base.balance.nodes > 0) b.nodes.count = base.balance.nodes;
    if (base.balance.days > 0) b.days = base.balance.days;
    b.join = base.balance.join;
    std::vector<double> seeds = base.balance.seeds;
    if (seeds.empty()) seeds = {static_cast<double>(base.seed)};
    for (double s : seeds)
      for (const std::string& n : base.balance.scenarios) {
        effect::EffectParams p = b;
        p.seed = static_cast<uint64_t>(s);
        runs.push_back({"balance", n, "seed", s, p, effect::ScenarioNamed(n, p), {}, 0, 0});
      }
  }

  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < runs.size(); i = next++) {
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = ThreadCpuSeconds();
      effect::Simulation sim(runs[i].params, runs[i].scenario);
      sim.Run();
      runs[i].figures = sim.figures();
      runs[i].cpu_seconds = ThreadCpuSeconds() - c0;
      runs[i].wall_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "%-8s %-16s %-14s %6g  %zu nodes x %g days: %.1f s (cpu %.1f s)\n",
                   runs[i].kind.c_str(), runs[i].name.c_str(), runs[i].param.c_str(), runs[i].value,
                   runs[i].params.nodes.count, runs[i].params.days, runs[i].wall_seconds,
                   runs[i].cpu_seconds);
      const effect::Figures& f = runs[i].figures;
      if (runs[i].params.join.nodes > 0) {
        std::string sd;
        for (int m = 0; m < effect::JoinFigures::kMoments; ++m) {
          char v[48];
          std::snprintf(v, sizeof v, "%s%s %.2f", m ? ", " : "", effect::JoinFigures::MomentName(m),
                        f.join.sd_cpu[m]);
          sd += v;
        }
        std::fprintf(
            stderr,
            "         +%zu nodes at %gs: sd cpu %%: %s; evictions %zu, bounce-backs %zu, "
            "hot node-min %.0f, over the mean node-min %.0f, pods on the joined nodes %zu, "
            "replacements landing over the mean %zu\n",
            runs[i].params.join.nodes, runs[i].params.join.at_seconds, sd.c_str(), f.evictions,
            f.bounce_backs, f.node_minutes_cpu + f.node_minutes_memory, f.node_minutes_over_mean,
            f.join.joined_pods_end, f.landed_over_mean);
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < static_cast<int>(jobs); ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();

  // The workload as generated for the scenarios, to describe it.
  effect::Rng rng(base.seed);
  const auto deps = effect::GenerateDeployments(base.workload, base.nodes.count, &rng);
  double pods = 0, cpu = 0, mem = 0, cpu_use = 0, mem_use = 0, leaking = 0, under = 0;
  for (const auto& d : deps) {
    const double n = static_cast<double>(d.replicas);
    pods += n;
    cpu += n * d.cpu_request;
    mem += n * d.memory_request;
    cpu_use += n * d.cpu_request * d.cpu_ratio;
    mem_use += n * d.memory_request * d.memory_ratio;
    leaking += d.leak_per_second > 0;
    under += d.cpu_ratio > 1;
  }
  const double k = static_cast<double>(base.nodes.count);

  std::ofstream file;
  if (!out_path.empty()) {
    file.open(out_path);
    if (!file) {
      std::fprintf(stderr, "%s: cannot write\n", out_path.c_str());
      return 1;
    }
  }
  std::ostream& os = out_path.empty() ? std::cout : file;
  rapidjson::OStreamWrapper osw(os);
  rapidjson::PrettyWriter<rapidjson::OStreamWrapper> w(osw);
  w.SetMaxDecimalPlaces(4);
  w.StartObject();
  w.Key("params");
  w.StartObject();
  w.Key("source");
  w.String(base.source.c_str());
  w.Key("seed");
  w.Uint64(base.seed);
  w.Key("nodes");
  w.Uint64(base.nodes.count);
  w.Key("days");
  w.Double(base.days);
  w.Key("step_seconds");
  w.Double(base.step_seconds);
  w.Key("node_cpu");
  w.Double(base.nodes.cpu);
  w.Key("node_memory_gib");
  w.Double(base.nodes.AllocatableMemory() / (1 << 30));
  w.Key("deployments");
  w.Uint64(deps.size());
  w.Key("pods");
  w.Double(pods);
  w.Key("leaking_deployments");
  w.Double(leaking);
  w.Key("cpu_understated_deployments");
  w.Double(under);
  w.Key("cpu_requested_pct");
  w.Double(100 * cpu / (k * base.nodes.cpu));
  w.Key("memory_requested_pct");
  w.Double(100 * mem / (k * base.nodes.AllocatableMemory()));
  w.Key("cpu_used_pct");  // before the daily swing and bursts
  w.Double(100 * cpu_use / (k * base.nodes.cpu));
  w.Key("memory_used_pct");
  w.Double(100 * mem_use / (k * base.nodes.AllocatableMemory()));
  w.Key("measure_cpu");
  w.Double(base.measure_cpu);
  w.Key("measure_memory");
  w.Double(base.measure_memory);
  w.Key("measure_cpu_over_mean");
  w.Double(base.measure_cpu_over_mean);
  w.Key("affinity_weight");
  w.Int(base.affinity_weight);
  w.Key("max_marked_fraction");
  w.Double(base.rules.max_marked_fraction);
  w.Key("rules");
  WriteRules(&w, base.rules.rules);
  if (base.has_relief_rules) {
    w.Key("relief_rules");
    WriteRules(&w, base.relief_rules.rules);
  }
  if (base.has_early_rules) {
    w.Key("early_rules");
    WriteRules(&w, base.early_rules.rules);
  }
  if (base.has_balance_rules) {
    w.Key("balance_rules");
    WriteRules(&w, base.balance_rules.rules);
    const ds::EvictionLimits& bl = base.balance_rules.rebalance.limits;
    w.Key("balance_limits");
    w.StartObject();
    w.Key("per_cycle");
    w.Uint64(bl.per_cycle);
    w.Key("per_hour");
    w.Uint64(bl.per_hour);
    w.Key("per_node_per_hour");
    w.Uint64(bl.per_node_per_hour);
    w.Key("node_cooldown_seconds");
    w.Double(bl.node_cooldown_seconds);
    w.Key("per_workload");
    w.Uint64(bl.per_workload_unreplaced);
    w.EndObject();
  }
  w.Key("descheduler");  // lownodeutil's (% of allocatable requested: cpu, memory, pods)
  w.StartObject();
  w.Key("interval_seconds");
  w.Double(base.descheduler.interval_seconds);
  for (const auto& [key, v] :
       {std::pair{"thresholds", base.descheduler.thresholds},
        std::pair{"target_thresholds", base.descheduler.target_thresholds}}) {
    w.Key(key);
    w.StartArray();
    for (int i = 0; i < 3; ++i) w.Double(v[i]);
    w.EndArray();
  }
  w.EndObject();
  if (balance) {
    w.Key("balance");
    w.StartObject();
    w.Key("nodes");
    w.Uint64(base.balance.nodes > 0 ? base.balance.nodes : base.nodes.count);
    w.Key("days");
    w.Double(base.balance.days > 0 ? base.balance.days : base.days);
    w.Key("join_at");
    w.Double(base.balance.join.at_seconds);
    w.Key("join_nodes");
    w.Uint64(base.balance.join.nodes);
    w.EndObject();
  }
  w.Key("eviction_hard");
  w.Double(base.nodes.eviction_hard);
  w.Key("value_window_seconds");  // marks-lag's
  w.Double(base.value_window_seconds);
  w.Key("termination_grace_seconds");
  w.Double(base.termination_grace_seconds);
  w.Key("node_cooldown_seconds");
  w.Double(base.rules.rebalance.limits.node_cooldown_seconds);
  const ds::EvictionLimits& lim = base.rules.rebalance.limits;
  w.Key("limits");
  w.StartObject();
  w.Key("per_cycle");
  w.Uint64(lim.per_cycle);
  w.Key("per_hour");
  w.Uint64(lim.per_hour);
  w.Key("per_node_per_hour");
  w.Uint64(lim.per_node_per_hour);
  w.EndObject();
  w.EndObject();
  w.Key("runs");
  w.StartArray();
  for (const Run& r : runs) WriteFigures(&w, r);
  w.EndArray();
  w.EndObject();
  os << "\n";
  return 0;
}
