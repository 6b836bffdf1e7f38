#include "kube/kubeconfig.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/base64.h"

namespace ds {
namespace {

const char* kCa = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

class KubeconfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kc-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    std::string p = (dir_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  std::string Config(const std::string& cluster, const std::string& user,
                     const std::string& extra = "") {
    return "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n" + cluster +
           "users:\n- name: u\n  user:\n" + user +
           "contexts:\n- name: ctx\n  context: {cluster: c, user: u}\n" + extra +
           "current-context: ctx\n";
  }
  static std::optional<std::string> ReadAll(const std::string& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::filesystem::path dir_;
};

TEST_F(KubeconfigTest, TokenAndCaData) {
  auto c = ParseKubeconfig(Config("    server: https://k:6443/\n    certificate-authority-data: " +
                                      Base64Encode(kCa) + "\n",
                                  "    token: abc\n"),
                           "/x/config");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://k:6443");
  EXPECT_EQ(c->tls.ca_pem, kCa);
  EXPECT_EQ(c->token, "abc");
  EXPECT_EQ(c->namespace_name, "");
  EXPECT_EQ(c->description.find("abc"), std::string::npos)
      << "credentials never appear in descriptions";
}

TEST_F(KubeconfigTest, RelativeFilesAndClientCert) {
  Write("ca.crt", kCa);
  Write("tls.crt", "-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n");
  Write("tls.key", "-----BEGIN PRIVATE KEY-----\nY\n-----END PRIVATE KEY-----\n");
  Write("token", "file-token\n");
  std::string path = Write(
      "config",
      Config("    server: https://k:6443\n    certificate-authority: ca.crt\n",
             "    client-certificate: tls.crt\n    client-key: tls.key\n    tokenFile: token\n"));
  auto c = LoadKubeconfigFile(path);
  // The files are read (relative to the kubeconfig); the fake certificate is then refused.
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("users[u].user.client-certificate: not a PEM certificate"),
            std::string::npos)
      << c.status().message();
  Write("config2", Config("    server: https://k:6443\n    certificate-authority: ca.crt\n",
                          "    tokenFile: token\n"));
  auto t = LoadKubeconfigFile((dir_ / "config2").string());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->tls.ca_pem, kCa);
  EXPECT_EQ(t->token_file, (dir_ / "token").string());
}

TEST_F(KubeconfigTest, ContextNamespace) {
  std::string text =
      "apiVersion: v1\nclusters:\n- name: c\n  cluster: {server: 'https://a:1'}\nusers:\n- name: "
      "u\n"
      "  user: {token: t}\ncontexts:\n- name: ctx\n  context: {cluster: c, user: u, namespace: "
      "ops}\n"
      "current-context: ctx\n";
  auto c = ParseKubeconfig(text, "cfg");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->namespace_name, "ops");
}

TEST_F(KubeconfigTest, ContextOverride) {
  std::string text = Config("    server: https://a:1\n", "    token: t\n",
                            "- name: other\n  context: {cluster: c2, user: u}\n");
  text += "";
  auto c = ParseKubeconfig(text, "cfg", "other");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("names cluster \"c2\", which is not in clusters"),
            std::string::npos)
      << c.status().message();
}

