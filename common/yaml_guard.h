// yaml-cpp parses recursively with no depth limit, so a deeply nested file (a broken generator,
// or "[[[[...") can exhaust the stack instead of producing an error. This scan runs before
// yaml-cpp and rejects nesting beyond a sane depth, naming the line.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ds {

// Returns "" when `text` nests no deeper than max_depth (flow brackets plus block indentation
// levels plus "- " sequence markers), else "line N: ..." describing the problem.
inline std::string YamlNestingProblem(std::string_view text, int max_depth = 64) {
  int flow = 0;
  std::vector<size_t> indents;
  size_t line_no = 0, pos = 0;
  while (pos <= text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    ++line_no;
    pos = eol + 1;
    size_t indent = line.find_first_not_of(' ');
    if (indent == std::string_view::npos || line[indent] == '#') {
      if (eol == text.size()) break;
      continue;
    }
    if (flow == 0) {
      while (!indents.empty() && indents.back() > indent) indents.pop_back();
      if (indents.empty() || indent > indents.back()) indents.push_back(indent);
    }
    int dashes = 0;
    for (size_t i = indent; i + 1 < line.size() && line[i] == '-' && line[i + 1] == ' ';) {
      ++dashes;
      i = line.find_first_not_of(' ', i + 1);
      if (i == std::string_view::npos) break;
    }
    char quote = 0;
    for (size_t i = indent; i < line.size(); ++i) {
      char c = line[i];
      if (quote != 0) {
        if (c == quote)
          quote = 0;
        else if (c == '\\' && quote == '"')
          ++i;
        continue;
      }
      if (c == '"' || c == '\'')
        quote = c;
      else if (c == '#' && (i == 0 || line[i - 1] == ' '))
        break;
      else if (c == '[' || c == '{')
        ++flow;
      else if ((c == ']' || c == '}') && flow > 0)
        --flow;
      if (flow + static_cast<int>(indents.size()) + dashes > max_depth)
        return "line " + std::to_string(line_no) + ": nested more than " +
               std::to_string(max_depth) + " levels deep";
    }
    if (static_cast<int>(indents.size()) + dashes + flow > max_depth)
      return "line " + std::to_string(line_no) + ": nested more than " + std::to_string(max_depth) +
             " levels deep";
    if (eol == text.size()) break;
  }
  return "";
}

// The nesting check, then yaml-cpp: the parsed document, or an error that starts with `source`
// ("rule.yaml:3:7: not valid YAML: ..."). The caller checks the document's shape.
inline StatusOr<YAML::Node> LoadYaml(const std::string& text, const std::string& source) {
  if (std::string why = YamlNestingProblem(text); !why.empty())
    return Status::InvalidArgument(source + ": " + why);
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    return Status::InvalidArgument(source + ":" + std::to_string(e.mark.line + 1) + ":" +
                                   std::to_string(e.mark.column + 1) +
                                   ": not valid YAML: " + e.msg);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(source + ": not valid YAML: " + e.what());
  }
}

}  // namespace ds
