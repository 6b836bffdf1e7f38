#include "common/url_query.h"

namespace ds {

namespace {

int HexDigit(char h) {
  if (h >= '0' && h <= '9') return h - '0';
  if (h >= 'a' && h <= 'f') return h - 'a' + 10;
  if (h >= 'A' && h <= 'F') return h - 'A' + 10;
  return -1;
}

}  // namespace

StatusOr<std::optional<std::string>> QueryValue(std::string_view query, std::string_view name) {
  size_t pos = 0;
  while (pos <= query.size()) {
    size_t end = query.find('&', pos);
    if (end == std::string_view::npos) end = query.size();
    const std::string_view param = query.substr(pos, end - pos);
    pos = end + 1;
    if (param.size() < name.size() + 1 || param.substr(0, name.size()) != name ||
        param[name.size()] != '=')
      continue;
    std::string value;
    for (size_t k = name.size() + 1; k < param.size(); ++k) {
      if (param[k] != '%') {
        value.push_back(param[k]);
        continue;
      }
      const int hi = k + 1 < param.size() ? HexDigit(param[k + 1]) : -1;
      const int lo = k + 2 < param.size() ? HexDigit(param[k + 2]) : -1;
      if (hi < 0 || lo < 0)
        return Status::InvalidArgument("malformed percent-encoding in " + std::string(name) + "=");
      value.push_back(static_cast<char>(hi * 16 + lo));
      k += 2;
    }
    return std::optional<std::string>(std::move(value));
  }
  return std::optional<std::string>();
}

}  // namespace ds
