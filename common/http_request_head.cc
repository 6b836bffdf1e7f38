#include "common/http_request_head.h"

#include <algorithm>
#include <array>
#include <climits>
#include <optional>

namespace ds {
namespace {

constexpr int kMaxHeaderFields = 100;
constexpr int kMaxLeadingEmptyLines = 8;
// Before its line has ended, only this many bytes of the method are checked: enough to answer a
// TLS handshake or binary garbage at once, while a call on a slowly arriving request line stays
// cheap. The whole method is checked once its line ends.
constexpr size_t kMethodPeek = 64;
constexpr size_t npos = std::string_view::npos;

constexpr const char* kBareCr = "CR not followed by LF in request head";
constexpr const char* kNul = "NUL byte in request head";
constexpr const char* kMalformedLine =
    "malformed request line (expected METHOD SP target SP HTTP/1.x)";

// tchar (RFC 9110 §5.6.2): "!#$%&'*+-.^_`|~", digits, letters.
constexpr std::array<bool, 256> kTchar = [] {
  std::array<bool, 256> t{};
  for (int c = '0'; c <= '9'; ++c) t[c] = true;
  for (int c = 'a'; c <= 'z'; ++c) t[c] = t[c - 'a' + 'A'] = true;
  for (char c : std::string_view("!#$%&'*+-.^_`|~")) t[static_cast<unsigned char>(c)] = true;
  return t;
}();

bool IsTchar(char c) { return kTchar[static_cast<unsigned char>(c)]; }
bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!IsTchar(c)) return false;
  return true;
}

// What a host (RFC 3986 reg-name, IP literal, port) can hold: unreserved, sub-delims, ':', '[',
// ']', and '%' of pct-encoded.
bool IsHostChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("-._~!$&'()*+,;=:[]%").find(c) != npos;
}

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
// REQUIRES: `lower` is lower case.
bool EqualsIgnoreCase(std::string_view s, std::string_view lower) {
  if (s.size() != lower.size()) return false;
  for (size_t i = 0; i < s.size(); ++i)
    if (Lower(s[i]) != lower[i]) return false;
  return true;
}
bool StartsWithIgnoreCase(std::string_view s, std::string_view lower) {
  return s.size() >= lower.size() && EqualsIgnoreCase(s.substr(0, lower.size()), lower);
}

// Optional whitespace (RFC 9110 §5.6.3): SP and HTAB.
std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Calls f(element) for each element of a comma-separated list, trimmed; empty elements are
// skipped (RFC 9110 §5.6.1). Stops at, and returns, the first false from f.
template <typename F>
bool ForEachListElement(std::string_view value, F f) {
  while (true) {
    size_t comma = value.find(',');
    std::string_view element = TrimOws(value.substr(0, comma));
    if (!element.empty() && !f(element)) return false;
    if (comma == npos) return true;
    value.remove_prefix(comma + 1);
  }
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

struct Fail {
  int status;
  const char* message;
};

HeadParse Error(const Fail& f) {
  HeadParse p;
  p.state = HeadState::kError;
  p.status = f.status;
  p.error = f.message;
  return p;
}

// Checks the method at the start of `text`. `complete`: `text` is a whole request line (without
// its line end); otherwise it is what has arrived of one, and a CR at its very end may yet be
// followed by LF. Sets *sp to the index of the SP after the method, npos when there is none in
// `text`. The early check on a partial line and the check of the whole line go through here, so
// both give the same error for the same bytes.
std::optional<Fail> ScanMethod(std::string_view text, bool complete, size_t* sp) {
  *sp = npos;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ') {
      if (i == 0) return Fail{400, "malformed request line: it starts with a space"};
      *sp = i;
      return std::nullopt;
    }
    if (IsTchar(c)) continue;
    if (c == '\r') {
      if (complete || i + 1 < text.size()) return Fail{400, kBareCr};
      return std::nullopt;  // Perhaps the line's CRLF.
    }
    if (c == '\0') return Fail{400, kNul};
    if (i == 0 && c == '\x16')
      return Fail{400, "not HTTP: a TLS handshake? This port speaks plain HTTP"};
    return Fail{400, "malformed request line: the method is not a token"};
  }
  return std::nullopt;
}

