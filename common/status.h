// Errors as values. A Status is OK or carries a code, a message, and for errors that came from
// an HTTP peer the HTTP status and any Retry-After, so callers can decide whether to retry
// without parsing messages.
#pragma once

#include <glog/logging.h>

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace ds {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad configuration or input; retrying will not help
  kNotFound,
  kUnavailable,       // transport error, timeout, 5xx: retry with backoff
  kExpired,           // Kubernetes 410: the resourceVersion is gone, re-list
  kConflict,          // Kubernetes 409
  kTooManyRequests,   // 429: retry after retry_after_seconds
  kPermissionDenied,  // 401/403
  kCancelled,         // shutdown was requested
  kInternal,
};

const char* StatusCodeName(StatusCode code);

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // HTTP status of the response that produced this error, 0 when none (transport error).
  int http_status() const { return http_status_; }
  Status& set_http_status(int s) {
    http_status_ = s;
    return *this;
  }
  // Seconds the peer asked us to wait (Retry-After or details.retryAfterSeconds), 0 if none.
  double retry_after_seconds() const { return retry_after_seconds_; }
  // At most kMaxRetryAfterSeconds: a misbehaving server or proxy must not be able to stop every
  // write (or the cache) for days; API Priority and Fairness asks for seconds.
  static constexpr double kMaxRetryAfterSeconds = 600;
  Status& set_retry_after_seconds(double s) {
    retry_after_seconds_ = s > 0 ? (s < kMaxRetryAfterSeconds ? s : kMaxRetryAfterSeconds) : 0;
    return *this;
  }

  // True when the same request may succeed later.
  bool IsRetryable() const {
    return code_ == StatusCode::kUnavailable || code_ == StatusCode::kTooManyRequests ||
           code_ == StatusCode::kConflict;
  }

  // Returns a copy whose message is "context: message".
  Status Prepend(const std::string& context) const;
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  int http_status_ = 0;
  double retry_after_seconds_ = 0;
};

// A value or the Status that explains why there is none.
template <typename T>
class StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  StatusOr(Status status) : v_(std::move(status)) {  // NOLINT
    CHECK(!std::get<Status>(v_).ok()) << "StatusOr built from an OK Status";
  }
  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  // REQUIRES: ok()
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ds

#define DS_CONCAT_INNER(a, b) a##b
#define DS_CONCAT(a, b) DS_CONCAT_INNER(a, b)

#define RETURN_NOT_OK(expr)    \
  do {                         \
    ::ds::Status _st = (expr); \
    if (!_st.ok()) return _st; \
  } while (0)

#define RETURN_NOT_OK_PREPEND(expr, ctx)    \
  do {                                      \
    ::ds::Status _st = (expr);              \
    if (!_st.ok()) return _st.Prepend(ctx); \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

#define ASSIGN_OR_RETURN(lhs, expr) ASSIGN_OR_RETURN_IMPL(DS_CONCAT(_sor_, __LINE__), lhs, expr)
