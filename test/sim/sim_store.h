// State of the Kubernetes API simulator: Node objects, one cluster-wide resourceVersion, a
// bounded window of watch events (older resourceVersions answer 410 Expired), and the three
// patch flavours. Thread-safe; HTTP lives in sim_server.
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/label_selector.h"
#include "common/labels.h"
#include "common/mutex.h"

namespace sim {

// An API error as the real server reports it (Status object fields).
struct ApiError {
  ApiError() = default;
  ApiError(int c, std::string r, std::string m, std::string causes = "", std::string details = "")
      : code(c),
        reason(std::move(r)),
        message(std::move(m)),
        causes_json(std::move(causes)),
        details_json(std::move(details)) {}
  int code = 0;  // 0 = no error
  std::string reason;
  std::string message;
  std::string causes_json;   // optional details.causes array, already JSON
  std::string details_json;  // optional whole details object, already JSON (wins over causes)
  bool ok() const { return code == 0; }
};

struct StoredNode {
  std::string json;  // full object, serialized
  ds::Labels labels;
  uint64_t rv = 0;
};

struct Event {
  uint64_t rv = 0;
  std::string type;  // ADDED, MODIFIED, DELETED
  std::string name;
  std::string json;
  ds::Labels old_labels, new_labels;  // for label-selector watches
};

enum class PatchType { kMerge, kStrategic, kJson };

class Store {
 public:
  explicit Store(size_t window) : window_(window) {}

  uint64_t CurrentRv() const;
  // Takes the next cluster-wide resourceVersion for a write to another resource (Pods, PDBs), so
  // that every object shares one counter. Does not wake Node watchers (no Node event).
  uint64_t NextRv();
  // Adds `count` realistic nodes named prefix-00001...; the first control_plane are masters.
  void Populate(size_t count, size_t control_plane, const std::string& prefix);

  // A page of matching nodes after `after` (by name); returns the names' JSON, sets *next to the
  // last name when more remain. `list_rv` is the resourceVersion reported for the list.
  std::vector<std::string> List(const ds::LabelSelector& sel, size_t limit,
                                const std::string& after, std::string* next, uint64_t* list_rv,
                                size_t* remaining) const;
  // For tables: matching nodes' JSON.
  ApiError Get(const std::string& name, std::string* json) const;
  ApiError Create(const std::string& body, std::string* out);
  ApiError Replace(const std::string& name, const std::string& body, std::string* out);
  ApiError Patch(const std::string& name, PatchType type, const std::string& body, std::string* out,
                 bool* changed);
  ApiError Delete(const std::string& name, std::string* out);

  // Events with rv > from, waiting up to timeout_ms for one. *expired when `from` has left the
  // window. Returns the newest rv known (for bookmarks).
  uint64_t EventsAfter(uint64_t from, int timeout_ms, std::vector<Event>* out, bool* expired);
  // Wakes every waiting watcher (used on shutdown and to drop watches).
  void WakeAll();
  // Forgets all buffered events and advances the resourceVersion, so every open watch and every
  // watch from an older resourceVersion gets 410 Expired (a forced compaction).
  void Compact();
  uint64_t compacted_rv() const;
  // Updates every node's heartbeat condition (kubelets do this constantly).
  void Heartbeat();
  size_t size() const;

  // coordination.k8s.io/v1 Leases, the objects leader election reads and writes. They share the
  // cluster-wide resourceVersion. An update must carry the current metadata.resourceVersion
  // (Leases do not allow unconditional updates): 409 Conflict when stale, 422 when missing.
  // `ns` empty in ListLeases means all namespaces. Lease changes produce no Node watch events.
  ApiError GetLease(const std::string& ns, const std::string& name, std::string* out) const;
  std::vector<std::string> ListLeases(const std::string& ns, uint64_t* list_rv) const;
  ApiError CreateLease(const std::string& ns, const std::string& body, std::string* out);
  ApiError ReplaceLease(const std::string& ns, const std::string& name, const std::string& body,
                        std::string* out);
  ApiError DeleteLease(const std::string& ns, const std::string& name, std::string* out);

 private:
  ApiError Commit(const std::string& name, const std::string& type, std::string json,
                  const ds::Labels* old_labels, std::string* out) REQUIRES(mu_);

  const size_t window_;
  mutable ds::Mutex mu_;
  ds::CondVar cv_;
  std::map<std::string, StoredNode> nodes_ GUARDED_BY(mu_);
  // "ns/name" -> (json, rv)
  std::map<std::string, std::pair<std::string, uint64_t>> leases_ GUARDED_BY(mu_);
  std::deque<Event> events_ GUARDED_BY(mu_);
  uint64_t rv_ GUARDED_BY(mu_) = 1000;
  uint64_t compacted_rv_ GUARDED_BY(mu_) = 1000;  // watches from an rv below this get 410
};

// Builds the Status object JSON for an error (or a success Status for deletes).
std::string StatusJson(const ApiError& e);

// RFC 6902 add/remove/replace/test of `ops` on `doc`. Returns an error message or "".
std::string ApplyJsonPatch(rapidjson::Document& doc, const rapidjson::Value& ops);

// RFC 7386 merge of `patch` into `target` (allocated by `a`). Strategic merge is the same for the
// maps and replaced-whole lists the simulator patches (Node labels and taints, an Event's
// series); its $-directives are skipped.
void MergePatch(rapidjson::Value& target, const rapidjson::Value& patch,
                rapidjson::Document::AllocatorType& a);

}  // namespace sim
