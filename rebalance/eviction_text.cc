#include "rebalance/eviction_text.h"

#include <sstream>

namespace ds {

std::string EvictionReason(const EvictionRecord& r, bool drain) {
  std::ostringstream why;
  why.precision(4);
  if (drain)
    why << "the node has stayed underused, at " << r.load << " % of allocatable, below " << r.goal
        << " %";
  else if (r.unit == ValueUnit::kPercent)
    why << "rule " << r.rule << " at " << r.load << " % is over its clear threshold " << r.goal
        << " %";
  else  // bytes available: the kubelet's memory.available
    why << "rule " << r.rule << " at " << FormatValue(r.load, r.unit)
        << " available is below its clear threshold " << FormatValue(r.goal, r.unit);
  return why.str();
}

LogFields EvictionLogFields(const EvictionRecord& r, bool drain) {
  LogFields f = Fields("pod", r.pod, "node", r.node, "destination", r.to, "rule", r.rule);
  f.Add("reason", EvictionReason(r, drain));
  if (!drain) f.Add(r.unit == ValueUnit::kPercent ? "usage_percent" : "usage_bytes", r.usage);
  return f;
}

}  // namespace ds
