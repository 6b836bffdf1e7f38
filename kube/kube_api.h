// The Kubernetes API seam, every call the controller makes: Nodes (list, watch, get, patch), the
// reads of the rebalancer (Pods, PersistentVolumeClaims' places, workloads, autoscalers), Pod
// evictions, Leases (leader election, the eviction ledger), Events, and the TokenReviews and
// SubjectAccessReviews of -web_auth. HttpKubeApi is the real one; tests use the API simulator
// (integration) or a fake (unit).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/http_transport.h"
#include "common/mutex.h"
#include "kube/event.h"
#include "kube/exec_credential.h"
#include "kube/kubeconfig.h"
#include "kube/lease.h"
#include "kube/node_edit.h"
#include "kube/node_object.h"
#include "kube/pod_object.h"
#include "kube/review_object.h"
#include "kube/volume_object.h"
#include "kube/workload_object.h"

namespace ds {

// What became of an eviction request.
struct EvictionResult {
  enum class Kind {
    kEvicted,          // 201: the pod is terminating gracefully
    kBlockedByBudget,  // 429 with a DisruptionBudget cause: a PDB allows no disruption now
    // 429 from an admission webhook that took the eviction over and carries it out in the
    // background: KubeVirt's virt-api starts a live migration of the VM and refuses the eviction
    // with "Eviction triggered evacuation of VMI \"ns/name\"" (or, to a repeated request,
    // "Evacuation in progress: ..."), the wording descheduler's EvictionsInBackground looks for.
    // The pod goes away later, when the migration ends: an eviction in flight, not a refusal.
    kInBackground,
    kMultipleBudgets,  // 500: more than one PodDisruptionBudget selects the pod
    kGone,             // 404: the pod does not exist any more
    kError,            // anything else (transport, 403, APF 429 without a budget cause, 5xx)
  };
  Kind kind = Kind::kError;
  Status status;  // the error, for everything but kEvicted

