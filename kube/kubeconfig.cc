#include "kube/kubeconfig.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/base64.h"
#include "common/yaml_guard.h"

namespace ds {
namespace {

bool FileExists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

StatusOr<std::string> ReadFile(const std::string& path, const std::string& field) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument(field + ": cannot read file \"" + path + "\"");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Dir(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string Resolve(const std::string& base_dir, const std::string& p) {
  if (p.empty() || p[0] == '/') return p;
  return base_dir + "/" + p;
}

std::string Scalar(const YAML::Node& map, const char* key) {
  if (!map || !map.IsMap() || !map[key] || !map[key].IsScalar()) return "";
  return map[key].Scalar();
}

// Loads PEM from `<key>-data` (base64) or `<key>` (file path).
Status LoadPem(const YAML::Node& map, const std::string& key, const std::string& where,
               const std::string& base_dir, std::string* out) {
  std::string data = Scalar(map, (key + "-data").c_str());
  std::string file = Scalar(map, key.c_str());
  if (!data.empty()) {
    auto dec = Base64Decode(data);
    if (!dec.ok())
      return Status::InvalidArgument(where + "." + key + "-data: " + dec.status().message());
    *out = std::move(*dec);
  } else if (!file.empty()) {
    ASSIGN_OR_RETURN(*out, ReadFile(Resolve(base_dir, file), where + "." + key));
  } else {
    return Status::OK();
  }
  if (out->find("-----BEGIN") == std::string::npos)
    return Status::InvalidArgument(where + "." + key + (data.empty() ? "" : "-data") +
                                   ": not PEM (no -----BEGIN line)");
  return Status::OK();
}

// A client certificate that cannot work fails the TLS handshake with nothing more than a closed
// connection, so check what can be checked locally: expiry and whether the key belongs to it.
Status CheckClientCertificate(const std::string& cert_pem, const std::string& key_pem,
                              const std::string& where) {
  BIO* cb = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  X509* cert = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
  BIO_free(cb);
  if (cert == nullptr)
    return Status::InvalidArgument(where + ".client-certificate: not a PEM certificate");
  Status st;
  auto date = [](const ASN1_TIME* t) {
    BIO* b = BIO_new(BIO_s_mem());
    ASN1_TIME_print(b, t);
    char* data = nullptr;
    long n = BIO_get_mem_data(b, &data);
    std::string s(data, static_cast<size_t>(n));
    BIO_free(b);
    return s;
  };
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0) {
    st = Status::InvalidArgument(where + ".client-certificate: expired on " +
                                 date(X509_get0_notAfter(cert)));
  } else if (X509_cmp_current_time(X509_get0_notBefore(cert)) > 0) {
    st = Status::InvalidArgument(where + ".client-certificate: not valid before " +
                                 date(X509_get0_notBefore(cert)));
  } else {
    BIO* kb = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
    EVP_PKEY* key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
    BIO_free(kb);
    if (key == nullptr) {
      st = Status::InvalidArgument(where +
                                   ".client-key: not a PEM private key (or it is encrypted)");
    } else if (X509_check_private_key(cert, key) != 1) {
      st = Status::InvalidArgument(where + ".client-key: does not match client-certificate");
    }
    EVP_PKEY_free(key);
  }
  X509_free(cert);
  ERR_clear_error();
  return st;
}

}  // namespace

namespace {

// Where a node was written, for errors: "file:line".
std::string At(const std::string& path, const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  return m.is_null() ? path : path + ":" + std::to_string(m.line + 1);
}

// An error in one users[].user.exec stanza, "file:line: <field><sub>: <problem>", at the node
// concerned, or at the stanza when that node is missing.
struct ExecErrors {
  const std::string& path;
  const YAML::Node& exec;
  const std::string& field;
  Status operator()(const YAML::Node& at, const std::string& sub,
                    const std::string& problem) const {
    return Status::InvalidArgument(At(path, at ? at : exec) + ": " + field + sub + ": " + problem);
  }
};

// exec.args: a list of strings.
Status ParseExecArgs(const YAML::Node& args, const ExecErrors& bad, std::vector<std::string>* out) {
  if (!args.IsSequence()) return bad(args, ".args", "must be a list of strings");
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].IsScalar())
      return bad(args[i], ".args[" + std::to_string(i) + "]", "must be a string");
    out->push_back(args[i].Scalar());
  }
  return Status::OK();
}

