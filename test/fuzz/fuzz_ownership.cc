// libFuzzer target: the ownership annotation as found on a Node (anyone with patch rights can
// write it). Whatever parses must format and parse again to the same record, and formatting is
// then stable: a record the controller rewrites does not drift from one write to the next.
#include <cstdlib>
#include <string>

#include "rules/ownership.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto o = ds::ParseOwnership(text);
  if (!o.ok()) return 0;
  const std::string once = ds::FormatOwnership(*o);
  auto again = ds::ParseOwnership(once);
  if (!again.ok()) std::abort();
  if (again->label_key != o->label_key || again->label_value != o->label_value ||
      again->rules.size() != o->rules.size())
    std::abort();
  for (size_t i = 0; i < o->rules.size(); ++i)
    if (again->rules[i].rule != o->rules[i].rule) std::abort();
  if (ds::FormatOwnership(*again) != once) std::abort();
  return 0;
}
