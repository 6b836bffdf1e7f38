#include "rebalance/eviction_text.h"

#include <sstream>

namespace ds {

std::string EvictionReason(const EvictionRecord& r, bool drain) {
  std::ostringstream why;
  why.precision(4);
  if (drain)
    why << "the node has stayed underused, at " << r.load << " % of allocatable, below " << r.goal
        << " %";
  else
    why << "rule " << r.rule << " at " << r.load << " % is over its clear threshold " << r.goal
        << " %";
  return why.str();
}

LogFields EvictionLogFields(const EvictionRecord& r, bool drain) {
  LogFields f = Fields("pod", r.pod, "node", r.node, "destination", r.to, "rule", r.rule);
  f.Add("reason", EvictionReason(r, drain));
  if (!drain) f.Add("usage_percent", r.usage);
  return f;
}

}  // namespace ds