// exec.env: a list of {name, value}, added to the plugin's environment.
Status ParseExecEnv(const YAML::Node& env, const ExecErrors& bad,
                    std::vector<std::pair<std::string, std::string>>* out) {
  if (!env.IsSequence()) return bad(env, ".env", "must be a list of {name, value}");
  for (size_t i = 0; i < env.size(); ++i) {
    const std::string sub = ".env[" + std::to_string(i) + "]";
    const YAML::Node item = env[i];
    if (!item.IsMap()) return bad(item, sub, "must be a mapping with name and value");
    std::string name = Scalar(item, "name");
    if (name.empty() || name.find('=') != std::string::npos)
      return bad(item, sub + ".name", "must be a non-empty variable name without '='");
    if (item["value"] && !item["value"].IsNull() && !item["value"].IsScalar())
      return bad(item["value"], sub + ".value", "must be a string");
    out->emplace_back(name, Scalar(item, "value"));
  }
  return Status::OK();
}

// exec.interactiveMode (`at`; *mode as read, "" when absent): required by v1, IfAvailable by
// default for v1beta1, and never Always, since the controller has no terminal.
Status CheckInteractiveMode(const YAML::Node& at, bool v1, const ExecErrors& bad,
                            std::string* mode) {
  if (mode->empty()) {
    if (v1)
      return bad(at, ".interactiveMode",
                 "is required with client.authentication.k8s.io/v1 (Never or IfAvailable)");
    *mode = "IfAvailable";
  } else if (*mode == "Always") {
    return bad(at, ".interactiveMode",
               "Always needs a terminal, and the controller never has one: use Never or "
               "IfAvailable");
  } else if (*mode != "Never" && *mode != "IfAvailable") {
    return bad(at, ".interactiveMode",
               "\"" + *mode + "\" is not one of Never, IfAvailable, Always");
  }
  return Status::OK();
}

// users[].user.exec, checked field by field (client-go's rules for v1 and v1beta1).
StatusOr<ExecConfig> ParseExec(const YAML::Node& exec, const std::string& path,
                               const std::string& field, const std::string& base_dir) {
  const ExecErrors bad{path, exec, field};
  if (!exec.IsMap()) return bad(exec, "", "must be a mapping (apiVersion, command, ...)");
  auto scalar = [&](const char* key, std::string* out) -> Status {
    const YAML::Node v = exec[key];
    if (!v || v.IsNull()) return Status::OK();
    if (!v.IsScalar()) return bad(v, std::string(".") + key, "must be a string");
    *out = v.Scalar();
    return Status::OK();
  };
  ExecConfig e;
  RETURN_NOT_OK(scalar("apiVersion", &e.api_version));
  RETURN_NOT_OK(scalar("command", &e.command));
  RETURN_NOT_OK(scalar("installHint", &e.install_hint));
  RETURN_NOT_OK(scalar("interactiveMode", &e.interactive_mode));
  const bool v1 = e.api_version == "client.authentication.k8s.io/v1";
  if (e.api_version.empty()) return bad(exec["apiVersion"], ".apiVersion", "is not set");
  if (!v1 && e.api_version != "client.authentication.k8s.io/v1beta1")
    return bad(
        exec["apiVersion"], ".apiVersion",
        "\"" + e.api_version + "\" is not supported (client.authentication.k8s.io/v1 or /v1beta1)");
  if (e.command.empty()) return bad(exec["command"], ".command", "is not set");
  // A path with a separator is the kubeconfig author's file, next to the kubeconfig; a bare
  // name is looked up in $PATH when the plugin runs.
  if (e.command.find('/') != std::string::npos) e.command = Resolve(base_dir, e.command);
  if (const YAML::Node args = exec["args"]; args && !args.IsNull())
    RETURN_NOT_OK(ParseExecArgs(args, bad, &e.args));
  if (const YAML::Node env = exec["env"]; env && !env.IsNull())
    RETURN_NOT_OK(ParseExecEnv(env, bad, &e.env));
  if (const YAML::Node pci = exec["provideClusterInfo"]; pci && !pci.IsNull()) {
    if (!pci.IsScalar() || (pci.Scalar() != "true" && pci.Scalar() != "false"))
      return bad(pci, ".provideClusterInfo", "must be true or false");
    e.provide_cluster_info = pci.Scalar() == "true";
  }
  RETURN_NOT_OK(CheckInteractiveMode(exec["interactiveMode"], v1, bad, &e.interactive_mode));
  e.where = At(path, exec) + ": " + field;
  return e;
}