struct RequestLine {
  std::string_view method, target;
  int minor_version = 1;
};

// Checks the shape of a whole request line (without its CRLF or LF): method, single spaces,
// version. The target is checked later, with the rest of the head.
std::optional<Fail> CheckRequestLine(std::string_view line, RequestLine* out) {
  size_t sp1 = npos;
  if (auto f = ScanMethod(line, /*complete=*/true, &sp1)) return f;
  const size_t sp2 = sp1 == npos ? npos : line.find(' ', sp1 + 1);
  if (sp2 == npos) return Fail{400, kMalformedLine};  // HTTP/0.9's "GET /", or less
  if (sp2 == sp1 + 1) return Fail{400, "malformed request line: two spaces after the method"};
  const std::string_view version = line.substr(sp2 + 1);
  if (version.find(' ') != npos)
    return Fail{400, "malformed request line: a space after the target"};
  out->method = line.substr(0, sp1);
  out->target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  if (version == "HTTP/1.1") {
    out->minor_version = 1;
  } else if (version == "HTTP/1.0") {
    out->minor_version = 0;
  } else {
    // HTTP/2.0, HTTP/3, HTTP/1.2 ... are HTTP, of a version we do not speak; anything else is not
    // a version at all.
    std::string_view number = version.substr(version.starts_with("HTTP/") ? 5 : version.size());
    bool numeric = !number.empty() && number.front() >= '0' && number.front() <= '9';
    for (char c : number) numeric = numeric && ((c >= '0' && c <= '9') || c == '.');
    if (!numeric) return Fail{400, "malformed request line: bad HTTP version"};
    return Fail{505, "HTTP version not supported: this server speaks HTTP/1.0 and HTTP/1.1"};
  }
  return std::nullopt;
}

// Splits the target into the head's path (decoded), query and, for absolute-form, host.
std::optional<Fail> ParseTarget(std::string_view target, RequestHead* head) {
  for (char c : target) {
    if (c > ' ' && c < '\x7f' && c != '#') continue;
    if (c == '\r') return Fail{400, kBareCr};
    if (c == '\0') return Fail{400, kNul};
    if (c == '#') return Fail{400, "fragment ('#') in request target"};
    return Fail{400, "request target holds a byte that is not visible ASCII"};
  }
  if (target == "*") return Fail{400, "asterisk-form request target (*) is not supported"};
  if (target.front() != '/') {
    size_t scheme = StartsWithIgnoreCase(target, "http://")    ? 7
                    : StartsWithIgnoreCase(target, "https://") ? 8
                                                               : 0;
    if (scheme == 0) return Fail{400, "request target is not a path"};
    target.remove_prefix(scheme);
    const size_t authority_end = target.find_first_of("/?");
    const std::string_view authority = target.substr(0, authority_end);
    if (authority.empty()) return Fail{400, "absolute-form request target without a host"};
    if (authority.find('@') != npos) return Fail{400, "userinfo in request target"};
    for (char c : authority)
      if (!IsHostChar(c)) return Fail{400, "malformed host in request target"};
    head->host = std::string(authority);
    target.remove_prefix(authority.size());
  }
  const size_t question = target.find('?');
  if (question != npos) head->query = std::string(target.substr(question + 1));
  const std::string_view path = target.substr(0, question);
  if (path.empty()) head->path = "/";  // "http://host" or "http://host?q"
  head->path.reserve(path.size());
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] != '%') {
      head->path += path[i];
      continue;
    }
    const int hi = i + 2 < path.size() ? HexValue(path[i + 1]) : -1;
    const int lo = hi >= 0 ? HexValue(path[i + 2]) : -1;
    if (lo < 0) return Fail{400, "malformed percent-encoding in path"};
    const char c = static_cast<char>(hi * 16 + lo);
    if (c == '\0') return Fail{400, "percent-encoded NUL in path"};
    if (static_cast<unsigned char>(c) < 0x20 || c == '\x7f')
      return Fail{400, "percent-encoded control character in path"};
    head->path += c;
    i += 2;
  }
  return std::nullopt;
}

