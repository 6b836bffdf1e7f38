// The token scanner the fast decoders share: /api/v1/query's vector (fast_vector_decoder.h) and
// /api/v1/query_range's matrix (range_query.h). It reads JSON tokens in place from a body it never
// modifies and declines (returns false) on anything it does not take: a caller then falls back to
// a reference DOM decoder, which names what was wrong. Moved here unchanged from
// fast_vector_decoder.cc; every method is inline on purpose (it runs per byte of an answer).
#pragma once

#include <bit>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "common/same_bytes.h"
#include "promql/decimal_fast_path.h"
#include "promql/query_result.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ds {

inline constexpr int kJsonMaxDepth = 64;  // nesting allowed in skipped values

// The first byte in [b, e) that ends the fast scan of a string: '"', '\\' or a control
// character (below 0x20, not allowed raw in JSON strings); e if none. Eight bytes at a time: a
// byte x < 0x20 is one where x - 0x20 borrows into its top bit while x's own top bit is clear,
// and a byte equal to c is a zero byte of x ^ c. One pass instead of memchr for the quote, then
// for a backslash, then a control-character check: most strings here are 2-15 bytes, where the
// calls cost more than the scanning.
inline const char* JsonStringStop(const char* b, const char* e) {
#if defined(__SSE2__)
  // Sixteen bytes at a time where SSE2 exists (every x86-64): a label value such as a node name
  // or an address usually ends within the first block. Unsigned x <= 0x1f is min(x, 0x1f) == x.
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'),
                control = _mm_set1_epi8(0x1f);
  while (e - b >= 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
    const __m128i hit =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)),
                     _mm_cmpeq_epi8(_mm_min_epu8(x, control), x));
    if (const auto mask = static_cast<unsigned>(_mm_movemask_epi8(hit)); mask != 0)
      return b + std::countr_zero(mask);
    b += 16;
  }
#endif
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
  while (e - b >= 8) {
    uint64_t x;
    std::memcpy(&x, b, 8);
    const uint64_t quote = x ^ (kOnes * '"'), backslash = x ^ (kOnes * '\\');
    const uint64_t hit =
        ((x - kOnes * 0x20) & ~x) | ((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash);
    if ((hit & kHigh) != 0) {
      // Borrows only run upwards from a byte that really matches, so on a little-endian
      // machine the lowest flagged byte is the first stop; elsewhere the byte loop finds it.
      if constexpr (std::endian::native == std::endian::little)
        return b + std::countr_zero(hit & kHigh) / 8;
      break;
    }
    b += 8;
  }
  for (; b < e; ++b) {
    const auto c = static_cast<unsigned char>(*b);
    if (c == '"' || c == '\\' || c < 0x20) return b;
  }
  return e;
}

