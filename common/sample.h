// One Prometheus sample: shared by the decoder (promql/) and node matching (rules/), which must
// not depend on each other.
#pragma once

#include "common/labels.h"

namespace ds {

struct Sample {
  Labels metric;     // series labels; empty for scalars and aggregations without `by`
  double value = 0;  // may be NaN or +/-Inf: Prometheus sends them as "NaN", "+Inf", "-Inf"
  double timestamp = 0;
};

}  // namespace ds
