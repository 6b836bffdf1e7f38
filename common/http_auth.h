// How a client proves who it is to an HTTP API other than Kubernetes (Prometheus, Thanos, Mimir,
// VictoriaMetrics, or a proxy in front of them): credentials kept in files, because tokens and
// passwords rotate and must not sit in flags (visible in `ps`) or in logs; extra headers a
// multi-tenant backend routes on (X-Scope-OrgID); and the TLS files the transport needs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/http_transport.h"
#include "common/status.h"

namespace ds {

struct HttpAuthConfig {
  std::string bearer_token_file;  // "Authorization: Bearer <content>"; re-read when it changes
  std::string basic_auth_user;
  std::string basic_auth_password_file;  // required with basic_auth_user; re-read likewise
  std::vector<std::string> headers;      // "Name: value", each passed CheckHeaderLine
  std::string ca_file;                   // PEM bundle to verify the server; "" = system CAs
  std::string cert_file, key_file;       // client certificate and its key (PEM), both or neither
  bool insecure_skip_verify = false;

  bool has_tls_files() const { return !ca_file.empty() || !cert_file.empty(); }
};

// Checks one "Name: value" header: the name an HTTP token (RFC 9110), not one the client sets
// itself (Authorization has its own options; Host, Content-Type and Content-Length belong to the
// request), the value free of control characters. Returns the header as "Name: value" (blanks
// around the value trimmed) or kInvalidArgument saying what is wrong; the message quotes the
// name only, as the value may be a secret.
StatusOr<std::string> CheckHeaderLine(std::string_view line);

// The Authorization header for the given credentials: "Authorization: Bearer <token>" when the
// token is not empty, else "Authorization: Basic <base64(user:password)>" when the user is not
// empty, else "".
std::string AuthorizationHeader(const std::string& token, const std::string& user,
                                const std::string& password);

// Reads the TLS files named in `auth` into transport options. `names` gives the option names
// for messages, in the order ca, cert, key (e.g. {"-prom_ca_file", ...}). Errors
// (kInvalidArgument) name the option and the file: unreadable, or not PEM.
StatusOr<TlsOptions> LoadTlsFiles(const HttpAuthConfig& auth, const std::string (&names)[3]);

}  // namespace ds
