#include "kube/kube_api.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "common/http_auth.h"
#include "common/json_util.h"

namespace ds {

namespace {
constexpr double kTokenRereadSeconds = 60;
// KubeVirt pkg/virt-api/webhooks/validating-webhook/admitters/pod-eviction-admitter.go
// ("Eviction triggered evacuation of VMI \"%s/%s\""); descheduler
// pkg/descheduler/evictions/evictions.go EvictionInBackgroundErrorText.
constexpr char kEvictionInBackgroundText[] = "Eviction triggered evacuation";
// client-go gives no limit; a plugin stuck on a prompt nobody sees must not stall the controller.
constexpr double kExecTimeoutSeconds = 30;

}  // namespace

HttpKubeApi::HttpKubeApi(HttpTransport* transport, RestConfig config, const Clock* clock,
                         double request_timeout_seconds, std::string user_agent)
    : transport_(transport),
      config_(std::move(config)),
      clock_(clock),
      timeout_(request_timeout_seconds),
      user_agent_(std::move(user_agent)) {
  if (!config_.exec.command.empty()) {
    SetExecCredentialSource(
        [exec = config_.exec, cluster = config_] {
          return ObtainExecCredential(exec, cluster, kExecTimeoutSeconds);
        },
        {});
  }
}

void HttpKubeApi::SetExecCredentialSource(ExecCredentialCache::Obtain obtain,
                                          TransportFactory transport_factory) {
  exec_ = std::make_unique<ExecCredentialCache>(std::move(obtain), clock_);
  transport_factory_ = transport_factory
                           ? std::move(transport_factory)
                           : [](const TlsOptions& tls) -> std::unique_ptr<HttpTransport> {
    return std::make_unique<CurlTransport>(tls);
  };
}

StatusOr<HttpKubeApi::Auth> HttpKubeApi::Authorize() {
  Auth a;
  a.headers = {"Accept: application/json", "User-Agent: " + user_agent_};
  a.transport = transport_;
  std::string token = config_.token;
  if (exec_) {
    ASSIGN_OR_RETURN(a.credential, exec_->Get());
    a.from_exec = true;
    token = a.credential.token;
    if (!a.credential.client_cert_pem.empty()) {
      MutexLock l(&mu_);
      if (!cert_transport_ || cert_transport_pem_ != a.credential.client_cert_pem) {
        TlsOptions tls = config_.tls;
        tls.client_cert_pem = a.credential.client_cert_pem;
        tls.client_key_pem = a.credential.client_key_pem;
        cert_transport_ = transport_factory_(tls);
        cert_transport_pem_ = a.credential.client_cert_pem;
      }
      a.keep = cert_transport_;
      a.transport = a.keep.get();
    }
  } else if (!config_.token_file.empty()) {
    MutexLock l(&mu_);
    TimePoint now = clock_->Now();
    if (file_token_.empty() || now - token_read_at_ > FromSeconds(kTokenRereadSeconds)) {
      std::ifstream in(config_.token_file);
      std::stringstream ss;
      ss << in.rdbuf();
      std::string t = ss.str();
      while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
      if (!t.empty()) file_token_ = t;  // keep the old token if the file is briefly empty
      token_read_at_ = now;
    }
    token = file_token_;
  }
  if (std::string h = AuthorizationHeader(token, config_.username, config_.password); !h.empty())
    a.headers.push_back(std::move(h));
  return a;
}

StatusOr<HttpResponse> HttpKubeApi::GetPath(const std::string& path) {
  HttpRequest req;
  req.method = "GET";
  req.url = config_.server + path;
  req.timeout_seconds = timeout_;
  return Do(std::move(req));
}

StatusOr<HttpResponse> HttpKubeApi::Do(HttpRequest req) {
  const std::vector<std::string> extra = std::move(req.headers);
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(Auth auth, Authorize());
    req.headers = auth.headers;
    req.headers.insert(req.headers.end(), extra.begin(), extra.end());
    ASSIGN_OR_RETURN(HttpResponse resp, auth.transport->Do(req));
    // A 401 means the request was not applied, so sending it again is safe.
    if (resp.status != 401 || !auth.from_exec || attempt > 0) return resp;
    exec_->Invalidate(auth.credential);
  }
}

