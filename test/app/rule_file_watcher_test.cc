#include "app/rule_file_watcher.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "test/fakes/fake_clock.h"

namespace ds {
namespace {

namespace fs = std::filesystem;

const char* kRules = "rules:\n  - {name: cpu, query: cpu_pct, threshold: 80}\n";

class RuleFileWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ds-watch-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }
  std::unique_ptr<RuleFileWatcher> Watch(const fs::path& path) {
    return std::make_unique<RuleFileWatcher>(
        path.string(), kRules, [this](const RuleConfig& c) { applied_.push_back(c); }, &clock_);
  }

  fs::path dir_;
  FakeClock clock_;
  std::vector<RuleConfig> applied_;
};

TEST_F(RuleFileWatcherTest, AppliesAChangeAndKeepsTheRunningRulesOnARefusedOne) {
  const fs::path path = dir_ / "rule.yaml";
  Write(path, kRules);
  auto w = Watch(path);
  w->Check();
  EXPECT_TRUE(applied_.empty()) << "unchanged";

  Write(path, "rules:\n  - {name: cpu, query: cpu_pct, threshold: 70}\n");
  w->Check();
  ASSERT_EQ(applied_.size(), 1u);
  EXPECT_EQ(applied_[0].rules.at(0).threshold, 70);
  EXPECT_EQ(w->GetView().reloads, 1u);

  Write(path, "rules:\n  - {name: cpu, query: cpu_pct, threshold: high}\n");
  w->Check();
  w->Check();  // the same refused text: refused (and logged) once
  EXPECT_EQ(applied_.size(), 1u);
  RuleReloadView v = w->GetView();
  EXPECT_EQ(v.refused, 1u);
  EXPECT_FALSE(v.last_ok);
  EXPECT_NE(v.last_error.find("rule.yaml:2:"), std::string::npos) << v.last_error;
  w->Check(/*forced=*/true);  // SIGHUP: tried and reported again
  EXPECT_EQ(w->GetView().refused, 2u);

  fs::remove(path);
  w->Check();  // a missing file changes nothing
  EXPECT_EQ(applied_.size(), 1u);
  // The refused edit undone: back to the running text, nothing to apply, nothing refused.
  Write(path, "rules:\n  - {name: cpu, query: cpu_pct, threshold: 70}\n");
  w->Check();
  EXPECT_EQ(applied_.size(), 1u);
  EXPECT_TRUE(w->GetView().last_ok);
}

// A zone the tz database does not have would fail every cycle of the rule that needs it.
TEST_F(RuleFileWatcherTest, AnUnknownTimeZoneIsRefused) {
  const fs::path path = dir_ / "rule.yaml";
  Write(path, kRules);
  auto w = Watch(path);
  Write(path,
        "rules:\n  - {name: cpu, query: cpu_pct, threshold: 80, predict: {timeZone: Mars/Base}}\n");
  w->Check();
  EXPECT_TRUE(applied_.empty());
  RuleReloadView v = w->GetView();
  EXPECT_EQ(v.refused, 1u);
  EXPECT_NE(v.last_error.find("predict.timeZone"), std::string::npos) << v.last_error;
  EXPECT_NE(v.last_error.find("Mars/Base"), std::string::npos) << v.last_error;
}

// How the kubelet updates a ConfigMap volume: the files are symlinks through ..data, which is
// swapped to a new timestamped directory in one rename.
TEST_F(RuleFileWatcherTest, SeesAConfigMapSymlinkSwap) {
  fs::create_directory(dir_ / "..2026_11_23_1");
  Write(dir_ / "..2026_11_23_1" / "rule.yaml", kRules);
  fs::create_directory_symlink("..2026_11_23_1", dir_ / "..data");
  fs::create_symlink("..data/rule.yaml", dir_ / "rule.yaml");
  auto w = Watch(dir_ / "rule.yaml");
  w->Check();
  EXPECT_TRUE(applied_.empty());

  fs::create_directory(dir_ / "..2026_11_23_2");
  Write(dir_ / "..2026_11_23_2" / "rule.yaml",
        "rules:\n  - {name: cpu, query: cpu_pct, threshold: 60}\n");
  fs::create_directory_symlink("..2026_11_23_2", dir_ / "..data_tmp");
  fs::rename(dir_ / "..data_tmp", dir_ / "..data");
  fs::remove_all(dir_ / "..2026_11_23_1");
  w->Check();
  ASSERT_EQ(applied_.size(), 1u);
  EXPECT_EQ(applied_[0].rules.at(0).threshold, 60);
}

}  // namespace
}  // namespace ds
