#include "app/cleanup.h"

#include <atomic>
#include <optional>

#include "app/options.h"
#include "controller/eviction_records.h"
#include "controller/node_writer.h"
#include "rules/ownership.h"

namespace ds {

CleanupStep PlanCleanup(const NodeInfo& node, const Mark& graded,
                        const std::string& underused_value) {
  CleanupStep step;
  NodeEdit edit;
  edit.label.key = graded.key;
  edit.annotation.key = kHeldByAnnotation;
  const std::string* record_text = FindLabel(node.annotations, kHeldByAnnotation);
  std::optional<Ownership> record;
  if (record_text != nullptr)
    if (auto parsed = ParseOwnership(*record_text); parsed.ok()) record = std::move(*parsed);
  // Graded marks: the level the node is at is ours as the single value is.
  const Mark mark =
      graded.Below(NodeMarkLevel(graded, node.labels, node.taints, record ? &*record : nullptr));
  // What is ours decides as in a cycle (OwnedMarkParts): the label only in a mode that sets one
  // (in taint mode our key with our value is someone else's), the taint only where our record
  // names it.
  const OwnedParts ours =
      OwnedMarkParts(mark, node.labels, node.taints, record ? &*record : nullptr);
  // The mark an earlier configuration set (another key, value, taint or mode), as its record
  // names it, while the node still has it.
  const Mark recorded = record ? RecordedMark(*record) : Mark{};
  const OwnedParts earlier =
      record ? OwnedMarkParts(recorded, node.labels, node.taints, &*record) : OwnedParts{};
  const std::string* value = FindLabel(node.labels, mark.key);
  if (ours.label || (value != nullptr && !underused_value.empty() && *value == underused_value)) {
    edit.label.op = NodeEdit::Op::kRemove;
    edit.label.value = *value;
  } else if (earlier.label) {
    edit.label.op = NodeEdit::Op::kRemove;
    edit.label.key = recorded.key;
    edit.label.value = recorded.value;
  }
  // A taint goes only where a record names it (ours, or an earlier configuration's): a taint
  // with the same key and value that this controller did not set is never removed. The list is
  // edited at the listed resourceVersion; a node changed since answers 409 and is reported.
  if (ours.taint || earlier.taint) {
    edit.set_taints = true;
    edit.resource_version = node.resource_version;
    edit.taints = recorded.WithoutTaint(node.taints);
  }
  if (record_text != nullptr) {
    edit.annotation.op = NodeEdit::Op::kRemove;
  } else if (FindLabel(node.annotations, kLastDrainAnnotation) != nullptr) {
    // The mirror mode's drain record (a node's one annotation of ours besides held-by, which an
    // underused node does not have; on a node with both, RunCleanup removes it after held-by).
    edit.annotation = {NodeEdit::Op::kRemove, kLastDrainAnnotation, ""};
  }
  if (const std::string* v = FindLabel(node.labels, mark.key);
      v != nullptr && !(edit.label.op == NodeEdit::Op::kRemove && edit.label.key == mark.key))
    step.note = "kept " + mark.key + "=" + *v + " (not ours)";
  if (edit.label.op != NodeEdit::Op::kKeep || edit.annotation.op != NodeEdit::Op::kKeep ||
      edit.set_taints)
    step.edit = std::move(edit);
  return step;
}

namespace {

// Writes one edit of -cleanup on `node` (or says what it would write) and counts it; false when
// the node is left as it is (changed meanwhile, gone, or the write failed).
bool CleanNode(const std::string& node, const NodeEdit& edit, bool dry_run, NodeWriter* writer,
               CleanupCounts* c, std::ostream& out) {
  const std::string what = DescribeNodeEdit(edit);
  if (dry_run) {
    out << "node " << node << ": would " << what << "\n";
    return true;
  }
  static const std::atomic<bool> never{false};
  const bool unmarks = edit.label.op == NodeEdit::Op::kRemove || edit.set_taints;
  const EditOutcome res =
      writer->WriteEdit(NodeWrite{node, edit, "-cleanup", !unmarks}, {}, &never);
  switch (res.end) {
    case WriteEnd::kWritten:
      ++(unmarks ? c->unmarked : c->forgotten);
      out << "node " << node << ": " << what << ": done\n";
      return true;
    case WriteEnd::kChanged:
      ++c->changed;
      out << "node " << node
          << ": changed since it was listed; left alone (run again): " << res.status.message()
          << "\n";
      return false;
    case WriteEnd::kGone:
      out << "node " << node << ": deleted meanwhile\n";
      return false;
    case WriteEnd::kRefused:
    case WriteEnd::kRetryLater:
      ++c->failed;
      out << "node " << node << ": could not " << what << ": " << res.status.ToString() << "\n";
      return false;
  }
  return false;
}

}  // namespace

StatusOr<CleanupCounts> RunCleanup(KubeApi* kube, const Clock* clock, const CleanupOptions& o,
                                   std::ostream& out) {
  CleanupCounts c;
  // The same writer as the controller's, so the same limits: the rate, retries of a brownout, the
  // server's Retry-After. Its dry-run is never reached: this prints what it would do itself.
  WriteLimits limits;
  limits.qps = o.qps;
  limits.burst = o.qps;
  limits.concurrency = 1;
  NodeWriter writer(limits, o.mark, kube, clock);
  std::string cont;
  do {
    ASSIGN_OR_RETURN(NodeListPage page, kube->ListNodes("", 500, cont));
    for (const NodeInfo& n : page.items) {
      ++c.nodes;
      CleanupStep step = PlanCleanup(n, o.mark, o.underused_value);
      if (!step.note.empty()) {
        ++c.kept;
        out << "node " << n.name << ": " << step.note << "\n";
      }
      if (!step.edit) continue;
      // One patch edits one annotation: a node with both of ours (a hot mark's held-by record
      // over an underused node's drain record) has the drain record removed by a second one.
      std::vector<NodeEdit> edits{*step.edit};
      if (step.edit->annotation.op == NodeEdit::Op::kRemove &&
          step.edit->annotation.key == kHeldByAnnotation &&
          FindLabel(n.annotations, kLastDrainAnnotation) != nullptr) {
        NodeEdit drain;
        drain.annotation = {NodeEdit::Op::kRemove, kLastDrainAnnotation, ""};
        edits.push_back(std::move(drain));
      }
      for (const NodeEdit& edit : edits)
        if (!CleanNode(n.name, edit, o.dry_run, &writer, &c, out)) break;
    }
    cont = page.continue_token;
  } while (!cont.empty());
  out << "cleanup: " << c.nodes << " nodes, " << c.unmarked << " marks removed, " << c.forgotten
      << " records removed, " << c.kept << " foreign values kept, " << c.changed
      << " changed meanwhile, " << c.failed << " failed" << (o.dry_run ? " (dry run)" : "") << "\n";
  return c;
}

int RunCleanupCommand(const Options& options, std::ostream& out) {
  RealClock clock;
  CurlTransport transport(options.rest.tls, options.rest.proxy_url);
  HttpKubeApi kube(&transport, options.rest, &clock, options.api_timeout_seconds,
                   options.user_agent);
  CleanupOptions co;
  co.mark = options.reconciler.mark;
  if (options.rules.rebalance.underused.enabled)
    co.underused_value = options.rules.rebalance.underused.value;
  co.dry_run = options.reconciler.writes.dry_run;
  co.qps = options.reconciler.writes.qps;
  out << "cleanup: " << options.rest.description << "; mark " << co.mark.ToString()
      << (co.underused_value.empty() ? "" : ", " + co.mark.key + "=" + co.underused_value)
      << " and annotation " << kHeldByAnnotation << "\n";
  auto counts = RunCleanup(&kube, &clock, co, out);
  if (!counts.ok()) {
    out << "cleanup: " << counts.status().ToString() << "\n";
    return 2;
  }
  return counts->failed > 0 || counts->changed > 0 ? 1 : 0;
}

}  // namespace ds