  // A 403 from the authorizer (RBAC's wording: `User "u" cannot create resource "pods/eviction"`),
  // not an admission webhook's ("denied the request"): about the caller's permissions, so every
  // eviction will meet it, not about this pod.
  bool AuthorizationDenied() const {
    return status.http_status() == 403 &&
           status.message().find("cannot create resource") != std::string::npos;
  }
};

// Classifies an answer to POST .../eviction. Pure.
EvictionResult EvictionResultFromResponse(int http_status, const std::string& body,
                                          const std::string& retry_after, const std::string& what);

class KubeApi {
 public:
  virtual ~KubeApi() = default;
  // One page of GET /api/v1/nodes. `continue_token` empty for the first page.
  virtual StatusOr<NodeListPage> ListNodes(const std::string& label_selector, size_t limit,
                                           const std::string& continue_token) = 0;
  // Watches from resource_version, handing each event to on_event, until:
  //  - the server ends the stream (OK; re-watch from the last seen resourceVersion),
  //  - 410 Expired as HTTP status or ERROR event (kExpired; re-list),
  //  - a transport error or a dropped stream (kUnavailable),
  //  - cancelled() (kCancelled).
  // BOOKMARK events are passed on; ERROR events are not.
  virtual Status WatchNodes(const std::string& label_selector, const std::string& resource_version,
                            int timeout_seconds, const std::function<void(WatchEvent&&)>& on_event,
                            const std::function<bool()>& cancelled) = 0;
  // Applies `edit` (our label and/or our annotation; kube/node_edit.h) with one PATCH. Returns
  // the updated node from the PATCH response. A conditional label removal whose test fails
  // (the value changed since it was planned, or the annotation to remove is gone) is
  // kInvalidArgument with HTTP status 422, and changes nothing. `send_if` (optional) is the
  // caller's write gate (e.g. "still the leader"): asked once the connection is up, just before the
  // request leaves (false: kCancelled, nothing sent), and again while no answer has started (false:
  // kCancelled, the request abandoned; it may still have been applied).
  virtual StatusOr<NodeInfo> PatchNode(const std::string& node, const NodeEdit& edit,
                                       const std::function<bool()>& send_if = {}) = 0;
  // GET /api/v1/nodes/NAME: the node as the server has it now (kNotFound when deleted). A taint
  // edit whose precondition failed (409) reads the node afresh with it before editing again.
  virtual StatusOr<NodeInfo> GetNode(const std::string& node) = 0;
  // Where the volume of claim NS/NAME can be used: GET the PersistentVolumeClaim, and when it is
  // bound, GET its PersistentVolume (volume empty: not bound).
  virtual StatusOr<ClaimPlace> GetClaimPlace(const std::string& ns, const std::string& claim) = 0;
  // GET /apis/apps/v1/namespaces/NS/{deployments|replicasets|statefulsets|daemonsets}/NAME: the
  // workload's rollout status (kube/workload_object.h). kNotFound when it does not exist (404);
  // kInvalidArgument, without a request, for a kind that is none of those four.
  virtual StatusOr<WorkloadStatus> GetWorkload(const std::string& ns, const std::string& kind,
                                               const std::string& name) = 0;
  // GET /apis/autoscaling/v2/namespaces/NS/horizontalpodautoscalers: every HPA of the namespace
  // (one request, unpaged: a namespace has few). Errors as for GetNode; a cluster without the
  // autoscaling/v2 API answers 404 (kNotFound).
  virtual StatusOr<std::vector<Autoscaler>> ListAutoscalers(const std::string& ns) = 0;
  // One page of GET /api/v1/pods (all namespaces). `field_selector`, e.g. "spec.nodeName=n1",
  // narrows it on the server; resourceVersion=0 lets the API server answer from its watch cache
  // (an index on spec.nodeName), so a per-node list is cheap.
  virtual StatusOr<PodListPage> ListPods(const std::string& field_selector, size_t limit,
                                         const std::string& continue_token,
                                         const std::string& ns = "",
                                         const std::string& label_selector = "") = 0;
  // Asks the API server to evict the pod (POST .../pods/NAME/eviction, policy/v1): never a
  // DELETE, so PodDisruptionBudgets are honoured. See EvictionResult. `send_if` as for PatchNode.
  // `uid` (when not empty) is a precondition (deleteOptions.preconditions.uid): a pod re-created
  // under the same name since it was listed is another pod, and is not evicted (409).
  // `annotations` go on the Eviction object (metadata.annotations): why it is asked for, for the
  // admission webhooks and the audit log that see the request.
  virtual EvictionResult EvictPod(const std::string& ns, const std::string& name,
                                  const std::string& uid, const Labels& annotations,
                                  const std::function<bool()>& send_if = {}) = 0;
  // GET a coordination.k8s.io/v1 Lease; kNotFound when it does not exist. The record keeps the
  // whole object (LeaseRecord::object) for the next update. Leader election calls these with a
  // timeout shorter than its renew deadline.
  virtual StatusOr<LeaseRecord> GetLease(const std::string& ns, const std::string& name,
                                         double timeout_seconds) = 0;
  // Creates the Lease (record.resource_version empty: POST; kConflict when it already exists) or
  // replaces it (PUT with record.resource_version as precondition; kConflict when somebody wrote
  // it meanwhile). The body is EncodeLease(record): record.object, as read, with only the election
  // fields changed, so that a PUT keeps labels, annotations, ownerReferences and spec fields this
  // code does not know. Returns the stored record (object included) with its new resource_version.
  virtual StatusOr<LeaseRecord> WriteLease(const std::string& ns, const std::string& name,
                                           const LeaseRecord& record, double timeout_seconds) = 0;
  // POST an events.k8s.io/v1 Event (kube/event.h) in EventNamespace(event), named
  // event.event_name (or a fresh EventName). Best effort for its callers: an event that cannot be
  // written is logged, never retried. `send_if` as for PatchNode.
  virtual Status CreateEvent(const EventInfo& event, const std::function<bool()>& send_if = {}) = 0;
  // PATCH the series of the Event event.event_name in EventNamespace(event) to
  // {event.series_count, event.series_last_wall} (a strategic merge patch, as client-go's
  // recorder sends). kNotFound when the Event is gone (expired: the caller creates it anew).
  virtual Status PatchEventSeries(const EventInfo& event,
                                  const std::function<bool()>& send_if = {}) = 0;
  // POST an authentication.k8s.io/v1 TokenReview of `token` (kube/review_object.h): whose token
  // it is. authenticated false is an answer, not an error; the errors are the call's (transport,
  // 401/403 when this controller may not create tokenreviews, 5xx) and a garbled answer. The token
  // travels only in the request body and is never logged. Waits at most kReviewTimeoutSeconds.
  virtual StatusOr<TokenReviewResult> ReviewToken(const std::string& token) = 0;
  // POST an authorization.k8s.io/v1 SubjectAccessReview: may the user do attributes.verb on
  // attributes.path (nonResourceAttributes) or on attributes.resource (resourceAttributes)?
  // allowed false is an answer; errors as for ReviewToken (subjectaccessreviews).
  virtual StatusOr<AccessDecision> ReviewAccess(const AccessAttributes& attributes) = 0;
};

// How long a review may take: the web request that needs it waits on a worker meanwhile
// (controller-runtime's authenticator gives its TokenReviews the same 10 s).
inline constexpr double kReviewTimeoutSeconds = 10;

class HttpKubeApi : public KubeApi {
 public:
  // `transport` must outlive this object and be configured with config.tls.
  // `user_agent` goes into every request (audit logs and the simulator's write log show which
  // replica wrote). With config.exec set, credentials come from the exec plugin
  // (kube/exec_credential.h): run before the first request, again when the credential expires,
  // and again when the server answers 401 -- that request is then sent once more with the new
  // credential (once: a second 401 is the answer). A plugin that fails fails the request.
  HttpKubeApi(HttpTransport* transport, RestConfig config, const Clock* clock,
              double request_timeout_seconds = 30,
              std::string user_agent = "dynamic-scheduler/0.1");

  // GET of `path` (with its query) on the API server with this client's credentials: the answer
  // whatever its status, for a caller reading what KubeApi does not (the kubectl plugin, through
  // the service proxy, app/plugin.h).
  StatusOr<HttpResponse> GetPath(const std::string& path);

