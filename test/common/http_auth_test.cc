// Header checks and the Authorization header are pure; the TLS files and the rotating secret
// files are read from a scratch folder.
#include "common/http_auth.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/file_secret.h"

namespace ds {
namespace {

TEST(CheckHeaderLine, AcceptsAndNormalizes) {
  for (const auto& [in, out] : std::vector<std::pair<std::string, std::string>>{
           {"X-Scope-OrgID: team-a", "X-Scope-OrgID: team-a"},
           {"X-Scope-OrgID:team-a|team-b  ", "X-Scope-OrgID: team-a|team-b"},
           {"  X-Api-Key:\tabc, def", "X-Api-Key: abc, def"},
       }) {
    auto line = CheckHeaderLine(in);
    ASSERT_TRUE(line.ok()) << in << ": " << line.status().ToString();
    EXPECT_EQ(*line, out);
  }
}

TEST(CheckHeaderLine, RefusesWithoutEchoingTheValue) {
  for (const auto& [in, why] : std::vector<std::pair<std::string, std::string>>{
           {"X-Scope-OrgID team-a", "no colon"},
           {": v", "no name"},
           {"Bad Name: v", "not allowed in a header name"},
           {"X-Scope-OrgID:", "no value"},
           {"X-Tenant: secretvalue\r\nInjected: 1", "control character"},
           {"authorization: Bearer secretvalue", "bearer token or basic auth"},
           {"Host: secretvalue", "set by the client"},
           {"content-length: 3", "set by the client"},
       }) {
    auto line = CheckHeaderLine(in);
    ASSERT_FALSE(line.ok()) << in;
    EXPECT_NE(line.status().message().find(why), std::string::npos)
        << in << " -> " << line.status().message();
    EXPECT_EQ(line.status().message().find("secretvalue"), std::string::npos)
        << "a header value may be a secret: " << line.status().message();
  }
}

TEST(AuthorizationHeader, TokenElseBasicElseNothing) {
  EXPECT_EQ(AuthorizationHeader("tok", "", ""), "Authorization: Bearer tok");
  // RFC 7617's example: Aladdin / open sesame.
  EXPECT_EQ(AuthorizationHeader("", "Aladdin", "open sesame"),
            "Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
  EXPECT_EQ(AuthorizationHeader("", "", "ignored"), "");
}

class FilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("auth-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::trunc) << text;
    return p;
  }
  std::filesystem::path dir_;
};

constexpr char kPem[] = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const std::string kNames[3] = {"-ca", "-cert", "-key"};

TEST_F(FilesTest, TlsFilesAreLoadedAndNamedInErrors) {
  HttpAuthConfig a;
  a.ca_file = Write("ca.crt", kPem);
  a.cert_file = Write("tls.crt", kPem);
  a.key_file = Write("tls.key", "-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n");
  auto tls = LoadTlsFiles(a, kNames);
  ASSERT_TRUE(tls.ok()) << tls.status().ToString();
  EXPECT_EQ(tls->ca_pem, kPem);
  EXPECT_EQ(tls->client_cert_pem, kPem);
  EXPECT_NE(tls->client_key_pem.find("PRIVATE KEY"), std::string::npos);
  EXPECT_FALSE(tls->insecure_skip_verify);

  a.key_file = (dir_ / "missing.key").string();
  auto missing = LoadTlsFiles(a, kNames);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "-key: cannot read " + a.key_file);
  a.key_file.clear();
  a.ca_file = Write("ca.txt", "not a certificate");
  auto not_pem = LoadTlsFiles(a, kNames);
  ASSERT_FALSE(not_pem.ok());
  EXPECT_EQ(not_pem.status().message(), "-ca: " + a.ca_file + " is not PEM (no -----BEGIN line)");
}

TEST_F(FilesTest, SecretIsTrimmedAndRereadWhenRewritten) {
  std::string path = Write("token", "first\n");
  FileSecret secret(path, "-token");
  EXPECT_EQ(secret.Get().value(), "first");
  EXPECT_EQ(secret.Get().value(), "first");
  // Same size, at once: the modification time (nanoseconds) and change time still differ.
  Write("token", "secnd\n");
  EXPECT_EQ(secret.Get().value(), "secnd");
}

TEST_F(FilesTest, SecretFollowsASwappedSymlink) {
  // A Kubernetes Secret volume: token -> ..data/token, ..data -> a timestamped folder that an
  // update replaces by renaming a new symlink over ..data.
  std::filesystem::create_directories(dir_ / "v1");
  std::filesystem::create_directories(dir_ / "v2");
  Write("v1/token", "old-token");
  Write("v2/token", "new-token");
  std::filesystem::create_directory_symlink("v1", dir_ / "..data");
  std::filesystem::create_symlink("..data/token", dir_ / "token");
  FileSecret secret((dir_ / "token").string(), "-token");
  EXPECT_EQ(secret.Get().value(), "old-token");
  std::filesystem::create_directory_symlink("v2", dir_ / "..data_tmp");
  std::filesystem::rename(dir_ / "..data_tmp", dir_ / "..data");
  EXPECT_EQ(secret.Get().value(), "new-token");
}

TEST_F(FilesTest, SecretErrorsNameTheFileAndRecover) {
  std::string path = (dir_ / "token").string();
  FileSecret secret(path, "-prom_token_file");
  auto missing = secret.Get();
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "-prom_token_file: cannot read " + path + ": No such file or directory");
  Write("token", "\n");
  auto empty = secret.Get();
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("is empty"), std::string::npos);
  Write("token", "back\n");
  EXPECT_EQ(secret.Get().value(), "back");
}

}  // namespace
}  // namespace ds