TEST_F(KubeconfigTest, ErrorsNameTheField) {
  struct Case {
    std::string text;
    const char* want;
  };
  std::string ok_cluster = "    server: https://k:6443\n";
  std::vector<Case> cases = {
      {"apiVersion: v1\nclusters: []\n", "current-context is not set"},
      {Config(ok_cluster, "    token: t\n")
           .replace(Config(ok_cluster, "    token: t\n").find("current-context: ctx"), 20,
                    "current-context: nope"),
       "no context named \"nope\""},
      {Config("    server: k:6443\n", "    token: t\n"), "must start with https://"},
      {Config("    insecure-skip-tls-verify: true\n", "    token: t\n"), ".server is not set"},
      {Config(ok_cluster + "    certificate-authority-data: '%%%'\n", "    token: t\n"),
       "certificate-authority-data: invalid base64"},
      {Config(ok_cluster + "    certificate-authority-data: " + Base64Encode("hello") + "\n",
              "    token: t\n"),
       "certificate-authority-data: not PEM"},
      {Config(ok_cluster + "    certificate-authority: /nonexistent/ca.crt\n", "    token: t\n"),
       "certificate-authority: cannot read file \"/nonexistent/ca.crt\""},
      {Config(ok_cluster, "    client-certificate-data: " + Base64Encode(kCa) + "\n"),
       "client-certificate and client-key must be given together"},
      {Config("    server: http://k:8080\n", "    token: t\n"), "refusing to send credentials"},
      {"clusters: [\n", "not valid YAML"},
  };
  for (const auto& c : cases) {
    auto r = ParseKubeconfig(c.text, "/home/u/.kube/config");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find(c.want), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().message().rfind("/home/u/.kube/config", 0), 0u) << r.status().message();
  }
}

TEST_F(KubeconfigTest, TlsServerNameAndProxyUrl) {
  auto c = ParseKubeconfig(
      Config("    server: https://10.0.0.1:6443\n    tls-server-name: kubernetes.default.svc\n"
             "    proxy-url: HTTP://alice:s3cret@proxy.corp:3128\n",
             "    token: t\n"),
      "/x/config");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://10.0.0.1:6443") << "connections still go to the server's address";
  EXPECT_EQ(c->tls.server_name, "kubernetes.default.svc");
  EXPECT_EQ(c->proxy_url, "http://alice:s3cret@proxy.corp:3128") << "scheme lower-cased";
  EXPECT_NE(c->description.find("tls-server-name kubernetes.default.svc"), std::string::npos)
      << c->description;
  EXPECT_NE(c->description.find("proxy http://proxy.corp:3128"), std::string::npos)
      << c->description;
  EXPECT_EQ(c->description.find("s3cret"), std::string::npos) << "no proxy password in logs";

  // client-go's other two schemes; an IP address (v4 or v6) as the name to verify.
  for (const char* proxy :
       {"https://proxy.corp", "socks5://127.0.0.1:1080", "socks5://[::1]:1080"}) {
    auto p = ParseKubeconfig(Config("    server: https://k:6443\n    tls-server-name: fd00::1\n"
                                    "    proxy-url: " +
                                        std::string(proxy) + "\n",
                                    "    token: t\n"),
                             "/x/config");
    ASSERT_TRUE(p.ok()) << proxy << ": " << p.status().ToString();
    EXPECT_EQ(p->proxy_url, proxy);
    EXPECT_EQ(p->tls.server_name, "fd00::1");
  }
  // Neither set: nothing configured (libcurl then honours *_proxy as client-go does).
  auto none =
      ParseKubeconfig(Config("    server: https://k:6443\n", "    token: t\n"), "/x/config");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->proxy_url, "");
  EXPECT_EQ(none->tls.server_name, "");
}

