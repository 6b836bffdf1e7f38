// The trail of the rebalancer's evictions that outlives a restart: each eviction's pod, node, rule,
// value, goal, destination and result, kept (the newest rebalance.keepDecisions of them) in an
// annotation of the eviction ledger's Lease (controller/eviction_ledger_store.h), so /explain can
// still say why a pod was evicted after the controller restarted or another replica took over.
// Written with the ledger's own writes: an eviction's record goes in with its write-ahead entry
// (result "requested": sent, its answer not yet recorded), and its result with the next write
// (controller/evictor.h FlushTrail). Pure: values and bytes.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <vector>

#include "common/status.h"
#include "rebalance/report.h"

namespace ds {

// The annotation of the ledger's Lease that holds the trail.
inline constexpr const char* kTrailAnnotation = "dynamic-scheduler.io/decisions";
// The result of an eviction written ahead whose answer is not recorded yet.
inline constexpr const char* kRequestedResult = "requested";

// The JSON array of the annotation (short keys {"t","p","n","o","r","x","u","l","g","k"}).
// EncodeTrail(DecodeTrail(x)) keeps every record but the Events' UIDs, which are not stored.
std::string EncodeTrail(const std::deque<EvictionRecord>& trail);
// "" decodes as an empty trail; an error names the record and field.
StatusOr<std::deque<EvictionRecord>> DecodeTrail(const std::string& text);

// `a` and `b` as one trail, oldest first, at most `keep`: a record in both (same pod and time)
// once, with its result where one of them has more than "requested".
std::deque<EvictionRecord> MergeTrail(const std::deque<EvictionRecord>& a,
                                      const std::deque<EvictionRecord>& b, size_t keep);

}  // namespace ds
