#include "common/node_selector.h"

#include <algorithm>
#include <charconv>

namespace ds {
namespace {

bool Contains(const std::vector<std::string>& values, std::string_view v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

// Gt/Lt compare integers: a label or value that is not one fails the requirement, as the
// scheduler's parse error does.
bool ParseInt(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

// The requirement on one value (`present` false: the label or field is absent).
bool Holds(const NodeSelectorRequirement& r, bool present, std::string_view value) {
  if (r.op == "In") return present && Contains(r.values, value);
  if (r.op == "NotIn") return !present || !Contains(r.values, value);
  if (r.op == "Exists") return present;
  if (r.op == "DoesNotExist") return !present;
  if (r.op == "Gt" || r.op == "Lt") {
    int64_t have = 0, bound = 0;
    if (!present || r.values.size() != 1 || !ParseInt(value, &have) ||
        !ParseInt(r.values[0], &bound))
      return false;
    return r.op == "Gt" ? have > bound : have < bound;
  }
  return false;  // an operator the API would have refused
}

}  // namespace

std::string ValidateRequirement(const NodeSelectorRequirement& r, bool field) {
  if (field) {
    if (r.key != "metadata.name") return "field \"" + r.key + "\" is not metadata.name";
    if (r.op != "In" && r.op != "NotIn")
      return "field operator \"" + r.op + "\" is not In or NotIn";
    if (r.values.size() != 1) return "metadata.name needs exactly one value";
    return "";
  }
  if (r.key.empty()) return "a requirement has no key";
  if (r.op == "In" || r.op == "NotIn") return r.values.empty() ? r.op + " needs values" : "";
  if (r.op == "Exists" || r.op == "DoesNotExist")
    return r.values.empty() ? "" : r.op + " takes no values";
  if (r.op == "Gt" || r.op == "Lt") {
    int64_t v = 0;
    return r.values.size() == 1 && ParseInt(r.values[0], &v) ? ""
                                                             : r.op + " needs one integer value";
  }
  return "operator \"" + r.op + "\" is not In, NotIn, Exists, DoesNotExist, Gt or Lt";
}

bool RequirementMatches(const NodeSelectorRequirement& r, const Labels& labels) {
  const std::string* v = FindLabel(labels, r.key);
  return Holds(r, v != nullptr, v != nullptr ? std::string_view(*v) : std::string_view());
}

bool TermMatches(const NodeSelectorTerm& term, std::string_view name, const Labels& labels) {
  if (term.match_expressions.empty() && term.match_fields.empty()) return false;
  for (const NodeSelectorRequirement& r : term.match_expressions)
    if (!RequirementMatches(r, labels)) return false;
  for (const NodeSelectorRequirement& r : term.match_fields)
    if (r.key != "metadata.name" || !Holds(r, true, name)) return false;
  return true;
}

bool RequiredTermsMatch(const std::vector<NodeSelectorTerm>& terms, std::string_view name,
                        const Labels& labels) {
  if (terms.empty()) return true;
  return std::any_of(terms.begin(), terms.end(),
                     [&](const NodeSelectorTerm& t) { return TermMatches(t, name, labels); });
}

bool TermExcludes(const NodeSelectorTerm& term, const std::string& key, const std::string& value) {
  return std::any_of(
      term.match_expressions.begin(), term.match_expressions.end(),
      [&](const NodeSelectorRequirement& r) { return r.key == key && !Holds(r, true, value); });
}

}  // namespace ds
