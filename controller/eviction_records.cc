#include "controller/eviction_records.h"

#include <glog/logging.h>

#include <utility>

#include "rules/ownership.h"

namespace ds {

EvictionRecords::EvictionRecords(Mark mark, NodeCache* cache, NodeWriter* writer)
    : mark_(std::move(mark)), cache_(cache), writer_(writer) {}

WriteEnd EvictionRecords::Write(const std::string& node, double at_wall, const WriteHooks& hooks,
                                const std::atomic<bool>* stop) {
  auto snap = cache_->Snapshot();
  const NodeInfo* n = snap->Find(node);
  if (n == nullptr) return WriteEnd::kGone;
  const std::string* text = FindLabel(n->annotations, kHeldByAnnotation);
  if (text == nullptr) return WriteEnd::kRefused;
  auto record = ParseOwnership(*text);
  if (!record.ok() || !RecordNamesMark(*record, mark_)) return WriteEnd::kRefused;
  record->last_eviction_wall = at_wall;
  NodeWrite w;
  w.node = node;
  w.record = true;
  w.edit.annotation = {NodeEdit::Op::kSet, kHeldByAnnotation, FormatOwnership(*record)};
  w.reason = at_wall > 0 ? "the rebalancer's eviction, for a new leader to hold the mark"
                         : "no eviction after all";
  EditOutcome out = writer_->WriteEdit(w, hooks, stop);
  if (out.dry_run) return WriteEnd::kWritten;  // nothing is evicted in a dry run either
  if (out.end != WriteEnd::kWritten)
    LOG(WARNING) << "node " << node << ": recording the eviction in " << kHeldByAnnotation
                 << " failed (a new leader would not know of it): " << out.status.ToString();
  return out.end;
}

}  // namespace ds
