// autoscaling/v2 HorizontalPodAutoscalers in the simulator: stored objects with the API server's
// defaults and validation (pkg/apis/autoscaling: minReplicas 1, the default CPU metric and
// scaling behavior) and a status subresource. No autoscaler runs: a test writes the status it
// wants (PUT or PATCH .../status, or the admin API's SetFromAdmin) -- "currentReplicas 6,
// desiredReplicas 3" is an autoscaler scaling its target down -- and nothing scales the target.
//
// Thread-safe. Shares the cluster-wide resourceVersion (Store::NextRv). Lock order:
// HpaStore::mu_ before Store's mutex. HTTP lives in sim_server_apps.cc.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/label_selector.h"
#include "common/mutex.h"
#include "test/sim/sim_pods.h"
#include "test/sim/sim_store.h"

namespace sim {

class HpaStore {
 public:
  explicit HpaStore(Store* cluster) : cluster_(cluster) {}

  // POST /apis/autoscaling/v2/namespaces/NS/horizontalpodautoscalers. On success *out is the
  // stored object: the server's metadata (uid, creationTimestamp, resourceVersion, generation
  // 1), spec defaults (minReplicas 1, metrics: cpu at 80% utilization, behavior) and an empty
  // status (desiredReplicas 0). Errors in the API server's words: 400 (undecodable body,
  // metadata.namespace other than NS), 422 Invalid (metadata.name, labels,
  // spec.scaleTargetRef.kind and .name required, minReplicas >= 1, maxReplicas >= 1 and >=
  // minReplicas), 409 AlreadyExists.
  ApiError Create(const std::string& ns, const std::string& body, std::string* out);
  // 404 NotFound `horizontalpodautoscalers.autoscaling "NAME" not found`.
  ApiError Get(const std::string& ns, const std::string& name, std::string* out) const;
  // *out is the deleted object. 404 when missing.
  ApiError Delete(const std::string& ns, const std::string& name, std::string* out);
  // Matching objects (ns "": all namespaces) in (namespace, name) order.
  std::vector<std::string> List(const std::string& ns, const ds::LabelSelector& labels,
                                const FieldSelector& fields, uint64_t* list_rv) const;
  // PUT .../NAME/status: takes the body's status only (the status subresource ignores the rest);
  // a stale metadata.resourceVersion is a 409 Conflict, a name other than NAME a 400.
  ApiError ReplaceStatus(const std::string& ns, const std::string& name, const std::string& body,
                         std::string* out);
  // PATCH .../NAME/status (merge, strategic merge -- the same for these maps -- or JSON patch):
  // applied to the object, of which only the status is kept. 400 for a patch that does not
  // apply, 422 for a failed JSON patch test.
  ApiError PatchStatus(const std::string& ns, const std::string& name, PatchType type,
                       const std::string& patch, std::string* out);
  // Test admin API: creates or updates an HPA and sets its status in one call:
  // {"namespace","name","target":{"apiVersion","kind","name"},"minReplicas","maxReplicas",
  //  "currentReplicas","desiredReplicas"}. "target" and "maxReplicas" are needed to create.
  ApiError SetFromAdmin(const std::string& body, std::string* out);

 private:
  // Stores `doc` (a complete object) under ns/name with the next resourceVersion.
  void Put(const std::string& key, rapidjson::Document* doc) REQUIRES(mu_);

  Store* const cluster_;
  mutable ds::Mutex mu_;
  std::map<std::string, std::string> hpas_ GUARDED_BY(mu_);  // "ns/name" -> JSON
  uint64_t uid_counter_ GUARDED_BY(mu_) = 0;
};

}  // namespace sim