// A parsed file of the merge.
struct Loaded {
  std::string path;
  YAML::Node root;  // a map, or null for an empty file of several
};

// The first file's entry named `name` in list `list` (clusters, users, contexts): kubectl's merge
// keeps the first definition of each name. Returns the entry's `inner` node and sets *path to
// the defining file; leaves *path alone when no file defines the name.
YAML::Node FindFirst(const std::vector<Loaded>& files, const char* list, const std::string& name,
                     const char* inner, std::string* path) {
  for (const auto& f : files) {
    if (!f.root.IsMap()) continue;
    const YAML::Node l = f.root[list];
    if (!l || !l.IsSequence()) continue;
    for (const auto& e : l) {
      if (e.IsMap() && e["name"] && e["name"].IsScalar() && e["name"].Scalar() == name) {
        *path = f.path;
        return e[inner];
      }
    }
  }
  return YAML::Node();
}

// A string field of `map` that, when present, must be a non-empty scalar.
StatusOr<std::string> OptionalString(const YAML::Node& map, const char* key,
                                     const std::string& where) {
  const YAML::Node v = map[key];
  if (!v || v.IsNull()) return std::string();
  if (!v.IsScalar() || v.Scalar().empty())
    return Status::InvalidArgument(where + "." + key + " must be a non-empty string");
  return v.Scalar();
}

// clusters[].cluster.tls-server-name: the name the server's certificate is checked against (and
// the SNI) instead of the server URL's host. A DNS name or an IP address, as client-go's
// tls.Config.ServerName.
StatusOr<std::string> TlsServerName(const YAML::Node& cluster, const std::string& where) {
  ASSIGN_OR_RETURN(std::string name, OptionalString(cluster, "tls-server-name", where));
  const bool ipv6 = name.find(':') != std::string::npos;
  for (unsigned char c : name) {
    if (std::isalnum(c) || c == '.' || c == '-' || (ipv6 && c == ':')) continue;
    return Status::InvalidArgument(where + ".tls-server-name \"" + name +
                                   "\" is not a host name or IP address");
  }
  return name;
}

// The URL without its user information (a proxy password), for messages and logs.
std::string WithoutUserInfo(const std::string& url) {
  const size_t start = url.find("://");
  if (start == std::string::npos) return url;
  // The last '@' anywhere: a password with an unencoded '/', '?' or '#' would otherwise end
  // the authority early and be shown (a path with an '@' is cut too, which only hides more).
  const size_t at = url.rfind('@');
  if (at == std::string::npos || at < start) return url;
  return url.substr(0, start + 3) + url.substr(at + 1);
}

