// Options are assembled in one pass from flags, the rule file, the kubeconfig and the
// environment; each case names the source that wins.
#include "app/options.h"

#include <gflags/gflags.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "app/replay.h"
#include "app/version.h"

namespace ds {
namespace {

class OptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("opts-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    rules_ = Write("rule.yaml", "rules:\n  - {name: cpu, query: cpu_pct, threshold: 80}\n");
    kubeconfig_ =
        Write("kubeconfig",
              "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: "
              "'https://127.0.0.1:1'}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n"
              "- name: ctx\n  context: {cluster: c, user: u, namespace: from-kubeconfig}\n"
              "current-context: ctx\n");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    std::string p = (dir_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  // Parses `args` (after the program name) with `env` as the environment.
  StatusOr<Options> Parse(std::vector<std::string> args) {
    gflags::FlagSaver restore;  // every test starts from the defaults
    args.insert(args.begin(), "dynamic-scheduler");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int argc = static_cast<int>(args.size());
    char** p = argv.data();
    return ParseOptions(&argc, &p, [this](const char* name) -> const char* {
      auto it = env_.find(name);
      return it == env_.end() ? nullptr : it->second.c_str();
    });
  }
  std::vector<std::string> Base() {
    return {"-prom", "http://prom:9090/", "-r", rules_, "-kubeconfig", kubeconfig_};
  }

  std::filesystem::path dir_;
  std::string rules_, kubeconfig_;
  std::map<std::string, std::string> env_;
};

// -once (app/once.h) and its summary's format; the loop never holds removals back.
TEST_F(OptionsTest, OnceAndItsSummaryFormat) {
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = Base();
    args.insert(args.end(), extra.begin(), extra.end());
    return Parse(args);
  };
  auto json = with({"-once", "-o", "json", "-leader_elect"});
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  EXPECT_TRUE(json->once);
  EXPECT_TRUE(json->once_json);
  EXPECT_TRUE(json->reconciler.one_pass);
  auto text = with({"-once"});
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_FALSE(text->once_json);
  auto loop = Parse(Base());
  ASSERT_TRUE(loop.ok()) << loop.status().ToString();
  EXPECT_FALSE(loop->once);
  EXPECT_FALSE(loop->reconciler.one_pass);
  auto yaml = with({"-once", "-o", "yaml"});
  ASSERT_FALSE(yaml.ok());
  EXPECT_EQ(yaml.status().message(), "-o \"yaml\": expected text or json");
  auto alone = with({"-o", "json"});
  ASSERT_FALSE(alone.ok());
  EXPECT_EQ(alone.status().message(), "-o is for -once only");
  EXPECT_FALSE(with({"-once", "-cleanup"}).ok());
  auto check = with({"-once", "-check_config"});
  ASSERT_TRUE(check.ok()) << "the manifests' tests check a CronJob's arguments: "
                          << check.status().ToString();
  EXPECT_TRUE(check->check_only);
}

TEST_F(OptionsTest, AssemblesEveryPartInOnePass) {
  auto o = Parse(Base());
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->prometheus_url, "http://prom:9090") << "normalized";
  EXPECT_EQ(o->rest.server, "https://127.0.0.1:1")
      << "the kubeconfig is resolved here, not in main";
  EXPECT_EQ(o->reconciler.interval_seconds, 10);
  EXPECT_EQ(o->reconciler.grace_seconds, 30) << "three intervals by default";
  EXPECT_EQ(o->reconciler.mark.ToString(), "status=presure");
  EXPECT_EQ(o->cache.keep_label_keys, std::vector<std::string>{"status"});
  EXPECT_EQ(o->cache.label_selector, kDefaultNodeSelector);
  EXPECT_EQ(o->user_agent,
            std::string("dynamic-scheduler/") + Version() + "+" + GitCommit() + " (single)")
      << "the build in the User-Agent: an API server's audit log says which binary wrote";
  EXPECT_EQ(o->leader_election.lease_namespace, "from-kubeconfig");
}

// /nodes also lists the unmanaged nodes carrying the mark: a second watch. With a label the
// server selects them; a taint no selector finds, so the watch sees every node and keeps only
// those carrying our taint (any level's value, our key and effect).
TEST_F(OptionsTest, TheSecondWatchFindsTheMarkedNodesInEachMode) {
  auto label = Parse(Base());
  ASSERT_TRUE(label.ok()) << label.status().ToString();
  EXPECT_TRUE(label->watch_marked);
  EXPECT_EQ(label->marked_cache.label_selector, "status=presure");
  EXPECT_FALSE(label->marked_cache.keep_if);

  rules_ = Write("taint.yaml",
                 "mark: taint\ntaint: {key: example.com/hot, value: yes, effect: "
                 "PreferNoSchedule}\nrules:\n  - {name: cpu, query: q, threshold: 80}\n");
  auto taint = Parse(Base());
  ASSERT_TRUE(taint.ok()) << taint.status().ToString();
  EXPECT_TRUE(taint->watch_marked);
  EXPECT_EQ(taint->marked_cache.label_selector, "") << "every node: a taint cannot be selected";
  ASSERT_TRUE(taint->marked_cache.keep_if);
  NodeInfo n;
  n.labels = {{"status", "presure"}};
  n.taints = {Taint{"gpu", "yes", "NoSchedule"}};
  EXPECT_FALSE(taint->marked_cache.keep_if(n)) << "the label means nothing in taint mode";
  n.taints.push_back(Taint{"example.com/hot", "other", "PreferNoSchedule"});
  EXPECT_FALSE(taint->marked_cache.keep_if(n)) << "another value under our key is not ours";
  n.taints.back().value = "yes";
  EXPECT_TRUE(taint->marked_cache.keep_if(n));
  n.taints.back().effect = "NoSchedule";
  EXPECT_FALSE(taint->marked_cache.keep_if(n));
  EXPECT_FALSE(taint->marked_cache.keep_departures);

  rules_ =
      Write("all.yaml", "nodeSelector: \"\"\nrules:\n  - {name: cpu, query: q, threshold: 80}\n");
  auto all = Parse(Base());
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_FALSE(all->watch_marked) << "every node managed: nothing to add";
}

TEST_F(OptionsTest, TheIntervalFlagWinsOverTheRuleFile) {
  rules_ = Write("r2.yaml", "interval: 30s\nrules:\n  - {name: cpu, query: q, threshold: 80}\n");
  auto from_file = Parse(Base());
  ASSERT_TRUE(from_file.ok());
  EXPECT_EQ(from_file->reconciler.interval_seconds, 30);
  auto args = Base();
  args.insert(args.end(), {"-s", "5"});
  auto from_flag = Parse(args);
  ASSERT_TRUE(from_flag.ok());
  EXPECT_EQ(from_flag->reconciler.interval_seconds, 5);
  EXPECT_EQ(from_flag->reconciler.grace_seconds, 15);
}

TEST_F(OptionsTest, WriteLimitsComeFromTheirFlags) {
  auto args = Base();
  args.insert(args.end(), {"-dry_run", "-max_writes_per_cycle", "7", "-write_qps", "3",
                           "-write_burst", "4", "-write_concurrency", "2"});
  auto o = Parse(args);
  ASSERT_TRUE(o.ok());
  const WriteLimits& w = o->reconciler.writes;
  EXPECT_TRUE(w.dry_run);
  EXPECT_EQ(w.max_per_cycle, 7u);
  EXPECT_EQ(w.qps, 3);
  EXPECT_EQ(w.burst, 4);
  EXPECT_EQ(w.concurrency, 2);
}

TEST_F(OptionsTest, LeaseNamespacePrecedence) {
  auto args = Base();
  args.push_back("-leader_elect");
  auto from_kubeconfig = Parse(args);
  ASSERT_TRUE(from_kubeconfig.ok()) << from_kubeconfig.status().ToString();
  EXPECT_EQ(from_kubeconfig->leader_election.lease_namespace, "from-kubeconfig");
  EXPECT_NE(from_kubeconfig->user_agent.find(from_kubeconfig->leader_election.identity),
            std::string::npos)
      << "the replica's identity names its writes";
  env_["POD_NAMESPACE"] = "from-env";
  EXPECT_EQ(Parse(args)->leader_election.lease_namespace, "from-env");
  args.insert(args.end(), {"-leader_elect_namespace", "from-flag"});
  EXPECT_EQ(Parse(args)->leader_election.lease_namespace, "from-flag");
  env_["POD_NAMESPACE"] = "Not_A_Namespace";
  args.resize(args.size() - 2);
  auto bad = Parse(args);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("-leader_elect_namespace"), std::string::npos);
}

