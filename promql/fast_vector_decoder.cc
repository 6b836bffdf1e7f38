#include "promql/fast_vector_decoder.h"

#include <deque>
#include <string>

#include "promql/json_scanner.h"

namespace ds {
namespace {

class Parser : public JsonScanner {
 public:
  Parser(std::string_view s, const LabelFilter* keep, SampleVisitor visit)
      : JsonScanner(s, keep), visit_(std::move(visit)) {}

  // Parses the whole body; true when it is a successful vector result and every sample was
  // visited.
  bool Top() {
    // "warnings" are rare: declined, the reference decoder collects them.
    return Answer("vector", nullptr, [this] { return SampleObject(); });
  }

 private:
  bool SampleObject() {
    bool have_metric = false, have_value = false;
    double value = 0, timestamp = 0;
    labels_.clear();
    escaped_used_ = 0;
    if (!Expect('{')) return false;
    if (Peek('}')) return false;
    do {
      std::string_view key;
      if (!String(&key) || !Expect(':')) return false;
      if ((key == "metric" && have_metric) || (key == "value" && have_value)) {
        if (!Skip(0)) return false;
      } else if (key == "metric") {
        if (!Expect('{')) return false;
        if (!Peek('}')) {
          do {
            std::string_view name, label_value;
            if (!String(&name)) return false;
            bool kept = Kept(name);
            if (kept) name = Stable(name);
            if (!Expect(':') || !String(&label_value)) return false;
            if (kept) labels_.emplace_back(name, Stable(label_value));
          } while (Comma());
          if (!Expect('}')) return false;
        }
        have_metric = true;
      } else if (key == "value") {
        std::string_view v;
        if (!Expect('[') || !Number(&timestamp) || !Expect(',') || !String(&v) || !Expect(']'))
          return false;
        if (!ParsePromValue(v, &value)) return false;
        have_value = true;
      } else if (!Skip(0)) {
        return false;
      }
    } while (Comma());
    if (!Expect('}') || !have_metric || !have_value) return false;
    visit_(labels_, value, timestamp);
    return true;
  }

  // A view that stays valid for the rest of the sample: views into the body already do; a
  // string decoded from escapes is copied out of scratch_ (rare: label values with \ or ").
  std::string_view Stable(std::string_view s) {
    if (s.data() != scratch_.data()) return s;
    if (escaped_used_ == escaped_.size()) escaped_.emplace_back();
    escaped_[escaped_used_] = scratch_;
    return escaped_[escaped_used_++];
  }

  // By value: callers pass lambdas, and a reference to the temporary std::function built from
  // one would dangle once the constructor returns (found by fuzz_prom_decoder).
  const SampleVisitor visit_;
  LabelViews labels_;                // the current sample's kept labels
  std::deque<std::string> escaped_;  // deque: growing it keeps earlier strings in place
  size_t escaped_used_ = 0;
};

}  // namespace

bool ScanVector(std::string_view body, const LabelFilter* keep, const SampleVisitor& visit) {
  Parser parser(body, keep, visit);
  return parser.Top();
}

bool FastDecodeVector(std::string_view body, const LabelFilter* keep, QueryResult* out) {
  out->samples.reserve(body.size() / 100 + 1);  // ~100 bytes per series is typical
  auto collect = [out](const LabelViews& labels, double value, double ts) {
    Sample s;
    s.metric.reserve(labels.size());
    for (const auto& [k, v] : labels) s.metric.emplace_back(std::string(k), std::string(v));
    s.value = value;
    s.timestamp = ts;
    out->samples.push_back(std::move(s));
  };
  if (ScanVector(body, keep, collect)) {
    out->result_type = "vector";
    return true;
  }
  *out = QueryResult{};
  return false;
}

}  // namespace ds
