// Small RapidJSON helpers shared by both clients. JSON is always *built* with a Writer, never
// with string formatting, so a label value cannot break a request body.
#pragma once

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <string>
#include <string_view>

#include "common/status.h"

namespace ds {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

// Member `name` of object v, or nullptr when v is not an object or lacks it.
const rapidjson::Value* JsonMember(const rapidjson::Value& v, const char* name);
// String member, or def when absent or not a string.
std::string JsonString(const rapidjson::Value& v, const char* name, const std::string& def = "");
// Human-readable parse error with byte offset, e.g. "invalid JSON at byte 17: Missing a comma".
std::string JsonParseError(const rapidjson::Document& doc);

// A required member of a record being decoded (the eviction ledger's, the decision trail's): a
// string, or a finite number; the error is `at` followed by "\"KEY\" missing or not a string"
// (or "... a number").
Status RequiredString(const rapidjson::Value& v, const char* key, const std::string& at,
                      std::string* out);
Status RequiredNumber(const rapidjson::Value& v, const char* key, const std::string& at,
                      double* out);
// Writes a string_view as a JSON string.
inline void WriteString(JsonWriter& w, std::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}
// Serialises v compactly.
std::string JsonToString(const rapidjson::Value& v);

}  // namespace ds
