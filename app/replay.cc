#include "app/replay.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_set>

#include "app/controller.h"
#include "common/clock.h"
#include "common/json_util.h"
#include "common/label_selector.h"
#include "common/rfc3339.h"
#include "common/time_zone.h"
#include "kube/kube_api.h"
#include "kube/node_object.h"
#include "promql/prometheus_client.h"
#include "promql/range_query.h"
#include "replay/compare.h"
#include "replay/estimate_inputs.h"
#include "replay/pod_usage_history.h"
#include "replay/rebalance_estimate.h"
#include "replay/replay_json.h"
#include "replay/replay_window.h"
#include "replay/report_html.h"
#include "replay/right_sizing.h"

namespace ds {
namespace {

ReplayNode FromNodeInfo(const NodeInfo& n) { return ReplayNode{n.name, n.addresses, n.labels}; }

// Every page of a LIST (500 items a page) from the cluster of the kubeconfig: the managed nodes, or
// every pod.
template <typename Item, typename ListPage>
StatusOr<std::vector<Item>> ListEvery(const Options& o, const ListPage& list) {
  RealClock clock;
  CurlTransport transport(o.rest.tls, o.rest.proxy_url);
  HttpKubeApi kube(&transport, o.rest, &clock, o.api_timeout_seconds, o.user_agent);
  std::vector<Item> items;
  std::string cont;
  do {
    auto page = list(kube, cont);
    if (!page.ok()) return page.status();
    for (auto& item : page->items) items.push_back(std::move(item));
    cont = page->continue_token;
  } while (!cont.empty());
  return items;
}

// The managed nodes, whole: the estimate needs their allocatable, taints and labels.
StatusOr<std::vector<NodeInfo>> ListManagedNodes(const Options& o) {
  return ListEvery<NodeInfo>(o, [&](HttpKubeApi& kube, const std::string& cont) {
    return kube.ListNodes(o.rules.node_selector, 500, cont);
  });
}

StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Where a replay's time went.
struct Timing {
  double fetch = 0, decode = 0, decide = 0, usage = 0;
  size_t requests = 0, points = 0, body_bytes = 0;
};

}  // namespace

namespace {

// `kubectl get ... -o json` writes a v1 List with an empty resourceVersion, which a list from the
// API server always has (and the list decoders ask for): give it one. `what` names the list
// for the error ("node list (kubectl get nodes -o json)").
StatusOr<std::string> AsServerList(std::string list_json, const std::string& source,
                                   const std::string& what) {
  rapidjson::Document doc;
  if (doc.Parse(list_json.data(), list_json.size()).HasParseError())
    return Status::InvalidArgument(source + ": not a " + what + ": " + JsonParseError(doc));
  if (!doc.IsObject()) return list_json;  // the decoder names what is wrong
  if (!doc.HasMember("metadata"))
    doc.AddMember("metadata", rapidjson::Value(rapidjson::kObjectType), doc.GetAllocator());
  else if (!doc["metadata"].IsObject())  // a second "metadata" would be added, not replace it
    return Status::InvalidArgument(source + ": metadata is not an object");
  rapidjson::Value& meta = doc["metadata"];
  if (!meta.HasMember("resourceVersion"))
    meta.AddMember("resourceVersion", "0", doc.GetAllocator());
  else if (meta["resourceVersion"].IsString() && meta["resourceVersion"].GetStringLength() == 0)
    meta["resourceVersion"].SetString("0");
  return JsonToString(doc);
}

}  // namespace

StatusOr<std::vector<NodeInfo>> ManagedNodeInfos(std::string node_list_json,
                                                 const std::string& selector,
                                                 const std::string& source) {
  const std::string what = "node list (kubectl get nodes -o json)";
  ASSIGN_OR_RETURN(std::string body, AsServerList(std::move(node_list_json), source, what));
  auto list = DecodeNodeList(std::move(body));
  if (!list.ok())
    return Status::InvalidArgument(source + ": not a " + what + ": " + list.status().message());
  auto sel = LabelSelector::Parse(selector);
  if (!sel.ok()) return sel.status().Prepend("nodeSelector");
  std::vector<NodeInfo> nodes;
  for (NodeInfo& n : list->items)
    if (sel->Matches(n.labels)) nodes.push_back(std::move(n));
  if (nodes.empty())
    return Status::InvalidArgument(source + ": no node matches the nodeSelector \"" + selector +
                                   "\"");
  return nodes;
}

StatusOr<std::vector<ReplayNode>> ManagedReplayNodes(std::string node_list_json,
                                                     const std::string& selector,
                                                     const std::string& source) {
  ASSIGN_OR_RETURN(std::vector<NodeInfo> infos,
                   ManagedNodeInfos(std::move(node_list_json), selector, source));
  std::vector<ReplayNode> nodes;
  for (const NodeInfo& n : infos) nodes.push_back(FromNodeInfo(n));
  return nodes;
}

StatusOr<std::vector<PodInfo>> SavedPods(std::string pod_list_json, const std::string& source) {
  const std::string what = "pod list (kubectl get pods -A -o json)";
  ASSIGN_OR_RETURN(std::string body, AsServerList(std::move(pod_list_json), source, what));
  auto list = DecodePodList(std::move(body));
  if (!list.ok())
    return Status::InvalidArgument(source + ": not a " + what + ": " + list.status().message());
  return std::move(list->items);
}

namespace {

// One replay of `rules` over the window: every rule's history fetched chunk by chunk, each chunk
// handed to the engine as it arrives (a week of a large cluster is never held at once).
StatusOr<ReplayResult> ReplayRules(const RuleConfig& cfg, double grace_seconds,
                                   std::vector<ReplayNode> nodes, PrometheusClient* prom,
                                   const Options::Replay& rp, Timing* timing) {
  const size_t node_count = nodes.size();
  ReplayEngine engine(cfg, std::move(nodes), rp.step, grace_seconds);
  const std::vector<Rule>& rules = cfg.rules;
  // Every rule's history of a chunk at once, as a cycle sends every query at once.
  struct Fetch {
    RangeChunk chunk;
    std::vector<std::future<StatusOr<RangeResult>>> q, ages;
  };
  auto send = [&](RangeChunk chunk) {
    Fetch f{chunk, {}, {}};
    f.q.resize(rules.size());
    f.ages.resize(rules.size());
    for (size_t r = 0; r < rules.size(); ++r) {
      if (engine.asked_by()[r] != r) continue;
      const LabelFilter* keep = &engine.label_filters()[r];
      f.q[r] = std::async(std::launch::async, [&rules, prom, &rp, r, keep, chunk] {
        return prom->QueryRange(rules[r].query, chunk.start, chunk.end, rp.step, keep);
      });
      if (!rules[r].age_query.empty())
        f.ages[r] = std::async(std::launch::async, [&rules, prom, &rp, r, keep, chunk] {
          return prom->QueryRange(rules[r].age_query, chunk.start, chunk.end, rp.step, keep);
        });
    }
    return f;
  };
  const std::vector<RangeChunk> chunks =
      PlanRangeChunks(rp.from, rp.to, rp.step, ReplayStepsPerChunk(node_count));
  std::optional<Fetch> next;
  if (!chunks.empty()) next = send(chunks[0]);
  for (size_t i = 0; i < chunks.size(); ++i) {
    Fetch cur = std::move(*next);
    next.reset();
    const RangeChunk& chunk = cur.chunk;
    std::vector<RangeResult> answers(rules.size()), age_answers(rules.size());
    Status failed;
    for (size_t r = 0; r < rules.size(); ++r) {
      for (auto [f, into, what] : {std::tuple{&cur.q[r], &answers[r], "query"},
                                   std::tuple{&cur.ages[r], &age_answers[r], "ageQuery"}}) {
        if (!f->valid()) continue;
        auto res = f->get();
        if (!res.ok()) {
          if (failed.ok())
            failed = res.status().Prepend(cfg.source + ": rule \"" + rules[r].name + "\": " + what +
                                          " from " + FormatRfc3339(chunk.start) + " to " +
                                          FormatRfc3339(chunk.end));
          continue;
        }
        *into = std::move(*res);
        timing->fetch += into->fetch_seconds;
        timing->decode += into->decode_seconds;
        timing->points += into->points;
        timing->body_bytes += into->body_bytes;
        ++timing->requests;
      }
    }
    if (!failed.ok()) return failed;
    // The next chunk is fetched while this one is decided: Prometheus and the decisions overlap.
    // (Two chunks' answers are alive at once; ReplayStepsPerChunk bounds each.)
    if (i + 1 < chunks.size()) next = send(chunks[i + 1]);
    std::vector<RuleHistory> history(rules.size());
    for (size_t r = 0; r < rules.size(); ++r) {
      const size_t b = engine.asked_by()[r];
      history[r].series = &answers[b].series;
      if (!rules[b].age_query.empty()) history[r].ages = &age_answers[b].series;
    }
    std::vector<double> times(chunk.steps);
    for (size_t k = 0; k < chunk.steps; ++k) times[k] = chunk.start + k * rp.step;
    const Stopwatch decide;
    engine.Run(times, history);
    timing->decide += decide.Seconds();
  }
  return engine.Finish(rp.from, rp.to);
}

StatusOr<std::vector<PodInfo>> ListAllPods(const Options& o) {
  return ListEvery<PodInfo>(
      o, [](HttpKubeApi& kube, const std::string& cont) { return kube.ListPods("", 500, cont); });
}

// The replay's marks as right-sizing reads them: a mark still on counts until `to`.
NodeMarks MarksOf(const ReplayResult& r) {
  NodeMarks marks;
  for (const ReplayNodeResult& n : r.nodes)
    for (const ReplayMark& m : n.marks)
      marks[n.name].push_back(MarkSpan{m.start, std::isnan(m.end) ? r.to : m.end});
  return marks;
}

// What the pods give the report: right-sizing per workload, and with a `rebalance:` section the
// rebalancer's estimate (or why it is missing).
struct PodFigures {
  std::vector<WorkloadRow> rows;
  bool estimated = false;
  RebalanceEstimate estimate;
  std::string estimate_missing;  // set: the estimate could not be made, and why
  std::string pods_missing;      // set: the pod LIST failed, and how (no right-sizing either)
  std::vector<PodInfo> pods;     // the estimate points into them
};

// The nodes rebalance.nodeSelector selects, by name; nullopt with a selector that selects none
// (an empty list would mean every node to the estimate).
StatusOr<std::optional<std::vector<std::string>>> SelectedNodes(
    const RebalanceConfig& cfg, const std::vector<NodeInfo>& nodes) {
  std::vector<std::string> out;
  if (cfg.node_selector.empty()) return std::optional<std::vector<std::string>>(out);
  auto sel = LabelSelector::Parse(cfg.node_selector);
  if (!sel.ok()) return sel.status().Prepend("rebalance.nodeSelector");
  for (const NodeInfo& n : nodes)
    if (sel->Matches(n.labels)) out.push_back(n.name);
  if (out.empty()) return std::optional<std::vector<std::string>>();
  return std::optional<std::vector<std::string>>(out);
}

// The holding rules' values at the cycles where episodes first qualify: one instant query per
// rule and distinct time (the replay engine keeps no values past its chunk). A failed query leaves
// that time without values: its episodes are then "nothing_to_relieve", and the count is returned.
size_t AskHoldingValues(const RuleConfig& rules, const std::vector<NodeInfo>& nodes,
                        const std::vector<std::pair<std::string, double>>& cycles,
                        PrometheusClient* prom, HoldingValues* values, Timing* timing) {
  std::vector<NodeIdentity> ids;
  std::vector<std::string> names;
  for (const NodeInfo& n : nodes) {
    ids.push_back(NodeIdentity{n.name, n.addresses});
    names.push_back(n.name);
  }
  const NodeMatcher matcher(ids);
  std::set<double> times;
  for (const auto& c : cycles) times.insert(c.second);
  size_t failed = 0;
  for (size_t r : values->asked()) {
    const LabelFilter keep = MatchLabels(rules.rules[r]);
    for (double t : times) {
      auto answer = prom->QueryAt(rules.rules[r].query, t, &keep);
      ++timing->requests;
      if (!answer.ok()) {
        ++failed;
        continue;
      }
      values->Add(r, t, answer->samples, matcher, names);
    }
  }
  return failed;
}

// Right-sizing (replay/right_sizing.h) and the rebalancer's estimate (replay/rebalance_estimate.h):
// the pods as -pods_file saved them (`saved_pods`) or as listed now, their podUsage history over
// the window. A failed pod LIST is said, not fatal.
StatusOr<PodFigures> PodsFigures(const Options& o, const ReplayResult& result,
                                 const std::vector<NodeInfo>& nodes,
                                 std::optional<std::vector<PodInfo>> saved_pods,
                                 PrometheusClient* prom, Timing* timing) {
  PodFigures out;
  const RebalanceConfig& cfg = o.rules.rebalance;
  if (saved_pods) {
    out.pods = std::move(*saved_pods);
  } else if (auto listed = ListAllPods(o); !listed.ok()) {
    out.pods_missing = "the pod LIST failed: " + listed.status().message();
    out.estimate_missing = out.pods_missing;
    return out;
  } else {
    out.pods = std::move(*listed);
  }
  const std::vector<PodInfo>& pods = out.pods;
  const NodeMarks marks = MarksOf(result);
  RightSizer sizer(pods, marks, o.replay.step);
  PodUsageFetch f;
  f.from = o.replay.from;
  f.to = o.replay.to;
  f.step = o.replay.step;
  for (const ReplayNodeResult& n : result.nodes) f.nodes.push_back(n.name);
  f.expected_series = pods.size();
  const std::unordered_set<std::string> keep_none;
  // The estimate keeps every pod's points while its node is marked; right-sizing alone, none.
  const MarkedPoints marked(pods, marks);
  const Stopwatch t;
  ASSIGN_OR_RETURN(PodUsageHistory h,
                   FetchPodUsageHistory(prom, cfg, f, &sizer, cfg.enabled ? nullptr : &keep_none,
                                        cfg.enabled ? &marked : nullptr));
  timing->usage += t.Seconds();
  timing->requests += h.requests;
  out.rows = sizer.Finish().rows;
  if (!cfg.enabled) return out;

  ASSIGN_OR_RETURN(std::optional<std::vector<std::string>> selected, SelectedNodes(cfg, nodes));
  if (!selected) {
    out.estimate_missing =
        "no managed node matches rebalance.nodeSelector \"" + cfg.node_selector + "\"";
    return out;
  }
  EstimateInput in;
  in.step_seconds = o.replay.step;
  in.marks = HottestMarks(result);
  in.pods = pods;  // copied: the estimate points into its own
  in.nodes = PlacementNodesOf(nodes, pods);
  in.selected = std::move(*selected);
  in.cpu = std::move(h.cpu);
  in.memory = std::move(h.memory);
  const std::vector<Rule>& rules = o.rules.rules;
  in.held = [&result, &rules](const std::string& node, double start) {
    return HeldAtMark(result, rules, node, start);
  };
  HoldingValues values(rules);
  const size_t failed = AskHoldingValues(
      o.rules, nodes, FirstQualifyingCycles(in.marks, cfg, in.step_seconds, in.selected, in.held),
      prom, &values, timing);
  if (failed > 0) {
    out.estimate_missing = std::to_string(failed) +
                           " instant queries of the holding rules' values failed (Prometheus)";
    return out;
  }
  // Only the rules the replay's decider says hold the node then (E4), as the controller's hold.
  in.holding = [&values, &result](const std::string& node, double t) {
    return values.At(node, t, HoldingAt(result, node, t));
  };
  auto zone = TimeZone::Load(cfg.time_zone);
  if (!zone.ok()) return zone.status().Prepend("rebalance.timeZone");
  out.estimate = EstimateRebalance(in, cfg, *zone);
  // The estimate points into in.pods: keep them with it.
  out.pods = std::move(in.pods);
  out.estimated = true;
  return out;
}

// The managed nodes from -nodes_file, or listed through the kubeconfig.
StatusOr<std::vector<NodeInfo>> ReplayNodeInfos(const Options& o) {
  const Options::Replay& rp = o.replay;
  if (!rp.nodes_file.empty()) {
    auto text = ReadWholeFile(rp.nodes_file);
    if (!text.ok()) return text.status().Prepend("-nodes_file");
    return ManagedNodeInfos(std::move(*text), o.rules.node_selector, rp.nodes_file);
  }
  ASSIGN_OR_RETURN(std::vector<NodeInfo> listed, ListManagedNodes(o));
  if (listed.empty())
    return Status::InvalidArgument("no managed node in the cluster (nodeSelector \"" +
                                   o.rules.node_selector + "\")");
  return listed;
}

Status WriteFile(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::path(dir) / name).string();
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  if (!f.flush()) return Status::InvalidArgument("cannot write " + path);
  return Status::OK();
}

}  // namespace

