#include "kube/node_object.h"

#include <rapidjson/document.h>

#include <cstdlib>

#include "common/json_util.h"
#include "common/quantity.h"

namespace ds {
namespace {

std::string Str(const rapidjson::Value& v) {
  return std::string(v.GetString(), v.GetStringLength());
}

Status Malformed(const std::string& what, const std::string& why) {
  return Status::Unavailable("malformed " + what + ": " + why);
}

Status ParseNodeValue(const rapidjson::Value& obj, NodeInfo* out) {
  const rapidjson::Value* meta = JsonMember(obj, "metadata");
  if (meta == nullptr || !meta->IsObject()) return Malformed("Node", "no metadata");
  const rapidjson::Value* name = JsonMember(*meta, "name");
  if (name == nullptr || !name->IsString() || name->GetStringLength() == 0)
    return Malformed("Node", "no metadata.name");
  out->name = Str(*name);
  out->resource_version = JsonString(*meta, "resourceVersion");
  out->uid = JsonString(*meta, "uid");
  if (const auto* labels = JsonMember(*meta, "labels"); labels != nullptr && labels->IsObject()) {
    out->labels.reserve(labels->MemberCount());
    for (auto it = labels->MemberBegin(); it != labels->MemberEnd(); ++it) {
      if (!it->value.IsString())
        return Malformed("Node " + out->name, "a label value is not a string");
      out->labels.emplace_back(Str(it->name), Str(it->value));
    }
  }
  if (const auto* ann = JsonMember(*meta, "annotations"); ann != nullptr && ann->IsObject()) {
    const std::string_view prefix = kOwnAnnotationPrefix;
    for (auto it = ann->MemberBegin(); it != ann->MemberEnd(); ++it) {
      std::string_view key(it->name.GetString(), it->name.GetStringLength());
      if (key.substr(0, prefix.size()) != prefix) continue;
      if (!it->value.IsString())
        return Malformed("Node " + out->name,
                         "annotation " + std::string(key) + " is not a string");
      out->annotations.emplace_back(std::string(key), Str(it->value));
    }
  }
  if (const auto* spec = JsonMember(obj, "spec")) {
    if (const auto* u = JsonMember(*spec, "unschedulable"); u != nullptr && u->IsBool())
      out->unschedulable = u->GetBool();
    if (const auto* taints = JsonMember(*spec, "taints"); taints != nullptr && taints->IsArray())
      for (const auto& t : taints->GetArray())
        out->taints.push_back(Taint{JsonString(t, "key"), JsonString(t, "value"),
                                    JsonString(t, "effect"), JsonString(t, "timeAdded")});
  }
  if (const auto* status = JsonMember(obj, "status")) {
    if (const auto* alloc = JsonMember(*status, "allocatable"); alloc != nullptr) {
      // A quantity that does not parse leaves 0: the node then fits nothing, which is safe.
      if (const auto* q = JsonMember(*alloc, "cpu"); q != nullptr && q->IsString())
        ParseQuantity(q->GetString(), &out->allocatable_cpu);
      if (const auto* q = JsonMember(*alloc, "memory"); q != nullptr && q->IsString())
        ParseQuantity(q->GetString(), &out->allocatable_memory);
      if (alloc->IsObject())
        for (auto it = alloc->MemberBegin(); it != alloc->MemberEnd(); ++it) {
          std::string_view name(it->name.GetString(), it->name.GetStringLength());
          double v = 0;
          if (name == "cpu" || name == "memory" || !it->value.IsString() ||
              !ParseQuantity(it->value.GetString(), &v))
            continue;  // unread: a pod that requests it fits nowhere, which is safe
          out->allocatable_other.emplace_back(std::string(name), v);
        }
    }
    if (const auto* addrs = JsonMember(*status, "addresses");
        addrs != nullptr && addrs->IsArray()) {
      for (const auto& a : addrs->GetArray()) {
        std::string type = JsonString(a, "type");
        if (type == "InternalIP" || type == "ExternalIP" || type == "Hostname") {
          std::string addr = JsonString(a, "address");
          if (!addr.empty()) out->addresses.push_back(std::move(addr));
        }
      }
    }
  }
  return Status::OK();
}

Status StatusFromObject(const rapidjson::Value& obj, int fallback_code) {
  int code = fallback_code;
  if (const auto* c = JsonMember(obj, "code"); c != nullptr && c->IsInt()) code = c->GetInt();
  std::string reason = JsonString(obj, "reason");
  std::string message = JsonString(obj, "message", reason.empty() ? "no message" : reason);
  StatusCode sc = StatusCode::kInternal;
  if (code == 410 || reason == "Expired" || reason == "Gone")
    sc = StatusCode::kExpired;
  else if (code == 409)
    sc = StatusCode::kConflict;
  else if (code == 429)
    sc = StatusCode::kTooManyRequests;
  else if (code == 401 || code == 403)
    sc = StatusCode::kPermissionDenied;
  else if (code == 404)
    sc = StatusCode::kNotFound;
  else if (code >= 500 || code == 0)
    sc = StatusCode::kUnavailable;
  else if (code >= 400)
    sc = StatusCode::kInvalidArgument;
  Status st(sc, reason.empty() ? message : reason + ": " + message);
  st.set_http_status(code);
  if (const auto* d = JsonMember(obj, "details")) {
    if (const auto* r = JsonMember(*d, "retryAfterSeconds"); r != nullptr && r->IsNumber())
      st.set_retry_after_seconds(r->GetDouble());
  }
  return st;
}

}  // namespace

bool NodeInfo::IsControlPlane() const {
  return FindLabel(labels, "node-role.kubernetes.io/control-plane") != nullptr ||
         FindLabel(labels, "node-role.kubernetes.io/master") != nullptr;
}

StatusOr<NodeListPage> DecodeNodeList(std::string body) {
  rapidjson::Document doc;
  doc.ParseInsitu(body.data());
  if (doc.HasParseError()) return Malformed("NodeList", JsonParseError(doc));
  if (!doc.IsObject()) return Malformed("NodeList", "not an object");
  NodeListPage page;
  if (const auto* meta = JsonMember(doc, "metadata")) {
    page.resource_version = JsonString(*meta, "resourceVersion");
    page.continue_token = JsonString(*meta, "continue");
  }
  const auto* items = JsonMember(doc, "items");
  if (items == nullptr || !(items->IsArray() || items->IsNull()))
    return Malformed("NodeList", "no items array");
  if (items->IsArray()) {
    page.items.reserve(items->Size());
    for (const auto& it : items->GetArray()) {
      NodeInfo n;
      RETURN_NOT_OK(ParseNodeValue(it, &n));
      page.items.push_back(std::move(n));
    }
  }
  if (page.resource_version.empty()) return Malformed("NodeList", "no metadata.resourceVersion");
  return page;
}

StatusOr<NodeInfo> DecodeNode(std::string body) {
  rapidjson::Document doc;
  doc.ParseInsitu(body.data());
  if (doc.HasParseError()) return Malformed("Node", JsonParseError(doc));
  NodeInfo n;
  RETURN_NOT_OK(ParseNodeValue(doc, &n));
  return n;
}

StatusOr<WatchEvent> DecodeWatchEvent(std::string line) {
  rapidjson::Document doc;
  doc.ParseInsitu(line.data());
  if (doc.HasParseError()) return Malformed("watch event", JsonParseError(doc));
  std::string type = JsonString(doc, "type");
  const auto* obj = JsonMember(doc, "object");
  if (obj == nullptr || !obj->IsObject()) return Malformed("watch event", "no object");
  WatchEvent ev;
  if (type == "ERROR") {
    ev.type = WatchEventType::kError;
    ev.error = StatusFromObject(*obj, 500);
    return ev;
  }
  if (type == "BOOKMARK") {
    ev.type = WatchEventType::kBookmark;
    if (const auto* meta = JsonMember(*obj, "metadata"))
      ev.node.resource_version = JsonString(*meta, "resourceVersion");
    if (ev.node.resource_version.empty()) return Malformed("BOOKMARK", "no resourceVersion");
    return ev;
  }
  if (type == "ADDED")
    ev.type = WatchEventType::kAdded;
  else if (type == "MODIFIED")
    ev.type = WatchEventType::kModified;
  else if (type == "DELETED")
    ev.type = WatchEventType::kDeleted;
  else
    return Malformed("watch event", "unknown type \"" + type + "\"");
  RETURN_NOT_OK(ParseNodeValue(*obj, &ev.node));
  return ev;
}

Status StatusFromResponse(int http_status, const std::string& body, const std::string& retry_after,
                          const std::string& what) {
  Status st;
  rapidjson::Document doc;
  doc.Parse(body.c_str(), body.size());
  if (!doc.HasParseError() && doc.IsObject() && JsonString(doc, "kind") == "Status") {
    st = StatusFromObject(doc, http_status);
  } else {
    std::string snippet = body.substr(0, 200);
    for (char& c : snippet)
      if (c == '\n' || c == '\r') c = ' ';
    rapidjson::Value fake(rapidjson::kObjectType);
    st = StatusFromObject(fake, http_status);
    st = Status(st.code(),
                "HTTP " + std::to_string(http_status) + (snippet.empty() ? "" : ": " + snippet));
  }
  st.set_http_status(http_status);
  if (!retry_after.empty()) {
    char* end = nullptr;
    double s = std::strtod(retry_after.c_str(), &end);
    if (end != retry_after.c_str() && s >= 0) st.set_retry_after_seconds(s);
  }
  return st.Prepend(what);
}

bool WatchLineSplitter::Feed(std::string_view bytes, std::vector<std::string>* lines) {
  size_t start = 0;
  while (start < bytes.size()) {
    size_t nl = bytes.find('\n', start);
    size_t end = nl == std::string_view::npos ? bytes.size() : nl;
    if (buf_.size() + (end - start) > max_line_) return false;  // whether or not the line ends here
    if (nl == std::string_view::npos) {
      buf_.append(bytes.substr(start));
      break;
    }
    buf_.append(bytes.substr(start, nl - start));
    if (!buf_.empty() && buf_.back() == '\r') buf_.pop_back();
    if (!buf_.empty()) lines->push_back(std::move(buf_));
    buf_.clear();
    start = nl + 1;
  }
  return buf_.size() <= max_line_;
}

}  // namespace ds
