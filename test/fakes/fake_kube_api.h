// In-memory KubeApi for unit tests: serves scripted list pages and watch events, applies label
// patches to its own node map, serves the workloads and autoscalers put in, answers token and
// access reviews from the tokens and grants put in, and records every patch, read and review
// (client-go fake clientset style).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/label_selector.h"
#include "common/mutex.h"
#include "kube/kube_api.h"

namespace ds {

// The pod field selectors the rebalancer sends, "spec.nodeName=N" and "metadata.name=P,
// spec.nodeName=N", into their values (unset: not in the selector); false for any other term.
inline bool ParsePodFieldSelector(const std::string& selector, std::optional<std::string>* node,
                                  std::optional<std::string>* name) {
  for (size_t from = 0; from < selector.size();) {
    size_t comma = selector.find(',', from);
    if (comma == std::string::npos) comma = selector.size();
    const std::string term = selector.substr(from, comma - from);
    from = comma + 1;
    const size_t eq = term.find('=');
    const std::string key = term.substr(0, eq);
    if (eq == std::string::npos || (key != "spec.nodeName" && key != "metadata.name")) return false;
    *(key == "spec.nodeName" ? node : name) = term.substr(eq + 1);
  }
  return true;
}

class FakeKubeApi : public KubeApi {
 public:
  struct PatchCall {
    std::string node, key;  // key: the label's, empty when the edit leaves the label alone
    bool set = false;       // the label is set (to value)
    std::string value;
    NodeEdit edit;  // the whole edit
  };