// Digits only, or a list of the same digits ("42, 42", RFC 9110 §8.6); *content_length is -1
// before the first Content-Length line and must agree with every later one. Unlike other lists, an
// empty element ("42,") is refused: a recipient that reads the value as one number would disagree.
std::optional<Fail> ParseContentLength(std::string_view value, long long* content_length) {
  while (true) {
    const size_t comma = value.find(',');
    const std::string_view element = TrimOws(value.substr(0, comma));
    if (element.empty()) return Fail{400, "malformed Content-Length"};
    long long n = 0;
    for (char c : element) {
      if (c < '0' || c > '9') return Fail{400, "malformed Content-Length"};
      if (n > (LLONG_MAX - (c - '0')) / 10) return Fail{400, "Content-Length too large"};
      n = n * 10 + (c - '0');
    }
    if (*content_length >= 0 && *content_length != n)
      return Fail{400, "conflicting Content-Length values"};
    *content_length = n;
    if (comma == npos) return std::nullopt;
    value.remove_prefix(comma + 1);
  }
}

// The header lines of a head whose request line has passed CheckRequestLine: `head_text` is the
// whole head up to its blank line included, `pos` the start of the first header line.
HeadParse ParseFields(std::string_view head_text, size_t pos, const RequestLine& line) {
  HeadParse p;
  RequestHead& h = p.head;
  h.method = std::string(line.method);
  h.minor_version = line.minor_version;
  if (auto f = ParseTarget(line.target, &h)) return Error(*f);
  const bool absolute_form = !h.host.empty();

  int fields = 0, hosts = 0;
  bool authorization = false, transfer_encoding = false, close = false, keep_alive = false;
  while (true) {
    const size_t lf = head_text.find('\n', pos);  // The blank line ends head_text.
    std::string_view field = head_text.substr(pos, lf - pos);
    pos = lf + 1;
    if (!field.empty() && field.back() == '\r') field.remove_suffix(1);
    if (field.empty()) break;
    if (++fields > kMaxHeaderFields) return Error({431, "more than 100 header fields"});
    if (field.front() == ' ' || field.front() == '\t')
      return Error({400, "header line starts with whitespace (obs-fold)"});
    size_t colon = 0;
    while (colon < field.size() && IsTchar(field[colon])) ++colon;
    if (colon == field.size() || field[colon] != ':') {
      const char c = colon < field.size() ? field[colon] : ':';
      if (c == '\r') return Error({400, kBareCr});
      if (c == '\0') return Error({400, kNul});
      if (field.find(':', colon) == npos) return Error({400, "header line without a colon"});
      if (c == ' ' || c == '\t') return Error({400, "whitespace between header name and colon"});
      return Error({400, "header name is not a token"});
    }
    if (colon == 0) return Error({400, "empty header name"});
    const std::string_view name = field.substr(0, colon);
    const std::string_view value = TrimOws(field.substr(colon + 1));
    for (char c : value) {
      if (c == '\r') return Error({400, kBareCr});
      if (c == '\0') return Error({400, kNul});
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == '\x7f')
        return Error({400, "control character in header value"});
    }

    if (EqualsIgnoreCase(name, "content-length")) {
      if (auto f = ParseContentLength(value, &h.content_length)) return Error(*f);
    } else if (EqualsIgnoreCase(name, "transfer-encoding")) {
      transfer_encoding = true;
    } else if (EqualsIgnoreCase(name, "connection")) {
      if (!ForEachListElement(value, [&](std::string_view option) {
            if (!IsToken(option)) return false;
            close = close || EqualsIgnoreCase(option, "close");
            keep_alive = keep_alive || EqualsIgnoreCase(option, "keep-alive");
            return true;
          }))
        return Error({400, "malformed Connection header"});
    } else if (EqualsIgnoreCase(name, "expect")) {
      ForEachListElement(value, [&](std::string_view expectation) {
        h.expect_continue = h.expect_continue || EqualsIgnoreCase(expectation, "100-continue");
        return true;
      });
    } else if (EqualsIgnoreCase(name, "authorization")) {
      if (authorization) return Error({400, "more than one Authorization header"});
      authorization = true;
      h.authorization = std::string(value);
    } else if (EqualsIgnoreCase(name, "host")) {
      if (++hosts > 1) return Error({400, "more than one Host header"});
      for (char c : value)
        if (!IsHostChar(c)) return Error({400, "malformed Host header"});
      if (!absolute_form) h.host = std::string(value);
    }
  }
  if (transfer_encoding) {
    if (h.content_length >= 0)
      return Error({400, "Transfer-Encoding together with Content-Length"});
    return Error({501, "Transfer-Encoding is not supported; send Content-Length"});
  }
  if (h.minor_version == 1 && hosts == 0)
    return Error({400, "missing Host header (HTTP/1.1 requires one)"});
  h.keep_alive = !close && (h.minor_version == 1 || keep_alive);
  h.expect_continue = h.expect_continue && h.minor_version == 1;
  p.state = HeadState::kComplete;
  p.length = head_text.size();
  return p;
}

