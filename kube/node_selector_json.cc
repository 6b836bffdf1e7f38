#include "kube/node_selector_json.h"

#include "common/json_util.h"

namespace ds {

std::string ParseNodeSelectorTerm(const rapidjson::Value& t, NodeSelectorTerm* out) {
  if (!t.IsObject()) return "a term is not an object";
  for (const char* part : {"matchExpressions", "matchFields"}) {
    const auto* list = JsonMember(t, part);
    if (list == nullptr || list->IsNull()) continue;
    if (!list->IsArray()) return std::string(part) + " is not a list";
    const bool field = part[5] == 'F';
    for (const auto& r : list->GetArray()) {
      NodeSelectorRequirement req{JsonString(r, "key"), JsonString(r, "operator"), {}};
      if (const auto* vs = JsonMember(r, "values"); vs != nullptr && vs->IsArray())
        for (const auto& v : vs->GetArray()) {
          if (!v.IsString()) return "a value of " + req.key + " is not a string";
          req.values.emplace_back(v.GetString(), v.GetStringLength());
        }
      if (std::string why = ValidateRequirement(req, field); !why.empty()) return why;
      (field ? out->match_fields : out->match_expressions).push_back(std::move(req));
    }
  }
  return "";
}

}  // namespace ds