StatusOr<StreamResult> HttpKubeApi::Stream(HttpRequest req,
                                           const std::function<bool(std::string_view)>& on_data,
                                           const std::function<bool()>& cancelled) {
  const std::vector<std::string> extra = std::move(req.headers);
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(Auth auth, Authorize());
    req.headers = auth.headers;
    req.headers.insert(req.headers.end(), extra.begin(), extra.end());
    ASSIGN_OR_RETURN(StreamResult r, auth.transport->Stream(req, on_data, cancelled));
    // A 401 arrives before any event, so on_data has seen nothing of this attempt.
    if (r.status != 401 || !auth.from_exec || attempt > 0) return r;
    exec_->Invalidate(auth.credential);
  }
}

StatusOr<std::string> HttpKubeApi::Call(HttpRequest req, const std::string& what, bool created_ok) {
  ASSIGN_OR_RETURN(HttpResponse resp, Do(std::move(req)));
  if (resp.status != 200 && !(created_ok && resp.status == 201))
    return StatusFromResponse(resp.status, resp.body, resp.Header("retry-after"), what);
  return std::move(resp.body);
}

StatusOr<NodeListPage> HttpKubeApi::ListNodes(const std::string& label_selector, size_t limit,
                                              const std::string& continue_token) {
  HttpRequest req;
  req.url = config_.server + "/api/v1/nodes?limit=" + std::to_string(limit);
  if (!label_selector.empty()) req.url += "&labelSelector=" + UrlEncode(label_selector);
  if (!continue_token.empty()) req.url += "&continue=" + UrlEncode(continue_token);
  req.timeout_seconds = timeout_;
  req.accept_compressed = true;  // a page of 500 full Node objects is large
  ASSIGN_OR_RETURN(std::string body, Call(std::move(req), "list nodes"));
  return DecodeNodeList(std::move(body));
}

StatusOr<PodListPage> HttpKubeApi::ListPods(const std::string& field_selector, size_t limit,
                                            const std::string& continue_token,
                                            const std::string& ns,
                                            const std::string& label_selector) {
  HttpRequest req;
  req.url = config_.server + "/api/v1/" +
            (ns.empty() ? std::string() : "namespaces/" + UrlEncode(ns) + "/") +
            "pods?resourceVersion=0";
  if (limit > 0) req.url += "&limit=" + std::to_string(limit);  // 0: the whole list
  if (!field_selector.empty()) req.url += "&fieldSelector=" + UrlEncode(field_selector);
  if (!label_selector.empty()) req.url += "&labelSelector=" + UrlEncode(label_selector);
  if (!continue_token.empty()) req.url += "&continue=" + UrlEncode(continue_token);
  req.timeout_seconds = timeout_;
  req.accept_compressed = true;
  ASSIGN_OR_RETURN(std::string body, Call(std::move(req), "list pods"));
  return DecodePodList(std::move(body));
}

namespace {

// This replica, as client-go's recorder names it: "<controller>-<hostname>" (the Pod's name).
const std::string& EventInstance() {
  static const std::string instance = [] {
    char host[256] = {};
    return "dynamic-scheduler-" +
           (gethostname(host, sizeof host - 1) == 0 ? std::string(host) : std::string("unknown"));
  }();
  return instance;
}

std::string EventsUrl(const std::string& server, const EventInfo& event) {
  return server + "/apis/events.k8s.io/v1/namespaces/" + UrlEncode(EventNamespace(event)) +
         "/events";
}

}  // namespace

Status HttpKubeApi::CreateEvent(const EventInfo& event, const std::function<bool()>& send_if) {
  HttpRequest req;
  req.method = "POST";
  req.url = EventsUrl(config_.server, event);
  req.headers.push_back("Content-Type: application/json");
  req.body = EncodeEvent(event, "dynamic-scheduler", EventInstance());
  req.timeout_seconds = timeout_;
  req.send_if = send_if;
  return Call(std::move(req), "create event for " + event.kind + " " + event.name,
              /*created_ok=*/true)
      .status();
}

