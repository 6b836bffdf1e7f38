// The slice of a Kubernetes Node the controller keeps, and decoders for the API's wire forms:
// NodeList pages, watch-stream lines and Status objects. Pure functions of bytes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/labels.h"
#include "common/status.h"
#include "kube/pod_object.h"

namespace ds {

// The annotation keys this controller may write all start with this.
inline constexpr const char* kOwnAnnotationPrefix = "dynamic-scheduler.io/";

// Only what the controller needs, so 10,000 nodes stay small in memory.
struct NodeInfo {
  std::string name;
  std::string resource_version;
  Labels labels;
  // Only this controller's own annotations (keys under kOwnAnnotationPrefix): the rest of a
  // node's annotations can be large and are none of our business.
  Labels annotations;
  std::vector<std::string> addresses;  // InternalIP, ExternalIP, Hostname values
  bool unschedulable = false;
  std::vector<Taint> taints;                           // spec.taints
  double allocatable_cpu = 0, allocatable_memory = 0;  // status.allocatable: cores, bytes
  // The rest of status.allocatable: pods, ephemeral-storage, hugepages-*, extended resources. Read
  // for the rebalancer's destinations (GET); the node cache drops it, as nothing else needs it.
  std::vector<std::pair<std::string, double>> allocatable_other;
  std::string uid;  // metadata.uid: the rebalancer's Events name it (`kubectl describe node`)
  bool IsControlPlane() const;
};

struct NodeListPage {
  std::vector<NodeInfo> items;
  std::string resource_version;
  std::string continue_token;
};

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

struct WatchEvent {
  WatchEventType type = WatchEventType::kError;
  NodeInfo node;  // for ADDED/MODIFIED/DELETED; for BOOKMARK only resource_version
  Status error;   // for ERROR: the Status object, code kExpired for 410
};

// Decodes one NodeList page (GET /api/v1/nodes). Errors name what was wrong.
StatusOr<NodeListPage> DecodeNodeList(std::string body);
// Decodes a single Node object (a PATCH response).
StatusOr<NodeInfo> DecodeNode(std::string body);
// Decodes one watch line ({"type":..., "object":...}).
StatusOr<WatchEvent> DecodeWatchEvent(std::string line);
// Maps a non-2xx answer to a Status: uses the Status object's message/reason when the body is
// one, and the Retry-After header (or details.retryAfterSeconds) for 429/503.
Status StatusFromResponse(int http_status, const std::string& body, const std::string& retry_after,
                          const std::string& what);

// Splits a watch stream into lines as bytes arrive in arbitrary chunks. A partial last line
// (the connection dropped mid-event) is never returned.
class WatchLineSplitter {
 public:
  explicit WatchLineSplitter(size_t max_line_bytes = 16u << 20) : max_line_(max_line_bytes) {}
  // Appends bytes; complete lines are appended to *lines. Returns false when one line grew
  // beyond the limit (the stream should be dropped).
  bool Feed(std::string_view bytes, std::vector<std::string>* lines);
  size_t buffered() const { return buf_.size(); }

 private:
  const size_t max_line_;
  std::string buf_;
};

}  // namespace ds
