// Who may read what on the web port (-web_auth=kubernetes): the caller's bearer token is checked
// with a TokenReview and what it asks for with a SubjectAccessReview (kube/review_object.h), as
// controller-runtime's secure metrics serving (pkg/metrics/filters
// WithAuthenticationAndAuthorization) and kube-rbac-proxy do. Both answers are cached, so a
// Prometheus scraping every 15 s costs the API server two requests every few minutes, not two per
// scrape.
//
// Four outcomes, the failure kept apart from the refusals (STYLE: "could not ask" is not "no"):
//   allow: the token is someone's, and a SubjectAccessReview allows the request
//     (web/access_policy.h says what it asks: a URL, or the Service's proxy subresource).
//   401 unauthenticated: no bearer token, or the API server says it is nobody's.
//   403 forbidden: the API server knows the user, and denies (or has no opinion on) the access.
//   503 review failed: the API server could not be asked or did not answer (unreachable, 5xx, a
//     garbled answer, or 403 because the controller itself lacks RBAC to create reviews). Never
//     cached: the next request asks again.
//   429 throttled: this client address has asked for more new reviews than its share (below).
//
// A review the caches cannot answer costs the API server a request, made with the controller's
// own service account: a client sending a new made-up token with each request would turn the
// port into a pump of TokenReviews, and, under API Priority and Fairness, into 429s for the
// controller's own node PATCHes and evictions, which share its flow. So each client address may
// cause new_reviews_per_second (burst new_reviews_burst) API calls; beyond that it is answered 429
// without asking. And at most max_concurrent_reviews calls are under way at once, whoever asks:
// a review waits on the API server on one of the web port's few workers, and with a slow API
// server, reviews for made-up tokens would otherwise take every worker and starve requests whose
// answers are cached (Prometheus' scrape); a review over the limit is answered 429 at once. A
// client whose token and access are cached asks nothing and is held back by neither.
//
// Caches (defaults in AccessReviewerOptions, each with where it comes from):
//   - TokenReview answers, keyed by an HMAC-SHA256 of the token under a key drawn at random when
//     the reviewer is made, never by the token: the cache holds nothing a memory dump could
//     replay, and nothing that can be matched against a guessed token offline (the API server's
//     token cache, k8s.io/apiserver/pkg/authentication/token/cache, keys its entries the same way).
//     Authenticated for 2 min (kube-apiserver --authentication-token-webhook-cache-ttl's default;
//     kube-rbac-proxy's authenticator CacheTTL), unauthenticated for 10 s: shorter than the API
//     server's webhook cache (which keeps both for the same 2 min) so that a token just created,
//     or pasted again after a typo, works within seconds, and long enough that a client retrying a
//     stale token costs a review every 10 s, not one per request.
//   - SubjectAccessReview answers, keyed by the whole review (user, uid, groups, extra, path,
//     verb), as the API server's webhook authorizer keys its cache by the marshalled spec:
//     allowed for 5 min, denied for 30 s (kube-apiserver
//     --authorization-webhook-cache-authorized-ttl and -unauthorized-ttl defaults; kube-rbac-proxy
//     and controller-runtime's filters use the same).
//   A revoked token, or a removed RoleBinding, therefore still works for up to 2 (resp. 5)
//   minutes, as it does behind those two.
// Each cache holds at most max_entries; a new entry beyond that evicts the least recently used.
// Identical misses at the same moment may both ask the API server (the answers agree; coalescing
// them would make one request wait on another's API call).
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/log_throttle.h"
#include "common/mutex.h"
#include "kube/review_object.h"

namespace ds {

class KubeApi;

struct AccessReviewerOptions {
  double authenticated_ttl_seconds = 120;
  double unauthenticated_ttl_seconds = 10;
  double allowed_ttl_seconds = 300;
  double denied_ttl_seconds = 30;
  size_t max_entries = 4096;  // per cache, and client addresses whose review budget is tracked
  double new_reviews_per_second = 5;  // per client address: API calls on cache misses
  double new_reviews_burst = 20;
  int max_concurrent_reviews = 2;  // API calls under way at once (the web port has 4 workers)
};

// The bearer token of an Authorization header: "Bearer <token>", the scheme in any case
// (RFC 7235), one or more spaces, then the token (RFC 6750's b64token: no space inside). "" for
// an absent header, another scheme, or a malformed one. Pure.
std::string BearerToken(const std::string& authorization_header);

class AccessReviewer {
 public:
  struct Decision {
    bool allow = false;
    int status = 200;      // when !allow: 401, 403 or 503
    std::string message;   // for the response body; never holds the token or an API error's text
    std::string username;  // who the token belongs to, once known ("" before)
    // For the log when !allow: the API server's words (a TokenReview's status.error, a
    // SubjectAccessReview's reason, or the error of the failed call). May name the controller's
    // own service account; not for the response.
    std::string detail;
    // The denial as a metric label: "unauthenticated", "forbidden", "review_failed"; "" if allowed.
    const char* reason() const {
      if (allow) return "";
      return status == 401   ? "unauthenticated"
             : status == 403 ? "forbidden"
             : status == 429 ? "throttled"
                             : "review_failed";
    }
  };

