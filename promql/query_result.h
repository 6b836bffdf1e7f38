// The result types of a Prometheus instant query (/api/v1/query) and the value syntax they carry.
// Both decoders (reference_decoder.h, fast_vector_decoder.h) produce these; neither depends on
// the other, and response_decoder.h is the one entry point that chooses between them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/sample.h"

namespace ds {

struct QueryResult {
  std::string result_type;  // "vector", "scalar" or "matrix"
  std::vector<Sample> samples;
  std::vector<std::string> warnings;
  // Filled by the HTTP client, for the cycle-cost breakdown.
  double fetch_seconds = 0;  // waiting on Prometheus (request sent -> body received)
  double decode_seconds = 0;
  size_t body_bytes = 0;
  size_t sample_count = 0;  // set when samples were streamed to a SampleSink instead
};

// Series labels to keep while decoding; nullptr keeps all. Node matching needs only a few of a
// series' labels, and at 10,000 series copying the rest is most of the decoding cost.
using LabelFilter = std::vector<std::string>;

// Parses a Prometheus sample value string ("1.5", "NaN", "+Inf", "-Inf", "1e-300"). Values
// beyond the double range become +/-Inf (overflow) or 0 (underflow). Returns false when s is
// not a number, including the "inf"/"nan" spellings Prometheus never sends.
bool ParsePromValue(std::string_view s, double* out);

// Hands every sample of `result` to `sink` (once each, with its timestamp), then leaves `samples`
// empty and `sample_count` set: the form a sink-fed query returns.
void DrainToSink(QueryResult* result, SampleSink* sink);

}  // namespace ds
