// One write to a Node's metadata: this controller's label and its ownership annotation, and how
// that write goes on the wire. Setting is a JSON merge patch that names only our keys. Removing
// our label is conditional: a JSON Patch (RFC 6902) that first tests the label still has the
// value we planned from, so that a value an operator wrote meanwhile (`kubectl label node N
// status=maintenance --overwrite` between our snapshot and our write) is never deleted; the API
// server answers 422 when the test fails, and nothing is changed.
#pragma once

#include <string>

#include "common/status.h"

namespace ds {

struct NodeEdit {
  enum class Op {
    kKeep,    // leave as it is
    kSet,     // set to `value`
    kRemove,  // remove; for the label only if it still has `value` (see above)
  };
  struct Key {
    Op op = Op::kKeep;
    std::string key;
    std::string value;
  };
  Key label;
  // With the label removed (a JSON Patch), kRemove requires the annotation to be there, or the
  // whole patch fails with 422; alone (a merge patch), its removal is unconditional.
  Key annotation;
};

struct EncodedPatch {
  std::string content_type;  // application/merge-patch+json or application/json-patch+json
  std::string body;
};

// REQUIRES: label.op or annotation.op is not kKeep; not (label kRemove and annotation kSet).
EncodedPatch EncodeNodeEdit(const NodeEdit& edit);

// True when a conditional removal's answer says the node changed since the removal was planned
// (a failed `test`, or the annotation to remove gone): a 422 that is not an admission policy's
// denial (those say "denied request"; ours answer 403 with `reason: Forbidden`, but a policy
// without a reason answers 422 too).
bool RemovalFoundChanges(const Status& st);

// A JSON Pointer (RFC 6901) token: "~" as "~0", "/" as "~1" ("example.com/x" is one key).
std::string EscapeJsonPointerToken(const std::string& token);

// "set status=presure", "remove status (if still presure)", "set annotation a", ...; for logs.
std::string DescribeNodeEdit(const NodeEdit& edit);

}  // namespace ds
