#include "common/tls_files_transport.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace ds {
namespace {

namespace fs = std::filesystem;

// Answers every request with the client certificate it was built with, so a response tells which
// set of files served it.
class CertEcho : public HttpTransport {
 public:
  explicit CertEcho(TlsOptions tls) : tls_(std::move(tls)) {}
  StatusOr<HttpResponse> Do(const HttpRequest&) override {
    HttpResponse r;
    r.status = 200;
    r.body = tls_.client_cert_pem;
    return r;
  }
  StatusOr<StreamResult> Stream(const HttpRequest&, const std::function<bool(std::string_view)>&,
                                const std::function<bool()>&) override {
    return Status::Internal("not used");
  }

 private:
  const TlsOptions tls_;
};

std::string Pem(const std::string& what) {
  return "-----BEGIN " + what + "-----\nAAAA\n-----END " + what + "-----\n";
}

class TlsFilesTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tls-files-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    auth_.ca_file = Write("ca.crt", Pem("CERTIFICATE"));
    auth_.cert_file = Write("tls.crt", Pem("CERTIFICATE first"));
    auth_.key_file = Write("tls.key", Pem("PRIVATE KEY"));
    transport_ = std::make_unique<TlsFilesTransport>(
        auth_, std::array<std::string, 3>{"caFile", "certFile", "keyFile"},
        [this](const TlsOptions& tls) {
          built_.push_back(tls);
          return std::make_unique<CertEcho>(tls);
        });
  }
  void TearDown() override { fs::remove_all(dir_); }

  // As a Secret volume swaps a file: a new inode under the same name, never half-written.
  std::string Write(const std::string& name, const std::string& text) {
    fs::path p = dir_ / name;
    { std::ofstream(p.string() + ".tmp") << text; }
    fs::rename(p.string() + ".tmp", p);
    return p.string();
  }
  std::string Served() {
    auto r = transport_->Do(HttpRequest{});
    return r.ok() ? r->body : "error: " + r.status().message();
  }

  fs::path dir_;
  HttpAuthConfig auth_;
  std::vector<TlsOptions> built_;
  std::unique_ptr<TlsFilesTransport> transport_;
};

TEST_F(TlsFilesTransportTest, BuiltOnceFromTheFilesAndAgainOnlyWhenTheyChange) {
  EXPECT_EQ(Served(), Pem("CERTIFICATE first"));
  EXPECT_EQ(Served(), Pem("CERTIFICATE first"));
  ASSERT_EQ(built_.size(), 1u) << "unchanged files: the same transport, connections reused";
  EXPECT_EQ(built_[0].ca_pem, Pem("CERTIFICATE"));
  EXPECT_EQ(built_[0].client_key_pem, Pem("PRIVATE KEY"));

  Write("tls.crt", Pem("CERTIFICATE second"));
  Write("tls.key", Pem("PRIVATE KEY second"));
  EXPECT_EQ(Served(), Pem("CERTIFICATE second")) << "the rotated certificate is presented";
  ASSERT_GE(built_.size(), 2u);
  EXPECT_EQ(built_.back().client_key_pem, Pem("PRIVATE KEY second"));
  EXPECT_EQ(transport_->loads(), static_cast<int>(built_.size()));
  const size_t n = built_.size();
  EXPECT_EQ(Served(), Pem("CERTIFICATE second"));
  EXPECT_EQ(built_.size(), n);
}

TEST_F(TlsFilesTransportTest, ASetThatDoesNotLoadKeepsTheOneInUse) {
  EXPECT_EQ(Served(), Pem("CERTIFICATE first"));
  Write("tls.crt", "garbage, not PEM\n");
  EXPECT_EQ(Served(), Pem("CERTIFICATE first")) << "a broken rotation does not break queries";
  fs::remove(dir_ / "tls.key");
  EXPECT_EQ(Served(), Pem("CERTIFICATE first")) << "nor does a missing file";
  EXPECT_EQ(built_.size(), 1u);
  Write("tls.key", Pem("PRIVATE KEY"));
  Write("tls.crt", Pem("CERTIFICATE third"));
  EXPECT_EQ(Served(), Pem("CERTIFICATE third")) << "the set is used once it loads";
}

TEST_F(TlsFilesTransportTest, NoSetLoadedYetFailsTheRequestNamingTheFile) {
  Write("tls.crt", "not PEM\n");
  std::string served = Served();
  EXPECT_NE(served.find("certFile"), std::string::npos) << served;
  EXPECT_NE(served.find("not PEM"), std::string::npos) << served;
  EXPECT_TRUE(built_.empty()) << "nothing is sent without the configured certificate";
}

}  // namespace
}  // namespace ds
