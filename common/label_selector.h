// Kubernetes label selectors ("a=b,c!=d,e in (f,g),!h"), used for the set of managed nodes and
// by the API simulator for `-l`.
#pragma once

#include <string>
#include <vector>

#include "common/labels.h"
#include "common/status.h"

namespace ds {

class LabelSelector {
 public:
  // Parses the string form. The empty string selects everything.
  static StatusOr<LabelSelector> Parse(const std::string& text);
  bool Matches(const Labels& labels) const;
  bool Empty() const { return reqs_.empty(); }
  const std::string& text() const { return text_; }
  // The label keys the selector reads, once each, in order of appearance.
  std::vector<std::string> Keys() const;

 private:
  enum class Op { kEquals, kNotEquals, kIn, kNotIn, kExists, kNotExists };
  struct Requirement {
    std::string key;
    Op op;
    std::vector<std::string> values;
  };
  std::vector<Requirement> reqs_;
  std::string text_;
};

}  // namespace ds
