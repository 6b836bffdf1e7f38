#include "common/tls_files_transport.h"

#include <glog/logging.h>

#include <utility>

namespace ds {

TlsFilesTransport::TlsFilesTransport(HttpAuthConfig auth, std::array<std::string, 3> names,
                                     Factory factory)
    : auth_(std::move(auth)), names_(std::move(names)), factory_(std::move(factory)) {
  const std::string* paths[3] = {&auth_.ca_file, &auth_.cert_file, &auth_.key_file};
  for (int i = 0; i < 3; ++i)
    if (!paths[i]->empty()) files_.push_back(std::make_unique<FileSecret>(*paths[i], names_[i]));
}

StatusOr<std::shared_ptr<HttpTransport>> TlsFilesTransport::Current() {
  std::vector<std::string> seen;
  Status problem;
  for (auto& f : files_) {
    auto content = f->Get();
    if (!content.ok()) {
      problem = content.status();
      break;
    }
    seen.push_back(std::move(*content));
  }
  MutexLock l(&mu_);
  const bool changed = problem.ok() && (current_ == nullptr || seen != loaded_);
  if (changed && seen == rejected_) {
    problem = rejected_why_;  // the set that did not load: not read again
  } else if (changed) {
    // FileSecret tells that something changed; LoadTlsFiles reads the files whole and checks them
    // as at start-up, so a rotated set is held to the same rules as the first.
    const std::string names[3] = {names_[0], names_[1], names_[2]};
    auto tls = LoadTlsFiles(auth_, names);
    if (tls.ok()) {
      current_ = factory_ ? std::shared_ptr<HttpTransport>(factory_(*tls))
                          : std::make_shared<CurlTransport>(std::move(*tls));
      loaded_ = std::move(seen);
      rejected_.clear();
      if (++loads_ > 1) LOG(INFO) << "Prometheus TLS files changed: new connections use them";
      last_error_.clear();
    } else {
      problem = tls.status();
      rejected_ = std::move(seen);
      rejected_why_ = problem;
    }
  }
  if (!problem.ok()) {
    if (problem.message() != last_error_) {
      last_error_ = problem.message();
      LOG(WARNING) << "Prometheus TLS files: " << last_error_
                   << (current_ ? "; the files loaded before stay in use" : "");
    }
    if (current_ == nullptr) return Status::Unavailable(problem.message());
  }
  return current_;
}

StatusOr<HttpResponse> TlsFilesTransport::Do(const HttpRequest& req) {
  ASSIGN_OR_RETURN(std::shared_ptr<HttpTransport> t, Current());
  return t->Do(req);
}

StatusOr<StreamResult> TlsFilesTransport::Stream(
    const HttpRequest& req, const std::function<bool(std::string_view)>& on_data,
    const std::function<bool()>& cancelled) {
  ASSIGN_OR_RETURN(std::shared_ptr<HttpTransport> t, Current());
  return t->Stream(req, on_data, cancelled);
}

int TlsFilesTransport::loads() const {
  MutexLock l(&mu_);
  return loads_;
}

}  // namespace ds
