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
  // VolumeZone: a volume labelled with its zone or region (older and statically made volumes
  // carry only these) is usable from nodes with one of the listed values ("__" between them);
  // the beta keys compare with the nodes' GA ones, as the scheduler translates them.
  std::vector<NodeSelectorRequirement> zone;
  if (const auto* meta = JsonMember(doc, "metadata"))
    if (const auto* labels = JsonMember(*meta, "labels"); labels != nullptr && labels->IsObject())
      for (const auto& [key, node_key] :
           {std::pair{"topology.kubernetes.io/zone", "topology.kubernetes.io/zone"},
            {"topology.kubernetes.io/region", "topology.kubernetes.io/region"},
            {"failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone"},
            {"failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/region"}}) {
        const std::string v = JsonString(*labels, key);
        if (v.empty()) continue;
        NodeSelectorRequirement r{node_key, "In", {}};
        for (size_t from = 0;;) {
          const size_t sep = v.find("__", from);
          r.values.push_back(
              v.substr(from, sep == std::string::npos ? std::string::npos : sep - from));
          if (sep == std::string::npos) break;
          from = sep + 2;
        }
        zone.push_back(std::move(r));
      }
  const auto* spec = JsonMember(doc, "spec");
  const auto* aff = spec != nullptr ? JsonMember(*spec, "nodeAffinity") : nullptr;
  const auto* req = aff != nullptr ? JsonMember(*aff, "required") : nullptr;
  const auto* list = req != nullptr ? JsonMember(*req, "nodeSelectorTerms") : nullptr;
  if (list != nullptr && list->IsArray())
    for (const auto& t : list->GetArray()) {
      NodeSelectorTerm term;
      if (std::string why = ParseNodeSelectorTerm(t, &term); !why.empty())
        return Status::Unavailable("malformed PersistentVolume: spec.nodeAffinity: " + why);
      terms.push_back(std::move(term));
    }
  // The zone labels hold as well as the node affinity: ANDed into each of its (ORed) terms.
  if (!zone.empty()) {
    if (terms.empty()) terms.emplace_back();
    for (NodeSelectorTerm& t : terms)
      t.match_expressions.insert(t.match_expressions.end(), zone.begin(), zone.end());
  }
  return terms;
}

}  // namespace ds