  void AddNode(NodeInfo n) {
    MutexLock l(&mu_);
    n.resource_version = std::to_string(++rv_);
    nodes_[n.name] = std::move(n);
  }
  // Changes a stored node as another client's write would (new resourceVersion), e.g. from
  // on_patch: a concurrent `kubectl taint` between the controller's read and its write.
  void EditNode(const std::string& name, const std::function<void(NodeInfo*)>& edit) {
    MutexLock l(&mu_);
    NodeInfo& n = nodes_.at(name);
    edit(&n);
    n.resource_version = std::to_string(++rv_);
  }
  int get_calls() {
    MutexLock l(&mu_);
    return get_calls_;
  }
  StatusOr<NodeInfo> GetNode(const std::string& name) override {
    MutexLock l(&mu_);
    ++get_calls_;
    auto it = nodes_.find(name);
    if (it == nodes_.end())
      return Status(StatusCode::kNotFound, "nodes \"" + name + "\" not found");
    return it->second;
  }
  // Claims: where each one's volume can be used (GetClaimPlace); one not added is 404.
  void AddClaim(const std::string& ns, const std::string& claim, ClaimPlace place) {
    MutexLock l(&mu_);
    claims_[ns + "/" + claim] = std::move(place);
  }
  StatusOr<ClaimPlace> GetClaimPlace(const std::string& ns, const std::string& claim) override {
    MutexLock l(&mu_);
    auto it = claims_.find(ns + "/" + claim);
    if (it == claims_.end())
      return Status(StatusCode::kNotFound, "persistentvolumeclaims \"" + claim + "\" not found");
    return it->second;
  }
  // Workloads (GetWorkload): stored by namespace, kind and name (WorkloadStatus::Key()); one not
  // added is 404. Every GET is recorded as "ns/Kind/name" in workload_gets().
  void AddWorkload(WorkloadStatus w) {
    MutexLock l(&mu_);
    workloads_[w.Key()] = std::move(w);
  }
  void RemoveWorkload(const std::string& ns, const std::string& kind, const std::string& name) {
    MutexLock l(&mu_);
    workloads_.erase(ns + "/" + kind + "/" + name);
  }
  // The next workload GETs fail with these statuses, in order (e.g. 403: no RBAC for apps).
  void FailNextWorkloadGets(std::vector<Status> errors) {
    MutexLock l(&mu_);
    workload_errors_.assign(errors.begin(), errors.end());
  }
  std::vector<std::string> workload_gets() {
    MutexLock l(&mu_);
    return workload_gets_;
  }
  StatusOr<WorkloadStatus> GetWorkload(const std::string& ns, const std::string& kind,
                                       const std::string& name) override {
    if (WorkloadResource(kind).empty())  // as HttpKubeApi: refused before anything is sent
      return Status::InvalidArgument("get workload: kind " + kind);
    MutexLock l(&mu_);
    const std::string key = ns + "/" + kind + "/" + name;
    workload_gets_.push_back(key);
    if (!workload_errors_.empty()) {
      Status st = workload_errors_.front();
      workload_errors_.pop_front();
      return st;
    }
    auto it = workloads_.find(key);
    if (it == workloads_.end())
      return Status(StatusCode::kNotFound,
                    WorkloadResource(kind) + ".apps \"" + name + "\" not found")
          .set_http_status(404);
    return it->second;
  }
  // HorizontalPodAutoscalers (ListAutoscalers), listed by namespace; each LIST is recorded (its
  // namespace) in autoscaler_lists().
  void AddAutoscaler(Autoscaler a) {
    MutexLock l(&mu_);
    autoscalers_[a.ns + "/" + a.name] = std::move(a);
  }
  void RemoveAutoscaler(const std::string& ns, const std::string& name) {
    MutexLock l(&mu_);
    autoscalers_.erase(ns + "/" + name);
  }
  // The next HPA LISTs fail with these statuses, in order.
  void FailNextAutoscalerLists(std::vector<Status> errors) {
    MutexLock l(&mu_);
    autoscaler_errors_.assign(errors.begin(), errors.end());
  }
  std::vector<std::string> autoscaler_lists() {
    MutexLock l(&mu_);
    return autoscaler_lists_;
  }
  StatusOr<std::vector<Autoscaler>> ListAutoscalers(const std::string& ns) override {
    MutexLock l(&mu_);
    autoscaler_lists_.push_back(ns);
    if (!autoscaler_errors_.empty()) {
      Status st = autoscaler_errors_.front();
      autoscaler_errors_.pop_front();
      return st;
    }
    std::vector<Autoscaler> out;
    for (const auto& [key, a] : autoscalers_)
      if (a.ns == ns) out.push_back(a);
    return out;
  }
  void RemoveNode(const std::string& name) {
    MutexLock l(&mu_);
    nodes_.erase(name);
  }
  std::map<std::string, NodeInfo> nodes() {
    MutexLock l(&mu_);
    return nodes_;
  }
  std::vector<PatchCall> patches() {
    MutexLock l(&mu_);
    return patches_;
  }
  // The next patches fail with these statuses, in order.
  void FailNextPatches(std::vector<Status> errors) {
    MutexLock l(&mu_);
    patch_errors_.assign(errors.begin(), errors.end());
  }
  // Scripted watch sessions: each WatchNodes call consumes one (events, then final status).
  struct WatchScript {
    std::vector<WatchEvent> events;
    Status end;
    std::function<void()> before_end;  // e.g. advance a fake clock: how long the watch lived
    // With `end` kCancelled, the watch then blocks until the caller's cancelled() is true. Without
    // `tick` it polls on real time (for caches run on a thread); with it, it calls tick() in its
    // wait loop instead, so a test on a FakeClock can advance time until the caller's own
    // deadline cancels the watch. tick() returning false ends the watch with OK, as a server does
    // at the watch's timeoutSeconds.
    std::function<bool()> tick;
  };
  // Without it, a watch with no script left blocks until cancelled (for tests that run the cache
  // on a thread). With it, such a watch sets *stop and returns, so Run() can be called on the
  // test's own thread and ends when the script does.
  void StopWhenScriptsRunOut(std::atomic<bool>* stop) {
    MutexLock l(&mu_);
    stop_when_done_ = stop;
  }
  void AddWatchScript(WatchScript s) {
    MutexLock l(&mu_);
    watches_.push_back(std::move(s));
  }
  // The next LIST page requests fail with these statuses, in order (e.g. 429 from API Priority
  // and Fairness); later ones are served.
  void FailNextLists(std::vector<Status> errors) {
    MutexLock l(&mu_);
    list_errors_.assign(errors.begin(), errors.end());
  }
  int list_calls() {
    MutexLock l(&mu_);
    return list_calls_;
  }
  std::vector<std::string> watch_rvs() {
    MutexLock l(&mu_);
    return watch_rvs_;
  }

