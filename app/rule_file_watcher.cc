#include "app/rule_file_watcher.h"

#include <glog/logging.h>

#include "app/options.h"
#include "common/log_fields.h"
#include "config/rule_reload.h"

namespace ds {

RuleFileWatcher::RuleFileWatcher(std::string path, std::string running_text,
                                 std::function<void(const RuleConfig&)> apply, const Clock* clock)
    : path_(std::move(path)),
      apply_(std::move(apply)),
      clock_(clock),
      running_text_(std::move(running_text)),
      seen_text_(running_text_) {}

void RuleFileWatcher::Check(bool forced) {
  auto text = ReadRuleFile(path_);
  if (!text.ok()) {
    // Mid-swap, or removed for good: the running rules stay either way. Said once per outage
    // of the file, and only on SIGHUP again.
    if (!unreadable_ || forced)
      LOG(WARNING) << "rule file unreadable; the running rules are kept"
                   << Fields("file", path_, "err", text.status().message());
    unreadable_ = true;
    return;
  }
  unreadable_ = false;
  if (*text == seen_text_ && !forced) return;
  seen_text_ = *text;
  if (*text == running_text_) {
    // Back to the running text (a refused edit undone): nothing to apply, nothing refused.
    MutexLock l(&mu_);
    if (forced) LOG(INFO) << "rule file unchanged; nothing to reload" << Fields("file", path_);
    view_.last_ok = true;
    view_.last_error.clear();
    return;
  }
  auto next = ParseReload(running_text_, *text, path_);
  if (next.ok())
    if (Status zones = CheckTimeZones(*next, path_); !zones.ok()) next = zones;
  const double now = clock_->WallSeconds();
  if (!next.ok()) {
    LOG(ERROR) << "rule file not reloaded" << Fields("file", path_, "err", next.status().message());
    MutexLock l(&mu_);
    ++view_.refused;
    view_.last_ok = false;
    view_.last_error = next.status().message();
    view_.last_wall = now;
    return;
  }
  for (const std::string& w : next->warnings) LOG(WARNING) << w;
  running_text_ = *text;
  {
    // Counted before it is handed on: whoever sees the new rules act sees the reload counted.
    MutexLock l(&mu_);
    ++view_.reloads;
    view_.last_ok = true;
    view_.last_error.clear();
    view_.last_wall = now;
  }
  apply_(*next);
}

void RuleFileWatcher::Run(const std::atomic<bool>* stop, double period_seconds) {
  while (!stop->load()) {
    bool forced = false;
    {
      MutexLock l(&mu_);
      clock_->WaitUntil(&mu_, &cv_, clock_->Now() + FromSeconds(period_seconds),
                        [&]() REQUIRES(mu_) { return poked_ || stop->load(); });
      forced = poked_;
      poked_ = false;
    }
    if (stop->load()) break;
    Check(forced);
  }
}

void RuleFileWatcher::Poke() {
  {
    MutexLock l(&mu_);
    poked_ = true;
  }
  cv_.SignalAll();
}

void RuleFileWatcher::Wake() {
  MutexLock l(&mu_);
  cv_.SignalAll();
}

RuleReloadView RuleFileWatcher::GetView() const {
  MutexLock l(&mu_);
  return view_;
}

}  // namespace ds
