#include "rebalance/steering.h"

#include <algorithm>

#include "rebalance/placement.h"

namespace ds {

const char* SteerName(Steer s) {
  switch (s) {
    case Steer::kNone:
      return "would_return";
    case Steer::kRequired:
      return "required_affinity";
    case Steer::kPreferred:
      return "preferred_affinity";
    case Steer::kTaint:
      return "taint";
  }
  return "unknown";
}

Steer SteeredAway(const PodInfo& pod, const std::string& key, const std::string& value,
                  const Taint* taint) {
  const auto& req = pod.required_affinity;
  if (!value.empty() && !req.empty() &&
      std::all_of(req.begin(), req.end(),
                  [&](const NodeSelectorTerm& t) { return TermExcludes(t, key, value); }))
    return Steer::kRequired;
  // NodeAffinity scores a node by the summed weights of the preferred terms it matches. The terms
  // that exclude our value never count for the marked node; any other term might (its labels are
  // not all known here), so only a larger weight against the mark than all of them together
  // keeps the replacement off it.
  int32_t against = 0, others = 0;
  for (const PreferredSchedulingTerm& p : pod.preferred_affinity)
    (!value.empty() && TermExcludes(p.preference, key, value) ? against : others) +=
        std::max(0, p.weight);
  if (against > others) return Steer::kPreferred;
  if (taint != nullptr && !Tolerates(pod, *taint)) return Steer::kTaint;
  return Steer::kNone;
}

std::string SteeringAdvice(const std::string& key, const std::string& value, const Taint* taint) {
  if (value.empty() && taint != nullptr)
    return "drop from its template the toleration that tolerates the taint " + taint->key + "=" +
           taint->value + ":" + taint->effect +
           " (an operator: Exists toleration without a key tolerates every taint)";
  return "add to its template spec.affinity.nodeAffinity."
         "preferredDuringSchedulingIgnoredDuringExecution: {weight: 100, preference: "
         "{matchExpressions: [{key: " +
         key + ", operator: NotIn, values: [" + value + "]}]}}";
}

}  // namespace ds