  // Honours the label selector, as the API server does.
  StatusOr<NodeListPage> ListNodes(const std::string& selector, size_t limit,
                                   const std::string& cont) override {
    auto sel = LabelSelector::Parse(selector);
    if (!sel.ok()) return sel.status();
    MutexLock l(&mu_);
    ++list_calls_;
    if (!list_errors_.empty()) {
      Status st = list_errors_.front();
      list_errors_.pop_front();
      return st;
    }
    NodeListPage page;
    page.resource_version = std::to_string(rv_);
    auto it = cont.empty() ? nodes_.begin() : nodes_.upper_bound(cont);
    for (; it != nodes_.end(); ++it) {
      if (page.items.size() == limit) {
        page.continue_token = page.items.back().name;
        break;
      }
      if (sel->Matches(it->second.labels)) page.items.push_back(it->second);
    }
    return page;
  }

  Status WatchNodes(const std::string&, const std::string& rv, int,
                    const std::function<void(WatchEvent&&)>& on_event,
                    const std::function<bool()>& cancelled) override {
    WatchScript s;
    {
      MutexLock l(&mu_);
      watch_rvs_.push_back(rv);
      if (watches_.empty()) {
        if (stop_when_done_ != nullptr) {
          *stop_when_done_ = true;
          return Status::Cancelled("script done");
        }
        s.end = Status::Cancelled("no script");
      } else {
        s = std::move(watches_.front());
        watches_.pop_front();
      }
    }
    for (auto& ev : s.events) on_event(std::move(ev));
    if (s.before_end) s.before_end();
    if (s.end.code() == StatusCode::kCancelled) {
      while (!cancelled()) {
        if (!s.tick) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        } else if (!s.tick()) {
          return Status::OK();
        }
      }
    }
    return s.end;
  }

  // Called at each PATCH that is sent, before it is applied (set it before the writes start).
  std::function<void(const std::string& node)> on_patch;

  // Applies the edit as the API server applies its patch: a conditional removal whose test
  // fails (or whose annotation is gone) is a 422 that changes nothing.
  StatusOr<NodeInfo> PatchNode(const std::string& node, const NodeEdit& edit,
                               const std::function<bool()>& send_if = {}) override {
    // Like the real transport: the gate is asked just before the request would leave.
    if (send_if && !send_if())
      return Status(StatusCode::kCancelled, "patch node " + node + ": not sent");
    // Like HttpKubeApi: an edit that cannot be encoded (a taint edit without a resourceVersion)
    // is refused before anything is sent, and not recorded as a patch.
    if (auto encoded = EncodeNodeEdit(edit); !encoded.ok()) return encoded.status();
    if (on_patch) on_patch(node);
    MutexLock l(&mu_);
    PatchCall call;
    call.node = node;
    call.edit = edit;
    if (edit.label.op != NodeEdit::Op::kKeep) {
      call.key = edit.label.key;
      call.set = edit.label.op == NodeEdit::Op::kSet;
      call.value = call.set ? edit.label.value : "";
    }
    patches_.push_back(call);
    if (!patch_errors_.empty()) {
      Status st = patch_errors_.front();
      patch_errors_.pop_front();
      return st;
    }
    auto it = nodes_.find(node);
    if (it == nodes_.end())
      return Status(StatusCode::kNotFound, "nodes \"" + node + "\" not found");
    NodeInfo updated = it->second;
    // metadata.resourceVersion in a (merge) patch is a precondition, as in the API server,
    // where "" is none (unconditional). (A label removal is a JSON Patch: no metadata sent.)
    const bool merge = edit.set_taints || edit.label.op != NodeEdit::Op::kRemove;
    if (merge && !edit.resource_version.empty() &&
        edit.resource_version != updated.resource_version)
      return Status(StatusCode::kConflict,
                    "Operation cannot be fulfilled on nodes \"" + node +
                        "\": the object has been modified; please apply your changes to the "
                        "latest version and try again")
          .set_http_status(409);
    if (edit.set_taints) updated.taints = edit.taints;
    const bool json_patch = edit.label.op == NodeEdit::Op::kRemove && !edit.set_taints;
    if (json_patch) {
      const std::string* v = FindLabel(updated.labels, edit.label.key);
      if (v == nullptr || *v != edit.label.value)
        return Status(StatusCode::kInvalidArgument,
                      "testing value /metadata/labels/" + edit.label.key + " failed")
            .set_http_status(422);
      if (edit.annotation.op == NodeEdit::Op::kRemove &&
          FindLabel(updated.annotations, edit.annotation.key) == nullptr)
        return Status(StatusCode::kInvalidArgument,
                      "unable to remove nonexistent key: " + edit.annotation.key)
            .set_http_status(422);
    }
    Apply(edit.label, &updated.labels);
    Apply(edit.annotation, &updated.annotations);
    updated.resource_version = std::to_string(++rv_);
    it->second = updated;
    return updated;
  }

