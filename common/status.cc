#include "common/status.h"

namespace ds {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kUnavailable:
      return "Unavailable";
    case StatusCode::kExpired:
      return "Expired";
    case StatusCode::kConflict:
      return "Conflict";
    case StatusCode::kTooManyRequests:
      return "TooManyRequests";
    case StatusCode::kPermissionDenied:
      return "PermissionDenied";
    case StatusCode::kCancelled:
      return "Cancelled";
    case StatusCode::kInternal:
      return "Internal";
  }
  return "Unknown";
}

Status Status::Prepend(const std::string& context) const {
  if (ok()) return *this;
  Status s = *this;
  s.message_ = context + ": " + message_;
  return s;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s = StatusCodeName(code_);
  if (http_status_ != 0) s += " (HTTP " + std::to_string(http_status_) + ")";
  return s + ": " + message_;
}

}  // namespace ds
