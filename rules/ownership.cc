#include "rules/ownership.h"

#include <rapidjson/document.h>

#include "common/json_util.h"
#include "common/rfc3339.h"

namespace ds {

std::string FormatOwnership(const Ownership& o) {
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.StartObject();
  if (!o.label_key.empty()) {
    w.Key("label");
    WriteString(w, o.label_key);
    w.Key("value");
    WriteString(w, o.label_value);
  }
  if (!o.taint.key.empty()) {
    w.Key("taint");
    w.StartObject();
    w.Key("key");
    WriteString(w, o.taint.key);
    w.Key("value");
    WriteString(w, o.taint.value);
    w.Key("effect");
    WriteString(w, o.taint.effect);
    w.EndObject();
    if (o.taint_not_ours) {
      w.Key("taintNotOurs");
      w.Bool(true);
    }
  }
  w.Key("rules");
  w.StartArray();
  for (const auto& r : o.rules) {
    w.StartObject();
    w.Key("rule");
    WriteString(w, r.rule);
    w.Key("since");
    WriteString(w, FormatRfc3339(r.since_wall));
    w.EndObject();
  }
  w.EndArray();
  if (o.last_eviction_wall > 0) {
    w.Key("lastEviction");
    WriteString(w, FormatRfc3339(o.last_eviction_wall));
  }
  w.EndObject();
  return sb.GetString();
}

void SetRecordedMark(const Mark& mark, Ownership* o) {
  o->label_key = mark.UsesLabel() ? mark.key : "";
  o->label_value = mark.UsesLabel() ? mark.value : "";
  o->taint = mark.UsesTaint() ? mark.taint : Taint{};
}

OwnedParts OwnedMarkParts(const Mark& mark, const Labels& labels, const std::vector<Taint>& taints,
                          const Ownership* record) {
  OwnedParts p;
  p.label = mark.UsesLabel() && mark.LabelOn(labels);
  p.taint = mark.UsesTaint() && record != nullptr && RecordNamesMark(*record, mark) &&
            !record->taint_not_ours && mark.TaintOn(taints);
  return p;
}

Mark RecordedMark(const Ownership& o) {
  Mark m;
  const bool label = !o.label_key.empty(), taint = !o.taint.key.empty();
  m.mode = label && taint ? Mark::Mode::kBoth : taint ? Mark::Mode::kTaint : Mark::Mode::kLabel;
  if (label) {
    m.key = o.label_key;
    m.value = o.label_value;
  }
  if (taint) m.taint = o.taint;
  return m;
}

bool RecordNamesMark(const Ownership& o, const Mark& mark) {
  Ownership want;
  SetRecordedMark(mark, &want);
  return o.label_key == want.label_key && o.label_value == want.label_value &&
         o.taint == want.taint;
}

std::optional<size_t> RecordedLevel(const Ownership& o, const Mark& mark) {
  for (size_t below = 0; below < mark.LevelCount(); ++below)
    if (RecordNamesMark(o, mark.Below(below))) return below;
  return std::nullopt;
}

size_t NodeMarkLevel(const Mark& mark, const Labels& labels, const std::vector<Taint>& taints,
                     const Ownership* record) {
  if (mark.levels.empty()) return 0;
  if (auto on = mark.LevelOn(labels, taints)) return *on;
  if (record != nullptr)
    if (auto recorded = RecordedLevel(*record, mark)) return *recorded;
  return 0;
}

StatusOr<Ownership> ParseOwnership(std::string_view text) {
  auto bad = [](const std::string& why) {
    return Status::InvalidArgument(std::string(kHeldByAnnotation) + ": " + why);
  };
  // Anyone who may patch the node can write this annotation (up to 256 KiB): a real record is a
  // few hundred bytes, and the iterative parser cannot be driven into deep recursion.
  if (text.size() > kMaxOwnershipBytes)
    return bad("longer than " + std::to_string(kMaxOwnershipBytes) + " bytes");
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(text.data(), text.size());
  if (doc.HasParseError() || !doc.IsObject()) return bad("not a JSON object");
  Ownership o;
  if (const auto* t = JsonMember(doc, "taint"); t != nullptr) {
    if (!t->IsObject()) return bad("\"taint\" must be an object");
    const auto* tk = JsonMember(*t, "key");
    const auto* tv = JsonMember(*t, "value");
    const auto* te = JsonMember(*t, "effect");
    if (tk == nullptr || !tk->IsString() || tk->GetStringLength() == 0)
      return bad("taint.key must be a non-empty string");
    if (tv == nullptr || !tv->IsString()) return bad("taint.value must be a string");
    if (te == nullptr || !te->IsString() || te->GetStringLength() == 0)
      return bad("taint.effect must be a non-empty string");
    o.taint.key.assign(tk->GetString(), tk->GetStringLength());
    o.taint.value.assign(tv->GetString(), tv->GetStringLength());
    o.taint.effect.assign(te->GetString(), te->GetStringLength());
    if (const auto* n = JsonMember(doc, "taintNotOurs"); n != nullptr) {
      if (!n->IsBool()) return bad("\"taintNotOurs\" must be true or false");
      o.taint_not_ours = n->GetBool();
    }
  }
  const auto* key = JsonMember(doc, "label");
  const auto* value = JsonMember(doc, "value");
  // A record names a label, a taint or both; only a taint mode record may go without a label.
  if (key != nullptr || o.taint.key.empty()) {
    if (key == nullptr || !key->IsString() || key->GetStringLength() == 0)
      return bad("\"label\" must be a non-empty string");
    if (value == nullptr || !value->IsString()) return bad("\"value\" must be a string");
    o.label_key.assign(key->GetString(), key->GetStringLength());
    o.label_value.assign(value->GetString(), value->GetStringLength());
  }
  const auto* rules = JsonMember(doc, "rules");
  if (rules == nullptr || !rules->IsArray()) return bad("\"rules\" must be a list");
  for (const auto& r : rules->GetArray()) {
    const auto* name = JsonMember(r, "rule");
    const auto* since = JsonMember(r, "since");
    if (name == nullptr || !name->IsString() || name->GetStringLength() == 0)
      return bad("rules[" + std::to_string(o.rules.size()) + "].rule must be a non-empty string");
    OwnerRule owner;
    owner.rule.assign(name->GetString(), name->GetStringLength());
    if (since == nullptr || !since->IsString() ||
        !ParseRfc3339(std::string_view(since->GetString(), since->GetStringLength()),
                      &owner.since_wall))
      return bad("rules[" + std::to_string(o.rules.size()) + "].since must be an RFC 3339 time");
    o.rules.push_back(std::move(owner));
  }
  if (const auto* last = JsonMember(doc, "lastEviction");
      last != nullptr &&
      (!last->IsString() ||
       !ParseRfc3339(std::string_view(last->GetString(), last->GetStringLength()),
                     &o.last_eviction_wall)))
    return bad("\"lastEviction\" must be an RFC 3339 time");
  return o;
}

}  // namespace ds