constexpr char kPem[] = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

TEST_F(OptionsTest, PrometheusTokenFileIsCheckedAndKeptForTheClient) {
  auto args = Base();
  args.insert(args.end(), {"-prom_token_file", Write("token", "s3cret\n")});
  auto o = Parse(args);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->prometheus_auth.bearer_token_file, (dir_ / "token").string())
      << "the path, not the token: the client re-reads it when it rotates";
  EXPECT_EQ(DescribeStartup(*o).find("s3cret"), std::string::npos) << "never log secrets";
}

TEST_F(OptionsTest, PrometheusAuthFlags) {
  auto args = Base();
  args[1] = "https://prom:9090";
  args.insert(args.end(), {"-prom_basic_auth_user", "ds", "-prom_basic_auth_password_file",
                           Write("password", "pw\n"), "-prom_header", "X-Scope-OrgID: team-a",
                           "--prom_header=X-Api-Key: k1, k2", "-prom_ca_file",
                           Write("ca.crt", kPem), "-prom_cert_file", Write("tls.crt", kPem),
                           "-prom_key_file", Write("tls.key", kPem)});
  auto o = Parse(args);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  const HttpAuthConfig& a = o->prometheus_auth;
  EXPECT_EQ(a.bearer_token_file, "");
  EXPECT_EQ(a.basic_auth_user, "ds");
  EXPECT_EQ(a.basic_auth_password_file, (dir_ / "password").string());
  EXPECT_EQ(a.headers, (std::vector<std::string>{"X-Scope-OrgID: team-a", "X-Api-Key: k1, k2"}))
      << "repeated, both forms; a comma stays inside its value";
  EXPECT_EQ(o->prometheus_tls.ca_pem, kPem);
  EXPECT_EQ(o->prometheus_tls.client_cert_pem, kPem);
  EXPECT_EQ(o->prometheus_tls.client_key_pem, kPem);
  EXPECT_FALSE(o->prometheus_tls.insecure_skip_verify);
  std::string startup = DescribeStartup(*o);
  EXPECT_NE(startup.find("basic auth as ds"), std::string::npos) << startup;
  EXPECT_NE(startup.find("headers X-Scope-OrgID X-Api-Key"), std::string::npos) << startup;
  EXPECT_EQ(startup.find("team-a"), std::string::npos) << "header values may be secrets";
  EXPECT_EQ(startup.find("k1"), std::string::npos) << "header values may be secrets";

  auto insecure = Base();
  insecure[1] = "https://prom:9090";
  insecure.push_back("-prom_insecure_skip_verify");
  auto i = Parse(insecure);
  ASSERT_TRUE(i.ok()) << i.status().ToString();
  EXPECT_TRUE(i->prometheus_tls.insecure_skip_verify);
  EXPECT_FALSE(Parse(Base())->prometheus_tls.insecure_skip_verify) << "only when asked";
}

