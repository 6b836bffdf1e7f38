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
  if (!req.empty() && std::all_of(req.begin(), req.end(), [&](const NodeSelectorTerm& t) {
        return TermExcludes(t, key, value);
      }))
    return Steer::kRequired;
  for (const PreferredSchedulingTerm& p : pod.preferred_affinity)
    if (p.weight > 0 && TermExcludes(p.preference, key, value)) return Steer::kPreferred;
  if (taint != nullptr && !Tolerates(pod, *taint)) return Steer::kTaint;
  return Steer::kNone;
}

std::string SteeringAdvice(const std::string& key, const std::string& value) {
  return "add to its template spec.affinity.nodeAffinity."
         "preferredDuringSchedulingIgnoredDuringExecution: {weight: 100, preference: "
         "{matchExpressions: [{key: " +
         key + ", operator: NotIn, values: [" + value + "]}]}}";
}

}  // namespace ds
