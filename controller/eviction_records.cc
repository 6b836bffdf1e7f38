#include "controller/eviction_records.h"

#include <glog/logging.h>

#include <utility>

#include "common/log_fields.h"
#include "common/rfc3339.h"
#include "rules/ownership.h"

namespace ds {

double RecordedDrain(const NodeInfo& node) {
  const std::string* text = FindLabel(node.annotations, kLastDrainAnnotation);
  double at = 0;
  if (text == nullptr || !ParseRfc3339(*text, &at)) return 0;
  return at + 1;
}

EvictionRecords::EvictionRecords(Mark mark, NodeCache* cache, NodeWriter* writer)
    : mark_(std::move(mark)), cache_(cache), writer_(writer) {}

WriteEnd EvictionRecords::Write(const std::string& node, double at_wall, const WriteHooks& hooks,
                                const std::atomic<bool>* stop, double* previous) {
  auto snap = cache_->Snapshot();
  const NodeInfo* n = snap->Find(node);
  if (n == nullptr) return WriteEnd::kGone;
  const std::string* text = FindLabel(n->annotations, kHeldByAnnotation);
  if (text == nullptr) return WriteEnd::kRefused;
  auto record = ParseOwnership(*text);
  if (!record.ok() || !RecordNamesMark(*record, mark_)) return WriteEnd::kRefused;
  if (previous != nullptr) *previous = record->last_eviction_wall;
  record->last_eviction_wall = at_wall;
  NodeWrite w;
  w.node = node;
  w.record = true;
  w.edit.annotation = {NodeEdit::Op::kSet, kHeldByAnnotation, FormatOwnership(*record)};
  w.reason =
      "the rebalancer's last eviction, written before it is sent, so that a new leader "
      "holds the mark and waits out the cool-down";
  EditOutcome out = writer_->WriteEdit(w, hooks, stop);
  if (out.dry_run) return WriteEnd::kWritten;  // nothing is evicted in a dry run either
  if (out.end != WriteEnd::kWritten)
    LOG(WARNING) << "writing the eviction's time into " << kHeldByAnnotation
                 << " failed; nothing is evicted from the node until it lands"
                 << Fields("node", node, "err", out.status);
  return out.end;
}

WriteEnd EvictionRecords::WriteDrain(const std::string& node, const std::string& underused_value,
                                     double at_wall, const WriteHooks& hooks,
                                     const std::atomic<bool>* stop, double* previous) {
  auto snap = cache_->Snapshot();
  const NodeInfo* n = snap->Find(node);
  if (n == nullptr) return WriteEnd::kGone;
  const std::string* v = FindLabel(n->labels, mark_.key);
  if (v == nullptr || *v != underused_value) return WriteEnd::kRefused;
  const std::string* text = FindLabel(n->annotations, kLastDrainAnnotation);
  if (previous != nullptr) {
    *previous = 0;
    if (text != nullptr) ParseRfc3339(*text, previous);
  }
  if (at_wall <= 0 && text == nullptr) return WriteEnd::kWritten;  // nothing to take back
  NodeWrite w;
  w.node = node;
  w.record = true;
  w.edit.annotation =
      at_wall > 0 ? NodeEdit::Key{NodeEdit::Op::kSet, kLastDrainAnnotation, FormatRfc3339(at_wall)}
                  : NodeEdit::Key{NodeEdit::Op::kRemove, kLastDrainAnnotation, ""};
  w.reason =
      "the last drain eviction, written before it is sent, so that a new leader waits out the "
      "node's cool-down";
  EditOutcome out = writer_->WriteEdit(w, hooks, stop);
  if (out.dry_run) return WriteEnd::kWritten;
  if (out.end != WriteEnd::kWritten)
    LOG(WARNING) << "writing the drain's time into " << kLastDrainAnnotation
                 << " failed; nothing is drained from the node until it lands"
                 << Fields("node", node, "err", out.status);
  return out.end;
}

}  // namespace ds