TEST_F(OptionsTest, PrometheusSectionOfTheRuleFileAndFlagsOverIt) {
  std::filesystem::create_directories(dir_ / "conf");
  std::ofstream(dir_ / "conf" / "password") << "pw\n";
  std::ofstream(dir_ / "conf" / "ca.crt") << kPem;
  rules_ = Write("conf/rule.yaml",
                 "prometheus:\n  url: https://thanos:10902\n"
                 "  basicAuth: {username: ds, passwordFile: password}\n"
                 "  headers: {X-Scope-OrgID: from-file, X-Keep: yes}\n"
                 "  tls: {caFile: ca.crt}\n"
                 "rules:\n  - {name: cpu, query: q, threshold: 80}\n");
  auto from_file = Parse({"-r", rules_, "-kubeconfig", kubeconfig_});
  ASSERT_TRUE(from_file.ok()) << from_file.status().ToString();
  const HttpAuthConfig& a = from_file->prometheus_auth;
  EXPECT_EQ(a.basic_auth_password_file, (dir_ / "conf" / "password").string())
      << "relative to the rule file's folder";
  EXPECT_EQ(from_file->prometheus_tls.ca_pem, kPem);
  EXPECT_EQ(a.headers, (std::vector<std::string>{"X-Scope-OrgID: from-file", "X-Keep: yes"}));

  auto over = Parse({"-r", rules_, "-kubeconfig", kubeconfig_, "-prom_token_file",
                     Write("token", "t"), "-prom_header", "x-scope-orgid: from-flag"});
  ASSERT_TRUE(over.ok()) << over.status().ToString();
  const HttpAuthConfig& b = over->prometheus_auth;
  EXPECT_EQ(b.bearer_token_file, (dir_ / "token").string());
  EXPECT_EQ(b.basic_auth_user, "") << "a credential flag replaces the file's credentials";
  EXPECT_EQ(b.headers, (std::vector<std::string>{"X-Keep: yes", "x-scope-orgid: from-flag"}))
      << "a flag replaces the file's header of the same name";

  std::filesystem::remove(dir_ / "conf" / "password");
  auto gone = Parse({"-r", rules_, "-kubeconfig", kubeconfig_});
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().message(), rules_ + ": prometheus.basicAuth.passwordFile: cannot read " +
                                         (dir_ / "conf" / "password").string() +
                                         ": No such file or directory");
}