Status HttpKubeApi::PatchEventSeries(const EventInfo& event, const std::function<bool()>& send_if) {
  HttpRequest req;
  req.method = "PATCH";
  req.url = EventsUrl(config_.server, event) + "/" + UrlEncode(event.event_name);
  req.headers.push_back("Content-Type: application/strategic-merge-patch+json");
  req.body = EncodeEventSeriesPatch(event.series_count, event.series_last_wall);
  req.timeout_seconds = timeout_;
  req.send_if = send_if;
  return Call(std::move(req), "update the event series of " + event.kind + " " + event.name)
      .status();
}

EvictionResult EvictionResultFromResponse(int http_status, const std::string& body,
                                          const std::string& retry_after, const std::string& what) {
  EvictionResult r;
  if (http_status == 200 || http_status == 201) {
    r.kind = EvictionResult::Kind::kEvicted;
    return r;
  }
  r.status = StatusFromResponse(http_status, body, retry_after, what);
  if (http_status == 404) {
    r.kind = EvictionResult::Kind::kGone;
  } else if (http_status == 429 &&
             r.status.message().find(kEvictionInBackgroundText) != std::string::npos) {
    // KubeVirt's virt-api answers every refusal of its eviction webhook with 429, and the API
    // server words it `pods "P" is forbidden: admission webhook "W" denied the request: <text>`
    // (reason Forbidden). Only this text says the webhook started the pod's evacuation; its other
    // 429s ("not live-migratable", "Eviction request for target Pod") are refusals. descheduler
    // tells them apart the same way (IsTooManyRequests and this substring).
    r.kind = EvictionResult::Kind::kInBackground;
  } else if (http_status == 429 && body.find("\"DisruptionBudget\"") != std::string::npos) {
    // The Status object's details.causes names the budget; a 429 from API Priority and
    // Fairness has no such cause and is an ordinary throttle.
    r.kind = EvictionResult::Kind::kBlockedByBudget;
  } else if (http_status == 500 &&
             body.find("more than one PodDisruptionBudget") != std::string::npos) {
    r.kind = EvictionResult::Kind::kMultipleBudgets;
  }
  return r;
}

EvictionResult HttpKubeApi::EvictPod(const std::string& ns, const std::string& name,
                                     const std::string& uid, const Labels& annotations,
                                     const std::function<bool()>& send_if) {
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.StartObject();
  w.Key("apiVersion");
  w.String("policy/v1");
  w.Key("kind");
  w.String("Eviction");
  w.Key("metadata");
  w.StartObject();
  w.Key("name");
  WriteString(w, name);
  w.Key("namespace");
  WriteString(w, ns);
  if (!annotations.empty()) {
    w.Key("annotations");
    w.StartObject();
    for (const auto& [key, value] : annotations) {
      WriteString(w, key);
      WriteString(w, value);
    }
    w.EndObject();
  }
  w.EndObject();
  if (!uid.empty()) {
    w.Key("deleteOptions");
    w.StartObject();
    w.Key("preconditions");
    w.StartObject();
    w.Key("uid");
    WriteString(w, uid);
    w.EndObject();
    w.EndObject();
  }
  w.EndObject();
  HttpRequest req;
  req.method = "POST";
  req.url = config_.server + "/api/v1/namespaces/" + UrlEncode(ns) + "/pods/" + UrlEncode(name) +
            "/eviction";
  req.headers.push_back("Content-Type: application/json");
  req.body = sb.GetString();
  req.timeout_seconds = timeout_;
  req.send_if = send_if;
  const std::string what = "evict pod " + ns + "/" + name;
  auto resp = Do(std::move(req));
  if (!resp.ok()) return EvictionResult{EvictionResult::Kind::kError, resp.status().Prepend(what)};
  return EvictionResultFromResponse(resp->status, resp->body, resp->Header("retry-after"), what);
}