  // Pods: listed by spec.nodeName, and by metadata.name with it (what the code uses); an eviction
  // marks the pod terminating, unless a scripted result says otherwise.
  void AddPod(PodInfo p) {
    MutexLock l(&mu_);
    pods_[p.Key()] = std::move(p);
  }
  void RemovePod(const std::string& key) {  // the kubelet finished the pod's termination
    MutexLock l(&mu_);
    pods_.erase(key);
  }
  std::map<std::string, PodInfo> pods() {
    MutexLock l(&mu_);
    return pods_;
  }
  std::vector<std::string> evictions() {
    MutexLock l(&mu_);
    return evictions_;
  }
  // The annotations the last eviction of namespace/name carried.
  Labels eviction_annotations(const std::string& pod) {
    MutexLock l(&mu_);
    return eviction_annotations_[pod];
  }
  // The next evictions end like this, in order (e.g. kBlockedByBudget).
  void ScriptEvictions(std::vector<EvictionResult> results) {
    MutexLock l(&mu_);
    eviction_script_.assign(results.begin(), results.end());
  }
  StatusOr<PodListPage> ListPods(const std::string& field_selector, size_t limit,
                                 const std::string& cont, const std::string& ns = "",
                                 const std::string& label_selector = "") override {
    MutexLock l(&mu_);
    ++pod_list_calls_;
    pod_list_selectors_.push_back(field_selector);
    if (pod_list_failures_ > 0) {
      --pod_list_failures_;
      return Status::Unavailable("fake: pod LIST refused");
    }
    std::optional<std::string> node, name;
    if (!ParsePodFieldSelector(field_selector, &node, &name))
      return Status::InvalidArgument("fake: unsupported field selector " + field_selector);
    PodListPage page;
    page.resource_version = std::to_string(rv_);
    auto it = cont.empty() ? pods_.begin() : pods_.upper_bound(cont);
    for (; it != pods_.end(); ++it) {
      if (limit > 0 && page.items.size() == limit) {  // 0: no limit, as the API server's
        page.continue_token = page.items.back().Key();
        break;
      }
      if ((!node || it->second.node == *node) && (!name || it->second.name == *name) &&
          (ns.empty() || it->second.ns == ns) && HasLabels(it->second.labels, label_selector))
        page.items.push_back(it->second);
    }
    return page;
  }
  // The API server's label selector (what the rebalancer sends: a replacement's labels, a group
  // term's selector); one that does not parse selects nothing.
  static bool HasLabels(const Labels& labels, const std::string& selector) {
    auto sel = LabelSelector::Parse(selector);
    return sel.ok() && sel->Matches(labels);
  }
  EvictionResult EvictPod(const std::string& ns, const std::string& name, const std::string& uid,
                          const Labels& annotations,
                          const std::function<bool()>& send_if = {}) override {
    if (send_if && !send_if())
      return EvictionResult{EvictionResult::Kind::kError,
                            Status(StatusCode::kCancelled, "evict: not sent")};
    MutexLock l(&mu_);
    const std::string key = ns + "/" + name;
    evictions_.push_back(key);
    eviction_annotations_[key] = annotations;
    if (!eviction_script_.empty()) {
      EvictionResult r = eviction_script_.front();
      eviction_script_.pop_front();
      return r;
    }
    auto it = pods_.find(key);
    if (it == pods_.end())
      return EvictionResult{EvictionResult::Kind::kGone, Status::NotFound(key + " not found")};
    if (!uid.empty() && uid != it->second.uid)  // as the API server's deleteOptions.preconditions
      return EvictionResult{
          EvictionResult::Kind::kError,
          Status(StatusCode::kConflict, "Precondition failed: UID in precondition")
              .set_http_status(409)};
    it->second.terminating = true;
    return EvictionResult{EvictionResult::Kind::kEvicted, Status::OK()};
  }
  Status CreateEvent(const EventInfo& event, const std::function<bool()>& send_if = {}) override {
    if (send_if && !send_if()) return Status(StatusCode::kCancelled, "event: not sent");
    MutexLock l(&mu_);
    events_.push_back(event);
    return Status::OK();
  }
  // A series PATCH: recorded in series_patches(); kNotFound for a name in missing_events.
  Status PatchEventSeries(const EventInfo& event,
                          const std::function<bool()>& send_if = {}) override {
    if (send_if && !send_if()) return Status(StatusCode::kCancelled, "event: not sent");
    MutexLock l(&mu_);
    if (missing_events.count(event.event_name))
      return Status::NotFound("events.events.k8s.io \"" + event.event_name + "\" not found");
    series_patches_.push_back(event);
    return Status::OK();
  }
  std::vector<EventInfo> events() {
    MutexLock l(&mu_);
    return events_;
  }
  std::vector<EventInfo> series_patches() {
    MutexLock l(&mu_);
    return series_patches_;
  }
  std::set<std::string> missing_events;  // set before use; names PatchEventSeries finds gone
  int pod_list_calls() {
    MutexLock l(&mu_);
    return pod_list_calls_;
  }
  // The next `n` pod LISTs fail with 503.
  void FailNextPodLists(int n) {
    MutexLock l(&mu_);
    pod_list_failures_ = n;
  }
  // How many pod LISTs carried exactly this field selector.
  int pod_lists_with(const std::string& field_selector) {
    MutexLock l(&mu_);
    return static_cast<int>(
        std::count(pod_list_selectors_.begin(), pod_list_selectors_.end(), field_selector));
  }