TEST_F(OptionsTest, PrometheusAuthErrorsNameTheFlagAndFile) {
  const std::string token = Write("token", "t\n");
  const std::string pem = Write("ca.crt", kPem);
  const std::string https = "https://prom:9090";
  struct Case {
    std::vector<std::string> extra;
    std::string expect;
  };
  for (const Case& c : std::vector<Case>{
           {{"-prom_token_file", token, "-prom_basic_auth_user", "u",
             "-prom_basic_auth_password_file", token},
            "-prom_token_file and -prom_basic_auth_user/-prom_basic_auth_password_file exclude"},
           {{"-prom_basic_auth_user", "u"},
            "-prom_basic_auth_user and -prom_basic_auth_password_file go together"},
           {{"-prom_basic_auth_password_file", token}, "go together"},
           {{"-prom_basic_auth_user", "a:b", "-prom_basic_auth_password_file", token},
            "must not contain ':'"},
           {{"-prom_basic_auth_user", "u", "-prom_basic_auth_password_file", "/nonexistent/pw"},
            "-prom_basic_auth_password_file: cannot read /nonexistent/pw: No such file"},
           {{"-prom_token_file", Write("empty", "\n")},
            "-prom_token_file: cannot read " + (dir_ / "empty").string() + ": the file is empty"},
           {{"-prom_header", "X-Scope-OrgID team-a"}, "-prom_header: header must be"},
           {{"-prom_header", "X-Ok: 1", "-prom_header", "Authorization: Bearer x"},
            "-prom_header: header Authorization"},
           {{"-prom", https, "-prom_cert_file", pem},
            "-prom_cert_file and -prom_key_file go together"},
           {{"-prom", https, "-prom_ca_file", pem, "-prom_insecure_skip_verify"},
            "-prom_insecure_skip_verify with -prom_ca_file"},
           {{"-prom", https, "-prom_ca_file", "/nonexistent/ca.crt"},
            "-prom_ca_file: cannot read /nonexistent/ca.crt"},
           {{"-prom", https, "-prom_ca_file", token}, "-prom_ca_file: " + token + " is not PEM"},
           {{"-prom_ca_file", pem}, "need an https:// URL, not http://prom:9090"},
       }) {
    auto args = Base();
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    auto o = Parse(args);
    ASSERT_FALSE(o.ok()) << c.expect;
    EXPECT_NE(o.status().message().find(c.expect), std::string::npos)
        << "want \"" << c.expect << "\" in: " << o.status().message();
  }
}