Status HttpKubeApi::WatchNodes(const std::string& label_selector,
                               const std::string& resource_version, int timeout_seconds,
                               const std::function<void(WatchEvent&&)>& on_event,
                               const std::function<bool()>& cancelled) {
  HttpRequest req;
  req.url = config_.server + "/api/v1/nodes?watch=1&allowWatchBookmarks=true&resourceVersion=" +
            UrlEncode(resource_version) + "&timeoutSeconds=" + std::to_string(timeout_seconds);
  if (!label_selector.empty()) req.url += "&labelSelector=" + UrlEncode(label_selector);
  // The server ends the watch after timeoutSeconds; one that does not is cut a minute later.
  req.timeout_seconds = timeout_seconds + 60;
  req.idle_timeout_seconds = watch_idle_timeout_;
  WatchLineSplitter splitter;
  std::vector<std::string> lines;
  Status stream_status;
  bool line_too_long = false;
  auto on_data = [&](std::string_view bytes) -> bool {
    if (!splitter.Feed(bytes, &lines)) {
      line_too_long = true;
      return false;
    }
    for (auto& line : lines) {
      auto ev = DecodeWatchEvent(std::move(line));
      if (!ev.ok()) {
        stream_status = ev.status();
        return false;
      }
      if (ev->type == WatchEventType::kError) {
        stream_status = ev->error.Prepend("watch nodes");
        return false;
      }
      on_event(std::move(*ev));
    }
    lines.clear();
    return true;
  };
  ASSIGN_OR_RETURN(StreamResult r, Stream(std::move(req), on_data, cancelled));
  if (line_too_long)
    return Status::Unavailable("watch nodes: an event line exceeds the size limit");
  if (!stream_status.ok()) return stream_status;
  if (r.status != 200) {
    std::string retry_after;
    for (const auto& [k, v] : r.headers)
      if (k == "retry-after") retry_after = v;
    return StatusFromResponse(r.status, r.error_body, retry_after, "watch nodes");
  }
  if (splitter.buffered() > 0) return Status::Unavailable("watch nodes: stream ended mid-event");
  return Status::OK();
}

StatusOr<NodeInfo> HttpKubeApi::PatchNode(const std::string& node, const NodeEdit& edit,
                                          const std::function<bool()>& send_if) {
  ASSIGN_OR_RETURN(EncodedPatch patch, EncodeNodeEdit(edit));
  HttpRequest req;
  req.method = "PATCH";
  req.url = config_.server + "/api/v1/nodes/" + UrlEncode(node);
  req.headers.push_back("Content-Type: " + patch.content_type);
  req.body = std::move(patch.body);
  req.timeout_seconds = timeout_;
  req.send_if = send_if;
  ASSIGN_OR_RETURN(std::string body, Call(std::move(req), "patch node " + node));
  return DecodeNode(std::move(body));
}

StatusOr<NodeInfo> HttpKubeApi::GetNode(const std::string& node) {
  HttpRequest req;
  req.url = config_.server + "/api/v1/nodes/" + UrlEncode(node);
  req.timeout_seconds = timeout_;
  ASSIGN_OR_RETURN(std::string body, Call(std::move(req), "get node " + node));
  return DecodeNode(std::move(body));
}

StatusOr<ClaimPlace> HttpKubeApi::GetClaimPlace(const std::string& ns, const std::string& claim) {
  HttpRequest req;
  req.url = config_.server + "/api/v1/namespaces/" + UrlEncode(ns) + "/persistentvolumeclaims/" +
            UrlEncode(claim);
  req.timeout_seconds = timeout_;
  ASSIGN_OR_RETURN(std::string body,
                   Call(std::move(req), "get persistentvolumeclaim " + ns + "/" + claim));
  ClaimPlace place;
  ASSIGN_OR_RETURN(place.volume, DecodeClaimVolume(std::move(body)));
  if (place.volume.empty()) return place;
  HttpRequest pv;
  pv.url = config_.server + "/api/v1/persistentvolumes/" + UrlEncode(place.volume);
  pv.timeout_seconds = timeout_;
  ASSIGN_OR_RETURN(std::string pv_body,
                   Call(std::move(pv), "get persistentvolume " + place.volume));
  ASSIGN_OR_RETURN(place.node_affinity, DecodeVolumeNodeAffinity(std::move(pv_body)));
  return place;
}