int RunReplayCommand(const Options& o, std::ostream& out, std::ostream& err) {
  const Options::Replay& rp = o.replay;
  auto fail = [&](const Status& st) {
    err << "dynamic-scheduler replay: " << st.message() << "\n";
    return 2;
  };
  auto listed_nodes = ReplayNodeInfos(o);  // whole: the estimate's destinations
  if (!listed_nodes.ok()) return fail(listed_nodes.status());
  // Read before the replay: a wrong file is said at once, not after minutes of range queries.
  std::optional<std::vector<PodInfo>> saved_pods;
  if (!rp.pods_file.empty()) {
    auto text = ReadWholeFile(rp.pods_file);
    if (!text.ok()) return fail(text.status().Prepend("-pods_file"));
    auto pods = SavedPods(std::move(*text), rp.pods_file);
    if (!pods.ok()) return fail(pods.status().Prepend("-pods_file"));
    saved_pods = std::move(*pods);
  }
  std::vector<ReplayNode> nodes;
  for (const NodeInfo& n : *listed_nodes) nodes.push_back(FromNodeInfo(n));
  std::optional<RuleConfig> other;
  if (!rp.compare_file.empty()) {
    auto c = LoadRuleConfigFile(rp.compare_file);
    if (!c.ok()) return fail(c.status().Prepend("-compare"));
    if (Status st = CheckReplayableRules(*c, rp.compare_file); !st.ok())
      return fail(st.Prepend("-compare"));
    other = std::move(*c);
  }
  std::error_code ec;
  std::filesystem::create_directories(rp.out_dir, ec);
  if (ec) return fail(Status::InvalidArgument("-out " + rp.out_dir + ": " + ec.message()));

  std::unique_ptr<HttpTransport> transport = MakePromTransport(o);
  HttpPrometheusClient prom(transport.get(), o.prometheus_url, o.query_timeout_seconds,
                            o.prometheus_auth);
  Timing timing;
  const Stopwatch wall;
  auto result = ReplayRules(o.rules, o.reconciler.grace_seconds, nodes, &prom, rp, &timing);
  if (!result.ok()) return fail(result.status());
  PodFigures figures;
  std::string workloads_note;
  if (!rp.nodes_file.empty() && rp.pods_file.empty()) {
    workloads_note = "workloads: not computed (an offline replay has no pod list: -pods_file)";
    figures.estimate_missing = "an offline replay (-nodes_file) has no pod list (-pods_file)";
  } else if (auto w = PodsFigures(o, *result, *listed_nodes, std::move(saved_pods), &prom, &timing);
             w.ok()) {
    figures = std::move(*w);
    if (!figures.pods_missing.empty())
      workloads_note = "workloads: not computed (" + figures.pods_missing + ")";
  } else {
    return fail(w.status().Prepend("right-sizing"));
  }
  const std::vector<WorkloadRow>& rows = figures.rows;
  std::function<void(JsonWriter&)> rebalance;
  if (o.rules.rebalance.enabled)
    rebalance = [&figures](JsonWriter& w) {
      if (figures.estimated)
        WriteRebalanceEstimate(w, figures.estimate);
      else
        WriteEstimateMissing(w, figures.estimate_missing);
    };
  std::string json = ReplayJson(
      *result, [&](JsonWriter& w) { WriteWorkloads(w, rows); }, rebalance);
  if (other) {
    // The same window, step and nodes; its own grace (its missingDataGrace, else three steps of
    // the interval replayed).
    auto b = ReplayRules(*other, MissingDataGraceSeconds(*other, o.reconciler.interval_seconds),
                         nodes, &prom, rp, &timing);
    if (!b.ok()) return fail(b.status());
    auto compared = AddCompare(json, o.rule_file, ReplayJson(*b), rp.compare_file);
    if (!compared.ok()) return fail(compared.status().Prepend("-compare"));
    json = std::move(*compared);
    out << "compared with " << rp.compare_file << ":\n" << ReplaySummary(*b);
  }
  auto html = RenderReportHtml(json);
  if (!html.ok()) return fail(html.status().Prepend("report.html"));
  if (Status st = WriteFile(rp.out_dir, "replay.json", json + "\n"); !st.ok()) return fail(st);
  if (Status st = WriteFile(rp.out_dir, "report.html", *html); !st.ok()) return fail(st);
  out << ReplaySummary(*result);
  if (!workloads_note.empty())
    out << workloads_note << "\n";
  else
    out << "workloads: " << rows.size() << " (right-sizing in replay.json and report.html)\n";
  if (figures.estimated)
    out << EstimateSummary(figures.estimate);
  else if (o.rules.rebalance.enabled)
    out << "rebalancer (estimated): not estimated: " << figures.estimate_missing << "\n";
  out << "time: " << wall.Seconds() << " s wall; Prometheus " << timing.fetch << " s (summed over "
      << timing.requests << " range requests, " << timing.points << " points, "
      << timing.body_bytes / 1048576.0 << " MB), decode " << timing.decode << " s, decisions "
      << timing.decide << " s, pod usage " << timing.usage << " s\n";
  out << "wrote " << (std::filesystem::path(rp.out_dir) / "replay.json").string() << " and "
      << (std::filesystem::path(rp.out_dir) / "report.html").string() << "\n";
  return 0;
}

}  // namespace ds