  // Leases, with the API's create/update preconditions (409 on an existing create or a stale
  // resourceVersion). While lease_down(true), every lease call fails with 503. A write stores the
  // object as sent (its encoded body), as the API server does: what the client leaves out is gone.
  StatusOr<LeaseRecord> GetLease(const std::string& ns, const std::string& name, double) override {
    MutexLock l(&mu_);
    ++lease_calls_;
    if (lease_down_) return Status(StatusCode::kUnavailable, "lease API down");
    auto it = leases_.find(ns + "/" + name);
    if (it == leases_.end())
      return Status(StatusCode::kNotFound, "leases \"" + name + "\" not found");
    return it->second;
  }
  StatusOr<LeaseRecord> WriteLease(const std::string& ns, const std::string& name,
                                   const LeaseRecord& rec, double timeout_seconds) override {
    LeaseRecord stored;
    std::function<void(const LeaseRecord&, double)> hook;
    {
      MutexLock l(&mu_);
      ++lease_calls_;
      if (lease_down_) return Status(StatusCode::kUnavailable, "lease API down");
      auto it = leases_.find(ns + "/" + name);
      if (rec.resource_version.empty()) {
        if (it != leases_.end()) return Status(StatusCode::kConflict, "already exists");
      } else if (it == leases_.end()) {
        return Status(StatusCode::kNotFound, "not found");
      } else if (it->second.resource_version != rec.resource_version) {
        return Status(StatusCode::kConflict, "the object has been modified");
      }
      LeaseRecord sent = rec;
      sent.resource_version = std::to_string(++rv_);
      auto decoded = DecodeLease(EncodeLease(ns, name, sent));
      if (!decoded.ok()) return decoded.status();
      stored = std::move(*decoded);
      leases_[ns + "/" + name] = stored;
      hook = on_lease_write_;
    }
    // Without the lock: the hook may call into this API (another thread's write) while this
    // answer is still on its way.
    if (hook) hook(stored, timeout_seconds);
    return stored;
  }
  void set_lease_down(bool down) {
    MutexLock l(&mu_);
    lease_down_ = down;
  }
  // Every successful lease write calls `hook(stored, caller's timeout)` once it is stored but
  // before its answer returns, as a slow response does: the write has landed, its writer does not
  // know yet. It runs on the writer's thread, without the fake's lock.
  void OnLeaseWrite(std::function<void(const LeaseRecord&, double)> hook) {
    MutexLock l(&mu_);
    on_lease_write_ = std::move(hook);
  }
  // Stores `object` (a Lease as JSON, with its metadata.resourceVersion) as another client's
  // write would, e.g. one with labels and spec fields this code does not know.
  Status SetLeaseObject(const std::string& ns, const std::string& name, const std::string& object) {
    auto decoded = DecodeLease(object);
    if (!decoded.ok()) return decoded.status();
    MutexLock l(&mu_);
    leases_[ns + "/" + name] = std::move(*decoded);
    return Status::OK();
  }
  // As `kubectl delete lease` does.
  void DeleteLease(const std::string& ns, const std::string& name) {
    MutexLock l(&mu_);
    leases_.erase(ns + "/" + name);
  }
  std::map<std::string, LeaseRecord> leases() {
    MutexLock l(&mu_);
    return leases_;
  }
  int lease_calls() {
    MutexLock l(&mu_);
    return lease_calls_;
  }

