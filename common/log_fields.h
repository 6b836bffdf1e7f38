// Structured fields for a glog line: key/value pairs streamed into LOG after the message text,
//
//   LOG(WARNING) << "could not set it" << Fields("node", name, "err", st);
//
// written into the message as one block at its end, readable in the text format and split off
// again by the JSON format (common/json_log_sink.h), which emits each pair as a top-level key:
//
//   text:  W0517 10:00:00.123456 42 node_writer.cc:249] could not set it {node="n1" err="..."}
//   json:  {"ts":1715940000123.456,"caller":"controller/node_writer.cc:249",
//           "msg":"could not set it","node":"n1","err":"..."}          (one line)
//
// The block is ` {` pairs `}`, pairs apart by one space, each `key=value`: a key is
// [A-Za-z_][A-Za-z0-9_.-]* (other characters become '_'); a string value is always quoted, with
// `"`, `\` and every control character escaped (\" \\ \n \r \t \u00XX), so no value can end the
// block, start a new pair or break the line; a number or boolean is bare (JSON's grammar). UTF-8
// is kept as it is.
//
// Splitting is unambiguous for what Fields writes: the block is the message's last bytes, and
// SplitLogFields takes the leftmost " {" from which the rest of the message parses completely as
// one block. A quoted value may contain " {" or "}" (it is parsed, not searched), and message text
// before the block may contain braces: a candidate that starts in the text runs into the block's
// unescaped quotes and fails. Only a message *without* fields whose text itself ends in a
// well-formed block would be read as having fields; values from outside (errors, names) belong in
// fields for that reason too.
//
// Reserved keys: "v" with an integer is the line's verbosity (`VLOG(2) << ... << Fields("v", 2)`;
// glog does not tell a sink the level of a VLOG); "err" holds the error of a failed operation.
#pragma once

#include <concepts>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/status.h"

namespace ds {

class LogFields {
 public:
  LogFields() = default;

  // Strings are quoted; a Status adds its ToString(), or "OK".
  LogFields& Add(std::string_view key, std::string_view value);
  LogFields& Add(std::string_view key, const char* value) {
    return Add(key, std::string_view(value == nullptr ? "" : value));
  }
  LogFields& Add(std::string_view key, const std::string& value) {
    return Add(key, std::string_view(value));
  }
  LogFields& Add(std::string_view key, const Status& err) { return Add(key, err.ToString()); }
  LogFields& Add(std::string_view key, bool value);
  // Integers and finite floating-point numbers bare (shortest form that reads back the same);
  // NaN and infinities as the strings "NaN", "+Inf", "-Inf" (JSON has no such numbers).
  template <typename T>
  requires(std::is_arithmetic_v<T> && !std::same_as<T, bool> &&
           !std::same_as<T, char>) LogFields& Add(std::string_view key, T value) {
    if constexpr (std::is_integral_v<T>) {
      AddBare(key, std::to_string(value));
    } else {
      AddNumber(key, static_cast<double>(value));
    }
    return *this;
  }

  bool empty() const { return pairs_.empty(); }
  // The block as streamed: "" when empty, else ` {k="v" n=1}`.
  std::string Encoded() const;

 private:
  void AddBare(std::string_view key, std::string_view token);
  void AddNumber(std::string_view key, double value);
  void AddKey(std::string_view key);

  std::string pairs_;  // `k="v" n=1`, encoded
};

inline std::ostream& operator<<(std::ostream& os, const LogFields& f) { return os << f.Encoded(); }

// Appends key/value pairs to `f`: the recursion behind Fields.
inline void AddPairs(LogFields*) {}
template <typename K, typename V, typename... Rest>
void AddPairs(LogFields* f, K&& key, V&& value, Rest&&... rest) {
  f->Add(std::string_view(key), std::forward<V>(value));
  AddPairs(f, std::forward<Rest>(rest)...);
}

// Fields("node", name, "rule", rule.name): key/value pairs, each key first.
template <typename... KV>
LogFields Fields(KV&&... kv) {
  static_assert(sizeof...(KV) % 2 == 0, "Fields takes key/value pairs");
  LogFields f;
  AddPairs(&f, std::forward<KV>(kv)...);
  return f;
}

// One field as SplitLogFields reads it back: `value` unescaped; `bare` for a number or boolean
// (a JSON token as it is), false for a string.
struct LogField {
  std::string key;
  std::string value;
  bool bare = false;
};

// Splits a glog message into its text and the fields block at its end (see the top of this
// file). Without a well-formed block, `*text` is the whole message and `*fields` is empty.
void SplitLogFields(std::string_view message, std::string_view* text,
                    std::vector<LogField>* fields);

// `s` with each byte sequence that is not valid UTF-8 replaced by U+FFFD, so that the JSON line
// is valid whatever a message carries.
std::string ValidUtf8(std::string_view s);

}  // namespace ds