// The end of the head: the index after the first empty line (LF LF or LF CR LF) that starts at an
// LF at or after `from`; npos when there is none yet.
size_t FindHeadEnd(std::string_view data, size_t from) {
  for (size_t i = data.find('\n', from); i != npos; i = data.find('\n', i + 1)) {
    if (i + 1 < data.size() && data[i + 1] == '\n') return i + 2;
    if (i + 2 < data.size() && data[i + 1] == '\r' && data[i + 2] == '\n') return i + 3;
  }
  return npos;
}

}  // namespace

HeadParse ParseRequestHead(std::string_view data, size_t max_head_bytes, size_t resume) {
  // Every verdict is a function of the first max_head_bytes + 1 bytes only: that is what makes
  // an error final (a longer `data` cannot change it) and bounds the cost of a call.
  const bool too_long = data.size() > max_head_bytes;
  if (too_long) data = data.substr(0, max_head_bytes + 1);

  // Empty lines before the request line (RFC 9112 §2.2), a few: a client that sends more is
  // broken, and each call would skip them again.
  size_t start = 0;
  for (int empty_lines = 0; start < data.size();) {
    if (data[start] == '\n') {
      ++start;
    } else if (data[start] == '\r' && start + 1 < data.size()) {
      if (data[start + 1] != '\n') return Error({400, kBareCr});
      start += 2;
    } else {
      break;
    }
    if (++empty_lines > kMaxLeadingEmptyLines)
      return Error({400, "more than 8 empty lines before the request line"});
  }
  if (start == data.size() || data.substr(start) == "\r")
    return too_long ? Error({431, "request head too large"}) : HeadParse{};

  const size_t line_end = data.find('\n', start);
  if (line_end == npos) {
    size_t sp;
    if (auto f = ScanMethod(data.substr(start, kMethodPeek), /*complete=*/false, &sp))
      return Error(*f);
    return too_long ? Error({414, "request line too long"}) : HeadParse{};
  }
  std::string_view line = data.substr(start, line_end - start);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  RequestLine request_line;
  if (auto f = CheckRequestLine(line, &request_line)) return Error(*f);

  // The search for the blank line resumes where the caller's previous call left it; once found,
  // it is searched for again from the start (once per head), so that a wrong `resume` cannot
  // make a head end anywhere but at its first blank line.
  size_t head_end = FindHeadEnd(data, std::max(line_end, std::min(resume, data.size())));
  if (head_end != npos && resume > line_end) head_end = FindHeadEnd(data, line_end);
  if (head_end == npos || head_end > max_head_bytes) {
    if (too_long) return Error({431, "request head too large"});
    HeadParse incomplete;
    // An LF in the last two bytes may yet start the blank line ("\n" + "\r\n").
    incomplete.scanned = std::max(line_end, data.size() - std::min<size_t>(2, data.size()));
    return incomplete;
  }
  return ParseFields(data.substr(0, head_end), line_end + 1, request_line);
}

}  // namespace ds
