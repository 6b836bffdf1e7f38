// libFuzzer target: rule.yaml. Any input must give a config or an error, never a crash.
#include <string>

#include "config/rule_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  (void)ds::ParseRuleConfig(text, "fuzz.yaml");
  (void)ds::ParseDuration(text.substr(0, 32));
  return 0;
}