inline bool IsJsonNumberChar(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

class JsonScanner {
 public:
  JsonScanner(std::string_view s, const LabelFilter* keep)
      : p_(s.data()), end_(s.data() + s.size()), keep_(keep) {
    if (keep_ != nullptr)
      for (const auto& k : *keep_) {
        if (!k.empty() && k.size() < 64) {
          keep_lengths_ |= uint64_t{1} << k.size();
          keep_first_[static_cast<unsigned char>(k[0])] = true;
        }
      }
  }

 protected:
  // Inlined on purpose: it runs before every token, and a call costs more than the one compare.
  [[gnu::always_inline]] void Ws() {
    // Prometheus sends no whitespace between tokens: one compare is all most calls cost (every
    // JSON whitespace byte is <= ' ', most token bytes are above it).
    while (p_ < end_ && static_cast<unsigned char>(*p_) <= ' ' &&
           (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t'))
      ++p_;
  }
  [[gnu::always_inline]] bool Peek(char c) {
    Ws();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }
  bool Expect(char c) { return Peek(c); }

  // A successful answer, the whole body: {"status":"success","data":{"resultType":`type`,
  // "result":[...]}}, each element of "result" read by `element` (bool()). "warnings", an array
  // of strings, go to `warnings`; with null it is declined (the caller's reference decoder
  // collects them). Other members are skipped; of duplicate members the first counts, as the DOM
  // decoders read them. One envelope for the vector and the matrix scanners.
  template <typename Element>
  bool Answer(std::string_view type, std::vector<std::string>* warnings, Element&& element) {
    bool status_ok = false, have_data = false, have_warnings = false;
    if (!Expect('{') || Peek('}')) return false;
    do {
      std::string_view key;
      if (!String(&key) || !Expect(':')) return false;
      if ((key == "status" && status_ok) || (key == "data" && have_data) ||
          (key == "warnings" && have_warnings)) {
        if (!Skip(0)) return false;
      } else if (key == "status") {
        std::string_view v;
        if (!String(&v) || v != "success") return false;
        status_ok = true;
      } else if (key == "data") {
        if (!AnswerData(type, element)) return false;
        have_data = true;
      } else if (key == "warnings") {
        if (warnings == nullptr || !StringArray(warnings)) return false;
        have_warnings = true;
      } else if (!Skip(0)) {
        return false;
      }
    } while (Comma());
    if (!Expect('}')) return false;
    Ws();
    return status_ok && have_data && p_ == end_;
  }
  bool Comma() { return Peek(','); }

  // A string without escapes is returned as a view into the body; with escapes it is decoded
  // into scratch_ (valid until the next String call).
  bool String(std::string_view* out) {
    Ws();
    if (p_ >= end_ || *p_ != '"') return false;
    const char* start = ++p_;
    const char* q = JsonStringStop(start, end_);
    if (q == end_ || static_cast<unsigned char>(*q) < 0x20) return false;  // unterminated, raw
    if (*q == '"') {
      *out = std::string_view(start, static_cast<size_t>(q - start));
      p_ = q + 1;
      return true;
    }
    // A backslash: decode from the start (rare: label values with \ or ").
    scratch_.clear();
    while (p_ < end_) {
      char c = *p_++;
      if (c == '"') {
        *out = scratch_;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        scratch_.push_back(c);
        continue;
      }
      if (p_ >= end_) return false;
      switch (char e = *p_++) {
        case '"':
        case '\\':
        case '/':
          scratch_.push_back(e);
          break;
        case 'b':
          scratch_.push_back('\b');
          break;
        case 'f':
          scratch_.push_back('\f');
          break;
        case 'n':
          scratch_.push_back('\n');
          break;
        case 'r':
          scratch_.push_back('\r');
          break;
        case 't':
          scratch_.push_back('\t');
          break;
        case 'u':
          return false;  // \uXXXX (surrogates, UTF-8 encoding): leave to the DOM decoder
        default:
          return false;
      }
    }
    return false;
  }

  // A JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? -- from_chars alone would also
  // take "0123" or "1.", which JSON (and the reference decoder) refuses (found by fuzzing).
  bool Number(double* out) {
    Ws();
    const char* start = p_;
    // Every sample of an instant query carries the same evaluation time: the bytes of the last
    // number read, followed by a byte that cannot continue a number, are that number again.
    if (const size_t n = last_number_.size(); n > 0 && static_cast<size_t>(end_ - p_) > n &&
                                              SameBytes(p_, last_number_.data(), n) &&
                                              !IsJsonNumberChar(p_[n])) {
      p_ += n;
      *out = last_number_value_;
      return true;
    }
    auto digits = [&] {
      const char* d = p_;
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
      return p_ - d;
    };
    if (p_ < end_ && *p_ == '-') ++p_;
    if (p_ < end_ && *p_ == '0') {
      ++p_;
    } else if (digits() == 0) {
      return false;
    }
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      if (digits() == 0) return false;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (digits() == 0) return false;
    }
    if (p_ < end_ && IsJsonNumberChar(*p_)) return false;  // e.g. "01": a second number glued on
    if (!FastDecimal(start, p_, out)) {                    // plain decimals, e.g. timestamps
      auto [ptr, ec] = std::from_chars(start, p_, *out);
      if (ec != std::errc() || ptr != p_) return false;
    }
    if (static_cast<size_t>(p_ - start) <= sizeof(last_number_buf_)) {
      std::memcpy(last_number_buf_, start, static_cast<size_t>(p_ - start));
      last_number_ = std::string_view(last_number_buf_, static_cast<size_t>(p_ - start));
      last_number_value_ = *out;
    }
    return true;
  }

  // Skips any JSON value.
  bool Skip(int depth) {
    if (depth > kJsonMaxDepth) return false;
    Ws();
    if (p_ >= end_) return false;
    char c = *p_;
    if (c == '"') {
      std::string_view s;
      return String(&s);
    }
    if (c == '{' || c == '[') {
      ++p_;
      char close = c == '{' ? '}' : ']';
      if (Peek(close)) return true;
      do {
        if (c == '{') {
          std::string_view k;
          if (!String(&k) || !Expect(':')) return false;
        }
        if (!Skip(depth + 1)) return false;
      } while (Comma());
      return Expect(close);
    }
    for (std::string_view lit : {"true", "false", "null"}) {
      if (static_cast<size_t>(end_ - p_) >= lit.size() &&
          std::memcmp(p_, lit.data(), lit.size()) == 0) {
        p_ += lit.size();
        return true;
      }
    }
    double d;
    return Number(&d);
  }

  bool Kept(std::string_view name) const {
    if (keep_ == nullptr) return true;
    // Most label names (job, __name__, ...) are refused by their length or first byte alone.
    if (!name.empty() && name.size() < 64 &&
        (((keep_lengths_ >> name.size()) & 1) == 0 ||
         !keep_first_[static_cast<unsigned char>(name[0])]))
      return false;
    return KeptSlow(name);
  }
  template <typename Element>
  bool AnswerData(std::string_view type, Element& element) {
    bool typed = false, have_result = false;
    if (!Expect('{') || Peek('}')) return false;
    do {
      std::string_view key;
      if (!String(&key) || !Expect(':')) return false;
      if ((key == "resultType" && typed) || (key == "result" && have_result)) {
        if (!Skip(0)) return false;
      } else if (key == "resultType") {
        std::string_view v;
        if (!String(&v) || v != type) return false;
        typed = true;
      } else if (key == "result") {
        if (!Expect('[')) return false;
        if (!Peek(']')) {
          do {
            if (!element()) return false;
          } while (Comma());
          if (!Expect(']')) return false;
        }
        have_result = true;
      } else if (!Skip(0)) {
        return false;
      }
    } while (Comma());
    return Expect('}') && typed && have_result;
  }

  // An array of strings (the DOM path skips other elements: declined here).
  bool StringArray(std::vector<std::string>* out) {
    if (!Expect('[')) return false;
    if (Peek(']')) return true;
    do {
      std::string_view w;
      if (!String(&w)) return false;
      out->emplace_back(w);
    } while (Comma());
    return Expect(']');
  }

  bool KeptSlow(std::string_view name) const {
    for (const auto& k : *keep_)  // first byte first: most names differ there
      if (k.size() == name.size() && (k.empty() || k[0] == name[0]) && k == name) return true;
    return false;
  }

  const char* p_;
  const char* const end_;
  const LabelFilter* const keep_;
  // A quick refusal for Kept(): the lengths (below 64) and first bytes of the kept names.
  uint64_t keep_lengths_ = 0;
  bool keep_first_[256] = {};
  // The last number read (its JSON text) and its value, reused when the same text comes again.
  char last_number_buf_[32];
  std::string_view last_number_;
  double last_number_value_ = 0;
  std::string scratch_;
};

}  // namespace ds
