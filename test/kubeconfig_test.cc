#include "kube/kubeconfig.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

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
      {Config(ok_cluster, "    exec:\n      command: aws\n"),
       "exec credential plugins are not supported"},
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
