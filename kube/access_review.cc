#include "kube/access_review.h"

#include <glog/logging.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cctype>
#include <iterator>
#include <string_view>

#include "common/log_fields.h"
#include "kube/kube_api.h"

namespace ds {
namespace {

// A service account token is about 1 KiB; the request head (and with it the header) is bounded by
// the listener anyway. Longer is nobody's token, and is not sent to the API server.
constexpr size_t kMaxTokenBytes = 8192;

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

}  // namespace

std::string BearerToken(const std::string& header) {
  constexpr std::string_view kScheme = "bearer";
  if (header.size() <= kScheme.size() || !IsSpace(header[kScheme.size()])) return "";
  for (size_t i = 0; i < kScheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return "";
  size_t begin = kScheme.size();
  while (begin < header.size() && IsSpace(header[begin])) ++begin;
  size_t end = header.size();
  while (end > begin && IsSpace(header[end - 1])) --end;
  std::string token = header.substr(begin, end - begin);
  for (char c : token)
    if (IsSpace(c) || static_cast<unsigned char>(c) < 0x21 || c == 0x7f) return "";
  return token;
}

template <typename V>
const V* AccessReviewer::TtlCache<V>::Find(const std::string& key, TimePoint now) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return nullptr;
  if (now >= it->second.expires) {
    order_.erase(it->second.at);
    entries_.erase(it);
    return nullptr;
  }
  // Least recently used goes first: a scraper's entry, found every 15 s, outlives a stream of
  // made-up tokens that fill the cache.
  order_.splice(order_.end(), order_, it->second.at);
  return &it->second.value;
}

template <typename V>
void AccessReviewer::TtlCache<V>::Put(const std::string& key, V value, TimePoint expires) {
  if (max_ == 0) return;
  if (auto it = entries_.find(key); it != entries_.end()) {
    order_.erase(it->second.at);
    entries_.erase(it);
  }
  while (entries_.size() >= max_) {  // evict the least recently used
    entries_.erase(order_.front());
    order_.pop_front();
  }
  order_.push_back(key);
  entries_.emplace(key, Entry{std::move(value), expires, std::prev(order_.end())});
}

AccessReviewer::AccessReviewer(KubeApi* kube, const Clock* clock, AccessReviewerOptions options)
    : kube_(kube),
      clock_(clock),
      options_(options),
      tokens_(options.max_entries),
      access_(options.max_entries) {
  unsigned char key[32];
  // CHECK: the cache keys' secrecy rests on this key; without randomness there is no safe key.
  CHECK_EQ(RAND_bytes(key, sizeof key), 1) << "no random bytes for the token cache's key";
  key_.assign(reinterpret_cast<const char*>(key), sizeof key);
}

std::string AccessReviewer::TokenKey(const std::string& token) const {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  CHECK(HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
             reinterpret_cast<const unsigned char*>(token.data()), token.size(), mac,
             &len) != nullptr);
  return std::string(reinterpret_cast<const char*>(mac), len);
}

void AccessReviewer::LogApiError(const char* call, const Status& st) {
  const std::string key =
      std::string(call) + " " + StatusCodeName(st.code()) + " " + std::to_string(st.http_status());
  if (!api_error_log_.ShouldLog(key, clock_->Now())) return;
  LOG(WARNING) << "web auth: cannot create a " << call
               << "; requests that need one are answered 503 until the API server answers"
               << (st.http_status() == 403 ? " (the controller needs RBAC to create "
                                             "tokenreviews and subjectaccessreviews)"
                                           : "")
               << Fields("err", st);
}

void AccessReviewer::Asked() {
  MutexLock l(&mu_);
  --reviews_under_way_;
}

bool AccessReviewer::MayAsk(const std::string& client, TimePoint now) {
  if (reviews_under_way_ >= options_.max_concurrent_reviews) return false;
  if (client.empty()) {
    ++reviews_under_way_;
    return true;
  }
  auto it = budgets_.find(client);
  if (it == budgets_.end()) {
    if (budgets_.size() >= options_.max_entries) {
      // Forget the clients whose budget is full again (they lose nothing); if all are spending,
      // forget all: a bound on memory matters more than a moment's extra reviews.
      std::erase_if(budgets_, [&](const auto& kv) {
        return kv.second.tokens + ToSeconds(now - kv.second.at) * options_.new_reviews_per_second >=
               options_.new_reviews_burst;
      });
      if (budgets_.size() >= options_.max_entries) budgets_.clear();
    }
    it = budgets_.emplace(client, Budget{options_.new_reviews_burst, now}).first;
  }
  Budget& b = it->second;
  b.tokens = std::min(options_.new_reviews_burst,
                      b.tokens + ToSeconds(now - b.at) * options_.new_reviews_per_second);
  b.at = now;
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  ++reviews_under_way_;
  return true;
}

