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

// Receives a query's samples one by one, so a caller can fold them (e.g. into per-node values)
// without materialising 10,000 Sample objects.
class SampleSink {
 public:
  virtual ~SampleSink() = default;
  // Forget everything added so far (a streaming attempt was abandoned).
  virtual void Reset() = 0;
  // labels: the series' (kept) labels, valid only during the call.
  virtual void Add(const LabelViews& labels, double value) = 0;
  // The same with the sample's timestamp (Unix seconds), which the decoders pass on: a sink that
  // judges a sample's age (a rule's maxAge) needs it; the others need not know it exists.
  virtual void AddAt(const LabelViews& labels, double value, double /*timestamp*/) {
    Add(labels, value);
  }
};

}  // namespace ds
