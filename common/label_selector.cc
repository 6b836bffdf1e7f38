#include "common/label_selector.h"

#include <algorithm>
#include <cctype>

namespace ds {

std::vector<std::string> LabelSelector::Keys() const {
  std::vector<std::string> keys;
  for (const auto& r : reqs_)
    if (std::find(keys.begin(), keys.end(), r.key) == keys.end()) keys.push_back(r.key);
  return keys;
}
namespace {

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

std::string ValidateName(std::string_view s, size_t max, const char* what) {
  if (s.size() > max)
    return std::string(what) + " must be no more than " + std::to_string(max) + " characters";
  if (s.empty()) return "";
  if (!IsAlnum(s.front()) || !IsAlnum(s.back()))
    return std::string(what) + " must begin and end with an alphanumeric character";
  for (char c : s)
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.')
      return std::string(what) + " may contain only alphanumerics, '-', '_' and '.'";
  return "";
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string ValidateLabelKey(std::string_view key) {
  if (key.empty()) return "label key must not be empty";
  std::string_view name = key;
  auto slash = key.find('/');
  if (slash != std::string_view::npos) {
    std::string_view prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (prefix.empty() || prefix.size() > 253) return "label key prefix must be 1-253 characters";
    for (char c : prefix)
      if (!(std::islower(static_cast<unsigned char>(c)) ||
            std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.'))
        return "label key prefix must be a lower-case DNS subdomain";
  }
  if (name.empty()) return "label key name must not be empty";
  return ValidateName(name, 63, "label key name");
}

std::string ValidateLabelValue(std::string_view value) {
  return ValidateName(value, 63, "label value");
}

StatusOr<LabelSelector> LabelSelector::Parse(const std::string& text) {
  LabelSelector sel;
  sel.text_ = text;
  // Split on commas that are not inside parentheses.
  std::vector<std::string_view> parts;
  std::string_view rest(text);
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= rest.size(); ++i) {
    if (i == rest.size() || (rest[i] == ',' && depth == 0)) {
      parts.push_back(rest.substr(start, i - start));
      start = i + 1;
    } else if (rest[i] == '(') {
      ++depth;
    } else if (rest[i] == ')') {
      --depth;
    }
  }
  if (depth != 0)
    return Status::InvalidArgument("label selector \"" + text + "\": unbalanced parentheses");
  if (parts.size() == 1 && Trim(parts[0]).empty()) return sel;
  for (std::string_view raw : parts) {
    std::string_view p = Trim(raw);
    if (p.empty())
      return Status::InvalidArgument("label selector \"" + text + "\": empty requirement");
    Requirement r;
    auto bad = [&](const std::string& why) {
      return Status::InvalidArgument("label selector \"" + text + "\": " + std::string(p) + ": " +
                                     why);
    };
    if (p.front() == '!') {
      r.key = std::string(Trim(p.substr(1)));
      r.op = Op::kNotExists;
    } else if (auto pos = p.find("!="); pos != std::string_view::npos) {
      r.key = std::string(Trim(p.substr(0, pos)));
      r.op = Op::kNotEquals;
      r.values.emplace_back(Trim(p.substr(pos + 2)));
    } else if (auto pos2 = p.find("=="); pos2 != std::string_view::npos) {
      r.key = std::string(Trim(p.substr(0, pos2)));
      r.op = Op::kEquals;
      r.values.emplace_back(Trim(p.substr(pos2 + 2)));
    } else if (auto pos3 = p.find('='); pos3 != std::string_view::npos) {
      r.key = std::string(Trim(p.substr(0, pos3)));
      r.op = Op::kEquals;
      r.values.emplace_back(Trim(p.substr(pos3 + 1)));
    } else if (auto open = p.find('('); open != std::string_view::npos) {
      if (p.back() != ')') return bad("expected ')' at the end");
      std::string_view head = Trim(p.substr(0, open));
      auto sp = head.find_last_of(" \t");
      if (sp == std::string_view::npos) return bad("expected 'in' or 'notin'");
      std::string_view op = Trim(head.substr(sp + 1));
      r.key = std::string(Trim(head.substr(0, sp)));
      if (op == "in")
        r.op = Op::kIn;
      else if (op == "notin")
        r.op = Op::kNotIn;
      else
        return bad("unknown operator '" + std::string(op) + "'");
      std::string_view list = p.substr(open + 1, p.size() - open - 2);
      size_t s = 0;
      for (size_t i = 0; i <= list.size(); ++i) {
        if (i == list.size() || list[i] == ',') {
          r.values.emplace_back(Trim(list.substr(s, i - s)));
          s = i + 1;
        }
      }
    } else {
      r.key = std::string(p);
      r.op = Op::kExists;
    }
    if (std::string why = ValidateLabelKey(r.key); !why.empty()) return bad(why);
    for (const auto& v : r.values)
      if (std::string why = ValidateLabelValue(v); !why.empty()) return bad(why);
    sel.reqs_.push_back(std::move(r));
  }
  return sel;
}

bool LabelSelector::Matches(const Labels& labels) const {
  for (const auto& r : reqs_) {
    const std::string* v = FindLabel(labels, r.key);
    switch (r.op) {
      case Op::kExists:
        if (v == nullptr) return false;
        break;
      case Op::kNotExists:
        if (v != nullptr) return false;
        break;
      case Op::kEquals:
        if (v == nullptr || *v != r.values[0]) return false;
        break;
      case Op::kNotEquals:
        if (v != nullptr && *v == r.values[0]) return false;
        break;
      case Op::kIn:
        if (v == nullptr || std::find(r.values.begin(), r.values.end(), *v) == r.values.end())
          return false;
        break;
      case Op::kNotIn:
        if (v != nullptr && std::find(r.values.begin(), r.values.end(), *v) != r.values.end())
          return false;
        break;
    }
  }
  return true;
}

}  // namespace ds