  // `kube` and `clock` must outlive the reviewer. Errors of the API calls are logged at most once
  // a minute per kind of error.
  AccessReviewer(KubeApi* kube, const Clock* clock, AccessReviewerOptions options = {});
  AccessReviewer(const AccessReviewer&) = delete;
  AccessReviewer& operator=(const AccessReviewer&) = delete;

  // May the holder of `authorization_header`'s bearer token do `verb` on the URL `path` (a
  // non-resource review)? Asks the API server on a cache miss, on the calling thread (at most two
  // calls, each bounded by the API client's review timeout). Thread-safe: the web port's workers
  // call it at once.
  Decision Check(const std::string& authorization_header, const std::string& path,
                 const std::string& verb) {
    return Check(authorization_header, AccessAttributes{{}, path, verb});
  }
  // The same for any review: `what` without its user (the token's user is put in).
  // `client`: the caller's address, whose share of new reviews a cache miss spends ("": a caller
  // without one, not throttled).
  Decision Check(const std::string& authorization_header, AccessAttributes what,
                 const std::string& client = "");

  // Entries held now (expired ones included until they are looked up or evicted). For tests.
  size_t TEST_token_entries();
  size_t TEST_access_entries();

 private:
  // A bounded map whose entries expire: the reviews' answers. Not thread-safe (the caller's
  // mutex guards it).
  template <typename V>
  class TtlCache {
   public:
    explicit TtlCache(size_t max_entries) : max_(max_entries) {}
    // The live value of `key`, or null (an expired entry is dropped).
    const V* Find(const std::string& key, TimePoint now);
    void Put(const std::string& key, V value, TimePoint expires);
    size_t size() const { return entries_.size(); }

   private:
    struct Entry {
      V value;
      TimePoint expires;
      std::list<std::string>::iterator at;  // in order_
    };
    const size_t max_;
    std::unordered_map<std::string, Entry> entries_;
    std::list<std::string> order_;  // keys, least recently used first
  };

  // The cache key of a token: HMAC-SHA256 under key_.
  std::string TokenKey(const std::string& token) const;
  // Logs an API error at most once a minute per (call, status).
  void LogApiError(const char* call, const Status& st);
  // The answer to `key` from `cache`, or else the API server's (`ask`, if `client` may ask now),
  // kept for ttl(answer) seconds. On failure *denied is set: 429 when the client may not ask now,
  // 503 when the call (`call`, for the log and the message) failed; never cached.
  template <typename V>
  std::optional<V> CachedOrAsked(TtlCache<V>* cache, const std::string& key,
                                 const std::string& client, const char* call,
                                 const std::function<StatusOr<V>()>& ask,
                                 const std::function<double(const V&)>& ttl, Decision* denied);

  KubeApi* const kube_;
  const Clock* const clock_;
  const AccessReviewerOptions options_;
  std::string key_;  // 32 random bytes, set once in the constructor
  LogThrottle api_error_log_{60};

  Mutex mu_;
  TtlCache<TokenReviewResult> tokens_ GUARDED_BY(mu_);
  TtlCache<AccessDecision> access_ GUARDED_BY(mu_);
  // The review budget of each client address (a token bucket); at most max_entries of them.
  struct Budget {
    double tokens;
    TimePoint at;
  };
  std::unordered_map<std::string, Budget> budgets_ GUARDED_BY(mu_);
  int reviews_under_way_ GUARDED_BY(mu_) = 0;
  // Spends one of `client`'s new reviews and takes a place among the reviews under way (give it
  // back with Asked); false when it has no review left or every place is taken.
  bool MayAsk(const std::string& client, TimePoint now) REQUIRES(mu_);
  void Asked() EXCLUDES(mu_);
};

}  // namespace ds
