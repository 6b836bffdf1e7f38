// How to reach and authenticate to the Kubernetes API: from a kubeconfig file (current-context)
// or from the in-cluster service account. Every field that cannot work is reported by name.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/http_transport.h"
#include "common/status.h"

namespace ds {

// A users[].user.exec stanza: a credential plugin (client.authentication.k8s.io ExecCredential),
// run by kube/exec_credential.h when a request needs a credential.
struct ExecConfig {
  std::string api_version;  // client.authentication.k8s.io/v1 or /v1beta1
  // As written, or resolved against the defining kubeconfig's directory when it contains a '/'
  // (kubectl's rule); a bare name is looked up in $PATH.
  std::string command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;  // added to the controller's environment
  std::string install_hint;                              // shown when the command is not found
  bool provide_cluster_info = false;
  std::string interactive_mode;  // "Never" or "IfAvailable" ("Always" is refused: no terminal)
  std::string where;             // "file:line: users[NAME].user.exec", for errors
};

struct RestConfig {
  std::string server;  // "https://host:port" without a trailing slash
  TlsOptions tls;      // tls.server_name: the cluster's tls-server-name
  // The cluster's proxy-url: http://, https:// or socks5://[user:password@]host[:port] (the
  // scheme lower-cased), for every request to the server; empty: none configured (libcurl then
  // honours the *_proxy variables, as client-go does).
  std::string proxy_url;
  std::string token;               // static bearer token
  std::string token_file;          // bearer token read from this file (re-read: tokens rotate)
  std::string username, password;  // basic auth
  ExecConfig exec;                 // a credential plugin when exec.command is not empty
  std::string namespace_name;  // the context's namespace, or the service account's; may be empty
  std::string description;     // where this came from, for logs (never credentials)
};

// One kubeconfig file's text and the path that names it in errors and anchors its relative paths.
struct KubeconfigText {
  std::string path;
  std::string text;
};

// Merges kubeconfig files as kubectl does for $KUBECONFIG: a cluster, user or context name
// defined in several files comes from the first; current-context from the first file that sets
// it; relative paths (certificate-authority, client-certificate, client-key, tokenFile, an exec
// command with a '/') resolve against the directory of the file that holds them. `context`
// overrides current-context when non-empty. Errors name the file (and line, where known) and the
// field. REQUIRES: files is not empty.
StatusOr<RestConfig> ParseKubeconfigs(const std::vector<KubeconfigText>& files,
                                      const std::string& context = "");
// One file (an explicit -kubeconfig).
StatusOr<RestConfig> ParseKubeconfig(const std::string& text, const std::string& path,
                                     const std::string& context = "");
StatusOr<RestConfig> LoadKubeconfigFile(const std::string& path, const std::string& context = "");
// The entries of a $KUBECONFIG value (':'-separated) that exist, in order; empty entries and
// missing files are skipped.
std::vector<std::string> KubeconfigPathList(const std::string& env_value);

// In-cluster config: KUBERNETES_SERVICE_HOST/PORT and the service-account folder.
StatusOr<RestConfig> InClusterConfig(
    const std::string& sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// The controller's precedence: explicit path (that file only), then $KUBECONFIG (its existing
// files, merged), then ~/.kube/config, then in-cluster.
StatusOr<RestConfig> ResolveRestConfig(const std::string& flag_path, const std::string& context);

}  // namespace ds
