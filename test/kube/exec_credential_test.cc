#include "kube/exec_credential.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/base64.h"
#include "test/fakes/fake_clock.h"

namespace ds {
namespace {

constexpr char kV1[] = "client.authentication.k8s.io/v1";
constexpr char kPem[] = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

ExecConfig Exec(const std::string& command) {
  ExecConfig e;
  e.api_version = kV1;
  e.command = command;
  e.interactive_mode = "Never";
  e.where = "/k/config:12: users[u].user.exec";
  return e;
}

TEST(ExecInfo, InteractiveFalseAndClusterOnlyWhenAsked) {
  RestConfig cluster;
  cluster.server = "https://k:6443";
  cluster.tls.ca_pem = kPem;
  ExecConfig e = Exec("x");
  rapidjson::Document d;
  d.Parse(EncodeExecInfo(e, cluster).c_str());
  ASSERT_TRUE(d.IsObject());
  EXPECT_STREQ(d["apiVersion"].GetString(), kV1);
  EXPECT_STREQ(d["kind"].GetString(), "ExecCredential");
  EXPECT_FALSE(d["spec"]["interactive"].GetBool());
  EXPECT_FALSE(d["spec"].HasMember("cluster"));
  e.provide_cluster_info = true;
  d.Parse(EncodeExecInfo(e, cluster).c_str());
  ASSERT_TRUE(d["spec"].HasMember("cluster"));
  EXPECT_STREQ(d["spec"]["cluster"]["server"].GetString(), "https://k:6443");
  EXPECT_EQ(*Base64Decode(d["spec"]["cluster"]["certificate-authority-data"].GetString()), kPem);
  EXPECT_FALSE(d["spec"]["cluster"].HasMember("tls-server-name"));
  EXPECT_FALSE(d["spec"]["cluster"].HasMember("proxy-url"));
  // client-go's Cluster carries the kubeconfig's tls-server-name and proxy-url as well.
  cluster.tls.server_name = "kubernetes.default.svc";
  cluster.proxy_url = "socks5://127.0.0.1:1080";
  d.Parse(EncodeExecInfo(e, cluster).c_str());
  EXPECT_STREQ(d["spec"]["cluster"]["tls-server-name"].GetString(), "kubernetes.default.svc");
  EXPECT_STREQ(d["spec"]["cluster"]["proxy-url"].GetString(), "socks5://127.0.0.1:1080");
}

TEST(DecodeExecCredential, TokenCertificateAndExpiry) {
  auto t = DecodeExecCredential(
      R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",)"
      R"("status":{"token":"tok","expirationTimestamp":"2027-01-02T03:04:05Z"}})",
      kV1);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->token, "tok");
  EXPECT_EQ(t->expires_at, 1798859045);
  auto c = DecodeExecCredential(
      std::string(R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",)") +
          R"("status":{"clientCertificateData":"-----BEGIN CERTIFICATE-----\nA\n",)" +
          R"("clientKeyData":"-----BEGIN PRIVATE KEY-----\nB\n"}})",
      kV1);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->client_cert_pem, "-----BEGIN CERTIFICATE-----\nA\n");
  EXPECT_EQ(c->client_key_pem, "-----BEGIN PRIVATE KEY-----\nB\n");
  EXPECT_EQ(c->expires_at, 0) << "no expirationTimestamp: kept while the process runs";
}

TEST(DecodeExecCredential, ErrorsSayWhatIsWrong) {
  const std::string head =
      R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",)";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"token: abc", "not an ExecCredential: invalid JSON"},
      {"[1]", "not a JSON object"},
      {R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"t"}})",
       "apiVersion \"client.authentication.k8s.io/v1beta1\", the kubeconfig asks for"},
      {R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"Secret","status":{"token":"t"}})",
       "kind \"Secret\""},
      {head + "\"spec\":{}}", "no status"},
      {head + R"("status":{}})", "neither a token nor clientCertificateData"},
      {head + R"("status":{"token":7}})", "status.token is not a string"},
      {head + R"("status":{"clientCertificateData":"-----BEGIN X"}})", "only one of"},
      {head + R"("status":{"clientCertificateData":"abc","clientKeyData":"-----BEGIN K"}})",
       "clientCertificateData is not PEM"},
      {head + R"("status":{"token":"t","expirationTimestamp":"tomorrow"}})",
       "expirationTimestamp \"tomorrow\" is not an RFC 3339 time"},
  };
  for (const auto& [out, want] : cases) {
    auto r = DecodeExecCredential(out, kV1);
    ASSERT_FALSE(r.ok()) << out;
    EXPECT_NE(r.status().message().find(want), std::string::npos)
        << r.status().message() << "\nwant: " << want;
  }
}

class PluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("exec-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Script(const std::string& body) {
    std::string p = (dir_ / "plugin.sh").string();
    std::ofstream(p) << "#!/bin/sh\n" << body;
    chmod(p.c_str(), 0755);
    return p;
  }
  std::filesystem::path dir_;
};

TEST_F(PluginTest, RunsWithArgsEnvAndExecInfo) {
  ExecConfig e = Exec(Script(
      "[ -t 0 ] && exit 9\n"  // stdin is never a terminal
      "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
      "\"status\":{\"token\":\"%s-%s-%s\"}}' \"$1\" \"$FROM_KUBECONFIG\" "
      "\"$(echo \"$KUBERNETES_EXEC_INFO\" | grep -c '\"interactive\":false')\"\n"));
  e.args = {"arg1"};
  e.env = {{"FROM_KUBECONFIG", "v"}};
  auto c = ObtainExecCredential(e, RestConfig{}, 10);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->token, "arg1-v-1");
}

TEST_F(PluginTest, FailuresNameThePluginAndItsStderr) {
  ExecConfig missing = Exec((dir_ / "no-such-plugin").string());
  missing.install_hint = "Install it with: apt install no-such-plugin";
  auto nf = ObtainExecCredential(missing, RestConfig{}, 10);
  ASSERT_FALSE(nf.ok());
  EXPECT_NE(nf.status().message().find("/k/config:12: users[u].user.exec (command \"" +
                                       missing.command + "\"): cannot run it"),
            std::string::npos)
      << nf.status().message();
  EXPECT_NE(nf.status().message().find("Install it with: apt install no-such-plugin"),
            std::string::npos)
      << nf.status().message();

  auto exit3 = ObtainExecCredential(
      Exec(Script("echo 'error: SSO session expired' >&2\necho second line >&2\nexit 3\n")),
      RestConfig{}, 10);
  ASSERT_FALSE(exit3.ok());
  EXPECT_NE(exit3.status().message().find("exit status 3: error: SSO session expired"),
            std::string::npos)
      << exit3.status().message();
  EXPECT_EQ(exit3.status().message().find("second line"), std::string::npos);

  auto bad = ObtainExecCredential(Exec(Script("echo not json\n")), RestConfig{}, 10);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("(command \""), std::string::npos);
  EXPECT_NE(bad.status().message().find("not an ExecCredential"), std::string::npos)
      << bad.status().message();
}

TEST_F(PluginTest, TimeoutKillsThePluginAndWhatItStarted) {
  const std::string pidfile = (dir_ / "child.pid").string();
  ExecConfig e = Exec(Script("echo waiting >&2\nsleep 30 &\necho $! > " + pidfile + "\nwait\n"));
  auto start = std::chrono::steady_clock::now();
  auto r = ObtainExecCredential(e, RestConfig{}, 0.5);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no answer in time; killed: waiting"), std::string::npos)
      << r.status().message();
  EXPECT_LT(took, 5);
  std::ifstream in(pidfile);
  pid_t child = 0;
  ASSERT_TRUE(in >> child);
  // The background sleep was in the plugin's process group; wait (bounded) for it to be gone.
  // Killed, it may linger as a zombie until whoever inherited it reaps it: that counts as gone.
  auto gone = [child] {
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string pid, comm, state;
    return !(stat >> pid >> comm >> state) || state == "Z";
  };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!gone() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(gone()) << "the plugin's child outlived the timeout";
}

TEST(ExecCredentialCache, CachedUntilExpiryAndRerunOnceAfterRejection) {
  FakeClock clock;
  int n = 0;
  ExecCredentialCache cache(
      [&]() -> StatusOr<ExecCredential> {
        ++n;
        ExecCredential c;
        c.token = "t" + std::to_string(n);
        c.expires_at = clock.WallSeconds() + 60;
        return c;
      },
      &clock);
  EXPECT_EQ(cache.Get()->token, "t1");
  clock.Advance(FromSeconds(59));
  EXPECT_EQ(cache.Get()->token, "t1") << "still valid";
  clock.Advance(FromSeconds(1));
  EXPECT_EQ(cache.Get()->token, "t2") << "expired at expirationTimestamp";
  ExecCredential t1;
  t1.token = "t1";
  cache.Invalidate(t1);
  EXPECT_EQ(cache.Get()->token, "t2") << "a 401 to an older credential does not rerun";
  ExecCredential t2 = *cache.Get();
  cache.Invalidate(t2);
  cache.Invalidate(t2);
  EXPECT_EQ(cache.Get()->token, "t3");
  EXPECT_EQ(cache.Get()->token, "t3");
  EXPECT_EQ(cache.runs(), 3);
}