  // TokenReviews and SubjectAccessReviews, as an API server with RBAC answers them: a token added
  // with AddToken authenticates as its user, any other does not; access is allowed when a grant
  // names the user or one of its groups with the verb and the path ("*" for any verb; a path
  // ending in "*" as a prefix, as RBAC's nonResourceURLs). Each review is recorded.
  void AddToken(const std::string& token, UserInfo user) {
    MutexLock l(&mu_);
    tokens_[token] = std::move(user);
  }
  void RemoveToken(const std::string& token) {
    MutexLock l(&mu_);
    tokens_.erase(token);
  }
  void Grant(const std::string& user_or_group, const std::string& verb, const std::string& path) {
    MutexLock l(&mu_);
    grants_.push_back({user_or_group, verb, path});
  }
  // A grant on a resource: `resource` as RBAC writes it ("services/proxy"), in namespace `ns`, of
  // the object `name` ("" : any).
  void GrantResource(const std::string& user_or_group, const std::string& verb,
                     const std::string& ns, const std::string& resource,
                     const std::string& name = "") {
    MutexLock l(&mu_);
    grants_.push_back({user_or_group, verb, ResourceKey(ns, resource, name)});
  }
  void RevokeGrants() {
    MutexLock l(&mu_);
    grants_.clear();
  }
  // The next reviews fail with these statuses, in order (e.g. 403: no RBAC to create reviews).
  void FailNextTokenReviews(std::vector<Status> errors) {
    MutexLock l(&mu_);
    token_review_errors_.assign(errors.begin(), errors.end());
  }
  void FailNextAccessReviews(std::vector<Status> errors) {
    MutexLock l(&mu_);
    access_review_errors_.assign(errors.begin(), errors.end());
  }
  int token_reviews() {
    MutexLock l(&mu_);
    return token_reviews_;
  }
  std::vector<AccessAttributes> access_reviews() {
    MutexLock l(&mu_);
    return access_reviews_;
  }
  // Runs at the start of every review, outside the fake's lock (a slow API server).
  void OnReview(std::function<void()> f) {
    MutexLock l(&mu_);
    on_review_ = std::move(f);
  }
  StatusOr<TokenReviewResult> ReviewToken(const std::string& token) override {
    std::function<void()> hook;
    {
      MutexLock l(&mu_);
      hook = on_review_;
    }
    if (hook) hook();
    MutexLock l(&mu_);
    ++token_reviews_;
    if (!token_review_errors_.empty()) {
      Status st = token_review_errors_.front();
      token_review_errors_.pop_front();
      return st;
    }
    TokenReviewResult r;
    auto it = tokens_.find(token);
    if (it == tokens_.end()) {
      r.error = "invalid bearer token";
      return r;
    }
    r.authenticated = true;
    r.user = it->second;
    return r;
  }
  StatusOr<AccessDecision> ReviewAccess(const AccessAttributes& a) override {
    MutexLock l(&mu_);
    access_reviews_.push_back(a);
    if (!access_review_errors_.empty()) {
      Status st = access_review_errors_.front();
      access_review_errors_.pop_front();
      return st;
    }
    AccessDecision d;
    for (const GrantRule& g : grants_) {
      const bool who =
          g.subject == a.user.username ||
          std::find(a.user.groups.begin(), a.user.groups.end(), g.subject) != a.user.groups.end();
      const bool what = g.verb == "*" || g.verb == a.verb;
      const ResourceAttributes& r = a.resource;
      const std::string resource = r.resource + (r.subresource.empty() ? "" : "/" + r.subresource);
      const bool where =
          a.is_resource()
              ? g.path == ResourceKey(r.namespace_name, resource, r.name) ||
                    g.path == ResourceKey(r.namespace_name, resource, "")
              : !g.path.starts_with("resource:") &&
                    (g.path == a.path || (!g.path.empty() && g.path.back() == '*' &&
                                          a.path.starts_with(g.path.substr(0, g.path.size() - 1))));
      if (who && what && where) {
        d.allowed = true;
        d.reason = "granted to " + g.subject;
        return d;
      }
    }
    return d;
  }

