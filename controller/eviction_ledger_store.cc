#include "controller/eviction_ledger_store.h"

#include <glog/logging.h>

#include <algorithm>

#include "kube/lease.h"

namespace ds {

namespace {

// The ledger's Lease holds no leadership: nobody holds it, and its duration is the ledger's span
// (the API server refuses a Lease whose leaseDurationSeconds is not positive).
constexpr int kLeaseSeconds = static_cast<int>(kLedgerSpanSeconds);
// A conflict means another writer: read again and merge, at most this many times.
constexpr int kAttempts = 3;

}  // namespace

EvictionLedgerStore::EvictionLedgerStore(KubeApi* kube, LedgerPlace place, double timeout_seconds,
                                         size_t keep_decisions)
    : kube_(kube), place_(std::move(place)), timeout_(timeout_seconds), keep_(keep_decisions) {}

namespace {

// The trail as stored in `record` (none: empty). One that cannot be decoded is dropped: it only
// explains, and the next write replaces it (unlike the ledger, whose limits must hold).
std::deque<EvictionRecord> StoredTrail(const std::optional<LeaseRecord>& record) {
  if (!record) return {};
  auto trail = DecodeTrail(LeaseAnnotation(record->object, kTrailAnnotation));
  if (!trail.ok()) {
    LOG(WARNING) << "rebalance: the decision trail of the eviction ledger cannot be decoded; "
                    "it is replaced at the next write: "
                 << trail.status().message();
    return {};
  }
  return std::move(*trail);
}

}  // namespace

std::string TrailWithin(std::deque<EvictionRecord> trail, size_t bytes) {
  std::string text = EncodeTrail(trail);
  // The oldest records go first, about as many as the excess holds (a record is 250-350 bytes).
  while (text.size() > bytes && !trail.empty()) {
    const size_t each = std::max<size_t>(1, text.size() / trail.size());
    const size_t drop = std::min(trail.size(), (text.size() - bytes + each - 1) / each);
    trail.erase(trail.begin(), trail.begin() + static_cast<std::ptrdiff_t>(drop));
    text = EncodeTrail(trail);
  }
  return text;
}

void EvictionLedgerStore::Note(const EvictionRecord& r) {
  if (keep_ == 0) return;
  auto same = std::find_if(noted_.begin(), noted_.end(), [&](const EvictionRecord& x) {
    return x.pod == r.pod && x.at_wall == r.at_wall;
  });
  if (same != noted_.end())
    *same = r;
  else
    noted_.push_back(r);
  while (noted_.size() > keep_) noted_.pop_front();
  unwritten_ = true;
}

void EvictionLedgerStore::Forget(const std::string& pod, double at_wall) {
  noted_.erase(
      std::remove_if(noted_.begin(), noted_.end(),
                     [&](const EvictionRecord& x) { return x.pod == pod && x.at_wall == at_wall; }),
      noted_.end());
}

std::deque<EvictionRecord> EvictionLedgerStore::Trail() const {
  if (keep_ == 0) return {};
  // This replica's notes win over the stored records of the same eviction: they are newer.
  return MergeTrail(noted_, StoredTrail(record_), keep_);
}

Status EvictionLedgerStore::Flush(double now_wall, const std::function<bool()>& gate) {
  if (!unwritten_) return Status::OK();
  return Update([](std::vector<LedgerEntry>*) {}, now_wall, gate);
}

Status EvictionLedgerStore::Load() {
  auto got = kube_->GetLease(place_.ns, place_.name, timeout_);
  if (!got.ok() && got.status().code() != StatusCode::kNotFound)
    return Status(got.status().code(), "reading the eviction ledger (lease " + place_.ns + "/" +
                                           place_.name + "): " + got.status().message());
  if (got.ok())
    record_ = std::move(*got);
  else
    record_.reset();
  loaded_ = true;
  return Status::OK();
}

StatusOr<std::vector<LedgerEntry>> EvictionLedgerStore::Read(double now_wall) {
  RETURN_NOT_OK(Load());
  if (!record_) return std::vector<LedgerEntry>{};
  auto entries = DecodeLedger(LeaseAnnotation(record_->object, kLedgerAnnotation));
  if (!entries.ok())
    return Status::Internal("lease " + place_.ns + "/" + place_.name + ", annotation " +
                            kLedgerAnnotation + ": " + entries.status().message());
  return TrimLedger(std::move(*entries), now_wall);
}

Status EvictionLedgerStore::Update(const std::function<void(std::vector<LedgerEntry>*)>& change,
                                   double now_wall, const std::function<bool()>& gate) {
  Status last;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    if (!loaded_ || attempt > 0) RETURN_NOT_OK(Load());
    std::vector<LedgerEntry> entries;
    if (record_) {
      auto read = DecodeLedger(LeaseAnnotation(record_->object, kLedgerAnnotation));
      if (!read.ok()) return read.status();  // never overwrite what cannot be read
      entries = std::move(*read);
    }
    change(&entries);
    entries = TrimLedger(std::move(entries), now_wall);
    LeaseRecord out;
    if (record_) {
      out = *record_;
    } else {
      // A create: the Lease's own fields, and the name and namespace EncodeLease fills in.
      out.object = R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{}})";
    }
    out.lease_duration_seconds = kLeaseSeconds;
    const std::string ledger = EncodeLedger(entries);
    out.object = WithLeaseAnnotation(out.object, kLedgerAnnotation, ledger);
    if (keep_ > 0)
      out.object = WithLeaseAnnotation(
          out.object, kTrailAnnotation,
          TrailWithin(Trail(), kAnnotationBudget - std::min(kAnnotationBudget, ledger.size())));
    if (gate && !gate())
      return Status::Cancelled("no longer the leader: the ledger is not written");
    auto written = kube_->WriteLease(place_.ns, place_.name, out, timeout_);
    if (written.ok()) {
      record_ = std::move(*written);
      unwritten_ = false;
      return Status::OK();
    }
    last = written.status();
    loaded_ = false;  // read again before the next write, whatever went wrong
    if (last.code() != StatusCode::kConflict) break;
  }
  return Status(last.code(), "writing the eviction ledger (lease " + place_.ns + "/" + place_.name +
                                 "): " + last.message());
}

Status EvictionLedgerStore::Append(const LedgerEntry& entry, double now_wall,
                                   const std::function<bool()>& gate) {
  return Update([&](std::vector<LedgerEntry>* e) { e->push_back(entry); }, now_wall, gate);
}

Status EvictionLedgerStore::Remove(const std::string& pod, double at_wall, double now_wall,
                                   const std::function<bool()>& gate) {
  return Update(
      [&](std::vector<LedgerEntry>* e) {
        e->erase(std::remove_if(
                     e->begin(), e->end(),
                     [&](const LedgerEntry& x) { return x.pod == pod && x.at_wall == at_wall; }),
                 e->end());
      },
      now_wall, gate);
}

}  // namespace ds
