#include "test/sim/sim_pods.h"

#include <rapidjson/document.h>
#include <rapidjson/pointer.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

#include "common/json_util.h"
#include "test/sched/scheduler_model.h"
#include "test/sim/sim_validation.h"
#include "test/sim/sim_volumes.h"

namespace sim {
namespace {

using rapidjson::Document;
using rapidjson::Value;

// Disruption controller: a granted eviction not seen as a deletion within this is dropped.
constexpr double kDeletionTimeoutSeconds = 120;

double Steady() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string Rfc3339(time_t t) {
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string Now() { return Rfc3339(time(nullptr)); }

time_t ParseTime(const std::string& s) {
  struct tm tm {};
  if (strptime(s.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm) == nullptr) return 0;
  return timegm(&tm);
}

std::string Key(const std::string& ns, const std::string& name) { return ns + "/" + name; }

const Resource kPods{"pods", ""};

// KubeVirt's names (kubevirt.io/api core/v1 AppLabel and DomainAnnotation; the webhook's name in
// virt-operator's components/webhooks.go) and the descheduler's annotation for an eviction in
// progress (pkg/descheduler/evictions/evictions.go).
constexpr char kKubevirtAppLabel[] = "kubevirt.io";
constexpr char kKubevirtDomainAnnotation[] = "kubevirt.io/domain";
constexpr char kKubevirtEvictionWebhook[] = "virt-launcher-eviction-interceptor.kubevirt.io";
constexpr char kEvictionInProgressAnnotation[] =
    "descheduler.alpha.kubernetes.io/eviction-in-progress";
// The simulator's own opt-in: the pod is a VM launcher whose live migration takes this long.
constexpr char kMigrationSecondsAnnotation[] = "sim.dynamic-scheduler.io/live-migration-seconds";
const Resource kPdbs{"poddisruptionbudgets", "policy"};

Value& Ensure(Value& obj, const char* key, rapidjson::Type type, Document::AllocatorType& a) {
  auto it = obj.FindMember(key);
  if (it != obj.MemberEnd() && it->value.GetType() == type) return it->value;
  if (it != obj.MemberEnd()) obj.RemoveMember(it);
  obj.AddMember(Value(key, a), Value(type), a);
  return obj[key];
}

void Set(Value& obj, const char* key, Value v, Document::AllocatorType& a) {
  auto it = obj.FindMember(key);
  if (it != obj.MemberEnd())
    it->value = v;
  else
    obj.AddMember(Value(key, a), v, a);
}

void SetStr(Value& obj, const char* key, const std::string& s, Document::AllocatorType& a) {
  Set(obj, key, Value(s.c_str(), a), a);
}

void Default(Value& obj, const char* key, Value v, Document::AllocatorType& a) {
  if (!obj.HasMember(key)) obj.AddMember(Value(key, a), v, a);
}

PodKeys KeysOf(const Value& pod) {
  PodKeys k;
  const Value* meta = ds::JsonMember(pod, "metadata");
  const Value* spec = ds::JsonMember(pod, "spec");
  const Value* st = ds::JsonMember(pod, "status");
  static const Value kEmpty(rapidjson::kObjectType);
  if (meta == nullptr || !meta->IsObject()) meta = &kEmpty;
  if (spec == nullptr || !spec->IsObject()) spec = &kEmpty;
  if (st == nullptr || !st->IsObject()) st = &kEmpty;
  k.fields["metadata.name"] = ds::JsonString(*meta, "name");
  k.fields["metadata.namespace"] = ds::JsonString(*meta, "namespace");
  k.fields["spec.nodeName"] = ds::JsonString(*spec, "nodeName");
  k.fields["spec.restartPolicy"] = ds::JsonString(*spec, "restartPolicy");
  k.fields["spec.schedulerName"] = ds::JsonString(*spec, "schedulerName");
  k.fields["spec.serviceAccountName"] = ds::JsonString(*spec, "serviceAccountName");
  const Value* host_network = ds::JsonMember(*spec, "hostNetwork");
  k.fields["spec.hostNetwork"] =
      host_network != nullptr && host_network->IsBool() && host_network->GetBool() ? "true"
                                                                                   : "false";
  k.fields["status.phase"] = ds::JsonString(*st, "phase");
  k.fields["status.podIP"] = ds::JsonString(*st, "podIP");
  k.fields["status.nominatedNodeName"] = ds::JsonString(*st, "nominatedNodeName");
  if (const Value* l = ds::JsonMember(*meta, "labels"); l && l->IsObject())
    for (auto it = l->MemberBegin(); it != l->MemberEnd(); ++it)
      k.labels.emplace_back(it->name.GetString(),
                            it->value.IsString() ? it->value.GetString() : "");
  return k;
}

bool IsReady(const Value& pod) {
  const Value* st = ds::JsonMember(pod, "status");
  const Value* conds = st ? ds::JsonMember(*st, "conditions") : nullptr;
  if (conds == nullptr || !conds->IsArray()) return false;
  for (const auto& c : conds->GetArray())
    if (ds::JsonString(c, "type") == "Ready") return ds::JsonString(c, "status") == "True";
  return false;
}

bool Terminating(const Value& pod) {
  const Value* meta = ds::JsonMember(pod, "metadata");
  return meta && ds::JsonMember(*meta, "deletionTimestamp") != nullptr;
}

std::string Phase(const Value& pod) {
  const Value* st = ds::JsonMember(pod, "status");
  return st ? ds::JsonString(*st, "phase") : "";
}

// metav1.LabelSelector (matchLabels, matchExpressions) against labels. Empty or missing: false
// (eviction.go: "a PDB with a nil or empty selector ... should match nothing").
bool SelectorMatches(const Value* sel, const ds::Labels& labels) {
  if (sel == nullptr || !sel->IsObject()) return false;
  bool any = false;
  if (const Value* ml = ds::JsonMember(*sel, "matchLabels"); ml && ml->IsObject())
    for (auto it = ml->MemberBegin(); it != ml->MemberEnd(); ++it) {
      any = true;
      const std::string* v = ds::FindLabel(labels, it->name.GetString());
      if (v == nullptr || !it->value.IsString() || *v != it->value.GetString()) return false;
    }
  if (const Value* me = ds::JsonMember(*sel, "matchExpressions"); me && me->IsArray())
    for (const auto& e : me->GetArray()) {
      any = true;
      const std::string* v = ds::FindLabel(labels, ds::JsonString(e, "key"));
      std::string op = ds::JsonString(e, "operator");
      bool in = false;
      if (const Value* vals = ds::JsonMember(e, "values"); v && vals && vals->IsArray())
        for (const auto& x : vals->GetArray()) in = in || (x.IsString() && *v == x.GetString());
      bool ok = op == "In"             ? in
                : op == "NotIn"        ? !in
                : op == "Exists"       ? v != nullptr
                : op == "DoesNotExist" ? v == nullptr
                                       : false;
      if (!ok) return false;
    }
  return any;
}

// An IntOrString of a PDB: *percent tells which. False when malformed.
bool IntOrPercent(const Value& v, int* out, bool* percent) {
  if (v.IsInt()) {
    *out = v.GetInt();
    *percent = false;
    return true;
  }
  if (!v.IsString()) return false;
  std::string s = v.GetString();
  if (s.size() < 2 || s.back() != '%') return false;
  for (size_t i = 0; i + 1 < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  *out = std::atoi(s.c_str());
  *percent = true;
  return true;
}

std::string RandomSuffix(uint64_t n) {
  // ReplicaSet pod names end in 5 characters of this alphabet (k8s.io/apimachinery rand).
  static const char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  uint64_t x = n * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
  x ^= x >> 31;
  std::string s;
  for (int i = 0; i < 5; ++i) {
    s += kAlphabet[x % 27];
    x /= 27;
  }
  return s;
}

// The stored JSON of "ns/name" in `objects` (pods_, pdbs_), or 404.
template <class Objects>
ApiError GetJson(const Objects& objects, const Resource& kind, const std::string& ns,
                 const std::string& name, std::string* out) {
  auto it = objects.find(Key(ns, name));
  if (it == objects.end()) return kind.NotFound(name);
  *out = it->second.json;
  return {};
}

// Every Node of the cluster, as the scheduler model reads it.
std::vector<SchedNode> SchedNodes(const Store& cluster) {
  std::vector<SchedNode> nodes;
  std::string next;
  uint64_t rv;
  size_t rem;
  for (const auto& n : cluster.List(*ds::LabelSelector::Parse(""), 0, "", &next, &rv, &rem)) {
    Document nd;
    nd.Parse(n.c_str());
    nodes.push_back(NodeFromJson(nd));
  }
  return nodes;
}

// The pods bound to a node (terminating ones included: they still hold their resources).
template <class Pods>
std::vector<SchedPod> BoundPods(const Pods& pods) {
  std::vector<SchedPod> bound;
  for (const auto& [k, p] : pods)
    if (!p.keys.fields.at("spec.nodeName").empty()) {
      Document d;
      d.Parse(p.json.c_str());
      bound.push_back(PodFromJson(d));
    }
  return bound;
}

}  // namespace

bool FieldSelector::Matches(const PodKeys& k) const {
  for (const auto& r : reqs) {
    auto it = k.fields.find(r.field);
    std::string v = it == k.fields.end() ? "" : it->second;
    if ((v == r.value) != r.equal) return false;
  }
  return true;
}

bool ParseFieldSelector(const std::string& text, FieldSelector* out, std::string* error) {
  static const std::vector<std::string> kFields = {
      "metadata.name",      "metadata.namespace",      "spec.nodeName",    "spec.restartPolicy",
      "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
      "status.podIP",       "status.nominatedNodeName"};
  return ParseFieldSelector(text, kFields, out, error);
}

bool ParseFieldSelector(const std::string& text, const std::vector<std::string>& fields,
                        FieldSelector* out, std::string* error) {
  out->reqs.clear();
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string term = text.substr(start, end - start);
    start = end + 1;
    if (term.empty()) continue;
    FieldSelector::Req r;
    size_t op = term.find("!=");
    size_t len = 2;
    if (op != std::string::npos) {
      r.equal = false;
    } else if ((op = term.find("==")) == std::string::npos) {
      op = term.find('=');
      len = 1;
    }
    if (op == std::string::npos) {
      *error = "invalid selector: '" + text + "'; can't understand '" + term + "'";
      return false;
    }
    r.field = term.substr(0, op);
    r.value = term.substr(op + len);
    if (std::find(fields.begin(), fields.end(), r.field) == fields.end()) {
      *error = "field label not supported: " + r.field;
      return false;
    }
    out->reqs.push_back(std::move(r));
  }
  return true;
}

PodStore::PodStore(Store* cluster, PodStoreOptions options)
    : cluster_(cluster), options_(options) {}

size_t PodStore::size() const {
  ds::MutexLock l(&mu_);
  return pods_.size();
}

uint64_t PodStore::compacted_rv() const {
  ds::MutexLock l(&mu_);
  return compacted_rv_;
}

void PodStore::CommitPod(const std::string& key, const std::string& type, std::string json) {
  Document doc;
  doc.Parse(json.c_str());
  uint64_t rv = cluster_->NextRv();
  SetStr(doc["metadata"], "resourceVersion", std::to_string(rv), doc.GetAllocator());
  json = ds::JsonToString(doc);
  PodEvent ev;
  ev.rv = rv;
  ev.type = type;
  ev.json = json;
  ev.new_keys = KeysOf(doc);
  auto it = pods_.find(key);
  if (it != pods_.end()) {
    ev.old_keys = it->second.keys;
    ev.had_old = true;
    if (!it->second.owner.empty()) dirty_.insert(it->second.owner);  // its status may change
  }
  if (type == "DELETED") {
    if (it != pods_.end()) SetOwner(key, "");
    unbound_.erase(key);
    ticking_.erase(key);
    migrating_.erase(key);
    pods_.erase(key);
  } else {
    StoredPod& p = pods_[key];
    p.json = json;
    p.keys = ev.new_keys;
    p.rv = rv;
    p.ready = IsReady(doc);
    const std::string& phase = p.keys.fields.at("status.phase");
    p.terminal = phase == "Succeeded" || phase == "Failed";
    Index(key, p);
  }
  events_.push_back(std::move(ev));
  last_rv_ = rv;
  while (events_.size() > options_.window) {
    compacted_rv_ = events_.front().rv;
    events_.pop_front();
  }
  cv_.SignalAll();
}

std::vector<std::string> PodStore::ListPods(const std::string& ns, const ds::LabelSelector& labels,
                                            const FieldSelector& fields, size_t limit,
                                            const std::string& after, std::string* next,
                                            uint64_t* list_rv, size_t* remaining) const {
  ds::MutexLock l(&mu_);
  std::vector<std::string> out;
  *list_rv = cluster_->CurrentRv();
  next->clear();
  *remaining = 0;
  auto it = after.empty() ? pods_.begin() : pods_.upper_bound(after);
  for (; it != pods_.end(); ++it) {
    const PodKeys& k = it->second.keys;
    if (!ns.empty() && k.fields.at("metadata.namespace") != ns) continue;
    if (!labels.Matches(k.labels) || !fields.Matches(k)) continue;
    if (limit > 0 && out.size() == limit) {
      *next = std::prev(it)->first;
      for (; it != pods_.end(); ++it) {
        const PodKeys& k2 = it->second.keys;
        if ((ns.empty() || k2.fields.at("metadata.namespace") == ns) && labels.Matches(k2.labels) &&
            fields.Matches(k2))
          ++*remaining;
      }
      break;
    }
    out.push_back(it->second.json);
  }
  return out;
}

ApiError PodStore::GetPod(const std::string& ns, const std::string& name, std::string* out) const {
  ds::MutexLock l(&mu_);
  return GetJson(pods_, kPods, ns, name, out);
}

ApiError PodStore::CreatePod(const std::string& ns, const std::string& body, std::string* out) {
  ds::MutexLock l(&mu_);
  ApiError e = CreateLocked(ns, body, out);
  if (e.ok()) Reconcile();
  return e;
}

ApiError PodStore::CreateLocked(const std::string& ns, const std::string& body, std::string* out) {
  Document doc;
  doc.Parse(body.c_str());
  if (doc.HasParseError() || !doc.IsObject())
    return Err(400, "BadRequest",
               "the body of the request could not be decoded as a Pod: " +
                   (doc.HasParseError() ? ds::JsonParseError(doc) : std::string("not an object")));
  auto& a = doc.GetAllocator();
  Value& meta = Ensure(doc, "metadata", rapidjson::kObjectType, a);
  std::string obj_ns = ds::JsonString(meta, "namespace");
  if (!obj_ns.empty() && obj_ns != ns)
    return Err(400, "BadRequest",
               "the namespace of the provided object does not match the namespace sent on the "
               "request");
  std::string name = ds::JsonString(meta, "name");
  if (name.empty() && !ds::JsonString(meta, "generateName").empty())
    name = ds::JsonString(meta, "generateName") + RandomSuffix(++uid_counter_);
  FieldErrors fe;
  ValidateName(name, &fe);
  ValidateLabels(&meta, &fe);
  const Value* spec = ds::JsonMember(doc, "spec");
  const Value* cs = spec ? ds::JsonMember(*spec, "containers") : nullptr;
  if (cs == nullptr || !cs->IsArray() || cs->Empty()) {
    fe.Required("spec.containers");
  } else {
    for (rapidjson::SizeType i = 0; i < cs->Size(); ++i) {
      std::string f = "spec.containers[" + std::to_string(i) + "]";
      if (ds::JsonString((*cs)[i], "name").empty()) fe.Required(f + ".name");
      if (ds::JsonString((*cs)[i], "image").empty()) fe.Required(f + ".image");
    }
  }
  if (!fe.errs.empty()) return fe.ToError("Pod", "Pod", "", name);
  std::string key = Key(ns, name);
  if (pods_.count(key)) return kPods.Exists(name);

  // What the API server and its admission plugins fill in.
  doc.RemoveMember("kind");
  doc.RemoveMember("apiVersion");
  doc.AddMember("kind", "Pod", a);
  doc.AddMember("apiVersion", "v1", a);
  Value& m = doc["metadata"];
  SetStr(m, "name", name, a);
  SetStr(m, "namespace", ns, a);
  SetStr(m, "uid", "sim-pod-" + std::to_string(++uid_counter_) + "-" + name, a);
  SetStr(m, "creationTimestamp", Now(), a);
  m.RemoveMember("deletionTimestamp");
  m.RemoveMember("deletionGracePeriodSeconds");
  Value& sp = doc["spec"];
  Default(sp, "restartPolicy", Value("Always"), a);
  Default(sp, "terminationGracePeriodSeconds", Value(30), a);
  Default(sp, "dnsPolicy", Value("ClusterFirst"), a);
  Default(sp, "serviceAccountName", Value("default"), a);
  Default(sp, "schedulerName", Value("default-scheduler"), a);
  Default(sp, "priority", Value(0), a);
  Default(sp, "enableServiceLinks", Value(true), a);
  bool any_request = false;
  for (auto& c : sp["containers"].GetArray()) {
    Default(c, "terminationMessagePath", Value("/dev/termination-log"), a);
    Default(c, "terminationMessagePolicy", Value("File"), a);
    std::string image = ds::JsonString(c, "image");
    bool latest = image.find(':') == std::string::npos || image.size() < 7 ||
                  image.compare(image.size() - 7, 7, ":latest") == 0;
    Default(c, "imagePullPolicy", Value(rapidjson::StringRef(latest ? "Always" : "IfNotPresent")),
            a);
    Value& res = Ensure(c, "resources", rapidjson::kObjectType, a);
    if (res.HasMember("requests") || res.HasMember("limits")) any_request = true;
  }
  // DefaultTolerationSeconds admission: tolerate not-ready/unreachable for 300 s.
  Value& tols = Ensure(sp, "tolerations", rapidjson::kArrayType, a);
  for (const char* k : {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}) {
    bool has = false;
    for (const auto& t : tols.GetArray()) has = has || ds::JsonString(t, "key") == k;
    if (has) continue;
    Value t(rapidjson::kObjectType);
    t.AddMember("key", Value(k, a), a);
    t.AddMember("operator", "Exists", a);
    t.AddMember("effect", "NoExecute", a);
    t.AddMember("tolerationSeconds", 300, a);
    tols.PushBack(t, a);
  }
  Value status(rapidjson::kObjectType);
  status.AddMember("phase", "Pending", a);
  status.AddMember("qosClass",
                   Value(rapidjson::StringRef(any_request ? "Burstable" : "BestEffort")), a);
  Set(doc, "status", std::move(status), a);
  CommitPod(key, "ADDED", ds::JsonToString(doc));
  *out = pods_[key].json;
  if (const Value* owners = ds::JsonMember(m, "ownerReferences"); owners && owners->IsArray())
    for (const auto& o : owners->GetArray()) {
      auto w = workloads_.find(Key(ns, ds::JsonString(o, "name")));
      if (w != workloads_.end() && ds::JsonString(o, "kind") == w->second.kind)
        SetOwner(key, w->first);
    }
  return {};
}

void PodStore::SetOwner(const std::string& key, const std::string& owner) {
  StoredPod& p = pods_[key];
  if (!owner.empty()) dirty_.insert(owner);
  if (!p.owner.empty()) {
    dirty_.insert(p.owner);
    auto it = by_owner_.find(p.owner);
    if (it != by_owner_.end()) {
      it->second.erase(key);
      if (it->second.empty()) by_owner_.erase(it);
    }
  }
  p.owner = owner;
  if (!owner.empty()) by_owner_[owner].insert(key);
}

void PodStore::Index(const std::string& key, const StoredPod& p) {
  if (p.keys.fields.at("spec.nodeName").empty())
    unbound_.insert(key);
  else
    unbound_.erase(key);
  if (p.gone_at > 0 || p.keys.fields.at("status.phase") == "Pending")
    ticking_.insert(key);
  else
    ticking_.erase(key);
}

ApiError PodStore::DeleteLocked(const std::string& key, double grace_override, bool has_override,
                                std::string* out) {
  StoredPod& p = pods_[key];
  Document doc;
  doc.Parse(p.json.c_str());
  auto& a = doc.GetAllocator();
  double grace = 30;
  if (const Value* g = rapidjson::Pointer("/spec/terminationGracePeriodSeconds").Get(doc);
      g && g->IsNumber())
    grace = g->GetDouble();
  if (has_override) grace = grace_override;
  std::string phase = Phase(doc);
  if (phase == "Succeeded" || phase == "Failed" || ds::JsonString(doc["spec"], "nodeName").empty())
    grace = 0;
  if (Terminating(doc)) {
    *out = p.json;
    if (grace == 0) CommitPod(key, "DELETED", p.json);
    return {};
  }
  if (grace > 0) {
    SetStr(doc["metadata"], "deletionTimestamp",
           Rfc3339(time(nullptr) + static_cast<time_t>(grace)), a);
    Set(doc["metadata"], "deletionGracePeriodSeconds", Value(static_cast<int64_t>(grace)), a);
    CommitPod(key, "MODIFIED", ds::JsonToString(doc));
    *out = pods_[key].json;
    double wait = std::min(grace, options_.grace_seconds);
    if (wait <= 0) {
      CommitPod(key, "DELETED", *out);
    } else {
      pods_[key].gone_at = Steady() + wait;
      Index(key, pods_[key]);
    }
  } else {
    *out = p.json;
    CommitPod(key, "DELETED", p.json);
  }
  return {};
}

ApiError PodStore::DeletePod(const std::string& ns, const std::string& name,
                             const std::string& body, std::string* out) {
  Document opts;
  if (!body.empty()) opts.Parse(body.c_str());
  bool has_grace = false;
  double grace = 0;
  std::string pre_rv, pre_uid;
  if (!body.empty() && !opts.HasParseError() && opts.IsObject()) {
    if (const Value* g = ds::JsonMember(opts, "gracePeriodSeconds"); g && g->IsNumber()) {
      has_grace = true;
      grace = std::max(0.0, g->GetDouble());
    }
    if (const Value* pc = ds::JsonMember(opts, "preconditions")) {
      pre_rv = ds::JsonString(*pc, "resourceVersion");
      pre_uid = ds::JsonString(*pc, "uid");
    }
  }
  ds::MutexLock l(&mu_);
  std::string key = Key(ns, name);
  auto it = pods_.find(key);
  if (it == pods_.end()) return kPods.NotFound(name);
  Document cur;
  cur.Parse(it->second.json.c_str());
  std::string uid = ds::JsonString(cur["metadata"], "uid");
  if (!pre_uid.empty() && pre_uid != uid)
    return kPods.Conflict(name, "Precondition failed: UID in precondition: " + pre_uid +
                                    ", UID in object meta: " + uid);
  if (!pre_rv.empty() && pre_rv != std::to_string(it->second.rv))
    return kPods.Conflict(name, "the ResourceVersion in the precondition (" + pre_rv +
                                    ") does not match the ResourceVersion in record (" +
                                    std::to_string(it->second.rv) +
                                    "). The object might have been modified");
  ApiError e = DeleteLocked(key, grace, has_grace, out);
  Reconcile();
  return e;
}

ApiError PodStore::Evict(const std::string& ns, const std::string& name, const std::string& body,
                         std::string* out, int* code) {
  *code = 201;
  Document ev;
  ev.Parse(body.c_str());
  if (ev.HasParseError() || !ev.IsObject())
    return Err(400, "BadRequest", "the body of the request could not be decoded as an Eviction");
  const Value* meta = ds::JsonMember(ev, "metadata");
  if (meta == nullptr || ds::JsonString(*meta, "name") != name)
    return Err(400, "BadRequest", "name in URL does not match name in Eviction object");
  bool has_grace = false;
  double grace = 0;
  std::string pre_uid;
  bool dry_run = false;
  if (const Value* d = ds::JsonMember(ev, "deleteOptions")) {
    if (const Value* g = ds::JsonMember(*d, "gracePeriodSeconds"); g && g->IsNumber()) {
      has_grace = true;
      grace = std::max(0.0, g->GetDouble());
    }
    if (const Value* pc = ds::JsonMember(*d, "preconditions")) pre_uid = ds::JsonString(*pc, "uid");
    if (const Value* dr = ds::JsonMember(*d, "dryRun"); dr && dr->IsArray())
      for (const auto& v : dr->GetArray()) dry_run = dry_run || (v.IsString() && v == "All");
  }
  ApiError success{201, "", "", ""};
  ds::MutexLock l(&mu_);
  std::string key = Key(ns, name);
  auto it = pods_.find(key);
  if (it == pods_.end()) {
    *code = 404;
    return kPods.NotFound(name);
  }
  Document pod;
  pod.Parse(it->second.json.c_str());
  // deleteOptions.preconditions: the eviction's deletion checks them as a DELETE does (409).
  if (std::string uid = ds::JsonString(pod["metadata"], "uid");
      !pre_uid.empty() && pre_uid != uid) {
    *code = 409;
    return kPods.Conflict(name, "Precondition failed: UID in precondition: " + pre_uid +
                                    ", UID in object meta: " + uid);
  }
  // Validating admission (KubeVirt's eviction webhook) sees the eviction before the PDB check.
  if (ApiError answer; LauncherEviction(key, pod, dry_run, &answer)) {
    *code = answer.code;
    return answer;
  }
  std::string phase = Phase(pod);
  auto evict = [&]() REQUIRES(mu_) {
    std::string deleted;
    DeleteLocked(key, grace, has_grace, &deleted);
    Reconcile();
    *out = StatusJson(success);
    return ApiError{};
  };
  // canIgnorePDB: terminal, pending and terminating pods are deleted without a PDB check.
  if (phase == "Succeeded" || phase == "Failed" || phase == "Pending" || Terminating(pod))
    return evict();
  std::vector<std::string> matching;
  for (const auto& [pkey, pdb] : pdbs_) {
    if (pkey.compare(0, ns.size() + 1, ns + "/") != 0) continue;
    Document d;
    d.Parse(pdb.json.c_str());
    if (SelectorMatches(rapidjson::Pointer("/spec/selector").Get(d), it->second.keys.labels))
      matching.push_back(pkey);
  }
  if (matching.size() > 1) {
    *code = 500;
    ApiError e{500, "",
               "This pod has more than one PodDisruptionBudget, which the eviction subresource "
               "does not support.",
               ""};
    *out = StatusJson(e);
    return {};
  }
  if (matching.size() == 1) {
    Pdb& pdb = pdbs_[matching[0]];
    Document d;
    d.Parse(pdb.json.c_str());
    auto& a = d.GetAllocator();
    std::string pdb_name = ds::JsonString(d["metadata"], "name");
    Value& st = Ensure(d, "status", rapidjson::kObjectType, a);
    auto num = [&](const char* k) {
      const Value* v = ds::JsonMember(st, k);
      return v && v->IsInt() ? v->GetInt() : 0;
    };
    const Value* pol = rapidjson::Pointer("/spec/unhealthyPodEvictionPolicy").Get(d);
    std::string policy = pol && pol->IsString() ? pol->GetString() : "IfHealthyBudget";
    bool ready = IsReady(pod);
    bool unhealthy_ok =
        !ready && (policy == "AlwaysAllow" ||
                   (num("currentHealthy") >= num("desiredHealthy") && num("desiredHealthy") > 0));
    if (!unhealthy_ok) {
      if (num("disruptionsAllowed") <= 0) {
        *code = 429;
        rapidjson::StringBuffer sb;
        ds::JsonWriter w(sb);
        w.StartArray();
        w.StartObject();
        w.Key("reason");
        w.String("DisruptionBudget");
        w.Key("message");
        ds::WriteString(w, "The disruption budget " + pdb_name + " needs " +
                               std::to_string(num("desiredHealthy")) + " healthy pods and has " +
                               std::to_string(num("currentHealthy")) + " currently");
        w.EndObject();
        w.EndArray();
        return Err(429, "TooManyRequests",
                   "Cannot evict pod as it would violate the pod's disruption budget.",
                   Details("", "", "", sb.GetString()));
      }
      Set(st, "disruptionsAllowed", Value(num("disruptionsAllowed") - 1), a);
      Value& dp = Ensure(st, "disruptedPods", rapidjson::kObjectType, a);
      SetStr(dp, name.c_str(), Now(), a);
      SetStr(d["metadata"], "resourceVersion", std::to_string(pdb.rv = cluster_->NextRv()), a);
      pdb.json = ds::JsonToString(d);
    }
  }
  return evict();
}

bool PodStore::LauncherEviction(const std::string& key, const Value& pod, bool dry_run,
                                ApiError* answer) {
  const Value* labels = rapidjson::Pointer("/metadata/labels").Get(pod);
  const Value* ann = rapidjson::Pointer("/metadata/annotations").Get(pod);
  const std::string app = labels ? ds::JsonString(*labels, kKubevirtAppLabel) : "";
  const std::string domain = ann ? ds::JsonString(*ann, kKubevirtDomainAnnotation) : "";
  const Value* secs = ann ? ds::JsonMember(*ann, kMigrationSecondsAnnotation) : nullptr;
  const bool sim_launcher = secs != nullptr && secs->IsString();
  if (!sim_launcher && (app != "virt-launcher" || domain.empty())) return false;
  // The webhook lets completed pods through; a pod not yet on a node, or one already going, has
  // no running VMI to migrate here: an ordinary eviction.
  const std::string phase = Phase(pod);
  if (phase == "Succeeded" || phase == "Failed" || phase == "Pending" || Terminating(pod))
    return false;
  const std::string ns = ds::JsonString(pod["metadata"], "namespace");
  const std::string vmi = domain.empty() ? ds::JsonString(pod["metadata"], "name") : domain;
  const bool running = migrating_.count(key) > 0;
  // pkg/virt-api/webhooks/validating-webhook/admitters/pod-eviction-admitter.go, and the
  // apiserver's webhook error (ToStatusErr): code 429 kept, no reason.
  *answer = ApiError{429, "",
                     std::string("admission webhook \"") + kKubevirtEvictionWebhook +
                         "\" denied the request: " + (running ? "Evacuation in progress: " : "") +
                         "Eviction triggered evacuation of VMI \"" + ns + "/" + vmi + "\"",
                     ""};
  if (dry_run || running) return true;
  double seconds = options_.migration_seconds;
  if (sim_launcher) {
    char* end = nullptr;
    const double v = std::strtod(secs->GetString(), &end);
    if (end != secs->GetString() && v >= 0) seconds = v;
  }
  // KubeVirt's VMI controller marks the source pod for the descheduler
  // (pkg/virt-controller/watch/descheduler: MarkEvictionInProgress, value "true").
  Document d;
  d.CopyFrom(pod, d.GetAllocator());
  auto& a = d.GetAllocator();
  Value& meta = d["metadata"];
  SetStr(Ensure(meta, "annotations", rapidjson::kObjectType, a), kEvictionInProgressAnnotation,
         "true", a);
  CommitPod(key, "MODIFIED", ds::JsonToString(d));
  pods_[key].migrated_at = Steady() + seconds;
  migrating_.insert(key);
  return true;
}

ApiError PodStore::EndMigration(const std::string& ns, const std::string& name, bool abort) {
  ds::MutexLock l(&mu_);
  const std::string key = Key(ns, name);
  if (!migrating_.count(key))
    return Err(404, "NotFound", "no live migration of pod " + key + " is running");
  migrating_.erase(key);
  pods_[key].migrated_at = 0;
  if (abort) {
    // A cancelled evacuation: the VMI controller takes the annotation off (MarkEvictionCompleted).
    Document d;
    d.Parse(pods_[key].json.c_str());
    if (Value* ann = rapidjson::Pointer("/metadata/annotations").Get(d); ann && ann->IsObject())
      ann->RemoveMember(kEvictionInProgressAnnotation);
    CommitPod(key, "MODIFIED", ds::JsonToString(d));
  } else {
    std::string out;
    DeleteLocked(key, 0, false, &out);
  }
  Reconcile();
  return {};
}

// --- PodDisruptionBudgets ---

namespace {

// Validates a PDB body for `ns` (400 decoding, 422 validation).
ApiError ParsePdb(const std::string& ns, const std::string& body, const std::string& url_name,
                  Document* doc, std::string* name) {
  doc->Parse(body.c_str());
  if (doc->HasParseError() || !doc->IsObject())
    return Err(400, "BadRequest",
               "the body of the request could not be decoded as a PodDisruptionBudget");
  const Value* meta = ds::JsonMember(*doc, "metadata");
  *name = meta && meta->IsObject() ? ds::JsonString(*meta, "name") : "";
  if (!url_name.empty() && *name != url_name)
    return Err(400, "BadRequest",
               "the name of the object (" + *name + ") does not match the name on the URL (" +
                   url_name + ")");
  std::string obj_ns = meta && meta->IsObject() ? ds::JsonString(*meta, "namespace") : "";
  if (!obj_ns.empty() && obj_ns != ns)
    return Err(400, "BadRequest",
               "the namespace of the provided object does not match the namespace sent on the "
               "request");
  FieldErrors fe;
  ValidateName(*name, &fe);
  ValidateLabels(meta, &fe);
  const Value* spec = ds::JsonMember(*doc, "spec");
  if (spec != nullptr && spec->IsObject()) {
    const Value* min = ds::JsonMember(*spec, "minAvailable");
    const Value* max = ds::JsonMember(*spec, "maxUnavailable");
    if (min && max && !min->IsNull() && !max->IsNull())
      fe.Invalid("spec", "policy.PodDisruptionBudgetSpec{...}",
                 "minAvailable and maxUnavailable cannot be both set");
    using Field = std::pair<const Value*, const char*>;
    for (auto [v, field] : {Field{min, "spec.minAvailable"}, Field{max, "spec.maxUnavailable"}}) {
      if (v == nullptr || v->IsNull()) continue;
      int n = 0;
      bool pct = false;
      std::string shown =
          v->IsString() ? "\"" + std::string(v->GetString()) + "\"" : ds::JsonToString(*v);
      if (!IntOrPercent(*v, &n, &pct))
        fe.Invalid(field, shown,
                   "a valid percent string must be a numeric string followed by an ending '%' "
                   "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')");
      else if (n < 0)
        fe.Invalid(field, shown, "must be greater than or equal to 0");
      else if (pct && n > 100)
        fe.Invalid(field, shown, "must not be greater than 100%");
    }
  }
  if (!fe.errs.empty())
    return fe.ToError("PodDisruptionBudget", "PodDisruptionBudget.policy", "policy", *name);
  return {};
}

}  // namespace

std::string PodStore::PdbStatus(const std::string& pdb_json, const std::string& ns) const {
  Document d;
  d.Parse(pdb_json.c_str());
  const Value* spec = ds::JsonMember(d, "spec");
  const Value* sel = spec ? ds::JsonMember(*spec, "selector") : nullptr;
  const Value* min = spec ? ds::JsonMember(*spec, "minAvailable") : nullptr;
  const Value* max = spec ? ds::JsonMember(*spec, "maxUnavailable") : nullptr;
  if (min && min->IsNull()) min = nullptr;
  if (max && max->IsNull()) max = nullptr;
  const Value* old_status = ds::JsonMember(d, "status");
  const Value* old_dp = old_status ? ds::JsonMember(*old_status, "disruptedPods") : nullptr;
  time_t now = time(nullptr);

  int current = 0, expected = 0, desired = 0;
  std::vector<std::string> owners;
  std::string fail;
  std::map<std::string, std::string> disrupted;
  int matched = 0;
  for (const auto& [key, p] : pods_) {
    if (key.compare(0, ns.size() + 1, ns + "/") != 0) continue;
    if (!SelectorMatches(sel, p.keys.labels)) continue;
    ++matched;
    Document pod;
    pod.Parse(p.json.c_str());
    std::string name = p.keys.fields.at("metadata.name");
    bool terminating = Terminating(pod);
    // buildDisruptedPodMap: keep entries of pods not yet deleting, until DeletionTimeout.
    bool in_dp = false;
    if (old_dp && old_dp->IsObject() && !terminating)
      if (const Value* t = ds::JsonMember(*old_dp, name.c_str()); t && t->IsString())
        if (ParseTime(t->GetString()) + static_cast<time_t>(kDeletionTimeoutSeconds) > now) {
          disrupted[name] = t->GetString();
          in_dp = true;
        }
    if (!terminating && !in_dp && IsReady(pod)) ++current;
    if (p.owner.empty()) {
      if (fail.empty()) fail = "found no controllers for pod \"" + name + "\"";
    } else if (std::find(owners.begin(), owners.end(), p.owner) == owners.end()) {
      owners.push_back(p.owner);
    }
  }
  int n = 0;
  bool pct = false;
  bool need_scale = max != nullptr || (min && IntOrPercent(*min, &n, &pct) && pct);
  bool failed = false;
  if (need_scale) {
    if (!fail.empty()) {
      failed = true;
    } else {
      for (const auto& o : owners) expected += workloads_.at(o).replicas;
      if (max != nullptr) {
        IntOrPercent(*max, &n, &pct);
        int max_unavailable = pct ? static_cast<int>(std::ceil(n * expected / 100.0 - 1e-9)) : n;
        desired = std::max(0, expected - max_unavailable);
      } else {
        desired = static_cast<int>(std::ceil(n * expected / 100.0 - 1e-9));
      }
    }
  } else {
    expected = matched;
    if (min) IntOrPercent(*min, &desired, &pct);
  }
  int allowed = failed ? 0 : std::max(0, current - desired);

  Document st;
  st.SetObject();
  auto& a = st.GetAllocator();
  int64_t gen = 1;
  if (const Value* g = rapidjson::Pointer("/metadata/generation").Get(d); g && g->IsInt64())
    gen = g->GetInt64();
  st.AddMember("observedGeneration", gen, a);
  if (!disrupted.empty()) {
    Value dp(rapidjson::kObjectType);
    for (const auto& [k, v] : disrupted) dp.AddMember(Value(k.c_str(), a), Value(v.c_str(), a), a);
    st.AddMember("disruptedPods", dp, a);
  }
  st.AddMember("disruptionsAllowed", allowed, a);
  st.AddMember("currentHealthy", current, a);
  st.AddMember("desiredHealthy", desired, a);
  st.AddMember("expectedPods", expected, a);
  Value cond(rapidjson::kObjectType);
  cond.AddMember("type", "DisruptionAllowed", a);
  std::string cstatus = allowed > 0 ? "True" : "False";
  cond.AddMember("status", Value(cstatus.c_str(), a), a);
  cond.AddMember("observedGeneration", gen, a);
  std::string ltt = Now();
  if (old_status)
    if (const Value* oc = ds::JsonMember(*old_status, "conditions"); oc && oc->IsArray())
      for (const auto& c : oc->GetArray())
        if (ds::JsonString(c, "type") == "DisruptionAllowed" &&
            ds::JsonString(c, "status") == cstatus)
          ltt = ds::JsonString(c, "lastTransitionTime", ltt);
  cond.AddMember("lastTransitionTime", Value(ltt.c_str(), a), a);
  std::string reason = failed ? "SyncFailed" : allowed > 0 ? "SufficientPods" : "InsufficientPods";
  cond.AddMember("reason", Value(reason.c_str(), a), a);
  cond.AddMember("message", Value(failed ? fail.c_str() : "", a), a);
  Value conds(rapidjson::kArrayType);
  conds.PushBack(cond, a);
  st.AddMember("conditions", conds, a);
  return ds::JsonToString(st);
}

void PodStore::RecomputePdbs() {
  for (auto& [key, pdb] : pdbs_) {
    std::string ns = key.substr(0, key.find('/'));
    std::string status = PdbStatus(pdb.json, ns);
    Document d;
    d.Parse(pdb.json.c_str());
    const Value* old = ds::JsonMember(d, "status");
    if (old && ds::JsonToString(*old) == status) continue;
    Document st;
    st.Parse(status.c_str());
    auto& a = d.GetAllocator();
    Set(d, "status", Value(st, a), a);
    pdb.rv = cluster_->NextRv();
    SetStr(d["metadata"], "resourceVersion", std::to_string(pdb.rv), a);
    pdb.json = ds::JsonToString(d);
  }
}

std::vector<std::string> PodStore::ListPdbs(const std::string& ns, uint64_t* list_rv) const {
  ds::MutexLock l(&mu_);
  std::vector<std::string> out;
  for (const auto& [key, pdb] : pdbs_)
    if (ns.empty() || key.compare(0, ns.size() + 1, ns + "/") == 0) out.push_back(pdb.json);
  *list_rv = cluster_->CurrentRv();
  return out;
}

ApiError PodStore::GetPdb(const std::string& ns, const std::string& name, std::string* out) const {
  ds::MutexLock l(&mu_);
  return GetJson(pdbs_, kPdbs, ns, name, out);
}

ApiError PodStore::CreatePdb(const std::string& ns, const std::string& body, std::string* out) {
  Document doc;
  std::string name;
  if (ApiError e = ParsePdb(ns, body, "", &doc, &name); !e.ok()) return e;
  ds::MutexLock l(&mu_);
  std::string key = Key(ns, name);
  if (pdbs_.count(key)) return kPdbs.Exists(name);
  auto& a = doc.GetAllocator();
  doc.RemoveMember("kind");
  doc.RemoveMember("apiVersion");
  doc.RemoveMember("status");
  doc.AddMember("kind", "PodDisruptionBudget", a);
  doc.AddMember("apiVersion", "policy/v1", a);
  Value& m = doc["metadata"];
  SetStr(m, "namespace", ns, a);
  SetStr(m, "uid", "sim-pdb-" + std::to_string(++uid_counter_) + "-" + name, a);
  SetStr(m, "creationTimestamp", Now(), a);
  Set(m, "generation", Value(1), a);
  Pdb& pdb = pdbs_[key];
  pdb.rv = cluster_->NextRv();
  SetStr(m, "resourceVersion", std::to_string(pdb.rv), a);
  pdb.json = ds::JsonToString(doc);
  RecomputePdbs();
  *out = pdbs_[key].json;
  return {};
}

ApiError PodStore::ReplacePdb(const std::string& ns, const std::string& name,
                              const std::string& body, std::string* out) {
  Document doc;
  std::string body_name;
  if (ApiError e = ParsePdb(ns, body, name, &doc, &body_name); !e.ok()) return e;
  ds::MutexLock l(&mu_);
  auto it = pdbs_.find(Key(ns, name));
  if (it == pdbs_.end()) return kPdbs.NotFound(name);
  std::string rv = ds::JsonString(doc["metadata"], "resourceVersion");
  if (!rv.empty() && rv != std::to_string(it->second.rv))
    return kPdbs.Conflict(name,
                          "the object has been modified; please apply your changes to the latest "
                          "version and try again");
  Document old;
  old.Parse(it->second.json.c_str());
  auto& a = doc.GetAllocator();
  doc.RemoveMember("kind");
  doc.RemoveMember("apiVersion");
  doc.AddMember("kind", "PodDisruptionBudget", a);
  doc.AddMember("apiVersion", "policy/v1", a);
  int64_t gen = rapidjson::Pointer("/metadata/generation").Get(old)->GetInt64();
  const Value* old_spec = ds::JsonMember(old, "spec");
  const Value* new_spec = ds::JsonMember(doc, "spec");
  bool same = (old_spec == nullptr && new_spec == nullptr) ||
              (old_spec && new_spec && *old_spec == *new_spec);
  Value& m = doc["metadata"];
  SetStr(m, "namespace", ns, a);
  SetStr(m, "uid", ds::JsonString(old["metadata"], "uid"), a);
  SetStr(m, "creationTimestamp", ds::JsonString(old["metadata"], "creationTimestamp"), a);
  Set(m, "generation", Value(same ? gen : gen + 1), a);
  // The main resource ignores status changes: keep the stored status.
  if (const Value* s = ds::JsonMember(old, "status"))
    Set(doc, "status", Value(*s, a), a);
  else
    doc.RemoveMember("status");
  it->second.rv = cluster_->NextRv();
  SetStr(m, "resourceVersion", std::to_string(it->second.rv), a);
  it->second.json = ds::JsonToString(doc);
  RecomputePdbs();
  *out = it->second.json;
  return {};
}

ApiError PodStore::DeletePdb(const std::string& ns, const std::string& name, std::string* out) {
  ds::MutexLock l(&mu_);
  auto it = pdbs_.find(Key(ns, name));
  if (it == pdbs_.end()) return kPdbs.NotFound(name);
  *out = it->second.json;
  pdbs_.erase(it);
  cluster_->NextRv();
  return {};
}

// --- Workloads, scheduler, kubelet ---

std::string PodStore::NewPodFromWorkload(Workload* w, const std::string& name,
                                         const std::string& node) {
  Document t;
  t.Parse(w->template_json.c_str());
  Document pod;
  pod.SetObject();
  auto& a = pod.GetAllocator();
  const std::string pod_name = name.empty() ? w->name + "-" + RandomSuffix(++w->created) : name;
  Value meta(rapidjson::kObjectType);
  meta.AddMember("name", Value(pod_name.c_str(), a), a);
  meta.AddMember("namespace", Value(w->ns.c_str(), a), a);
  Value labels(rapidjson::kObjectType);
  if (const Value* tm = ds::JsonMember(t, "metadata")) {
    if (const Value* l = ds::JsonMember(*tm, "labels"); l && l->IsObject()) labels.CopyFrom(*l, a);
    if (const Value* an = ds::JsonMember(*tm, "annotations"))
      meta.AddMember("annotations", Value(*an, a), a);
  }
  // The labels each controller adds to its pods.
  if (!w->deployment.empty()) SetStr(labels, "pod-template-hash", w->hash, a);
  if (w->kind == "StatefulSet") {
    SetStr(labels, "controller-revision-hash", w->name + "-" + w->hash, a);
    SetStr(labels, "statefulset.kubernetes.io/pod-name", pod_name, a);
    SetStr(labels, "apps.kubernetes.io/pod-index", pod_name.substr(pod_name.rfind('-') + 1), a);
  } else if (w->kind == "DaemonSet") {
    SetStr(labels, "controller-revision-hash", w->hash, a);
    SetStr(labels, "pod-template-generation", std::to_string(w->generation), a);
  }
  if (labels.MemberCount() > 0) meta.AddMember("labels", labels, a);
  Value owners(rapidjson::kArrayType);
  Value o(rapidjson::kObjectType);
  o.AddMember("apiVersion", "apps/v1", a);
  o.AddMember("kind", Value(w->kind.c_str(), a), a);
  o.AddMember("name", Value(w->name.c_str(), a), a);
  o.AddMember("uid", Value(w->uid.c_str(), a), a);
  o.AddMember("controller", true, a);
  o.AddMember("blockOwnerDeletion", true, a);
  owners.PushBack(o, a);
  meta.AddMember("ownerReferences", owners, a);
  pod.AddMember("metadata", meta, a);
  if (const Value* s = ds::JsonMember(t, "spec"))
    pod.AddMember("spec", Value(*s, a), a);
  else
    pod.AddMember("spec", Value(rapidjson::kObjectType), a);
  Value& spec = pod["spec"];
  if (w->kind == "StatefulSet") {
    Default(spec, "hostname", Value(pod_name.c_str(), a), a);
    Default(spec, "subdomain", Value(w->name.c_str(), a), a);
  }
  if (w->kind == "DaemonSet" && spec.IsObject()) {
    // What the DaemonSet controller does to its pods (pkg/controller/daemon/util): the node as a
    // required matchFields term in place of the template's required terms, and tolerations of
    // the node conditions a daemon must survive. The scheduler model does not read matchFields,
    // so the pod is also created bound to its node (as DaemonSets placed pods before 1.12).
    if (!node.empty()) {
      SetStr(spec, "nodeName", node, a);
      Value& aff = Ensure(spec, "affinity", rapidjson::kObjectType, a);
      Value& na = Ensure(aff, "nodeAffinity", rapidjson::kObjectType, a);
      Value req(rapidjson::kObjectType), terms(rapidjson::kArrayType), term(rapidjson::kObjectType),
          fields(rapidjson::kArrayType), f(rapidjson::kObjectType), values(rapidjson::kArrayType);
      values.PushBack(Value(node.c_str(), a), a);
      f.AddMember("key", "metadata.name", a);
      f.AddMember("operator", "In", a);
      f.AddMember("values", values, a);
      fields.PushBack(f, a);
      term.AddMember("matchFields", fields, a);
      terms.PushBack(term, a);
      req.AddMember("nodeSelectorTerms", terms, a);
      Set(na, "requiredDuringSchedulingIgnoredDuringExecution", std::move(req), a);
    }
    Value& tols = Ensure(spec, "tolerations", rapidjson::kArrayType, a);
    const std::pair<const char*, const char*> kDaemonTolerations[] = {
        {"node.kubernetes.io/not-ready", "NoExecute"},
        {"node.kubernetes.io/unreachable", "NoExecute"},
        {"node.kubernetes.io/disk-pressure", "NoSchedule"},
        {"node.kubernetes.io/memory-pressure", "NoSchedule"},
        {"node.kubernetes.io/pid-pressure", "NoSchedule"},
        {"node.kubernetes.io/unschedulable", "NoSchedule"}};
    for (const auto& [key, effect] : kDaemonTolerations) {
      Value tol(rapidjson::kObjectType);
      tol.AddMember("key", Value(key, a), a);
      tol.AddMember("operator", "Exists", a);
      tol.AddMember("effect", Value(effect, a), a);
      tols.PushBack(tol, a);
    }
  }
  return ds::JsonToString(pod);
}

namespace {

// A template's hash as the controllers name their revisions: 10 characters of the alphabet of
// generated names (the real ones hash the template with FNV; any stable value does here).
std::string TemplateHash(const std::string& template_json) {
  const uint64_t h = std::hash<std::string>{}(template_json);
  return RandomSuffix(h) + RandomSuffix(h >> 29);
}

}  // namespace

ApiError PodStore::ApplyWorkload(const std::string& body, std::string* out) {
  Document d;
  d.Parse(body.c_str());
  if (d.HasParseError() || !d.IsObject()) return Err(400, "BadRequest", "invalid JSON body");
  Workload w;
  w.kind = ds::JsonString(d, "kind", "ReplicaSet");
  if (w.kind != "ReplicaSet" && w.kind != "StatefulSet" && w.kind != "DaemonSet")
    return Err(400, "BadRequest", "kind must be ReplicaSet, StatefulSet or DaemonSet");
  w.ns = ds::JsonString(d, "namespace", "default");
  w.name = ds::JsonString(d, "name");
  w.deployment = ds::JsonString(d, "deployment");
  if (!w.deployment.empty() && w.kind != "ReplicaSet")
    return Err(400, "BadRequest", "only a ReplicaSet can belong to a Deployment");
  const Value* r = ds::JsonMember(d, "replicas");
  w.replicas = r && r->IsInt() ? r->GetInt() : 1;
  const Value* t = ds::JsonMember(d, "template");
  if (t != nullptr && t->IsObject()) {
    w.template_json = ds::JsonToString(*t);
    w.hash = TemplateHash(w.template_json);
  }
  if (w.name.empty() && !w.deployment.empty()) w.name = w.deployment + "-" + w.hash;
  if (w.name.empty() || t == nullptr || !t->IsObject() || w.replicas < 0)
    return Err(400, "BadRequest", "a workload needs name, replicas >= 0 and template");
  w.uid = (w.kind == "ReplicaSet"    ? "sim-rs-"
           : w.kind == "StatefulSet" ? "sim-sts-"
                                     : "sim-ds-") +
          w.ns + "-" + w.name;
  {
    // The template must make a valid pod: validate it as the workload's API would.
    Document probe;
    Workload copy = w;
    std::string probe_json = NewPodFromWorkload(&copy);
    probe.Parse(probe_json.c_str());
    FieldErrors fe;
    const Value* cs = rapidjson::Pointer("/spec/containers").Get(probe);
    if (cs == nullptr || !cs->IsArray() || cs->Empty())
      fe.Required("spec.template.spec.containers");
    ValidateLabels(ds::JsonMember(probe, "metadata"), &fe);
    if (!fe.errs.empty()) return fe.ToError(w.kind, w.kind + ".apps", "apps", w.name);
  }
  ds::MutexLock l(&mu_);
  std::string key = Key(w.ns, w.name);
  auto it = workloads_.find(key);
  if (it != workloads_.end()) {
    const Workload& old = it->second;
    if (old.kind != w.kind)
      return Err(409, "AlreadyExists",
                 "workload " + key + " exists as a " + old.kind + ", not a " + w.kind);
    w.created = old.created;
    w.created_at = old.created_at;
    w.rollout = old.rollout;
    w.json = old.json;
    w.rv = old.rv;
    w.pinned = old.pinned;
    const bool changed = old.template_json != w.template_json || old.replicas != w.replicas ||
                         old.deployment != w.deployment;
    w.generation = old.generation + (changed ? 1 : 0);
  } else {
    w.created_at = Now();
  }
  if (!w.deployment.empty()) {
    Deployment& dep = deployments_[Key(w.ns, w.deployment)];
    if (dep.uid.empty()) {
      dep.ns = w.ns;
      dep.name = w.deployment;
      dep.uid = "sim-deploy-" + w.ns + "-" + w.deployment;
      dep.created_at = Now();
    } else if (it == workloads_.end() || w.generation != it->second.generation) {
      ++dep.generation;  // a new template or scale: the Deployment's spec changed
    }
    dirty_.insert(Key(w.ns, w.deployment));
  }
  w.applied = ++applies_;
  workloads_[key] = w;
  dirty_.insert(key);
  Reconcile();
  rapidjson::StringBuffer sb;
  ds::JsonWriter jw(sb);
  jw.StartObject();
  jw.Key("kind");
  ds::WriteString(jw, w.kind);
  jw.Key("namespace");
  ds::WriteString(jw, w.ns);
  jw.Key("name");
  ds::WriteString(jw, w.name);
  jw.Key("replicas");
  jw.Int(workloads_[key].replicas);
  if (!w.deployment.empty()) {
    jw.Key("deployment");
    ds::WriteString(jw, w.deployment);
    jw.Key("podTemplateHash");
    ds::WriteString(jw, w.hash);
  }
  jw.EndObject();
  *out = sb.GetString();
  return {};
}

ApiError PodStore::DeleteWorkload(const std::string& ns, const std::string& name) {
  ds::MutexLock l(&mu_);
  std::vector<std::string> keys;
  if (workloads_.count(Key(ns, name))) {
    keys.push_back(Key(ns, name));
  } else if (deployments_.count(Key(ns, name))) {
    for (const auto& [k, w] : workloads_)
      if (w.ns == ns && w.deployment == name) keys.push_back(k);
  } else {
    return Err(404, "NotFound", "workload not found");
  }
  for (const auto& key : keys) {
    Workload& w = workloads_[key];
    w.replicas = 0;
    w.deleted = true;
    ReconcileWorkload(key, &w);  // deletes its pods gracefully
    const std::string dep = w.deployment;
    workloads_.erase(key);
    if (auto it = by_owner_.find(key); it != by_owner_.end()) {
      const std::set<std::string> owned = it->second;
      for (const auto& k : owned) SetOwner(k, "");
    }
    dirty_.erase(key);
    bool last = true;
    for (const auto& [k, other] : workloads_)
      last = last && !(other.ns == ns && other.deployment == dep);
    if (!dep.empty() && last) deployments_.erase(Key(ns, dep));
  }
  Reconcile();
  return {};
}

std::string PodStore::WorkloadsJson() const {
  ds::MutexLock l(&mu_);
  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  w.StartObject();
  w.Key("items");
  w.StartArray();
  for (const auto& [key, wl] : workloads_) {
    int active = 0, ready = 0;
    CountPods(key, &active, &ready);
    w.StartObject();
    w.Key("kind");
    ds::WriteString(w, wl.kind);
    w.Key("namespace");
    ds::WriteString(w, wl.ns);
    w.Key("name");
    ds::WriteString(w, wl.name);
    if (!wl.deployment.empty()) {
      w.Key("deployment");
      ds::WriteString(w, wl.deployment);
    }
    w.Key("replicas");
    w.Int(wl.replicas);
    w.Key("active");
    w.Int(active);
    w.Key("ready");
    w.Int(ready);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return sb.GetString();
}

void PodStore::CountPods(const std::string& wkey, int* active, int* ready) const {
  *active = *ready = 0;
  auto owned = by_owner_.find(wkey);
  if (owned == by_owner_.end()) return;
  for (const auto& k : owned->second) {
    const StoredPod& p = pods_.at(k);
    if (p.gone_at > 0 || p.terminal) continue;
    ++*active;
    if (p.ready) ++*ready;
  }
}

void PodStore::ReconcileWorkload(const std::string& wkey, Workload* w) {
  const auto owned_it = by_owner_.find(wkey);
  const std::set<std::string> owned =
      owned_it == by_owner_.end() ? std::set<std::string>{} : owned_it->second;
  auto create = [&](const std::string& name, const std::string& node) REQUIRES(mu_) {
    std::string json = NewPodFromWorkload(w, name, node);
    Document d;
    d.Parse(json.c_str());
    const std::string key = Key(w->ns, ds::JsonString(d["metadata"], "name"));
    std::string out;
    if (CreateLocked(w->ns, json, &out).ok()) SetOwner(key, wkey);
    return key;
  };
  auto remove = [&](const std::string& key) REQUIRES(mu_) {
    std::string out;
    if (pods_.count(key)) DeleteLocked(key, 0, false, &out);
  };
  if (w->kind == "StatefulSet") {
    // Pods NAME-0 .. NAME-(n-1); one that is gone comes back under its name, one still
    // terminating is waited for (the StatefulSet controller's identity guarantee).
    for (int i = 0; i < w->replicas; ++i)
      if (!pods_.count(Key(w->ns, w->name + "-" + std::to_string(i))))
        create(w->name + "-" + std::to_string(i), "");
    for (const auto& k : owned) {
      const std::string ordinal = k.substr(k.rfind('-') + 1);
      if (pods_.at(k).gone_at == 0 && std::atoi(ordinal.c_str()) >= w->replicas) remove(k);
    }
    return;
  }
  if (w->kind == "DaemonSet") {
    // One pod on every node the template can run on (nodeSelector, required node affinity,
    // taints with the daemon tolerations; not resources, as the DaemonSet controller).
    std::vector<std::string> want;
    if (!w->deleted) {
      Workload probe_w = *w;
      Document probe;
      probe.Parse(NewPodFromWorkload(&probe_w).c_str());
      const SchedPod probe_pod = PodFromJson(probe);
      for (const SchedNode& n : SchedNodes(*cluster_))
        if (!Schedule({n}, {}, probe_pod).node.empty()) want.push_back(n.name);
    }
    w->replicas = static_cast<int>(want.size());
    std::map<std::string, int> have;
    for (auto it = w->pinned.begin(); it != w->pinned.end();) {
      if (!owned.count(it->first)) {
        it = w->pinned.erase(it);
        continue;
      }
      if (pods_.at(it->first).gone_at == 0) ++have[it->second];
      ++it;
    }
    for (const auto& node : want)
      if (have[node] == 0) w->pinned[create("", node)] = node;
    for (const auto& [k, node] : std::map<std::string, std::string>(w->pinned))
      if (std::find(want.begin(), want.end(), node) == want.end() && pods_.at(k).gone_at == 0)
        remove(k);
    return;
  }
  // ReplicaSet: active pods are those not terminating. Terminating pods are few (all in
  // ticking_), so they are counted there; the active pods are listed only when some must go.
  size_t active_count = owned.size();
  for (const auto& k : ticking_)
    if (const StoredPod& p = pods_.at(k); p.owner == wkey && p.gone_at > 0) --active_count;
  std::vector<std::string> active;
  if (active_count > static_cast<size_t>(std::max(0, w->replicas)))
    for (const auto& k : owned)
      if (pods_.at(k).gone_at == 0) active.push_back(k);
  for (int i = static_cast<int>(active_count); i < w->replicas; ++i) create("", "");
  for (size_t i = static_cast<size_t>(std::max(0, w->replicas)); i < active.size(); ++i)
    remove(active[i]);
}

std::string PodStore::ExplainSchedule(const std::string& pod_json) const {
  Document pd;
  pd.Parse(pod_json.c_str());
  if (pd.HasParseError() || !pd.IsObject()) return "{\"error\":\"invalid JSON\"}";
  // {"pod": Pod, "bound": [Pod...]}: the same verdict as if `bound` were the pods on the nodes
  // (a what-if: the demo replays its evictions without the mark on the scenario it started from).
  const bool what_if = pd.HasMember("pod") && pd["pod"].IsObject();
  std::vector<SchedNode> nodes;
  std::vector<SchedPod> bound;
  if (what_if && pd.HasMember("bound") && pd["bound"].IsArray())
    for (const auto& p : pd["bound"].GetArray())
      if (p.IsObject() && !PodFromJson(p).node.empty()) bound.push_back(PodFromJson(p));
  {
    ds::MutexLock l(&mu_);
    nodes = SchedNodes(*cluster_);
    if (!what_if) bound = BoundPods(pods_);  // Schedule counts only pods on a node
  }
  const SchedVolumes volumes = volumes_ != nullptr ? volumes_->Snapshot() : SchedVolumes{};
  ScheduleResult r = Schedule(nodes, bound, PodFromJson(what_if ? pd["pod"] : pd), volumes);
  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  w.StartObject();
  w.Key("node");
  ds::WriteString(w, r.node);
  w.Key("message");
  ds::WriteString(w, r.message);
  w.Key("scores");
  w.StartArray();
  for (const auto& s : r.scores) {
    w.StartObject();
    w.Key("node");
    ds::WriteString(w, s.node);
    w.Key("TaintToleration");
    w.Int64(s.taint);
    w.Key("NodeAffinity");
    w.Int64(s.affinity);
    w.Key("NodeResourcesFit");
    w.Int64(s.fit);
    w.Key("NodeResourcesBalancedAllocation");
    w.Int64(s.balanced);
    w.Key("total");
    w.Int64(s.total);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return sb.GetString();
}

void PodStore::Reconcile() {
  for (auto& [wkey, w] : workloads_) ReconcileWorkload(wkey, &w);
  // Scheduler: bind pending pods in creation order.
  std::vector<std::pair<uint64_t, std::string>> pending;
  for (const auto& k : unbound_) {
    const StoredPod& p = pods_.at(k);
    if (p.gone_at == 0 && p.keys.fields.at("spec.schedulerName") == "default-scheduler")
      pending.emplace_back(p.rv, k);
  }
  std::sort(pending.begin(), pending.end());
  if (!pending.empty()) {
    const std::vector<SchedNode> nodes = SchedNodes(*cluster_);
    const SchedVolumes volumes = volumes_ != nullptr ? volumes_->Snapshot() : SchedVolumes{};
    for (const auto& [prv, key] : pending) {
      const std::vector<SchedPod> bound = BoundPods(pods_);
      Document d;
      d.Parse(pods_[key].json.c_str());
      auto& a = d.GetAllocator();
      ScheduleResult r = Schedule(nodes, bound, PodFromJson(d), volumes);
      Value& st = Ensure(d, "status", rapidjson::kObjectType, a);
      Value cond(rapidjson::kObjectType);
      cond.AddMember("type", "PodScheduled", a);
      cond.AddMember("status", Value(rapidjson::StringRef(r.node.empty() ? "False" : "True")), a);
      cond.AddMember("lastTransitionTime", Value(Now().c_str(), a), a);
      if (r.node.empty()) {
        cond.AddMember("reason", "Unschedulable", a);
        cond.AddMember("message", Value(r.message.c_str(), a), a);
        const Value* oc = ds::JsonMember(st, "conditions");
        if (oc && oc->IsArray() && oc->Size() == 1 &&
            ds::JsonString((*oc)[0], "message") == r.message)
          continue;  // unchanged verdict: no write
      } else {
        SetStr(d["spec"], "nodeName", r.node, a);
        pods_[key].running_at = Steady() + options_.start_seconds;
      }
      Value conds(rapidjson::kArrayType);
      conds.PushBack(cond, a);
      Set(st, "conditions", std::move(conds), a);
      CommitPod(key, "MODIFIED", ds::JsonToString(d));
    }
  }
  RecomputePdbs();
  RecomputeApps();
}

void PodStore::Tick() {
  ds::MutexLock l(&mu_);
  double now = Steady();
  std::vector<std::string> gone, start;
  for (const auto& k : ticking_) {  // the others can neither start nor go
    StoredPod& p = pods_.at(k);
    if (p.gone_at > 0 && p.gone_at <= now) gone.push_back(k);
    bool pending = p.keys.fields.at("status.phase") == "Pending";
    if (p.gone_at == 0 && pending && !p.keys.fields.at("spec.nodeName").empty()) {
      if (p.running_at == 0) p.running_at = now + options_.start_seconds;  // created bound
      if (p.running_at <= now) start.push_back(k);
    }
  }
  for (const auto& k : gone) CommitPod(k, "DELETED", pods_[k].json);
  // Live migrations that end: the source launcher goes (gracefully), its workload replaces it.
  std::vector<std::string> migrated;
  for (const auto& k : migrating_)
    if (pods_.at(k).migrated_at <= now) migrated.push_back(k);
  for (const auto& k : migrated) {
    migrating_.erase(k);
    pods_[k].migrated_at = 0;
    std::string out;
    DeleteLocked(k, 0, false, &out);
  }
  // Kubelet: start bound pods (Running; Ready unless annotated sim.k8s.io/ready: "false").
  for (const auto& k : start) {
    Document d;
    d.Parse(pods_[k].json.c_str());
    auto& a = d.GetAllocator();
    std::string node = ds::JsonString(d["spec"], "nodeName");
    std::string host_ip, cidr;
    std::string node_json;
    if (cluster_->Get(node, &node_json).ok()) {
      Document nd;
      nd.Parse(node_json.c_str());
      if (const Value* addrs = rapidjson::Pointer("/status/addresses").Get(nd);
          addrs && addrs->IsArray())
        for (const auto& ad : addrs->GetArray())
          if (ds::JsonString(ad, "type") == "InternalIP") host_ip = ds::JsonString(ad, "address");
      if (const Value* c = rapidjson::Pointer("/spec/podCIDR").Get(nd); c && c->IsString())
        cidr = c->GetString();
    }
    std::string pod_ip = cidr.empty() ? "10.244.0." + std::to_string(2 + uid_counter_ % 250)
                                      : cidr.substr(0, cidr.rfind('.')) + "." +
                                            std::to_string(2 + (++uid_counter_) % 250);
    // A pod in the host's network namespace has the node's address, as the kubelet reports it
    // (generateAPIPodStatus: a hostNetwork pod's podIPs are the node's IPs). A test's backend
    // that listens on this machine is such a pod on a node whose InternalIP is this machine's.
    if (const Value* hn = rapidjson::Pointer("/spec/hostNetwork").Get(d);
        hn != nullptr && hn->IsBool() && hn->GetBool() && !host_ip.empty())
      pod_ip = host_ip;
    const Value* ann = rapidjson::Pointer("/metadata/annotations/sim.k8s.io~1ready").Get(d);
    bool ready = !(ann && ann->IsString() && std::string(ann->GetString()) == "false");
    std::string now_s = Now();
    Value& st = Ensure(d, "status", rapidjson::kObjectType, a);
    SetStr(st, "phase", "Running", a);
    if (!host_ip.empty()) SetStr(st, "hostIP", host_ip, a);
    SetStr(st, "podIP", pod_ip, a);
    Value ips(rapidjson::kArrayType);
    Value ip(rapidjson::kObjectType);
    ip.AddMember("ip", Value(pod_ip.c_str(), a), a);
    ips.PushBack(ip, a);
    Set(st, "podIPs", std::move(ips), a);
    SetStr(st, "startTime", now_s, a);
    Value conds(rapidjson::kArrayType);
    for (const char* type : {"Initialized", "Ready", "ContainersReady", "PodScheduled"}) {
      bool ok = ready || std::string(type) == "Initialized" || std::string(type) == "PodScheduled";
      Value c(rapidjson::kObjectType);
      c.AddMember("type", Value(type, a), a);
      c.AddMember("status", Value(rapidjson::StringRef(ok ? "True" : "False")), a);
      c.AddMember("lastTransitionTime", Value(now_s.c_str(), a), a);
      conds.PushBack(c, a);
    }
    Set(st, "conditions", std::move(conds), a);
    Value css(rapidjson::kArrayType);
    for (const auto& c : d["spec"]["containers"].GetArray()) {
      Value cs(rapidjson::kObjectType);
      cs.AddMember("name", Value(ds::JsonString(c, "name").c_str(), a), a);
      cs.AddMember("image", Value(ds::JsonString(c, "image").c_str(), a), a);
      cs.AddMember("imageID", "", a);
      cs.AddMember("ready", ready, a);
      cs.AddMember("started", true, a);
      cs.AddMember("restartCount", 0, a);
      Value state(rapidjson::kObjectType), running(rapidjson::kObjectType);
      running.AddMember("startedAt", Value(now_s.c_str(), a), a);
      state.AddMember("running", running, a);
      cs.AddMember("state", state, a);
      css.PushBack(cs, a);
    }
    Set(st, "containerStatuses", std::move(css), a);
    CommitPod(k, "MODIFIED", ds::JsonToString(d));
  }
  Reconcile();
}

uint64_t PodStore::EventsAfter(uint64_t from, int timeout_ms, std::vector<PodEvent>* out,
                               bool* expired) {
  ds::MutexLock l(&mu_);
  *expired = false;
  auto ready = [&]() REQUIRES(mu_) { return last_rv_ > from || from < compacted_rv_; };
  if (!ready()) cv_.WaitFor(&mu_, std::chrono::milliseconds(timeout_ms), ready);
  if (from < compacted_rv_) {
    *expired = true;
    return cluster_->CurrentRv();
  }
  auto it = std::upper_bound(events_.begin(), events_.end(), from,
                             [](uint64_t v, const PodEvent& e) { return v < e.rv; });
  for (; it != events_.end(); ++it) out->push_back(*it);
  return cluster_->CurrentRv();
}

void PodStore::WakeAll() { cv_.SignalAll(); }

void PodStore::Compact() {
  ds::MutexLock l(&mu_);
  events_.clear();
  compacted_rv_ = cluster_->CurrentRv();
  cv_.SignalAll();
}

}  // namespace sim