StatusOr<WorkloadStatus> HttpKubeApi::GetWorkload(const std::string& ns, const std::string& kind,
                                                  const std::string& name) {
  const std::string resource = WorkloadResource(kind);
  if (resource.empty())
    return Status::InvalidArgument("get workload " + ns + "/" + name + ": kind " + kind +
                                   " is not a Deployment, ReplicaSet, StatefulSet or DaemonSet");
  HttpRequest req;
  req.url = config_.server + "/apis/apps/v1/namespaces/" + UrlEncode(ns) + "/" + resource + "/" +
            UrlEncode(name);
  req.timeout_seconds = timeout_;
  ASSIGN_OR_RETURN(std::string body, Call(std::move(req), "get " + kind + " " + ns + "/" + name));
  return DecodeWorkload(std::move(body), kind);
}

StatusOr<std::vector<Autoscaler>> HttpKubeApi::ListAutoscalers(const std::string& ns) {
  HttpRequest req;
  req.url = config_.server + "/apis/autoscaling/v2/namespaces/" + UrlEncode(ns) +
            "/horizontalpodautoscalers";
  req.timeout_seconds = timeout_;
  ASSIGN_OR_RETURN(std::string body,
                   Call(std::move(req), "list horizontalpodautoscalers in " + ns));
  return DecodeAutoscalerList(std::move(body));
}

namespace {
std::string LeasePath(const std::string& ns, const std::string& name) {
  return "/apis/coordination.k8s.io/v1/namespaces/" + UrlEncode(ns) + "/leases" +
         (name.empty() ? "" : "/" + UrlEncode(name));
}
}  // namespace

StatusOr<LeaseRecord> HttpKubeApi::GetLease(const std::string& ns, const std::string& name,
                                            double timeout_seconds) {
  HttpRequest req;
  req.url = config_.server + LeasePath(ns, name);
  req.timeout_seconds = timeout_seconds;
  ASSIGN_OR_RETURN(std::string body, Call(std::move(req), "get lease " + ns + "/" + name));
  return DecodeLease(body);
}

StatusOr<LeaseRecord> HttpKubeApi::WriteLease(const std::string& ns, const std::string& name,
                                              const LeaseRecord& record, double timeout_seconds) {
  const bool create = record.resource_version.empty();
  HttpRequest req;
  req.method = create ? "POST" : "PUT";
  req.url = config_.server + LeasePath(ns, create ? "" : name);
  req.headers.push_back("Content-Type: application/json");
  req.body = EncodeLease(ns, name, record);
  req.timeout_seconds = timeout_seconds;
  ASSIGN_OR_RETURN(
      std::string body,
      Call(std::move(req), (create ? "create lease " : "update lease ") + ns + "/" + name,
           /*created_ok=*/true));
  return DecodeLease(body);
}

StatusOr<std::string> HttpKubeApi::CreateReview(const std::string& path, std::string body,
                                                const std::string& what) {
  HttpRequest req;
  req.method = "POST";
  req.url = config_.server + path;
  req.headers.push_back("Content-Type: application/json");
  req.body = std::move(body);
  req.timeout_seconds = std::min(timeout_, kReviewTimeoutSeconds);
  // The API server answers a create with 201; an aggregated or older one may say 200.
  return Call(std::move(req), "create " + what, /*created_ok=*/true);
}

StatusOr<TokenReviewResult> HttpKubeApi::ReviewToken(const std::string& token) {
  ASSIGN_OR_RETURN(std::string body, CreateReview("/apis/authentication.k8s.io/v1/tokenreviews",
                                                  EncodeTokenReview(token), "tokenreview"));
  return DecodeTokenReview(body);
}

StatusOr<AccessDecision> HttpKubeApi::ReviewAccess(const AccessAttributes& attributes) {
  ASSIGN_OR_RETURN(std::string body,
                   CreateReview("/apis/authorization.k8s.io/v1/subjectaccessreviews",
                                EncodeSubjectAccessReview(attributes), "subjectaccessreview"));
  return DecodeSubjectAccessReview(body);
}

}  // namespace ds