TEST_F(KubeconfigTest, TlsServerNameProxyUrlAndAuthProviderErrorsNameTheField) {
  struct Case {
    std::string cluster;
    std::string user;
    const char* want;
  };
  const std::string server = "    server: https://k:6443\n";
  const std::vector<Case> cases = {
      {server + "    tls-server-name: 'a b'\n", "    token: t\n",
       "clusters[c].cluster.tls-server-name \"a b\" is not a host name or IP address"},
      {server + "    tls-server-name: [x]\n", "    token: t\n",
       "clusters[c].cluster.tls-server-name must be a non-empty string"},
      {"    server: http://k:8080\n    tls-server-name: k\n", "",
       "clusters[c].cluster.tls-server-name needs an https:// server"},
      {server + "    proxy-url: socks4://p:1080\n", "    token: t\n",
       "clusters[c].cluster.proxy-url \"socks4://p:1080\": scheme \"socks4\" is not supported "
       "(http, https or socks5)"},
      {server + "    proxy-url: proxy.corp:3128\n", "    token: t\n",
       "clusters[c].cluster.proxy-url \"proxy.corp:3128\" is not a URL"},
      {server + "    proxy-url: http://:3128\n", "    token: t\n",
       "clusters[c].cluster.proxy-url \"http://:3128\" names no host"},
      {server + "    proxy-url: http://p:99999\n", "    token: t\n",
       "clusters[c].cluster.proxy-url \"http://p:99999\": port \"99999\" is not a number"},
      {server + "    proxy-url: ''\n", "    token: t\n",
       "clusters[c].cluster.proxy-url must be a non-empty string"},
      {server, "    auth-provider:\n      name: oidc\n",
       "users[u].user.auth-provider is not supported: use an exec credential plugin instead "
       "(users[].user.exec), e.g. kubelogin"},
  };
  for (const auto& c : cases) {
    auto r = ParseKubeconfig(Config(c.cluster, c.user), "/home/u/.kube/config");
    ASSERT_FALSE(r.ok()) << c.cluster << c.user;
    EXPECT_NE(r.status().message().find(c.want), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().message().rfind("/home/u/.kube/config", 0), 0u) << r.status().message();
  }
  // A proxy password stays out of the error.
  auto r = ParseKubeconfig(Config(server + "    proxy-url: ftp://u:pw@p\n", "    token: t\n"),
                           "/home/u/.kube/config");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().find("pw"), std::string::npos) << r.status().message();
}

TEST_F(KubeconfigTest, ExecStanza) {
  std::filesystem::create_directories(dir_ / "bin");
  std::string path = Write("config", Config("    server: https://k:6443\n",
                                            "    exec:\n"
                                            "      apiVersion: client.authentication.k8s.io/v1\n"
                                            "      command: ./bin/get-token\n"
                                            "      args: [--cluster, prod]\n"
                                            "      env:\n"
                                            "      - {name: AWS_PROFILE, value: ops}\n"
                                            "      - name: EMPTY\n"
                                            "      installHint: install get-token\n"
                                            "      provideClusterInfo: true\n"
                                            "      interactiveMode: Never\n"));
  auto c = LoadKubeconfigFile(path);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->exec.api_version, "client.authentication.k8s.io/v1");
  EXPECT_EQ(c->exec.command, (dir_ / "./bin/get-token").string())
      << "a command with a '/' is relative to the kubeconfig's directory";
  EXPECT_EQ(c->exec.args, (std::vector<std::string>{"--cluster", "prod"}));
  ASSERT_EQ(c->exec.env.size(), 2u);
  EXPECT_EQ(c->exec.env[0], (std::pair<std::string, std::string>{"AWS_PROFILE", "ops"}));
  EXPECT_EQ(c->exec.env[1], (std::pair<std::string, std::string>{"EMPTY", ""}));
  EXPECT_EQ(c->exec.install_hint, "install get-token");
  EXPECT_TRUE(c->exec.provide_cluster_info);
  EXPECT_EQ(c->exec.interactive_mode, "Never");
  EXPECT_EQ(c->exec.where, path + ":11: users[u].user.exec");
  EXPECT_TRUE(c->token.empty());

  // v1beta1 defaults interactiveMode; a bare command name is left for $PATH.
  auto b = ParseKubeconfig(Config("    server: https://k:6443\n",
                                  "    exec:\n"
                                  "      apiVersion: client.authentication.k8s.io/v1beta1\n"
                                  "      command: aws\n"),
                           "/x/config");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->exec.command, "aws");
  EXPECT_EQ(b->exec.interactive_mode, "IfAvailable");
  EXPECT_FALSE(b->exec.provide_cluster_info);
}

