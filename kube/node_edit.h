// One write to a Node's metadata: this controller's label and its ownership annotation, and how
// that write goes on the wire. Setting is a JSON merge patch that names only our keys. Removing
// our label is conditional: a JSON Patch (RFC 6902) that first tests the label still has the
// value we planned from, so that a value an operator wrote meanwhile (`kubectl label node N
// status=maintenance --overwrite` between our snapshot and our write) is never deleted; the API
// server answers 422 when the test fails, and nothing is changed.
//
// A taint (taint mode) is a read-modify-write of the node's whole taint list: spec.taints has no
// merge key, so every patch type replaces the list whole. The edit carries the list as it must
// become (ours added or removed, every other taint as read) and the resourceVersion it was read
// at, sent as a JSON merge patch with metadata.resourceVersion: a precondition. If anyone wrote
// the node since (`kubectl taint` between our read and our write), the API server answers 409
// Conflict and changes nothing; the caller reads the node again and edits afresh. The label and
// annotation changes ride in the same patch, and the precondition covers them too (a label
// removal needs no `test`: the value was read at that resourceVersion).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "common/taint.h"

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
  // Taint mode: replace spec.taints with `taints` (empty: remove the list), only if the node is
  // still at `resource_version` (REQUIRES: not empty when set_taints).
  bool set_taints = false;
  std::vector<Taint> taints;
  // Also a precondition of a set without taints (a merge patch): the write is refused with 409
  // if anyone wrote the node since it was read at this version (empty: unconditional).
  std::string resource_version;
};

struct EncodedPatch {
  std::string content_type;  // application/merge-patch+json or application/json-patch+json
  std::string body;
};

// REQUIRES: label.op or annotation.op is not kKeep, or set_taints; not (label kRemove and
// annotation kSet) unless set_taints. Fails (InvalidArgument, never to be sent) for a taint edit
// without a resource_version: on the wire that would be an unconditional write of a stale list.
// Each taint is written with every field it was read with (timeAdded too).
StatusOr<EncodedPatch> EncodeNodeEdit(const NodeEdit& edit);

// True when a conditional removal's answer says the node changed since the removal was planned
// (a failed `test`, or the annotation to remove gone): a 422 that is not an admission policy's
// denial (those say "denied request"; ours answer 403 with `reason: Forbidden`, but a policy
// without a reason answers 422 too).
bool RemovalFoundChanges(const Status& st);

// A JSON Pointer (RFC 6901) token: "~" as "~0", "/" as "~1" ("example.com/x" is one key).
std::string EscapeJsonPointerToken(const std::string& token);

// "set status=presure", "remove status (if still presure)", "set annotation a", "set taints
// [k=v:PreferNoSchedule] (if still at resourceVersion 12)", ...; for logs.
std::string DescribeNodeEdit(const NodeEdit& edit);

}  // namespace ds