  StatusOr<NodeListPage> ListNodes(const std::string& label_selector, size_t limit,
                                   const std::string& continue_token) override;
  Status WatchNodes(const std::string& label_selector, const std::string& resource_version,
                    int timeout_seconds, const std::function<void(WatchEvent&&)>& on_event,
                    const std::function<bool()>& cancelled) override;
  StatusOr<NodeInfo> PatchNode(const std::string& node, const NodeEdit& edit,
                               const std::function<bool()>& send_if = {}) override;
  StatusOr<NodeInfo> GetNode(const std::string& node) override;
  StatusOr<ClaimPlace> GetClaimPlace(const std::string& ns, const std::string& claim) override;
  StatusOr<WorkloadStatus> GetWorkload(const std::string& ns, const std::string& kind,
                                       const std::string& name) override;
  StatusOr<std::vector<Autoscaler>> ListAutoscalers(const std::string& ns) override;
  StatusOr<PodListPage> ListPods(const std::string& field_selector, size_t limit,
                                 const std::string& continue_token, const std::string& ns = "",
                                 const std::string& label_selector = "") override;
  EvictionResult EvictPod(const std::string& ns, const std::string& name, const std::string& uid,
                          const Labels& annotations,
                          const std::function<bool()>& send_if = {}) override;
  StatusOr<LeaseRecord> GetLease(const std::string& ns, const std::string& name,
                                 double timeout_seconds) override;
  // A watch that receives nothing (not even a BOOKMARK) for this long is cut and re-opened from its
  // resourceVersion: a hung server or a silently dropped connection must not freeze the cache.
  // 0 = never. Call before the first watch.
  void SetWatchIdleTimeout(double seconds) { watch_idle_timeout_ = seconds; }
  StatusOr<LeaseRecord> WriteLease(const std::string& ns, const std::string& name,
                                   const LeaseRecord& record, double timeout_seconds) override;
  Status CreateEvent(const EventInfo& event, const std::function<bool()>& send_if = {}) override;
  Status PatchEventSeries(const EventInfo& event,
                          const std::function<bool()>& send_if = {}) override;
  StatusOr<TokenReviewResult> ReviewToken(const std::string& token) override;
  StatusOr<AccessDecision> ReviewAccess(const AccessAttributes& attributes) override;

  // Where exec credentials come from (default: running config.exec with a 30 s limit) and how a
  // transport for a client certificate from the plugin is made (default: a CurlTransport with
  // config.tls plus that certificate). Tests substitute both. Call before the first request.
  using TransportFactory = std::function<std::unique_ptr<HttpTransport>(const TlsOptions&)>;
  void SetExecCredentialSource(ExecCredentialCache::Obtain obtain,
                               TransportFactory transport_factory = {});
  // How many times the exec plugin has been run (0 without one), for tests and logs.
  int exec_runs() const { return exec_ ? exec_->runs() : 0; }

 private:
  // What one attempt of a request carries: its headers and the transport to send it on.
  struct Auth {
    std::vector<std::string> headers;
    HttpTransport* transport = nullptr;
    std::shared_ptr<HttpTransport> keep;  // holds a plugin certificate's transport in use
    bool from_exec = false;
    ExecCredential credential;  // what was sent, when from_exec
  };
  // Accept, User-Agent and Authorization headers (a token file is re-read at most once a minute;
  // an exec credential comes from the cache). Fails only when the exec plugin fails.
  StatusOr<Auth> Authorize();
  // The request with Auth's headers put in front, on Auth's transport; after a 401 to an exec
  // credential, once more with a fresh one.
  StatusOr<HttpResponse> Do(HttpRequest req);
  // Do, for a request whose answer must be 200 (or 201 too, with `created_ok`: a create): the
  // body, or the Status the API server's answer maps to (StatusFromResponse), saying `what`.
  StatusOr<std::string> Call(HttpRequest req, const std::string& what, bool created_ok = false);
  // POSTs a review object (TokenReview, SubjectAccessReview) to `path`: its answer's body.
  StatusOr<std::string> CreateReview(const std::string& path, std::string body,
                                     const std::string& what);
  StatusOr<StreamResult> Stream(HttpRequest req,
                                const std::function<bool(std::string_view)>& on_data,
                                const std::function<bool()>& cancelled);

  HttpTransport* const transport_;
  const RestConfig config_;
  const Clock* const clock_;
  const double timeout_;
  const std::string user_agent_;
  double watch_idle_timeout_ = 150;
  std::unique_ptr<ExecCredentialCache> exec_;  // set when config_.exec is
  TransportFactory transport_factory_;
  Mutex mu_;
  std::string file_token_ GUARDED_BY(mu_);
  TimePoint token_read_at_ GUARDED_BY(mu_) = {};
  // The transport for the exec plugin's current client certificate.
  std::string cert_transport_pem_ GUARDED_BY(mu_);
  std::shared_ptr<HttpTransport> cert_transport_ GUARDED_BY(mu_);
};

}  // namespace ds
