// Reloads rule.yaml while the controller runs: when the file's text changes, and at once on
// SIGHUP. The file is polled by content, not by modification time: a ConfigMap mount replaces
// its files by swapping a symlink, which the path's mtime does not show on every setup, and
// reading a file of a few KiB every two seconds costs nothing. A new text is parsed and checked
// (config/rule_reload.h); if it is refused, the error is logged once per text and shown in
// /status and /metrics, and the running rules stay.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "common/clock.h"
#include "common/mutex.h"
#include "config/rule_config.h"
#include "config/rule_reload.h"

namespace ds {

class RuleFileWatcher {
 public:
  // `running_text` is the text the controller started with; `apply` receives each accepted
  // reload (Reconciler::Reload).
  RuleFileWatcher(std::string path, std::string running_text,
                  std::function<void(const RuleConfig&)> apply, const Clock* clock);

  // Reads the file; parses it if its text differs from the last one seen (or `forced`, for
  // SIGHUP: a refused text is tried, and reported, again).
  void Check(bool forced = false);
  // Checks every `period_seconds` until *stop; a Poke checks at once. Call Wake after setting
  // *stop.
  void Run(const std::atomic<bool>* stop, double period_seconds);
  void Poke();
  void Wake();
  RuleReloadView GetView() const;

 private:
  const std::string path_;
  const std::function<void(const RuleConfig&)> apply_;
  const Clock* const clock_;
  std::string running_text_;  // the text whose rules run
  std::string seen_text_;     // the last text read
  bool unreadable_ = false;   // the last read failed (logged once until it reads again)
  mutable Mutex mu_;
  CondVar cv_;
  bool poked_ GUARDED_BY(mu_) = false;
  RuleReloadView view_ GUARDED_BY(mu_);
};

}  // namespace ds
