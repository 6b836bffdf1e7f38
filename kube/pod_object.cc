#include "kube/pod_object.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <map>
#include <string_view>

#include "common/json_util.h"
#include "common/quantity.h"
#include "common/rfc3339.h"
#include "kube/node_selector_json.h"

namespace ds {
namespace {

Status PodMalformed(const std::string& what, const std::string& why) {
  return Status::Unavailable("malformed " + what + ": " + why);
}

const char* const kMirrorAnnotation = "kubernetes.io/config.mirror";
// The annotations the rebalancer reads (PodInfo::annotations keeps these only): our opt-out, the
// cluster-autoscaler's, and the mark of an eviction carried out in the background.
const char* const kKeptAnnotations[] = {"dynamic-scheduler.io/evict", kSafeToEvictAnnotation,
                                        kEvictionInProgressAnnotation};

using Requests = std::map<std::string, double, std::less<>>;

// One container's (or the overhead's) requests, every resource; false on a quantity that does not
// parse.
bool ParseRequests(const rapidjson::Value* req, Requests* out) {
  out->clear();
  if (req == nullptr || !req->IsObject()) return true;
  for (auto it = req->MemberBegin(); it != req->MemberEnd(); ++it) {
    double v = 0;
    if (!it->value.IsString() || !ParseQuantity(it->value.GetString(), &v)) return false;
    (*out)[std::string(it->name.GetString(), it->name.GetStringLength())] = v;
  }
  return true;
}

bool ContainerRequests(const rapidjson::Value& c, Requests* out) {
  const auto* res = JsonMember(c, "resources");
  return ParseRequests(res != nullptr ? JsonMember(*res, "requests") : nullptr, out);
}

void Add(const Requests& from, Requests* to) {
  for (const auto& [name, v] : from) (*to)[name] += v;
}

void Max(const Requests& from, Requests* to) {
  for (const auto& [name, v] : from) (*to)[name] = std::max((*to)[name], v);
}

// The scheduler's effective request of a pod (resourcehelper.PodRequests), per resource: the
// larger of the containers' sum (plus the native sidecars, init containers with restartPolicy
// Always, which keep running) and each ordinary init container's request plus the sidecars
// started before it, or the pod-level request where the pod has one; then the pod overhead on
// top; *memory_overhead is the overhead's memory.
bool EffectiveRequests(const rapidjson::Value& spec, Requests* out, double* memory_overhead) {
  Requests run, side, init, c;
  if (const auto* cs = JsonMember(spec, "containers"); cs != nullptr && cs->IsArray())
    for (const auto& ctr : cs->GetArray()) {
      if (!ContainerRequests(ctr, &c)) return false;
      Add(c, &run);
    }
  if (const auto* is = JsonMember(spec, "initContainers"); is != nullptr && is->IsArray())
    for (const auto& ctr : is->GetArray()) {
      if (!ContainerRequests(ctr, &c)) return false;
      if (JsonString(ctr, "restartPolicy") == "Always") {
        Add(c, &side);
        Max(side, &init);
      } else {
        Requests with_side = side;
        Add(c, &with_side);
        Max(with_side, &init);
      }
    }
  Add(side, &run);
  Max(init, &run);
  // Pod-level resources (spec.resources, PodLevelResources): a resource the pod itself requests
  // is that request, whatever its containers ask.
  Requests pod_level;
  if (const auto* res = JsonMember(spec, "resources"); res != nullptr)
    if (!ParseRequests(JsonMember(*res, "requests"), &pod_level)) return false;
  for (const auto& [name, v] : pod_level) run[name] = v;
  Requests overhead;
  if (!ParseRequests(JsonMember(spec, "overhead"), &overhead)) return false;
  // Kept apart too: the kubelet ranks evictions by the request with the overhead only where the
  // request is not zero (PodInfo::KubeletMemoryRequest), the scheduler counts it whatever the
  // request (PodRequests).
  if (auto m = overhead.find("memory"); m != overhead.end()) *memory_overhead = m->second;
  Add(overhead, &run);
  *out = std::move(run);
  return true;
}

// A metav1.LabelSelector in the string form LabelSelector parses ("a=b,c in (d),!e"), into
// *text; "" or why it cannot be read.
std::string SelectorText(const rapidjson::Value& sel, std::string* text) {
  if (!sel.IsObject()) return "labelSelector is not an object";
  auto add = [&](const std::string& part) { *text += (text->empty() ? "" : ",") + part; };
  if (const auto* ml = JsonMember(sel, "matchLabels"); ml != nullptr && ml->IsObject())
    for (auto it = ml->MemberBegin(); it != ml->MemberEnd(); ++it) {
      if (!it->value.IsString()) return "a matchLabels value is not a string";
      add(std::string(it->name.GetString(), it->name.GetStringLength()) + "=" +
          it->value.GetString());
    }
  if (const auto* me = JsonMember(sel, "matchExpressions"); me != nullptr && me->IsArray())
    for (const auto& r : me->GetArray()) {
      const std::string key = JsonString(r, "key"), op = JsonString(r, "operator");
      std::string values;
      if (const auto* vs = JsonMember(r, "values"); vs != nullptr && vs->IsArray())
        for (const auto& v : vs->GetArray()) {
          if (!v.IsString()) return "a value of " + key + " is not a string";
          values += (values.empty() ? "" : ",") + std::string(v.GetString());
        }
      if ((op == "In" || op == "NotIn") && !values.empty()) {
        add(key + (op == "In" ? " in (" : " notin (") + values + ")");
      } else if (op == "Exists" || op == "DoesNotExist") {
        add((op == "Exists" ? "" : "!") + key);
      } else {
        return "matchExpressions operator \"" + op + "\" on " + key;
      }
    }
  return "";
}

// One required inter-pod (anti-)affinity term (spread: false) or DoNotSchedule spread
// constraint (spread: true) of `pod`, whose labels are read; "" or why it cannot be judged.
std::string ParseGroupTerm(const rapidjson::Value& t, const PodInfo& pod, bool spread,
                           PodGroupTerm* out) {
  if (!t.IsObject()) return "a term is not an object";
  out->topology_key = JsonString(t, "topologyKey");
  if (out->topology_key.empty()) return "no topologyKey";
  std::string text;
  const auto* sel = JsonMember(t, "labelSelector");
  out->none = sel == nullptr || sel->IsNull();  // the API's "null: matches no pod"
  if (!out->none)
    if (std::string why = SelectorText(*sel, &text); !why.empty()) return why;
  // matchLabelKeys: the group is narrowed to pods with the incoming pod's value of each key (a
  // replacement has its pod's labels); mismatchLabelKeys: to pods without it.
  for (const char* keys : {"matchLabelKeys", "mismatchLabelKeys"}) {
    const auto* list = JsonMember(t, keys);
    if (out->none || list == nullptr || !list->IsArray()) continue;
    for (const auto& k : list->GetArray())
      if (const std::string* v = k.IsString() ? FindLabel(pod.labels, k.GetString()) : nullptr)
        text += (text.empty() ? "" : ",") + std::string(k.GetString()) +
                (std::string_view(keys) == "matchLabelKeys" ? "=" : "!=") + *v;
  }
  auto parsed = LabelSelector::Parse(text);
  if (!parsed.ok()) return parsed.status().message();
  out->selector = std::move(*parsed);
  if (spread) {
    const auto* skew = JsonMember(t, "maxSkew");
    if (skew == nullptr || !skew->IsInt() || skew->GetInt() < 1) return "maxSkew is not above 0";
    out->max_skew = skew->GetInt();
    out->namespaces = {pod.ns};  // a spread counts the pod's own namespace
    return "";
  }
  if (const auto* nss = JsonMember(t, "namespaces"); nss != nullptr && nss->IsArray())
    for (const auto& n : nss->GetArray())
      if (n.IsString()) out->namespaces.emplace_back(n.GetString(), n.GetStringLength());
  const auto* ns_sel = JsonMember(t, "namespaceSelector");
  if (ns_sel == nullptr || ns_sel->IsNull()) {
    if (out->namespaces.empty()) out->namespaces = {pod.ns};
    return "";
  }
  // {} is every namespace; one that selects by the namespaces' labels needs them read.
  std::string ns_text;
  if (std::string why = SelectorText(*ns_sel, &ns_text); !why.empty()) return why;
  if (!ns_text.empty()) return "namespaceSelector";
  out->namespaces.clear();
  return "";
}

// spec.affinity into *out: node affinity's terms, and the required inter-pod affinity and
// anti-affinity terms.
void ParseAffinity(const rapidjson::Value& aff, PodInfo* out) {
  if (!aff.IsObject()) return;
  if (const auto* na = JsonMember(aff, "nodeAffinity"); na != nullptr && na->IsObject()) {
    const auto* req = JsonMember(*na, "requiredDuringSchedulingIgnoredDuringExecution");
    const auto* terms = req != nullptr ? JsonMember(*req, "nodeSelectorTerms") : nullptr;
    if (terms != nullptr && terms->IsArray())
      for (const auto& t : terms->GetArray()) {
        NodeSelectorTerm term;
        if (std::string why = ParseNodeSelectorTerm(t, &term); !why.empty())
          out->unjudged.push_back("nodeAffinity (" + why + ")");
        out->required_affinity.push_back(std::move(term));
      }
    const auto* pref = JsonMember(*na, "preferredDuringSchedulingIgnoredDuringExecution");
    if (pref != nullptr && pref->IsArray())
      for (const auto& p : pref->GetArray()) {
        PreferredSchedulingTerm pt;
        if (const auto* w = JsonMember(p, "weight"); w != nullptr && w->IsInt())
          pt.weight = w->GetInt();
        // Unread, a preference could favour the very node the pod leaves: steering would guess.
        const auto* t = JsonMember(p, "preference");
        if (std::string why = t == nullptr ? "a preferred term has no preference"
                                           : ParseNodeSelectorTerm(*t, &pt.preference);
            !why.empty()) {
          out->unjudged.push_back("nodeAffinity preference (" + why + ")");
          continue;
        }
        out->preferred_affinity.push_back(std::move(pt));
      }
  }
  for (const char* kind : {"podAffinity", "podAntiAffinity"}) {
    const auto* pa = JsonMember(aff, kind);
    const auto* req =
        pa != nullptr ? JsonMember(*pa, "requiredDuringSchedulingIgnoredDuringExecution") : nullptr;
    if (req == nullptr || !req->IsArray()) continue;
    for (const auto& t : req->GetArray()) {
      PodGroupTerm term;
      if (std::string why = ParseGroupTerm(t, *out, false, &term); !why.empty()) {
        out->unjudged.push_back(std::string(kind) + " (" + why + ")");
        if (std::string_view(kind) == "podAffinity") continue;
        // Unread, it still keeps pods away from this one: as counting every pod.
        PodGroupTerm unread;
        unread.all = true;
        unread.topology_key = JsonString(t, "topologyKey");
        if (unread.topology_key.empty()) unread.topology_key = "kubernetes.io/hostname";
        out->pod_anti_affinity.push_back(std::move(unread));
        continue;
      }
      (std::string_view(kind) == "podAffinity" ? out->pod_affinity : out->pod_anti_affinity)
          .push_back(std::move(term));
    }
  }
}

// What of spec the fit check reads beyond requests: affinity, host ports, topology spread,
// volumes bound to a place, another scheduler.
void ParseConstraints(const rapidjson::Value& spec, PodInfo* out) {
  if (const auto* aff = JsonMember(spec, "affinity")) ParseAffinity(*aff, out);
  // NodePorts: the ports of the containers and of the native sidecars, which run alongside them
  // (an ordinary init container has ended before they start).
  for (const char* list : {"containers", "initContainers"}) {
    const auto* cs = JsonMember(spec, list);
    if (cs == nullptr || !cs->IsArray()) continue;
    for (const auto& c : cs->GetArray()) {
      if (list[0] == 'i' && JsonString(c, "restartPolicy") != "Always") continue;
      const auto* ports = JsonMember(c, "ports");
      if (ports == nullptr || !ports->IsArray()) continue;
      for (const auto& p : ports->GetArray()) {
        const auto* hp = JsonMember(p, "hostPort");
        if (hp == nullptr || !hp->IsInt() || hp->GetInt() <= 0) continue;
        out->host_ports.push_back(
            HostPort{hp->GetInt(), JsonString(p, "protocol", "TCP"), JsonString(p, "hostIP")});
      }
    }
  }
  if (const auto* tsc = JsonMember(spec, "topologySpreadConstraints");
      tsc != nullptr && tsc->IsArray())
    for (const auto& c : tsc->GetArray()) {
      if (JsonString(c, "whenUnsatisfiable", "DoNotSchedule") != "DoNotSchedule") continue;
      PodGroupTerm term;
      if (std::string why = ParseGroupTerm(c, *out, true, &term); !why.empty()) {
        out->unjudged.push_back("topologySpreadConstraints (" + why + ")");
        continue;
      }
      out->spread.push_back(std::move(term));
    }
  if (const auto* vols = JsonMember(spec, "volumes"); vols != nullptr && vols->IsArray())
    for (const auto& v : vols->GetArray()) {
      if (JsonMember(v, "emptyDir") != nullptr || JsonMember(v, "hostPath") != nullptr)
        out->local_storage = true;
      // A bound volume may be reachable from one zone only: the rebalancer reads its
      // PersistentVolume's node affinity. (An ephemeral volume is claimed anew for the
      // replacement.)
      if (const auto* pvc = JsonMember(v, "persistentVolumeClaim"); pvc != nullptr) {
        const std::string claim = JsonString(*pvc, "claimName");
        if (claim.empty()) {
          out->unjudged.push_back("persistentVolumeClaim (no claimName)");
        } else {
          out->claims.push_back(claim);
        }
      }
    }
  // Dynamic resource allocation: whether a device can be allocated there is the claim's driver's.
  if (const auto* claims = JsonMember(spec, "resourceClaims");
      claims != nullptr && claims->IsArray() && !claims->Empty())
    out->unjudged.push_back("resourceClaims");
  // Where another scheduler places the replacement is its business: the fit check models
  // kube-scheduler's default profile.
  if (std::string s = JsonString(spec, "schedulerName"); !s.empty() && s != "default-scheduler")
    out->unjudged.push_back("schedulerName " + s);
}

Status ParsePodValue(const rapidjson::Value& obj, PodInfo* out) {
  const auto* meta = JsonMember(obj, "metadata");
  if (meta == nullptr || !meta->IsObject()) return PodMalformed("Pod", "no metadata");
  out->name = JsonString(*meta, "name");
  out->ns = JsonString(*meta, "namespace");
  out->uid = JsonString(*meta, "uid");
  if (out->name.empty() || out->ns.empty())
    return PodMalformed("Pod", "no metadata.name or metadata.namespace");
  const std::string what = "Pod " + out->ns + "/" + out->name;
  if (std::string t = JsonString(*meta, "creationTimestamp"); !t.empty())
    if (!ParseRfc3339(t, &out->created_wall))
      return PodMalformed(what, "bad metadata.creationTimestamp \"" + t + "\"");
  out->terminating = JsonMember(*meta, "deletionTimestamp") != nullptr &&
                     !JsonMember(*meta, "deletionTimestamp")->IsNull();
  if (const auto* owners = JsonMember(*meta, "ownerReferences");
      owners != nullptr && owners->IsArray()) {
    for (const auto& o : owners->GetArray()) {
      const auto* c = JsonMember(o, "controller");
      if (c != nullptr && c->IsBool() && c->GetBool()) {
        out->owner_kind = JsonString(o, "kind");
        out->owner_name = JsonString(o, "name");
        out->owner_api_version = JsonString(o, "apiVersion");
      }
    }
  }
  if (const auto* l = JsonMember(*meta, "labels"); l != nullptr && l->IsObject())
    for (auto it = l->MemberBegin(); it != l->MemberEnd(); ++it)
      if (it->value.IsString())
        out->labels.emplace_back(std::string(it->name.GetString(), it->name.GetStringLength()),
                                 std::string(it->value.GetString(), it->value.GetStringLength()));
  if (const auto* ann = JsonMember(*meta, "annotations"); ann != nullptr && ann->IsObject()) {
    out->mirror = JsonMember(*ann, kMirrorAnnotation) != nullptr;
    for (const char* key : kKeptAnnotations)
      if (const auto* v = JsonMember(*ann, key); v != nullptr && v->IsString())
        out->annotations.emplace_back(key, v->GetString());
  }
  if (const auto* spec = JsonMember(obj, "spec"); spec != nullptr && spec->IsObject()) {
    out->node = JsonString(*spec, "nodeName");
    if (const auto* p = JsonMember(*spec, "priority"); p != nullptr && p->IsInt())
      out->priority = p->GetInt();
    out->priority_class = JsonString(*spec, "priorityClassName");
    if (const auto* sel = JsonMember(*spec, "nodeSelector"); sel != nullptr && sel->IsObject())
      for (auto it = sel->MemberBegin(); it != sel->MemberEnd(); ++it)
        if (it->value.IsString())
          out->node_selector.emplace_back(it->name.GetString(), it->value.GetString());
    if (const auto* tols = JsonMember(*spec, "tolerations"); tols != nullptr && tols->IsArray())
      for (const auto& t : tols->GetArray())
        out->tolerations.push_back(Toleration{JsonString(t, "key"),
                                              JsonString(t, "operator", "Equal"),
                                              JsonString(t, "value"), JsonString(t, "effect")});
    ParseConstraints(*spec, out);
    Requests req;
    if (!EffectiveRequests(*spec, &req, &out->memory_overhead))
      return PodMalformed(what,
                          "a container's resources.requests or spec.overhead is not a quantity");
    for (auto& [name, v] : req) {
      if (name == "cpu") {
        out->cpu_request = v;
      } else if (name == "memory") {
        out->memory_request = v;
      } else if (v > 0) {
        out->other_requests.emplace_back(name, v);
      }
    }
  }
  if (const auto* status = JsonMember(obj, "status"); status != nullptr && status->IsObject()) {
    out->phase = JsonString(*status, "phase");
    if (const auto* conds = JsonMember(*status, "conditions"); conds != nullptr && conds->IsArray())
      for (const auto& c : conds->GetArray())
        if (JsonString(c, "type") == "Ready") out->ready = JsonString(c, "status") == "True";
  }
  return Status::OK();
}

}  // namespace

StatusOr<PodInfo> DecodePod(std::string body) {
  rapidjson::Document doc;
  doc.ParseInsitu(body.data());
  if (doc.HasParseError()) return PodMalformed("Pod", JsonParseError(doc));
  if (!doc.IsObject()) return PodMalformed("Pod", "not an object");
  PodInfo p;
  RETURN_NOT_OK(ParsePodValue(doc, &p));
  return p;
}

StatusOr<PodListPage> DecodePodList(std::string body) {
  rapidjson::Document doc;
  doc.ParseInsitu(body.data());
  if (doc.HasParseError()) return PodMalformed("PodList", JsonParseError(doc));
  if (!doc.IsObject()) return PodMalformed("PodList", "not an object");
  PodListPage page;
  if (const auto* meta = JsonMember(doc, "metadata")) {
    page.resource_version = JsonString(*meta, "resourceVersion");
    page.continue_token = JsonString(*meta, "continue");
  }
  const auto* items = JsonMember(doc, "items");
  if (items == nullptr || !(items->IsArray() || items->IsNull()))
    return PodMalformed("PodList", "no items array");
  if (items->IsArray()) {
    page.items.reserve(items->Size());
    for (const auto& it : items->GetArray()) {
      PodInfo p;
      RETURN_NOT_OK(ParsePodValue(it, &p));
      page.items.push_back(std::move(p));
    }
  }
  return page;
}

}  // namespace ds