// clusters[].cluster.proxy-url: scheme http, https or socks5 (client-go's three), a host, and
// a port if given in digits. Returns it with the scheme lower-cased (Go's URL parser does that).
StatusOr<std::string> ProxyUrl(const YAML::Node& cluster, const std::string& where) {
  ASSIGN_OR_RETURN(std::string url, OptionalString(cluster, "proxy-url", where));
  if (url.empty()) return url;
  const std::string shown = "\"" + WithoutUserInfo(url) + "\"";
  const size_t sep = url.find("://");
  if (sep == std::string::npos || sep == 0)
    return Status::InvalidArgument(where + ".proxy-url " + shown +
                                   " is not a URL (e.g. http://proxy.example:3128)");
  for (size_t i = 0; i < sep; ++i) url[i] = static_cast<char>(std::tolower(url[i]));
  const std::string scheme = url.substr(0, sep);
  if (scheme != "http" && scheme != "https" && scheme != "socks5")
    return Status::InvalidArgument(where + ".proxy-url " + shown + ": scheme \"" + scheme +
                                   "\" is not supported (http, https or socks5)");
  std::string authority = url.substr(sep + 3, url.find_first_of("/?#", sep + 3) - (sep + 3));
  if (const size_t at = authority.rfind('@'); at != std::string::npos)
    authority = authority.substr(at + 1);
  std::string port;
  if (const size_t close = authority.rfind(']'), colon = authority.rfind(':');
      colon != std::string::npos && (close == std::string::npos || colon > close)) {
    port = authority.substr(colon + 1);
    authority.resize(colon);
    if (port.empty() || port.size() > 5 ||
        port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) == 0 ||
        std::stoi(port) > 65535)
      return Status::InvalidArgument(where + ".proxy-url " + shown + ": port \"" + port +
                                     "\" is not a number from 1 to 65535");
  }
  if (authority.empty() || authority == "[]")
    return Status::InvalidArgument(where + ".proxy-url " + shown + " names no host");
  return url;
}

// clusters[].cluster: the server's URL and what its TLS needs. `where` names the entry, `base_dir`
// is its file's directory.
Status ParseCluster(const YAML::Node& cluster, const std::string& where,
                    const std::string& base_dir, RestConfig* cfg) {
  cfg->server = Scalar(cluster, "server");
  while (!cfg->server.empty() && cfg->server.back() == '/') cfg->server.pop_back();
  if (cfg->server.empty()) return Status::InvalidArgument(where + ".server is not set");
  if (cfg->server.rfind("https://", 0) != 0 && cfg->server.rfind("http://", 0) != 0)
    return Status::InvalidArgument(where + ".server \"" + cfg->server +
                                   "\" must start with https:// (or http://)");
  ASSIGN_OR_RETURN(cfg->tls.server_name, TlsServerName(cluster, where));
  if (!cfg->tls.server_name.empty() && cfg->server.rfind("https://", 0) != 0)
    return Status::InvalidArgument(where + ".tls-server-name needs an https:// server, not \"" +
                                   cfg->server + "\"");
  ASSIGN_OR_RETURN(cfg->proxy_url, ProxyUrl(cluster, where));
  cfg->tls.insecure_skip_verify = Scalar(cluster, "insecure-skip-tls-verify") == "true";
  return LoadPem(cluster, "certificate-authority", where, base_dir, &cfg->tls.ca_pem);
}

// A user's client-certificate and client-key: both or neither, and checked against each other.
Status LoadClientCertificate(const YAML::Node& user, const std::string& uwhere,
                             const std::string& base_dir, TlsOptions* tls) {
  RETURN_NOT_OK(LoadPem(user, "client-certificate", uwhere, base_dir, &tls->client_cert_pem));
  RETURN_NOT_OK(LoadPem(user, "client-key", uwhere, base_dir, &tls->client_key_pem));
  if (tls->client_cert_pem.empty() != tls->client_key_pem.empty())
    return Status::InvalidArgument(uwhere +
                                   ": client-certificate and client-key must be given together");
  if (!tls->client_cert_pem.empty())
    RETURN_NOT_OK(CheckClientCertificate(tls->client_cert_pem, tls->client_key_pem, uwhere));
  return Status::OK();
}