TEST_F(OptionsTest, WebhookTokenAndSpacing) {
  auto defaults = Parse(Base());
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->webhook_token, "") << "no token needed unless configured";
  EXPECT_EQ(defaults->reconciler.min_trigger_spacing_seconds, 2);
  auto args = Base();
  args.insert(args.end(),
              {"-webhook_token_file", Write("wh", "tok\n"), "-webhook_min_interval", "5"});
  auto o = Parse(args);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->webhook_token, "tok");
  EXPECT_EQ(o->reconciler.min_trigger_spacing_seconds, 5);
  args = Base();
  args.insert(args.end(), {"-webhook_token_file", Write("empty", "\n")});
  auto empty = Parse(args);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("is empty"), std::string::npos);
}

TEST_F(OptionsTest, CheckConfigNeedsNeitherPrometheusNorACluster) {
  auto o = Parse({"-check_config", "-r", rules_, "-kubeconfig", "/nonexistent"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_TRUE(o->check_only);
  std::string summary = DescribeConfig(*o);
  EXPECT_NE(summary.find(": OK: 1 rules (current format), label status=presure"), std::string::npos)
      << summary;
  EXPECT_NE(summary.find("  cpu: > 80"), std::string::npos) << summary;
}

TEST_F(OptionsTest, ARebalanceSectionIsDescribedWithTheRulesThatDriveIt) {
  EXPECT_EQ(DescribeConfig(*Parse({"-check_config", "-r", rules_})).find("rebalance"),
            std::string::npos);
  const std::string with = Write("rebalance.yaml",
                                 "rules:\n  - {name: cpu, query: cpu_pct, threshold: 80, resource: "
                                 "cpu}\nrebalance: {dryRun: true}\n");
  auto o = Parse({"-check_config", "-r", with});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  for (const std::string& text : {DescribeConfig(*o), DescribeStartup(*o)}) {
    EXPECT_NE(text.find("rebalance: DRY RUN (plans, never evicts)"), std::string::npos) << text;
    EXPECT_NE(text.find("by the rules cpu (cpu)"), std::string::npos) << text;
    EXPECT_NE(text.find("at most 2 per cycle, 20 per hour"), std::string::npos) << text;
  }
}

TEST_F(OptionsTest, DryRunEvictsNothingEither) {
  const std::string with = Write("evicting.yaml",
                                 "rules:\n  - {name: cpu, query: cpu_pct, threshold: 80, resource: "
                                 "cpu}\nrebalance: {dryRun: false}\n");
  auto o = Parse({"-check_config", "-r", with});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_FALSE(o->rules.rebalance.dry_run);
  o = Parse({"-check_config", "-dry_run", "-r", with});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_TRUE(o->rules.rebalance.dry_run) << "-dry_run writes no label and evicts no pod";
  EXPECT_NE(DescribeStartup(*o).find("DRY RUN (plans, never evicts)"), std::string::npos);
}

TEST_F(OptionsTest, TheEvictionWindowsZoneMustExist) {
  const std::string bad =
      Write("tz.yaml",
            "rules:\n  - {name: cpu, query: cpu_pct, threshold: 80, resource: cpu}\n"
            "rebalance: {timeZone: Mars/Olympus_Mons}\n");
  auto o = Parse({"-check_config", "-r", bad});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(
      o.status().message().find("tz.yaml: rebalance.timeZone: time zone \"Mars/Olympus_Mons\""),
      std::string::npos)
      << o.status().message();
}

TEST_F(OptionsTest, APredictRulesZoneMustExist) {
  const std::string bad = Write("ptz.yaml",
                                "rules:\n  - {name: peak, query: cpu_pct, threshold: 80, predict: "
                                "{timeZone: Mars/Tharsis}}\n");
  auto o = Parse({"-check_config", "-r", bad});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find(
                "ptz.yaml: rule \"peak\": predict.timeZone: time zone \"Mars/Tharsis\""),
            std::string::npos)
      << o.status().message();
}

TEST_F(OptionsTest, ErrorsNameTheFlagOrFile) {
  struct Case {
    std::vector<std::string> extra;
    std::string expect;
  };
  for (const Case& c : std::vector<Case>{
           {{"-write_qps", "0"}, "-write_qps"},
           {{"-write_burst", "0.5"}, "-write_burst"},
           {{"-write_concurrency", "65"}, "-write_concurrency"},
           {{"-s", "0"}, "-s must be"},
           {{"-query_timeout", "0"}, "-query_timeout"},
           {{"-resync", "-1"}, "-resync"},
           {{"-watch_idle_timeout", "-1"}, "-watch_idle_timeout"},
           {{"-webaddr", "nonsense"}, "-webaddr"},
           {{"-prom", "ftp://x"}, "-prom"},
           {{"-prom_token_file", "/nonexistent/token"}, "-prom_token_file"},
           {{"-webhook_token_file", "/nonexistent/token"}, "-webhook_token_file"},
           {{"-webhook_min_interval", "-1"}, "-webhook_min_interval"},
           {{"-kubeconfig", "/nonexistent/kubeconfig"}, "/nonexistent/kubeconfig"},
           {{"-leader_elect", "-leader_elect_renew_deadline", "20"},
            "-leader_elect_lease_duration"},
           {{"stray"}, "unexpected argument \"stray\""},
       }) {
    auto args = Base();
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    auto o = Parse(args);
    ASSERT_FALSE(o.ok()) << c.expect;
    EXPECT_NE(o.status().message().find(c.expect), std::string::npos)
        << "want \"" << c.expect << "\" in: " << o.status().message();
  }
  auto no_prom = Parse({"-r", rules_, "-kubeconfig", kubeconfig_});
  ASSERT_FALSE(no_prom.ok());
  EXPECT_NE(no_prom.status().message().find("-prom is required"), std::string::npos);
  auto no_rules = Parse({"-prom", "http://p:1", "-r", "/nonexistent/rule.yaml"});
  ASSERT_FALSE(no_rules.ok());
  EXPECT_NE(no_rules.status().message().find("/nonexistent/rule.yaml"), std::string::npos);
}

}  // namespace
}  // namespace ds