 private:
  struct GrantRule {
    std::string subject, verb, path;  // path: a URL, or ResourceKey's form for a resource
  };
  static std::string ResourceKey(const std::string& ns, const std::string& resource,
                                 const std::string& name) {
    return "resource:" + ns + "/" + resource + "/" + name;
  }
  static void Apply(const NodeEdit::Key& k, Labels* kv) {
    if (k.op == NodeEdit::Op::kKeep) return;
    for (auto i = kv->begin(); i != kv->end(); ++i)
      if (i->first == k.key) {
        kv->erase(i);
        break;
      }
    if (k.op == NodeEdit::Op::kSet) kv->emplace_back(k.key, k.value);
  }

  Mutex mu_;
  std::map<std::string, PodInfo> pods_ GUARDED_BY(mu_);
  std::vector<std::string> evictions_ GUARDED_BY(mu_);
  std::map<std::string, Labels> eviction_annotations_ GUARDED_BY(mu_);
  std::vector<EventInfo> events_ GUARDED_BY(mu_);
  std::vector<EventInfo> series_patches_ GUARDED_BY(mu_);
  std::deque<EvictionResult> eviction_script_ GUARDED_BY(mu_);
  int pod_list_calls_ GUARDED_BY(mu_) = 0;
  std::vector<std::string> pod_list_selectors_ GUARDED_BY(mu_);
  int pod_list_failures_ GUARDED_BY(mu_) = 0;
  uint64_t rv_ GUARDED_BY(mu_) = 100;
  std::map<std::string, LeaseRecord> leases_ GUARDED_BY(mu_);
  bool lease_down_ GUARDED_BY(mu_) = false;
  int lease_calls_ GUARDED_BY(mu_) = 0;
  std::function<void(const LeaseRecord&, double)> on_lease_write_ GUARDED_BY(mu_);
  std::map<std::string, ClaimPlace> claims_ GUARDED_BY(mu_);
  std::map<std::string, WorkloadStatus> workloads_ GUARDED_BY(mu_);
  std::deque<Status> workload_errors_ GUARDED_BY(mu_);
  std::vector<std::string> workload_gets_ GUARDED_BY(mu_);
  std::map<std::string, Autoscaler> autoscalers_ GUARDED_BY(mu_);
  std::deque<Status> autoscaler_errors_ GUARDED_BY(mu_);
  std::vector<std::string> autoscaler_lists_ GUARDED_BY(mu_);
  std::map<std::string, NodeInfo> nodes_ GUARDED_BY(mu_);
  std::vector<PatchCall> patches_ GUARDED_BY(mu_);
  std::deque<Status> patch_errors_ GUARDED_BY(mu_);
  std::deque<WatchScript> watches_ GUARDED_BY(mu_);
  std::deque<Status> list_errors_ GUARDED_BY(mu_);
  int list_calls_ GUARDED_BY(mu_) = 0;
  int get_calls_ GUARDED_BY(mu_) = 0;
  std::vector<std::string> watch_rvs_ GUARDED_BY(mu_);
  std::atomic<bool>* stop_when_done_ GUARDED_BY(mu_) = nullptr;
  std::map<std::string, UserInfo> tokens_ GUARDED_BY(mu_);
  std::vector<GrantRule> grants_ GUARDED_BY(mu_);
  std::function<void()> on_review_ GUARDED_BY(mu_);
  std::deque<Status> token_review_errors_ GUARDED_BY(mu_);
  std::deque<Status> access_review_errors_ GUARDED_BY(mu_);
  int token_reviews_ GUARDED_BY(mu_) = 0;
  std::vector<AccessAttributes> access_reviews_ GUARDED_BY(mu_);
};

}  // namespace ds
