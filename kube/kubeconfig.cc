#include "kube/kubeconfig.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

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

// Finds the entry named `name` in a list like clusters: [{name, cluster: {...}}].
YAML::Node FindNamed(const YAML::Node& list, const std::string& name, const char* inner) {
  if (!list || !list.IsSequence()) return YAML::Node();
  for (const auto& e : list)
    if (e.IsMap() && e["name"] && e["name"].Scalar() == name) return e[inner];
  return YAML::Node();
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

StatusOr<RestConfig> ParseKubeconfig(const std::string& text, const std::string& path,
                                     const std::string& context_override) {
  if (std::string why = YamlNestingProblem(text); !why.empty())
    return Status::InvalidArgument(path + ": " + why);
  if (text.size() > (16u << 20)) return Status::InvalidArgument(path + ": larger than 16 MiB");
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(path + ":" + std::to_string(e.mark.line + 1) +
                                   ": not valid YAML: " + e.msg);
  }
  if (!root || !root.IsMap())
    return Status::InvalidArgument(path + ": not a kubeconfig (no mapping)");
  try {
    std::string ctx_name =
        context_override.empty() ? Scalar(root, "current-context") : context_override;
    if (ctx_name.empty())
      return Status::InvalidArgument(path + ": current-context is not set (and no -context given)");
    YAML::Node ctx = FindNamed(root["contexts"], ctx_name, "context");
    if (!ctx || !ctx.IsMap())
      return Status::InvalidArgument(path + ": contexts: no context named \"" + ctx_name + "\"");
    std::string cluster_name = Scalar(ctx, "cluster");
    std::string user_name = Scalar(ctx, "user");
    const std::string cwhere = path + ": context \"" + ctx_name + "\"";
    if (cluster_name.empty())
      return Status::InvalidArgument(cwhere + ": context.cluster is not set");
    YAML::Node cluster = FindNamed(root["clusters"], cluster_name, "cluster");
    if (!cluster || !cluster.IsMap())
      return Status::InvalidArgument(cwhere + " names cluster \"" + cluster_name +
                                     "\", which is not in clusters");
    RestConfig cfg;
    const std::string base = Dir(path);
    const std::string where = path + ": clusters[" + cluster_name + "].cluster";
    cfg.server = Scalar(cluster, "server");
    while (!cfg.server.empty() && cfg.server.back() == '/') cfg.server.pop_back();
    if (cfg.server.empty()) return Status::InvalidArgument(where + ".server is not set");
    if (cfg.server.rfind("https://", 0) != 0 && cfg.server.rfind("http://", 0) != 0)
      return Status::InvalidArgument(where + ".server \"" + cfg.server +
                                     "\" must start with https:// (or http://)");
    if (Scalar(cluster, "proxy-url") != "")
      return Status::InvalidArgument(where + ".proxy-url is not supported");
    if (Scalar(cluster, "tls-server-name") != "")
      return Status::InvalidArgument(where + ".tls-server-name is not supported");
    cfg.tls.insecure_skip_verify = Scalar(cluster, "insecure-skip-tls-verify") == "true";
    RETURN_NOT_OK(LoadPem(cluster, "certificate-authority", where, base, &cfg.tls.ca_pem));
    if (!user_name.empty()) {
      YAML::Node user = FindNamed(root["users"], user_name, "user");
      const std::string uwhere = path + ": users[" + user_name + "].user";
      if (!user)
        return Status::InvalidArgument(cwhere + " names user \"" + user_name +
                                       "\", which is not in users");
      if (user.IsMap()) {
        if (user["exec"])
          return Status::InvalidArgument(uwhere +
                                         ".exec: exec credential plugins are not supported");
        if (user["auth-provider"])
          return Status::InvalidArgument(uwhere + ".auth-provider is not supported");
        RETURN_NOT_OK(LoadPem(user, "client-certificate", uwhere, base, &cfg.tls.client_cert_pem));
        RETURN_NOT_OK(LoadPem(user, "client-key", uwhere, base, &cfg.tls.client_key_pem));
        if (cfg.tls.client_cert_pem.empty() != cfg.tls.client_key_pem.empty())
          return Status::InvalidArgument(
              uwhere + ": client-certificate and client-key must be given together");
        if (!cfg.tls.client_cert_pem.empty())
          RETURN_NOT_OK(
              CheckClientCertificate(cfg.tls.client_cert_pem, cfg.tls.client_key_pem, uwhere));
        cfg.token = Scalar(user, "token");
        std::string tf = Scalar(user, "tokenFile");
        if (!tf.empty()) {
          cfg.token_file = Resolve(base, tf);
          if (!FileExists(cfg.token_file))
            return Status::InvalidArgument(uwhere + ".tokenFile: cannot read file \"" +
                                           cfg.token_file + "\"");
        }
        cfg.username = Scalar(user, "username");
        cfg.password = Scalar(user, "password");
      }
    }
    bool has_credentials = !cfg.token.empty() || !cfg.token_file.empty() || !cfg.username.empty();
    if (has_credentials && cfg.server.rfind("http://", 0) == 0)
      return Status::InvalidArgument(
          where + ".server is plain http://; refusing to send credentials without TLS");
    cfg.namespace_name = Scalar(ctx, "namespace");
    cfg.description = path + " (context " + ctx_name + ", server " + cfg.server + ")";
    return cfg;
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

StatusOr<RestConfig> LoadKubeconfigFile(const std::string& path, const std::string& context) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path, "kubeconfig"));
  return ParseKubeconfig(text, path, context);
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
    std::stringstream ss(env);
    std::string p;
    while (std::getline(ss, p, ':'))
      if (!p.empty() && FileExists(p)) return LoadKubeconfigFile(p, context);
  }
  if (const char* home = std::getenv("HOME"); home != nullptr) {
    std::string p = std::string(home) + "/.kube/config";
    if (FileExists(p)) return LoadKubeconfigFile(p, context);
  }
  return InClusterConfig();
}

}  // namespace ds