namespace ds {
namespace {

// rules[].nodeSelector and rules[].interval (rules/rule_scope.h) at start-up.
TEST_F(OptionsTest, PoolsAndIntervalsAreKeptCheckedAndShown) {
  const std::string with = Write(
      "pools.yaml",
      "rules:\n"
      "  - {name: gpu, query: cpu_pct, threshold: 50, nodeSelector: 'pool=gpu,tier in (a, b)', "
      "interval: 30s}\n"
      "  - {name: mem, query: mem_pct, threshold: 90, maxAge: 2m, nodeSelector: '!gpu'}\n");
  auto o = Parse({"-check_config", "-r", with});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  // The node cache keeps only the keys it is told: the pools' too, or no node would match them.
  EXPECT_EQ(o->cache.keep_label_keys, (std::vector<std::string>{"status", "gpu", "pool", "tier"}));
  const std::string text = DescribeConfig(*o);
  EXPECT_NE(text.find("  gpu: > 50 (clears at 50, for 0 s; nodes pool=gpu,tier in (a, b); "
                      "queried every 30 s): cpu_pct"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  mem: > 90 (clears at 90, for 0 s; maxAge 120 s; nodes !gpu): mem_pct"),
            std::string::npos)
      << text;
  // A rule queried more often than the cycle runs: refused against -s too.
  auto fast = Parse({"-check_config", "-s", "60", "-r", with});
  ASSERT_FALSE(fast.ok());
  EXPECT_NE(fast.status().message().find("rule \"gpu\": interval 30"), std::string::npos)
      << fast.status().message();
  EXPECT_NE(fast.status().message().find("shorter than the evaluation interval (-s 60"),
            std::string::npos)
      << fast.status().message();
}

}  // namespace
}  // namespace ds

namespace ds {
namespace {

class ReplayOptionsTest : public OptionsTest {};

TEST_F(ReplayOptionsTest, TheSubcommandTakesItsWindowAndStepsAtTheInterval) {
  rules_ = Write("r3.yaml", "interval: 30s\nrules:\n  - {name: cpu, query: q, threshold: 80}\n");
  // Offline: a nodes file, and no kubeconfig is resolved (a path that does not exist is fine).
  auto o = Parse({"replay", "-prom", "http://prom:9090", "-r", rules_, "-kubeconfig",
                  "/nonexistent", "-nodes_file", "nodes.json", "-from", "1795651200", "-to",
                  "2026-11-26T01:00:00Z", "-out", "dir"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_TRUE(o->replay.on);
  EXPECT_EQ(o->replay.from, 1795651200);
  EXPECT_EQ(o->replay.to, 1795651200 + 3600);
  EXPECT_EQ(o->replay.step, 30) << "the rule file's interval";
  EXPECT_EQ(o->replay.out_dir, "dir");
  EXPECT_EQ(o->replay.nodes_file, "nodes.json");
}

TEST_F(ReplayOptionsTest, AStepBetweenMillisecondsOrTooManyStepsIsRefused) {
  rules_ = Write("r4.yaml", "rules:\n  - {name: cpu, query: q, threshold: 80}\n");
  auto with_step = [&](const std::string& step, const std::string& to) {
    return Parse({"replay", "-prom", "http://prom:9090", "-r", rules_, "-kubeconfig",
                  "/nonexistent", "-nodes_file", "nodes.json", "-from", "1795651200", "-to", to,
                  "-step", step, "-out", "dir"});
  };
  auto drift = with_step("0.3333", "1795654800");
  ASSERT_FALSE(drift.ok());
  EXPECT_NE(drift.status().message().find("whole number of milliseconds"), std::string::npos)
      << drift.status().message();
  auto many = with_step("0.001", "1795654800");  // an hour at 1 ms: 3.6 million steps, fine
  EXPECT_TRUE(many.ok()) << many.status().ToString();
  auto too_many = with_step("0.001", "1795661200");  // 10,000 s at 1 ms: 10 million
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("at most"), std::string::npos)
      << too_many.status().message();
  EXPECT_TRUE(with_step("0.25", "1795654800").ok());
  // A duration, as -from takes one (issue 40: "-step 60s" was refused as no double).
  auto minute = with_step("60s", "1795654800");
  ASSERT_TRUE(minute.ok()) << minute.status().ToString();
  EXPECT_EQ(minute->replay.step, 60);
  auto ms = with_step("1m30s", "1795654800");
  ASSERT_TRUE(ms.ok()) << ms.status().ToString();
  EXPECT_EQ(ms->replay.step, 90);
  EXPECT_EQ(with_step("250ms", "1795654800")->replay.step, 0.25);
  auto bad = with_step("ten", "1795654800");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("-step ten"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(with_step("0s", "1795654800").ok());
}

// -once reads its history on whole milliseconds of -s, as the replay its -step.
TEST_F(ReplayOptionsTest, AnIntervalBetweenMillisecondsIsRefused) {
  auto args = Base();
  args.insert(args.end(), {"-s", "0.3333"});
  auto o = Parse(args);
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("whole number of milliseconds"), std::string::npos)
      << o.status().message();
  auto ok = Base();
  ok.insert(ok.end(), {"-s", "0.25"});
  EXPECT_TRUE(Parse(ok).ok());
}

// The grid on multiples of the step: VictoriaMetrics answers a range query from 1795651230 at a
// 60 s step at 1795651260, 1795651320, ..., and the first version, reading only the points it
// asked for, replayed every step as an outage (test_replay_victoria).
TEST_F(ReplayOptionsTest, FromIsRoundedUpToAMultipleOfTheStep) {
  rules_ = Write("r5.yaml", "rules:\n  - {name: cpu, query: q, threshold: 80}\n");
  auto with = [&](const std::string& from, const std::string& to, const std::string& step) {
    return Parse({"replay", "-prom", "http://prom:9090", "-r", rules_, "-kubeconfig",
                  "/nonexistent", "-nodes_file", "nodes.json", "-from", from, "-to", to, "-step",
                  step, "-out", "dir"});
  };
  auto off = with("1795651230", "1795654800", "60s");
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_EQ(off->replay.from, 1795651260);
  EXPECT_EQ(with("1795651200", "1795654800", "60s")->replay.from, 1795651200) << "on the grid";
  EXPECT_DOUBLE_EQ(with("1795651200.1", "1795654800", "250ms")->replay.from, 1795651200.25);
  auto empty = with("1795651230", "1795651250", "60s");  // nothing on the grid before -to
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("on the -step grid"), std::string::npos)
      << empty.status().message();
}

TEST_F(ReplayOptionsTest, TheControllerRefusesReplayFlagsAndReplayNeedsOut) {
  auto args = Base();
  args.insert(args.end(), {"-from", "now-1d"});
  auto run = Parse(args);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("-from is for `dynamic-scheduler replay"),
            std::string::npos)
      << run.status().ToString();
  auto replay = Base();
  replay.insert(replay.begin(), "replay");
  auto no_out = Parse(replay);
  ASSERT_FALSE(no_out.ok());
  EXPECT_NE(no_out.status().message().find("-out DIR is required"), std::string::npos);
  auto controller = Parse(Base());
  ASSERT_TRUE(controller.ok());
  EXPECT_FALSE(controller->replay.on);
}

// A saved node list whose metadata is not an object is refused by name; before, a second
// "metadata" member was added beside it (and RapidJSON's assertions abort on that).
TEST(ReplayNodes, AMetadataThatIsNotAnObjectIsRefused) {
  auto nodes =
      ManagedReplayNodes(R"({"kind":"List","metadata":null,"items":[]})", "", "nodes.json");
  ASSERT_FALSE(nodes.ok());
  EXPECT_NE(nodes.status().message().find("nodes.json: metadata is not an object"),
            std::string::npos)
      << nodes.status().message();
  auto saved = ManagedReplayNodes(
      R"({"kind":"List","metadata":{"resourceVersion":""},"items":[{"metadata":{"name":"n1"}}]})",
      "", "nodes.json");
  ASSERT_TRUE(saved.ok()) << saved.status().message();
  EXPECT_EQ(saved->size(), 1u);
}

// -pods_file: the pods as `kubectl get pods -A -o json` writes them (a List with an empty
// resourceVersion), their node and owner kept; anything else is refused naming the file.
TEST(ReplayPods, ASavedPodListIsReadAndABadOneNamed) {
  auto pods = SavedPods(R"({"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":""},
      "items":[{"metadata":{"name":"web-1","namespace":"shop","uid":"u1",
                            "creationTimestamp":"2026-12-01T00:00:00Z",
                            "ownerReferences":[{"kind":"ReplicaSet","name":"web-7f","uid":"r1",
                                                "controller":true}]},
                "spec":{"nodeName":"node-1","containers":[{"name":"c"}]},
                "status":{"phase":"Running"}}]})",
                        "pods.json");
  ASSERT_TRUE(pods.ok()) << pods.status().message();
  ASSERT_EQ(pods->size(), 1u);
  EXPECT_EQ((*pods)[0].Key(), "shop/web-1");
  EXPECT_EQ((*pods)[0].node, "node-1");
  for (const char* bad : {"{", R"({"kind":"List","metadata":[],"items":[]})",
                          R"({"kind":"List","metadata":{},"items":{}})"}) {
    auto r = SavedPods(bad, "pods.json");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message().rfind("pods.json: ", 0), 0u) << r.status().message();
  }
}

}  // namespace
}  // namespace ds