TEST(ExecCredentialCache, NoExpiryMeansForeverAndFailuresAreHeldBriefly) {
  FakeClock clock;
  bool fail = true;
  ExecCredentialCache cache(
      [&]() -> StatusOr<ExecCredential> {
        if (fail) return Status::Unavailable("plugin broke");
        ExecCredential c;
        c.token = "ok";
        return c;
      },
      &clock);
  EXPECT_FALSE(cache.Get().ok());
  fail = false;
  EXPECT_EQ(cache.Get().status().message(), "plugin broke") << "not rerun at once";
  EXPECT_EQ(cache.runs(), 1);
  clock.Advance(FromSeconds(5));
  ASSERT_TRUE(cache.Get().ok());
  clock.Advance(FromSeconds(365 * 86400));
  EXPECT_EQ(cache.Get()->token, "ok");
  EXPECT_EQ(cache.runs(), 2);
}

TEST(ExecCredentialCache, ConcurrentCallersShareOneRun) {
  FakeClock clock;
  std::atomic<int> runs{0};
  std::atomic<bool> release{false};
  ExecCredentialCache cache(
      [&]() -> StatusOr<ExecCredential> {
        ++runs;
        while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        ExecCredential c;
        c.token = "shared";
        return c;
      },
      &clock);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      if (auto c = cache.Get(); c.ok() && c->token == "shared") ++ok;
    });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (runs == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  release = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, 8);
  EXPECT_EQ(runs, 1);
}

// The renewal runs ahead of expiry on the cache's own thread: a request made while a slow plugin
// renews (up to its 30 s timeout) is answered at once with the still-valid credential, so lease
// renewals and watches do not stall behind the plugin.
TEST(ExecCredentialCache, RenewsAheadOfExpiryWithoutBlockingCallers) {
  FakeClock clock;
  std::atomic<int> n{0};
  std::atomic<bool> release{false};
  ExecCredentialCache cache(
      [&]() -> StatusOr<ExecCredential> {
        const int k = ++n;
        if (k > 1)
          while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        ExecCredential c;
        c.token = "t" + std::to_string(k);
        c.expires_at = clock.WallSeconds() + 900;  // 15 minutes, as EKS tokens
        return c;
      },
      &clock);
  EXPECT_EQ(cache.Get()->token, "t1");
  clock.AdvanceSeconds(700);
  EXPECT_EQ(cache.Get()->token, "t1") << "more than 180 s (20 % of 900 s) left: no renewal yet";
  EXPECT_EQ(cache.runs(), 1);
  clock.AdvanceSeconds(30);  // 170 s left
  // The plugin blocks until released: a Get that waited for it would not return here.
  EXPECT_EQ(cache.Get()->token, "t1") << "answered while the renewal runs";
  EXPECT_EQ(cache.Get()->token, "t1");
  EXPECT_TRUE(cache.renewing());
  EXPECT_EQ(cache.runs(), 2) << "one renewal, however many callers";
  release = true;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::string token;
  while ((token = cache.Get()->token) != "t2" && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(token, "t2") << "renewed before the old credential expired";
  EXPECT_EQ(cache.runs(), 2);
}

TEST(ExecCredentialCache, AFailedRenewalKeepsTheValidCredentialAndRetriesLater) {
  FakeClock clock;
  std::atomic<bool> fail{false};
  std::atomic<int> n{0};
  ExecCredentialCache cache(
      [&]() -> StatusOr<ExecCredential> {
        ++n;
        if (fail) return Status::Unavailable("plugin broke");
        ExecCredential c;
        c.token = "t" + std::to_string(n.load());
        c.expires_at = clock.WallSeconds() + 100;
        return c;
      },
      &clock);
  EXPECT_EQ(cache.Get()->token, "t1");
  fail = true;
  clock.AdvanceSeconds(85);  // 15 s left, under 20 % of 100 s
  EXPECT_EQ(cache.Get()->token, "t1");
  // Until the renewal's failure is stored (no timing: the cache says when).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (cache.renewing() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_FALSE(cache.renewing());
  EXPECT_EQ(cache.Get()->token, "t1") << "a failed renewal keeps the credential that is valid";
  EXPECT_EQ(cache.runs(), 2) << "and is not retried at once";
  fail = false;
  clock.AdvanceSeconds(5);
  EXPECT_EQ(cache.Get()->token, "t1");
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::string token;
  while ((token = cache.Get()->token) != "t3" && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(token, "t3") << "retried once the hold is over";
}

}  // namespace
}  // namespace ds
