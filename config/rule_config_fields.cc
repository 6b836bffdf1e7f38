// FieldReader (config/rule_config_parse.h): the value types of rule.yaml's fields, with the errors
// every section words alike; and ParseDuration, the duration syntax of every field that takes one.
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "common/label_selector.h"
#include "common/labels.h"
#include "config/rule_config.h"
#include "config/rule_config_parse.h"

namespace ds {
namespace rule_config_parse {
namespace {

// An IANA name (Europe/Berlin) or UTC: letters, digits, '/', '_', '-', '+', and no way out of
// the zoneinfo folder.
bool TimeZoneNameOk(const std::string& name) {
  bool ok =
      !name.empty() && name.size() < 64 && name[0] != '/' && name.find("..") == std::string::npos;
  for (char c : name)
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '_' || c == '-' ||
                c == '+');
  return ok;
}

}  // namespace

std::string Where(const std::string& source, const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  if (m.is_null()) return source;
  return source + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

Status FieldReader::Error(const YAML::Node& at, const std::string& field,
                          const std::string& problem) const {
  return Status::InvalidArgument(Where(source_, at) + ": " + field + ": " + problem);
}

Status FieldReader::CheckKeys(const YAML::Node& map, const std::string& field,
                              const std::set<std::string>& allowed) const {
  if (!map.IsMap()) return Error(map, field, "must be a mapping");
  for (const auto& kv : map) {
    std::string key = kv.first.Scalar();
    if (!allowed.count(key)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      return Error(kv.first, field.empty() ? key : field + "." + key,
                   "unknown field (allowed: " + list + ")");
    }
  }
  return Status::OK();
}

StatusOr<std::string> FieldReader::String(const YAML::Node& n, const std::string& field) const {
  if (!n.IsScalar()) return Error(n, field, "must be a string");
  return n.Scalar();
}

StatusOr<double> FieldReader::Number(const YAML::Node& n, const std::string& field) const {
  if (!n.IsScalar()) return Error(n, field, "must be a number");
  const std::string& s = n.Scalar();
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size())
    return Error(n, field, "\"" + s + "\" is not a number");
  if (!std::isfinite(v)) return Error(n, field, "\"" + s + "\" is not a finite number");
  return v;
}

StatusOr<double> FieldReader::Seconds(const YAML::Node& n, const std::string& field) const {
  if (!n.IsScalar()) return Error(n, field, "must be a duration like 30s");
  auto d = ParseDuration(n.Scalar());
  if (!d.ok()) return Error(n, field, d.status().message());
  return *d;
}

StatusOr<bool> FieldReader::Bool(const YAML::Node& n, const std::string& field) const {
  if (n.IsScalar()) {
    if (n.Scalar() == "true") return true;
    if (n.Scalar() == "false") return false;
  }
  return Error(n, field, "must be true or false");
}

StatusOr<size_t> FieldReader::Count(const YAML::Node& n, const std::string& field) const {
  ASSIGN_OR_RETURN(double v, Number(n, field));
  if (v < 0 || v != std::floor(v) || v > 1e9)
    return Error(n, field, "must be a whole number from 0 to 1000000000");
  return static_cast<size_t>(v);
}

StatusOr<std::vector<std::string>> FieldReader::Strings(const YAML::Node& n,
                                                        const std::string& field) const {
  if (!n.IsSequence()) return Error(n, field, "must be a list of strings");
  std::vector<std::string> out;
  for (size_t i = 0; i < n.size(); ++i) {
    ASSIGN_OR_RETURN(std::string v, String(n[i], field + "[" + std::to_string(i) + "]"));
    out.push_back(std::move(v));
  }
  return out;
}

StatusOr<double> FieldReader::PositiveSeconds(const YAML::Node& n, const std::string& field,
                                              const std::string& problem) const {
  ASSIGN_OR_RETURN(double v, Seconds(n, field));
  if (v <= 0) return Error(n, field, problem);
  return v;
}

StatusOr<std::string> FieldReader::QueryText(const YAML::Node& n, const std::string& field) const {
  ASSIGN_OR_RETURN(std::string q, String(n, field));
  if (q.find_first_not_of(" \t\n") == std::string::npos) return Error(n, field, "empty query");
  return q;
}

StatusOr<std::string> FieldReader::Selector(const YAML::Node& n, const std::string& field) const {
  ASSIGN_OR_RETURN(std::string text, String(n, field));
  auto sel = LabelSelector::Parse(text);
  if (!sel.ok()) return Error(n, field, sel.status().message());
  return text;
}

StatusOr<std::string> FieldReader::LabelKey(const YAML::Node& n, const std::string& field) const {
  ASSIGN_OR_RETURN(std::string key, String(n, field));
  if (auto why = ValidateLabelKey(key); !why.empty()) return Error(n, field, why);
  return key;
}

StatusOr<std::string> FieldReader::LabelValue(const YAML::Node& n, const std::string& field) const {
  ASSIGN_OR_RETURN(std::string value, String(n, field));
  if (auto why = ValidateLabelValue(value); !why.empty()) return Error(n, field, why);
  return value;
}

StatusOr<std::string> FieldReader::MarkValue(const YAML::Node& n, const std::string& field) const {
  ASSIGN_OR_RETURN(std::string value, LabelValue(n, field));
  if (value.empty()) return Error(n, field, "must not be empty");
  return value;
}

StatusOr<std::string> FieldReader::TimeZoneName(const YAML::Node& n,
                                                const std::string& field) const {
  ASSIGN_OR_RETURN(std::string name, String(n, field));
  if (!TimeZoneNameOk(name))
    return Error(n, field, "\"" + name + "\" is not a time zone name like Europe/Berlin or UTC");
  return name;
}

StatusOr<std::string> FieldReader::NonEmptyString(const YAML::Node& n,
                                                  const std::string& field) const {
  ASSIGN_OR_RETURN(std::string v, String(n, field));
  if (v.empty()) return Error(n, field, "must not be empty");
  return v;
}

}  // namespace rule_config_parse

StatusOr<double> ParseDuration(const std::string& text) {
  if (text.empty()) return Status::InvalidArgument("empty duration");
  char* end = nullptr;
  double bare = std::strtod(text.c_str(), &end);
  if (end == text.c_str() + text.size()) {
    if (!std::isfinite(bare) || bare < 0)
      return Status::InvalidArgument("\"" + text + "\" is not a duration >= 0");
    return bare;
  }
  double total = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
      ++i;
    if (i == start) return Status::InvalidArgument("\"" + text + "\" is not a duration like 1m30s");
    double v = std::strtod(text.substr(start, i - start).c_str(), nullptr);
    size_t u = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string unit = text.substr(u, i - u);
    if (unit == "ms")
      total += v / 1000;
    else if (unit == "s")
      total += v;
    else if (unit == "m")
      total += v * 60;
    else if (unit == "h")
      total += v * 3600;
    else if (unit == "d")  // as in PromQL; predict's halfLife is counted in days
      total += v * 86400;
    else
      return Status::InvalidArgument("\"" + text + "\": unknown unit \"" + unit +
                                     "\" (use ms, s, m, h, d)");
  }
  return total;
}

}  // namespace ds