// The context's user (users[].user, from the first file that defines it): its credentials.
// `cwhere` names the context.
Status ParseUser(const std::vector<Loaded>& files, const std::string& user_name,
                 const std::string& cwhere, RestConfig* cfg) {
  std::string user_path;
  YAML::Node user = FindFirst(files, "users", user_name, "user", &user_path);
  if (user_path.empty())  // (a missing entry's Node() still counts as defined)
    return Status::InvalidArgument(cwhere + " names user \"" + user_name +
                                   "\", which is not in users");
  if (!user.IsMap()) return Status::OK();  // (an empty `user:`): no credentials
  const std::string uwhere = user_path + ": users[" + user_name + "].user";
  const std::string base = Dir(user_path);
  if (user["auth-provider"])
    return Status::InvalidArgument(
        uwhere +
        ".auth-provider is not supported: use an exec credential plugin instead "
        "(users[].user.exec), e.g. kubelogin for OIDC or Azure, gke-gcloud-auth-plugin for GKE");
  RETURN_NOT_OK(LoadClientCertificate(user, uwhere, base, &cfg->tls));
  cfg->token = Scalar(user, "token");
  std::string tf = Scalar(user, "tokenFile");
  if (!tf.empty()) {
    cfg->token_file = Resolve(base, tf);
    if (!FileExists(cfg->token_file))
      return Status::InvalidArgument(uwhere + ".tokenFile: cannot read file \"" + cfg->token_file +
                                     "\"");
  }
  cfg->username = Scalar(user, "username");
  cfg->password = Scalar(user, "password");
  if (const YAML::Node exec = user["exec"]; exec && !exec.IsNull()) {
    ASSIGN_OR_RETURN(cfg->exec,
                     ParseExec(exec, user_path, "users[" + user_name + "].user.exec", base));
    // Which credential would be sent is then a guess (client-go lets a static one win
    // silently); say so instead.
    if (!cfg->token.empty() || !cfg->token_file.empty() || !cfg->username.empty() ||
        !cfg->tls.client_cert_pem.empty())
      return Status::InvalidArgument(
          cfg->exec.where +
          ": cannot be combined with token, tokenFile, username or client-certificate in "
          "the same user");
  }
  return Status::OK();
}

StatusOr<RestConfig> ResolveContext(const std::vector<Loaded>& files,
                                    const std::string& context_override,
                                    const std::string& all_paths) {
  std::string ctx_name = context_override;
  for (size_t i = 0; ctx_name.empty() && i < files.size(); ++i)
    ctx_name = Scalar(files[i].root, "current-context");
  if (ctx_name.empty())
    return Status::InvalidArgument(all_paths +
                                   ": current-context is not set (and no -context given)");
  std::string ctx_path = all_paths;
  YAML::Node ctx = FindFirst(files, "contexts", ctx_name, "context", &ctx_path);
  if (!ctx || !ctx.IsMap())
    return Status::InvalidArgument(ctx_path + ": contexts: no context named \"" + ctx_name + "\"");
  std::string cluster_name = Scalar(ctx, "cluster");
  std::string user_name = Scalar(ctx, "user");
  const std::string cwhere = ctx_path + ": context \"" + ctx_name + "\"";
  if (cluster_name.empty()) return Status::InvalidArgument(cwhere + ": context.cluster is not set");
  std::string cluster_path;
  YAML::Node cluster = FindFirst(files, "clusters", cluster_name, "cluster", &cluster_path);
  if (!cluster || !cluster.IsMap())
    return Status::InvalidArgument(cwhere + " names cluster \"" + cluster_name +
                                   "\", which is not in clusters");
  RestConfig cfg;
  const std::string where = cluster_path + ": clusters[" + cluster_name + "].cluster";
  RETURN_NOT_OK(ParseCluster(cluster, where, Dir(cluster_path), &cfg));
  if (!user_name.empty()) RETURN_NOT_OK(ParseUser(files, user_name, cwhere, &cfg));
  bool has_credentials = !cfg.token.empty() || !cfg.token_file.empty() || !cfg.username.empty() ||
                         !cfg.exec.command.empty();
  if (has_credentials && cfg.server.rfind("http://", 0) == 0)
    return Status::InvalidArgument(
        where + ".server is plain http://; refusing to send credentials without TLS");
  cfg.namespace_name = Scalar(ctx, "namespace");
  cfg.description =
      all_paths + " (context " + ctx_name + ", server " + cfg.server +
      (cfg.tls.server_name.empty() ? "" : ", tls-server-name " + cfg.tls.server_name) +
      (cfg.proxy_url.empty() ? "" : ", proxy " + WithoutUserInfo(cfg.proxy_url)) + ")";
  return cfg;
}

}  // namespace