TEST_F(KubeconfigTest, ExecErrorsNameFileLineAndField) {
  struct Case {
    std::string exec;  // the lines under "    exec:" (the first at line 11)
    std::string want;
  };
  const std::string v1 = "      apiVersion: client.authentication.k8s.io/v1\n";
  const std::vector<Case> cases = {
      {"      command: aws\n", ":11: users[u].user.exec.apiVersion: is not set"},
      {"      apiVersion: client.authentication.k8s.io/v1alpha1\n      command: aws\n",
       ":11: users[u].user.exec.apiVersion: \"client.authentication.k8s.io/v1alpha1\" is not "
       "supported"},
      {v1 + "      interactiveMode: Never\n", ":11: users[u].user.exec.command: is not set"},
      {v1 + "      command: [aws]\n", ":12: users[u].user.exec.command: must be a string"},
      {v1 + "      command: aws\n      interactiveMode: Never\n      args: --x\n",
       ":14: users[u].user.exec.args: must be a list of strings"},
      {v1 + "      command: aws\n      interactiveMode: Never\n      args: [a, {b: c}]\n",
       ":14: users[u].user.exec.args[1]: must be a string"},
      {v1 + "      command: aws\n      interactiveMode: Never\n      env:\n      - value: x\n",
       ":15: users[u].user.exec.env[0].name: must be a non-empty variable name"},
      {v1 + "      command: aws\n      interactiveMode: Never\n      env: {A: b}\n",
       ":14: users[u].user.exec.env: must be a list of {name, value}"},
      {v1 + "      command: aws\n",
       ":11: users[u].user.exec.interactiveMode: is required with "
       "client.authentication.k8s.io/v1"},
      {v1 + "      command: aws\n      interactiveMode: Always\n",
       ":13: users[u].user.exec.interactiveMode: Always needs a terminal"},
      {v1 + "      command: aws\n      interactiveMode: Sometimes\n",
       ":13: users[u].user.exec.interactiveMode: \"Sometimes\" is not one of"},
      {v1 + "      command: aws\n      interactiveMode: Never\n      provideClusterInfo: yes\n",
       ":14: users[u].user.exec.provideClusterInfo: must be true or false"},
      {"      [aws]\n", ":11: users[u].user.exec: must be a mapping"},
  };
  for (const auto& c : cases) {
    std::string text = Config("    server: https://k:6443\n", "    exec:\n" + c.exec);
    auto r = ParseKubeconfig(text, "/home/u/.kube/config");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().message().rfind("/home/u/.kube/config" + c.want, 0), 0u)
        << r.status().message() << "\nwant: " << c.want << "\n"
        << text;
  }
  const std::string ok_exec =
      "    exec:\n" + v1 + "      command: aws\n      interactiveMode: Never\n";
  auto both = ParseKubeconfig(Config("    server: https://k:6443\n", "    token: t\n" + ok_exec),
                              "/x/config");
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find(
                "/x/config:12: users[u].user.exec: cannot be combined with token"),
            std::string::npos)
      << both.status().message();
  auto plain = ParseKubeconfig(Config("    server: http://k:8080\n", ok_exec), "/x/config");
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.status().message().find("refusing to send credentials"), std::string::npos)
      << plain.status().message();
}