template <typename V>
std::optional<V> AccessReviewer::CachedOrAsked(TtlCache<V>* cache, const std::string& key,
                                               const std::string& client, const char* call,
                                               const std::function<StatusOr<V>()>& ask,
                                               const std::function<double(const V&)>& ttl,
                                               Decision* denied) {
  {
    MutexLock l(&mu_);
    if (const V* v = cache->Find(key, clock_->Now())) return *v;
    if (!MayAsk(client, clock_->Now())) {
      denied->status = 429;
      denied->message = "too many credentials to check at once: try again in a second";
      denied->detail = "over " + std::to_string(static_cast<int>(options_.new_reviews_per_second)) +
                       " new reviews a second from this address, or " +
                       std::to_string(options_.max_concurrent_reviews) + " under way";
      return std::nullopt;
    }
  }
  StatusOr<V> answer = ask();
  Asked();
  if (!answer.ok()) {
    LogApiError(call, answer.status());
    denied->status = 503;
    denied->message = std::string("cannot check credentials: the API server's ") + call +
                      " failed (the controller's log says why); try again";
    denied->detail = answer.status().ToString();
    return std::nullopt;
  }
  MutexLock l(&mu_);
  cache->Put(key, *answer, clock_->Now() + FromSeconds(ttl(*answer)));
  return std::move(*answer);
}

AccessReviewer::Decision AccessReviewer::Check(const std::string& authorization_header,
                                               AccessAttributes what, const std::string& client) {
  Decision d;
  const std::string token = BearerToken(authorization_header);
  if (token.empty() || token.size() > kMaxTokenBytes) {
    d.status = 401;
    d.message = authorization_header.empty()
                    ? "unauthorized: send \"Authorization: Bearer <token>\" (a Kubernetes token, "
                      "e.g. from kubectl create token)"
                    : "unauthorized: the Authorization header is not \"Bearer <token>\"";
    d.detail = authorization_header.empty() ? "no Authorization header" : "not a bearer token";
    return d;
  }

  // The caches are guarded by mu_, which CachedOrAsked takes around each use of them.
  std::optional<TokenReviewResult> who = CachedOrAsked<TokenReviewResult>(
      &tokens_, TokenKey(token), client, "TokenReview", [&] { return kube_->ReviewToken(token); },
      [&](const TokenReviewResult& r) {
        return r.authenticated ? options_.authenticated_ttl_seconds
                               : options_.unauthenticated_ttl_seconds;
      },
      &d);
  if (!who) return d;
  if (!who->authenticated) {
    d.status = 401;
    d.message = "unauthorized: the API server does not accept this bearer token";
    d.detail = who->error.empty() ? "not authenticated" : who->error;
    return d;
  }
  d.username = who->user.username;

  what.user = who->user;
  std::optional<AccessDecision> access = CachedOrAsked<AccessDecision>(
      &access_, EncodeSubjectAccessReview(what), client, "SubjectAccessReview",
      [&] { return kube_->ReviewAccess(what); },
      [&](const AccessDecision& a) {
        return a.Allows() ? options_.allowed_ttl_seconds : options_.denied_ttl_seconds;
      },
      &d);
  if (!access) return d;
  if (!access->Allows()) {
    d.status = 403;
    // The API server's own wording (its responsewriters' forbiddenMessage).
    const ResourceAttributes& r = what.resource;
    d.message = what.is_resource() ? "forbidden: User \"" + d.username + "\" cannot " + what.verb +
                                         " resource \"" + r.resource +
                                         (r.subresource.empty() ? "" : "/" + r.subresource) +
                                         "\" in API group \"" + r.group + "\" in the namespace \"" +
                                         r.namespace_name + "\""
                                   : "forbidden: User \"" + d.username + "\" cannot " + what.verb +
                                         " path \"" + what.path + "\"";
    d.detail =
        access->reason.empty() ? (access->denied ? "denied" : "no rule allows it") : access->reason;
    if (!access->evaluation_error.empty())
      d.detail += "; evaluation error: " + access->evaluation_error;
    return d;
  }
  d.allow = true;
  return d;
}

size_t AccessReviewer::TEST_token_entries() {
  MutexLock l(&mu_);
  return tokens_.size();
}

size_t AccessReviewer::TEST_access_entries() {
  MutexLock l(&mu_);
  return access_.size();
}

}  // namespace ds
