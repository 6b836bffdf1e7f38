// A core/v1 NodeSelectorTerm read from JSON: in a pod's node affinity and in a PersistentVolume's.
#pragma once

#include <rapidjson/document.h>

#include <string>

#include "common/node_selector.h"

namespace ds {

// Reads one NodeSelectorTerm into *out; "" or why it cannot be judged (an unknown operator, a
// value that is not a string...).
std::string ParseNodeSelectorTerm(const rapidjson::Value& t, NodeSelectorTerm* out);

}  // namespace ds