// kubectl's $KUBECONFIG merge: the first definition of a name wins, current-context comes from
// the first file that sets it, relative paths follow the file that holds them.
TEST_F(KubeconfigTest, MergesFilesAsKubectlDoes) {
  std::filesystem::create_directories(dir_ / "a");
  std::filesystem::create_directories(dir_ / "b");
  Write("b/ca.crt", kCa);
  Write("b/token", "b-file-token\n");
  const std::string a = Write("a/config",
                              "contexts:\n"
                              "- name: ctx\n  context: {cluster: c, user: u, namespace: from-a}\n"
                              "users:\n- name: u\n  user: {tokenFile: token}\n");
  Write("a/token", "a-file-token\n");
  const std::string b =
      Write("b/config",
            "clusters:\n- name: c\n  cluster:\n"
            "    server: https://b:6443\n    certificate-authority: ca.crt\n"
            "contexts:\n"
            "- name: ctx\n  context: {cluster: c, user: other, namespace: from-b}\n"
            "users:\n- name: u\n  user: {tokenFile: token}\n"
            "current-context: ctx\n");
  const std::string empty = Write("empty", "");
  auto c = ParseKubeconfigs({{a, *ReadAll(a)}, {empty, ""}, {b, *ReadAll(b)}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://b:6443") << "the cluster only b defines";
  EXPECT_EQ(c->tls.ca_pem, kCa) << "b's ca.crt, next to b";
  EXPECT_EQ(c->namespace_name, "from-a") << "the first file's context ctx wins";
  EXPECT_EQ(c->token_file, (dir_ / "a/token").string()) << "a's user u, with a's directory";
  EXPECT_NE(c->description.find(a + ":" + empty + ":" + b), std::string::npos) << c->description;

  // current-context from the first file that sets it.
  const std::string first = Write("first", "current-context: nope\n");
  auto nope = ParseKubeconfigs({{first, *ReadAll(first)}, {b, *ReadAll(b)}});
  ASSERT_FALSE(nope.ok());
  EXPECT_NE(nope.status().message().find("no context named \"nope\""), std::string::npos)
      << nope.status().message();

  // An error in a merged entry names the file it came from.
  auto other = ParseKubeconfigs({{b, *ReadAll(b)}, {a, *ReadAll(a)}});
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().message().rfind(b + ": context \"ctx\" names user \"other\"", 0), 0u)
      << other.status().message();
}

TEST_F(KubeconfigTest, KubeconfigEnvironmentListSkipsMissingFiles) {
  const std::string a = Write("a", Config("    server: https://a:1\n", "    token: from-a\n"));
  const std::string b = Write("b", "users:\n- name: u\n  user: {token: from-b}\n");
  EXPECT_EQ(KubeconfigPathList(":" + (dir_ / "missing").string() + ":" + b + "::" + a + ":"),
            (std::vector<std::string>{b, a}));
  setenv("KUBECONFIG", ((dir_ / "missing").string() + ":" + b + ":" + a).c_str(), 1);
  auto merged = ResolveRestConfig("", "");
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ(merged->token, "from-b") << "b comes first in $KUBECONFIG, so its user u wins";
  EXPECT_EQ(merged->server, "https://a:1");
  auto only = ResolveRestConfig(a, "");
  ASSERT_TRUE(only.ok()) << only.status().ToString();
  EXPECT_EQ(only->token, "from-a") << "an explicit -kubeconfig is that file alone";
  unsetenv("KUBECONFIG");
}

TEST_F(KubeconfigTest, InCluster) {
  Write("token", "sa-token");
  Write("ca.crt", kCa);
  setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto c = InClusterConfig(dir_.string());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://10.96.0.1:443");
  EXPECT_EQ(c->token_file, (dir_ / "token").string());
  EXPECT_EQ(c->tls.ca_pem, kCa);
  EXPECT_EQ(c->namespace_name, "") << "no namespace file";
  Write("namespace", "dynamic-scheduler\n");
  c = InClusterConfig(dir_.string());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->namespace_name, "dynamic-scheduler")
      << "the lease goes to the service account's namespace";
  unsetenv("KUBERNETES_SERVICE_HOST");
  auto missing = InClusterConfig(dir_.string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("KUBERNETES_SERVICE_HOST"), std::string::npos);
}

TEST(Base64, RoundTrip) {
  for (std::string s : {"", "a", "ab", "abc", "abcd", "hello world\n"}) {
    auto d = Base64Decode(Base64Encode(s));
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(*d, s);
  }
  EXPECT_EQ(Base64Encode("ab"), "YWI=");
  EXPECT_FALSE(Base64Decode("YW*=").ok());
}

}  // namespace
}  // namespace ds
