#include "kube/node_edit.h"

#include "common/json_util.h"

namespace ds {

bool RemovalFoundChanges(const Status& st) {
  return st.http_status() == 422 && st.message().find("denied request") == std::string::npos;
}

std::string EscapeJsonPointerToken(const std::string& token) {
  std::string out;
  out.reserve(token.size());
  for (char c : token) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

namespace {

void MergeKey(JsonWriter& w, const char* field, const NodeEdit::Key& k) {
  if (k.op == NodeEdit::Op::kKeep) return;
  w.Key(field);
  w.StartObject();
  WriteString(w, k.key);
  if (k.op == NodeEdit::Op::kSet)
    WriteString(w, k.value);
  else
    w.Null();  // merge patch: null deletes; an absent key would be kept
  w.EndObject();
}

void Operation(JsonWriter& w, const char* op, const std::string& path, const std::string* value) {
  w.StartObject();
  w.Key("op");
  w.String(op);
  w.Key("path");
  WriteString(w, path);
  if (value != nullptr) {
    w.Key("value");
    WriteString(w, *value);
  }
  w.EndObject();
}

}  // namespace

StatusOr<EncodedPatch> EncodeNodeEdit(const NodeEdit& edit) {
  // An empty resourceVersion is no precondition at all: the API server takes
  // `"resourceVersion":""` as "unconditional", and the taints we read would overwrite any
  // written since.
  if (edit.set_taints && edit.resource_version.empty())
    return Status(StatusCode::kInvalidArgument,
                  "a taint edit needs the resourceVersion it was read at (none known): not sent");
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  EncodedPatch out;
  if (edit.set_taints) {
    out.content_type = "application/merge-patch+json";
    w.StartObject();
    w.Key("metadata");
    w.StartObject();
    w.Key("resourceVersion");  // the precondition: 409 Conflict if the node changed since
    WriteString(w, edit.resource_version);
    MergeKey(w, "labels", edit.label);
    MergeKey(w, "annotations", edit.annotation);
    w.EndObject();
    w.Key("spec");
    w.StartObject();
    w.Key("taints");
    if (edit.taints.empty()) {
      w.Null();  // merge patch: null deletes the list
    } else {
      w.StartArray();
      for (const Taint& t : edit.taints) {
        w.StartObject();
        w.Key("key");
        WriteString(w, t.key);
        if (!t.value.empty()) {  // optional in the API: an empty value is sent as none
          w.Key("value");
          WriteString(w, t.value);
        }
        w.Key("effect");
        WriteString(w, t.effect);
        if (!t.time_added.empty()) {  // as read: the list replaces the node's whole
          w.Key("timeAdded");
          WriteString(w, t.time_added);
        }
        w.EndObject();
      }
      w.EndArray();
    }
    w.EndObject();
    w.EndObject();
  } else if (edit.label.op == NodeEdit::Op::kRemove) {
    out.content_type = "application/json-patch+json";
    const std::string label = "/metadata/labels/" + EscapeJsonPointerToken(edit.label.key);
    w.StartArray();
    Operation(w, "test", label, &edit.label.value);
    Operation(w, "remove", label, nullptr);
    if (edit.annotation.op == NodeEdit::Op::kRemove)
      Operation(w, "remove", "/metadata/annotations/" + EscapeJsonPointerToken(edit.annotation.key),
                nullptr);
    w.EndArray();
  } else {
    out.content_type = "application/merge-patch+json";
    w.StartObject();
    w.Key("metadata");
    w.StartObject();
    if (!edit.resource_version.empty()) {
      w.Key("resourceVersion");  // a set only if nobody wrote the node since it was read: 409
      WriteString(w, edit.resource_version);
    }
    MergeKey(w, "labels", edit.label);
    MergeKey(w, "annotations", edit.annotation);
    w.EndObject();
    w.EndObject();
  }
  out.body = sb.GetString();
  return out;
}

std::string DescribeNodeEdit(const NodeEdit& edit) {
  std::string s;
  auto one = [&](const NodeEdit::Key& k, const char* what) {
    if (k.op == NodeEdit::Op::kKeep) return;
    if (!s.empty()) s += " and ";
    s += k.op == NodeEdit::Op::kSet ? "set " : "remove ";
    s += what;
    s += k.key;
    if (k.op == NodeEdit::Op::kSet && *what == '\0') s += "=" + k.value;
  };
  one(edit.label, "");
  if (edit.label.op == NodeEdit::Op::kRemove && !edit.set_taints)
    s += " (if still " + edit.label.value + ")";
  one(edit.annotation, "annotation ");
  if (edit.set_taints) {
    if (!s.empty()) s += " and ";
    s += "set taints [";
    for (size_t i = 0; i < edit.taints.size(); ++i) {
      const Taint& t = edit.taints[i];
      s += (i > 0 ? ", " : "") + t.key + (t.value.empty() ? "" : "=" + t.value) + ":" + t.effect;
    }
    s += "] (if still at resourceVersion " + edit.resource_version + ")";
  } else if (!edit.resource_version.empty() && edit.label.op != NodeEdit::Op::kRemove) {
    s += " (if still at resourceVersion " + edit.resource_version + ")";
  }
  return s;
}

}  // namespace ds
