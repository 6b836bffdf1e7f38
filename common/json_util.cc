#include "common/json_util.h"

#include <rapidjson/error/en.h>

#include <cmath>

namespace ds {

const rapidjson::Value* JsonMember(const rapidjson::Value& v, const char* name) {
  if (!v.IsObject()) return nullptr;
  auto it = v.FindMember(name);
  return it == v.MemberEnd() ? nullptr : &it->value;
}

std::string JsonString(const rapidjson::Value& v, const char* name, const std::string& def) {
  const rapidjson::Value* m = JsonMember(v, name);
  if (m == nullptr || !m->IsString()) return def;
  return std::string(m->GetString(), m->GetStringLength());
}

std::string JsonParseError(const rapidjson::Document& doc) {
  return std::string("invalid JSON at byte ") + std::to_string(doc.GetErrorOffset()) + ": " +
         rapidjson::GetParseError_En(doc.GetParseError());
}

std::string JsonToString(const rapidjson::Value& v) {
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  v.Accept(w);
  return std::string(sb.GetString(), sb.GetSize());
}

Status RequiredString(const rapidjson::Value& v, const char* key, const std::string& at,
                      std::string* out) {
  const rapidjson::Value* m = JsonMember(v, key);
  if (m == nullptr || !m->IsString())
    return Status::InvalidArgument(at + "\"" + key + "\" missing or not a string");
  out->assign(m->GetString(), m->GetStringLength());
  return Status::OK();
}

Status RequiredNumber(const rapidjson::Value& v, const char* key, const std::string& at,
                      double* out) {
  const rapidjson::Value* m = JsonMember(v, key);
  if (m == nullptr || !m->IsNumber() || !std::isfinite(m->GetDouble()))
    return Status::InvalidArgument(at + "\"" + key + "\" missing or not a number");
  *out = m->GetDouble();
  return Status::OK();
}

}  // namespace ds
