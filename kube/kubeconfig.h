// How to reach and authenticate to the Kubernetes API: from a kubeconfig file (current-context)
// or from the in-cluster service account. Every field that cannot work is reported by name.
#pragma once

#include <string>

#include "common/http_transport.h"
#include "common/status.h"

namespace ds {

struct RestConfig {
  std::string server;  // "https://host:port" without a trailing slash
  TlsOptions tls;
  std::string token;               // static bearer token
  std::string token_file;          // bearer token read from this file (re-read: tokens rotate)
  std::string username, password;  // basic auth
  std::string namespace_name;  // the context's namespace, or the service account's; may be empty
  std::string description;     // where this came from, for logs (never credentials)
};

// Parses kubeconfig text. `path` names the file in errors and anchors relative file paths.
// `context` overrides current-context when non-empty.
StatusOr<RestConfig> ParseKubeconfig(const std::string& text, const std::string& path,
                                     const std::string& context = "");
StatusOr<RestConfig> LoadKubeconfigFile(const std::string& path, const std::string& context = "");

// In-cluster config: KUBERNETES_SERVICE_HOST/PORT and the service-account folder.
StatusOr<RestConfig> InClusterConfig(
    const std::string& sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// The controller's precedence: explicit path, then $KUBECONFIG (first existing entry of the
// list), then ~/.kube/config, then in-cluster.
StatusOr<RestConfig> ResolveRestConfig(const std::string& flag_path, const std::string& context);

}  // namespace ds
