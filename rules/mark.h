// The mark: the one label this controller owns on a Node. Every decision about whether a node
// carries it goes through here, so "is this label ours" has one definition: our key *with our
// value*. Our key with any other value (an operator's `status=maintenance`) is someone else's: the
// planner never removes it, but a node that is hot gets our value over it (the node is busy, and
// the affinity term must see that), after which it is ours.
#pragma once

#include <string>

#include "common/labels.h"

namespace ds {

struct Mark {
  // The original project's key and value (its historical spelling); workloads' affinity terms
  // name them, so they stay the defaults.
  static constexpr const char* kDefaultKey = "status";
  static constexpr const char* kDefaultValue = "presure";

  std::string key = kDefaultKey;
  std::string value = kDefaultValue;

  // True when `labels` hold our key with our value.
  bool IsOn(const Labels& labels) const {
    const std::string* v = FindLabel(labels, key);
    return v != nullptr && *v == value;
  }
  // "key=value", for messages.
  std::string ToString() const { return key + "=" + value; }
};

}  // namespace ds
