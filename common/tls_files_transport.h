// An HttpTransport whose TLS files rotate while the process runs. cert-manager renews a client
// certificate weeks before it expires and a Secret volume swaps the files in place; a transport
// built once from the files read at start-up would present the old certificate until it expires
// and then fail every query until the controller is restarted.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/file_secret.h"
#include "common/http_auth.h"
#include "common/http_transport.h"
#include "common/mutex.h"

namespace ds {

class TlsFilesTransport : public HttpTransport {
 public:
  using Factory = std::function<std::unique_ptr<HttpTransport>(const TlsOptions&)>;

  // `auth` names the CA, certificate and key files (and insecure_skip_verify); `names` the option
  // or field of each, in the order ca, cert, key, for messages. `factory` builds the transport for
  // a set of files (a CurlTransport by default). Reads nothing yet.
  TlsFilesTransport(HttpAuthConfig auth, std::array<std::string, 3> names, Factory factory = {});

  // Each request first checks the files (one stat() each, through FileSecret). When their content
  // differs from the set in use, they are loaded again (LoadTlsFiles: readable, PEM) and this and
  // later requests go out on a new transport built from them, on new connections; requests in
  // flight finish on the old one. A set that does not load (a rotation half done, a file gone)
  // keeps the set in use and is logged once per distinct problem; with no set in use yet, the
  // request fails with that error (kUnavailable) and no request is sent. Thread-safe.
  StatusOr<HttpResponse> Do(const HttpRequest& req) override;
  StatusOr<StreamResult> Stream(const HttpRequest& req,
                                const std::function<bool(std::string_view)>& on_data,
                                const std::function<bool()>& cancelled) override;

  // How many transports have been built (1 after the first request, +1 per rotation seen).
  int loads() const;

 private:
  StatusOr<std::shared_ptr<HttpTransport>> Current();

  const HttpAuthConfig auth_;
  const std::array<std::string, 3> names_;
  const Factory factory_;
  std::vector<std::unique_ptr<FileSecret>> files_;  // the configured ones of ca, cert, key

  mutable Mutex mu_;
  std::shared_ptr<HttpTransport> current_ GUARDED_BY(mu_);  // null until a set has loaded
  std::vector<std::string> loaded_ GUARDED_BY(mu_);         // the files' content behind current_
  std::vector<std::string> rejected_ GUARDED_BY(mu_);       // the content that did not load
  Status rejected_why_ GUARDED_BY(mu_);                     // and why
  std::string last_error_ GUARDED_BY(mu_);                  // the problem last logged
  int loads_ GUARDED_BY(mu_) = 0;
};

}  // namespace ds
