#include "kube/volume_object.h"

#include <rapidjson/document.h>

#include "common/json_util.h"
#include "kube/node_selector_json.h"

namespace ds {
namespace {

// Parses `body` in place into *doc; an error names the kind of object.
Status Parse(std::string* body, const char* kind, rapidjson::Document* doc) {
  doc->ParseInsitu(body->data());
  if (doc->HasParseError())
    return Status::Unavailable(std::string("malformed ") + kind + ": " + JsonParseError(*doc));
  if (!doc->IsObject())
    return Status::Unavailable(std::string("malformed ") + kind + ": not an object");
  return Status::OK();
}

}  // namespace

StatusOr<std::string> DecodeClaimVolume(std::string body) {
  rapidjson::Document doc;
  RETURN_NOT_OK(Parse(&body, "PersistentVolumeClaim", &doc));
  const auto* status = JsonMember(doc, "status");
  if (status == nullptr || JsonString(*status, "phase") != "Bound") return std::string();
  const auto* spec = JsonMember(doc, "spec");
  return spec != nullptr ? JsonString(*spec, "volumeName") : std::string();
}

StatusOr<std::vector<NodeSelectorTerm>> DecodeVolumeNodeAffinity(std::string body) {
  rapidjson::Document doc;
  RETURN_NOT_OK(Parse(&body, "PersistentVolume", &doc));
  std::vector<NodeSelectorTerm> terms;
  const auto* spec = JsonMember(doc, "spec");
  const auto* aff = spec != nullptr ? JsonMember(*spec, "nodeAffinity") : nullptr;
  const auto* req = aff != nullptr ? JsonMember(*aff, "required") : nullptr;
  const auto* list = req != nullptr ? JsonMember(*req, "nodeSelectorTerms") : nullptr;
  if (list == nullptr || !list->IsArray()) return terms;
  for (const auto& t : list->GetArray()) {
    NodeSelectorTerm term;
    if (std::string why = ParseNodeSelectorTerm(t, &term); !why.empty())
      return Status::Unavailable("malformed PersistentVolume: spec.nodeAffinity: " + why);
    terms.push_back(std::move(term));
  }
  return terms;
}

}  // namespace ds
