// Which changes of rule.yaml take effect while the controller runs. The rules themselves, the
// missing-data grace, the herd cap and the outage policy are read anew: they are inputs of the
// pure decisions. The rest of the current format shapes what was built at start-up -- the
// Prometheus client (`prometheus`), the cycle timer (`interval`), the mark every node carries
// (`label`, `mark`, `taint`), the node cache's server-side selector (`nodeSelector`) and the
// rebalancer (`rebalance`) -- so a change there refuses the whole file, names the keys, and the
// running rules stay: applying half a file would run a configuration nobody wrote.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "config/rule_config.h"

namespace ds {

// What the web page and /metrics show of the reloads (app/rule_file_watcher.h keeps it).
struct RuleReloadView {
  uint64_t reloads = 0, refused = 0;
  bool last_ok = true;     // the last text seen was applied (or none changed yet)
  std::string last_error;  // why the last text seen was refused
  double last_wall = 0;    // when the last text was applied or refused (epoch seconds; 0: never)
};

// Parses and validates `next_text` as ParseRuleConfig does, then compares it with the file the
// controller runs (`running_text`, which parsed before). The error says what is wrong with the
// new file, or which keys changed that need a restart.
StatusOr<RuleConfig> ParseReload(const std::string& running_text, const std::string& next_text,
                                 const std::string& source);

}  // namespace ds
