#include "common/base64.h"

namespace ds {

std::string Base64Encode(const std::string& in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  unsigned acc = 0;
  int bits = 0;
  for (unsigned char c : in) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(k[(acc >> bits) & 63]);
    }
  }
  if (bits > 0) out.push_back(k[(acc << (6 - bits)) & 63]);
  while (out.size() % 4 != 0) out.push_back('=');
  return out;
}

StatusOr<std::string> Base64Decode(const std::string& in) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  int bits = 0;
  unsigned acc = 0;
  bool padding = false;
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '\n' || c == '\r' || c == ' ') continue;
    if (c == '=') {
      padding = true;
      continue;
    }
    int v = val(c);
    if (v < 0 || padding)
      return Status::InvalidArgument("invalid base64 at character " + std::to_string(i));
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  if (bits >= 6) return Status::InvalidArgument("invalid base64 length");
  return out;
}

}  // namespace ds