StatusOr<RestConfig> ParseKubeconfigs(const std::vector<KubeconfigText>& texts,
                                      const std::string& context_override) {
  std::vector<Loaded> files;
  std::string all_paths;
  for (const auto& t : texts) {
    const std::string& path = t.path;
    all_paths += (all_paths.empty() ? "" : ":") + path;
    if (std::string why = YamlNestingProblem(t.text); !why.empty())
      return Status::InvalidArgument(path + ": " + why);
    if (t.text.size() > (16u << 20)) return Status::InvalidArgument(path + ": larger than 16 MiB");
    Loaded f{path, YAML::Node()};
    try {
      f.root = YAML::Load(t.text);
    } catch (const YAML::Exception& e) {
      return Status::InvalidArgument(path + ":" + std::to_string(e.mark.line + 1) +
                                     ": not valid YAML: " + e.msg);
    }
    // kubectl merges an empty file as an empty config; one of several may well be empty.
    if (!f.root.IsMap() && !(f.root.IsNull() && texts.size() > 1))
      return Status::InvalidArgument(path + ": not a kubeconfig (no mapping)");
    files.push_back(std::move(f));
  }
  try {
    return ResolveContext(files, context_override, all_paths);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(all_paths + ":" + std::to_string(e.mark.line + 1) + ": " +
                                   e.msg);
  }
}

StatusOr<RestConfig> ParseKubeconfig(const std::string& text, const std::string& path,
                                     const std::string& context_override) {
  return ParseKubeconfigs({KubeconfigText{path, text}}, context_override);
}

StatusOr<RestConfig> LoadKubeconfigFile(const std::string& path, const std::string& context) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path, "kubeconfig"));
  return ParseKubeconfig(text, path, context);
}

std::vector<std::string> KubeconfigPathList(const std::string& env_value) {
  std::vector<std::string> out;
  std::stringstream ss(env_value);
  std::string p;
  while (std::getline(ss, p, ':'))
    if (!p.empty() && FileExists(p)) out.push_back(p);
  return out;
}

StatusOr<RestConfig> InClusterConfig(const std::string& sa_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0' || *port == '\0')
    return Status::InvalidArgument(
        "no kubeconfig found (-kubeconfig, $KUBECONFIG, ~/.kube/config) and not in a cluster "
        "(KUBERNETES_SERVICE_HOST/PORT unset)");
  RestConfig cfg;
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6
  cfg.server = "https://" + h + ":" + port;
  cfg.token_file = sa_dir + "/token";
  if (!FileExists(cfg.token_file))
    return Status::InvalidArgument("in-cluster: service-account token " + cfg.token_file +
                                   " is missing");
  ASSIGN_OR_RETURN(cfg.tls.ca_pem, ReadFile(sa_dir + "/ca.crt", "in-cluster CA"));
  if (auto ns = ReadFile(sa_dir + "/namespace", "in-cluster namespace"); ns.ok()) {
    cfg.namespace_name = *ns;
    while (!cfg.namespace_name.empty() &&
           std::isspace(static_cast<unsigned char>(cfg.namespace_name.back())))
      cfg.namespace_name.pop_back();
  }
  cfg.description = "in-cluster service account (server " + cfg.server + ")";
  return cfg;
}

StatusOr<RestConfig> ResolveRestConfig(const std::string& flag_path, const std::string& context) {
  if (!flag_path.empty()) return LoadKubeconfigFile(flag_path, context);
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    std::vector<KubeconfigText> texts;
    for (const auto& p : KubeconfigPathList(env)) {
      ASSIGN_OR_RETURN(std::string text, ReadFile(p, "kubeconfig"));
      texts.push_back({p, std::move(text)});
    }
    if (!texts.empty()) return ParseKubeconfigs(texts, context);
  }
  if (const char* home = std::getenv("HOME"); home != nullptr) {
    std::string p = std::string(home) + "/.kube/config";
    if (FileExists(p)) return LoadKubeconfigFile(p, context);
  }
  return InClusterConfig();
}

}  // namespace ds
