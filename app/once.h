// `dynamic-scheduler -once`: one pass of the controller, for a Job or a CronJob. It lists the
// managed nodes (one LIST, every page), primes `for` with Prometheus' history
// (Reconciler::PrimeFromHistory), runs one cycle of the same Reconciler the loop runs -- the same
// writer and write limits, the same rebalancer with its ledger, so eviction limits hold from one
// run to the next -- prints a summary and returns the exit status. What the loop carries from one
// cycle to the next comes from elsewhere: `for` from Prometheus' history, hysteresis and adoption
// from the marks and ownership records on the nodes. So a second pass with nothing changed writes
// nothing, and a marked node in its band keeps its mark.
//
// No leader election, no web port: nothing keeps two passes from running at once but the
// CronJob's `concurrencyPolicy: Forbid` (docs/operating.md, "Deployment, Job or CronJob").
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/value_format.h"
#include "controller/reconciler.h"
#include "kube/kube_api.h"
#include "kube/lease.h"
#include "promql/prometheus_client.h"
#include "rebalance/report.h"

namespace ds {

struct Options;

// Exit statuses of -once (and of -help's text, docs/reference.md).
inline constexpr int kOnceDone = 0;         // judged; every planned write done (or deferred)
inline constexpr int kOnceWriteFailed = 1;  // judged, but a write or relief failed: retried
inline constexpr int kOnceFailed = 2;       // the API server or Prometheus failed: no mark removed

// One rule's value in a change: against its threshold for a mark, its clear threshold for a
// removal (`op` is the comparison that held: ">" or "<" for a mark, "<=" or ">=" for a removal).
struct OnceRuleValue {
  std::string rule, op;
  double value = 0, threshold = 0;
  ValueUnit unit = ValueUnit::kNone;
};

// A mark the pass set or removed (or, with -dry_run, would have).
struct OnceChange {
  std::string node;
  bool mark = false;   // set (true) or removed
  std::string level;   // graded marks: the level; "" without levels
  std::string reason;  // as the loop logs it
  std::vector<OnceRuleValue> rules;
  bool written = false;  // false with -dry_run, and when the write failed or was deferred
};

struct OnceSummary {
  int exit_code = kOnceDone;
  bool dry_run = false;
  double seconds = 0;               // the pass's wall time
  size_t nodes = 0;                 // managed nodes judged
  size_t hot = 0;                   // of them hot
  size_t primed_steps = 0;          // past cycles read from Prometheus' history for `for`
  std::vector<OnceChange> changes;  // in node order
  size_t writes_ok = 0, writes_failed = 0, deferred = 0;
  // With rebalance: the evictions of this pass (evicted, or the reason they were not).
  std::vector<EvictionRecord> evictions;
  // What failed, each naming its part: "the API server: ...", "Prometheus: rule cpu: ...".
  std::vector<std::string> errors;
};

// The summary of a cycle's report: its planned changes, whether each was written, the values the
// rules judged them by, the errors of its rules, and the exit status. Pure.
OnceSummary SummarizeCycle(const CycleReport& report, bool dry_run);

// Why a pass must not run now, or "": `lease` (the leader election's) is held by a controller
// that renewed it less than its duration before `now_wall` (epoch s). Pure.
std::string LeaderRunning(const LeaseRecord& lease, double now_wall);

// Adds the relief of the pass (evictions since `started`, epoch s) to `s`: a failed eviction, a
// failed pod list or usage query, or the rebalancer's standing problem (RBAC) is an error, and
// the pass exits kOnceWriteFailed unless it failed already (the marks were judged and written;
// the next run retries the relief).
void AddRelief(const Rebalancer& rebalancer, double started, OnceSummary* s);

// One pass against these parts (main passes the real ones, tests fakes), built from `options`
// as app/controller.cc builds the controller's. Never throws; failures are in the summary.
OnceSummary RunOnce(const Options& options, KubeApi* kube, PrometheusClient* prom,
                    const Clock* clock);

// The summary for people: one line per change ("marked node-3 (cpu 91 > 80)", "would mark ..."
// with -dry_run), per eviction and per error, and a last line with the counts and the exit status.
std::string FormatOnceText(const OnceSummary& s);
// The summary for scripts, one JSON object (docs/reference.md, "-once"); ends in a newline.
std::string FormatOnceJson(const OnceSummary& s);

// -once as main runs it: connects as Options say, runs the pass, prints the summary (-o) to
// `out`, the errors also to `err`, and returns the exit status (kOnce*).
int RunOnceCommand(const Options& options, std::ostream& out, std::ostream& err);

}  // namespace ds
