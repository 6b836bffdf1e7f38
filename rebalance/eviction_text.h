// How an eviction is told to people: the reason its log line and its Events share, and the log
// line's structured fields. The message of a log line stays constant and the pod, the nodes and
// the numbers go into fields (common/log_fields.h), so a log stack can select on them. Pure.
#pragma once

#include <string>

#include "common/log_fields.h"
#include "rebalance/report.h"

namespace ds {

// "rule cpu at 86.7 % is over its clear threshold 60 %" for a relief ("rule mem at 80 MiB
// available is below its clear threshold 500 MiB" for a bytes-available rule); for a drain
// (`drain`: rebalance.underused's eviction) "the node has stayed underused, at 8 % of allocatable,
// below 20 %". Numbers to 4 significant digits.
std::string EvictionReason(const EvictionRecord& r, bool drain);

// pod (namespace/name), node, destination, rule, reason (EvictionReason) and, for a relief, the
// pod's share of the node as usage_percent, or its working set as usage_bytes for a
// bytes-available rule (a drain moves every pod, whatever it uses).
LogFields EvictionLogFields(const EvictionRecord& r, bool drain);

}  // namespace ds
