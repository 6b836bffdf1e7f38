#include "common/log_fields.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace ds {
namespace {

bool KeyStart(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool KeyChar(char c) { return KeyStart(c) || (c >= '0' && c <= '9') || c == '.' || c == '-'; }
bool Digit(char c) { return c >= '0' && c <= '9'; }

void AppendQuoted(std::string* out, std::string_view v) {
  out->push_back('"');
  for (char c : v) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          *out += buf;
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

// JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
bool JsonNumber(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && s[i] == '-') ++i;
  if (i >= s.size() || !Digit(s[i])) return false;
  if (s[i] == '0') {
    ++i;
  } else {
    while (i < s.size() && Digit(s[i])) ++i;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (i >= s.size() || !Digit(s[i])) return false;
    while (i < s.size() && Digit(s[i])) ++i;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (i >= s.size() || !Digit(s[i])) return false;
    while (i < s.size() && Digit(s[i])) ++i;
  }
  return i == s.size();
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Parses `s`, which starts at a block's '{', as exactly one block up to its end.
bool ParseBlock(std::string_view s, std::vector<LogField>* out) {
  size_t i = 1;
  for (;;) {
    LogField f;
    if (i >= s.size() || !KeyStart(s[i])) return false;
    while (i < s.size() && KeyChar(s[i])) f.key.push_back(s[i++]);
    if (i >= s.size() || s[i] != '=') return false;
    ++i;
    if (i < s.size() && s[i] == '"') {
      for (++i;; ++i) {
        if (i >= s.size()) return false;
        const char c = s[i];
        if (c == '"') break;
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;  // written escaped
        if (c != '\\') {
          f.value.push_back(c);
          continue;
        }
        if (++i >= s.size()) return false;
        switch (s[i]) {
          case '"':
          case '\\':
            f.value.push_back(s[i]);
            break;
          case 'n':
            f.value.push_back('\n');
            break;
          case 'r':
            f.value.push_back('\r');
            break;
          case 't':
            f.value.push_back('\t');
            break;
          case 'u': {  // \u00XX: one byte below 0x80
            if (i + 4 >= s.size() || s[i + 1] != '0' || s[i + 2] != '0') return false;
            const int hi = HexValue(s[i + 3]), lo = HexValue(s[i + 4]);
            if (hi < 0 || hi > 7 || lo < 0) return false;
            f.value.push_back(static_cast<char>(hi * 16 + lo));
            i += 4;
            break;
          }
          default:
            return false;
        }
      }
      ++i;  // the closing quote
    } else {
      const size_t start = i;
      while (i < s.size() && s[i] != ' ' && s[i] != '}') ++i;
      f.value = std::string(s.substr(start, i - start));
      if (f.value != "true" && f.value != "false" && !JsonNumber(f.value)) return false;
      f.bare = true;
    }
    out->push_back(std::move(f));
    if (i >= s.size()) return false;
    if (s[i] == '}') return i + 1 == s.size();
    if (s[i] != ' ') return false;
    ++i;
  }
}

}  // namespace

void LogFields::AddKey(std::string_view key) {
  if (!pairs_.empty()) pairs_.push_back(' ');
  if (key.empty()) key = "_";
  for (size_t i = 0; i < key.size(); ++i)
    pairs_.push_back((i == 0 ? KeyStart(key[i]) : KeyChar(key[i])) ? key[i] : '_');
  pairs_.push_back('=');
}

LogFields& LogFields::Add(std::string_view key, std::string_view value) {
  AddKey(key);
  AppendQuoted(&pairs_, value);
  return *this;
}

LogFields& LogFields::Add(std::string_view key, bool value) {
  AddBare(key, value ? "true" : "false");
  return *this;
}

void LogFields::AddBare(std::string_view key, std::string_view token) {
  AddKey(key);
  pairs_ += token;
}

void LogFields::AddNumber(std::string_view key, double value) {
  if (std::isnan(value)) {
    Add(key, "NaN");
  } else if (std::isinf(value)) {
    Add(key, value > 0 ? "+Inf" : "-Inf");
  } else {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
    AddBare(key, ec == std::errc() ? std::string_view(buf, end - buf) : std::string_view("0"));
  }
}

std::string LogFields::Encoded() const {
  if (pairs_.empty()) return std::string();
  return " {" + pairs_ + "}";
}

void SplitLogFields(std::string_view message, std::string_view* text,
                    std::vector<LogField>* fields) {
  *text = message;
  fields->clear();
  if (message.empty() || message.back() != '}') return;
  for (size_t at = message.find(" {"); at != std::string_view::npos;
       at = message.find(" {", at + 1)) {
    std::vector<LogField> parsed;
    if (ParseBlock(message.substr(at + 1), &parsed)) {
      *text = message.substr(0, at);
      *fields = std::move(parsed);
      return;
    }
  }
}

std::string ValidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  auto cont = [&s](size_t i) {
    return i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80;
  };
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = 0;  // length of a valid sequence starting here, 0 if none
    if (c < 0x80) {
      n = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = cont(i + 1) ? 2 : 0;
    } else if (c >= 0xE0 && c <= 0xEF) {
      const unsigned char c1 = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
      const bool second_ok = c == 0xE0   ? (c1 >= 0xA0 && c1 <= 0xBF)
                             : c == 0xED ? (c1 >= 0x80 && c1 <= 0x9F)  // no surrogates
                                         : cont(i + 1);
      n = second_ok && cont(i + 2) ? 3 : 0;
    } else if (c >= 0xF0 && c <= 0xF4) {
      const unsigned char c1 = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
      const bool second_ok = c == 0xF0   ? (c1 >= 0x90 && c1 <= 0xBF)
                             : c == 0xF4 ? (c1 >= 0x80 && c1 <= 0x8F)
                                         : cont(i + 1);
      n = second_ok && cont(i + 2) && cont(i + 3) ? 4 : 0;
    }
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace ds
