#include "test/sim/sim_proxy_rules.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string_view>

namespace sim {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// Go's path.Join: the non-empty elements joined by '/', cleaned; "" when all are empty.
std::string JoinPath(const std::string& a, const std::string& b) {
  if (a.empty() && b.empty()) return "";
  if (a.empty()) return CleanPath(b);
  if (b.empty()) return CleanPath(a);
  return CleanPath(a + "/" + b);
}

// RFC 7230 tchar, which CanonicalMIMEHeaderKey requires of every byte.
bool IsTokenChar(unsigned char c) {
  return std::isalnum(c) ||
         std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

// The comma-separated elements of header values, canonical (Connection's header names).
std::set<std::string> Tokens(const HeaderList& headers, const std::string& name) {
  std::set<std::string> out;
  for (const auto& [k, v] : headers) {
    if (CanonicalHeaderKey(k) != name) continue;
    for (size_t start = 0; start <= v.size();) {
      size_t comma = v.find(',', start);
      if (comma == std::string::npos) comma = v.size();
      if (std::string t = Trim(v.substr(start, comma - start)); !t.empty())
        out.insert(CanonicalHeaderKey(t));
      start = comma + 1;
    }
  }
  return out;
}

// Go's httputil hopHeaders.
bool IsHopHeader(const std::string& canonical) {
  static const std::set<std::string> kHop = {"Connection",
                                             "Proxy-Connection",
                                             "Keep-Alive",
                                             "Proxy-Authenticate",
                                             "Proxy-Authorization",
                                             "Te",
                                             "Trailer",
                                             "Transfer-Encoding",
                                             "Upgrade"};
  return kHop.count(canonical) > 0;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decodes a URL path; false on a malformed escape (Go's url.Parse fails then).
bool Unescape(const std::string& s, std::string* out) {
  out->clear();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      *out += s[i];
      continue;
    }
    if (i + 2 >= s.size() || HexValue(s[i + 1]) < 0 || HexValue(s[i + 2]) < 0) return false;
    *out += static_cast<char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2]));
    i += 2;
  }
  return true;
}

// transport.go atomsToAttrs: which attributes of which tags hold URLs.
const std::map<std::string, std::set<std::string>>& UrlAttributes() {
  static const std::map<std::string, std::set<std::string>> kAttrs = {
      {"a", {"href"}},
      {"applet", {"codebase"}},
      {"area", {"href"}},
      {"audio", {"src"}},
      {"base", {"href"}},
      {"blockquote", {"cite"}},
      {"body", {"background"}},
      {"button", {"formaction"}},
      {"command", {"icon"}},
      {"del", {"cite"}},
      {"embed", {"src"}},
      {"form", {"action"}},
      {"frame", {"longdesc", "src"}},
      {"head", {"profile"}},
      {"html", {"manifest"}},
      {"iframe", {"longdesc", "src"}},
      {"img", {"longdesc", "src", "usemap"}},
      {"input", {"src", "usemap", "formaction"}},
      {"ins", {"cite"}},
      {"link", {"href"}},
      {"object", {"classid", "codebase", "data", "usemap"}},
      {"q", {"cite"}},
      {"script", {"src"}},
      {"source", {"src"}},
      {"video", {"poster", "src"}}};
  return kAttrs;
}

// The tokenizer's raw text elements: their content is text up to their end tag.
bool IsRawTextTag(const std::string& name) {
  static const std::set<std::string> kRaw = {"iframe",    "noembed", "noframes", "noscript",
                                             "plaintext", "script",  "style",    "textarea",
                                             "title",     "xmp"};
  return kRaw.count(name) > 0;
}

void AppendUtf8(unsigned long cp, std::string* out) {
  if (cp == 0 || cp > 0x10FFFF) cp = 0xFFFD;
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// An attribute value's character references decoded: numeric ones and the few named ones URLs
// and markup use (html.UnescapeString knows all of HTML's; an unknown one stays as written).
std::string UnescapeAttribute(const std::string& v) {
  static const std::map<std::string, std::string> kNamed = {
      {"amp", "&"}, {"lt", "<"}, {"gt", ">"}, {"quot", "\""}, {"apos", "'"}, {"nbsp", "\xC2\xA0"}};
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != '&') {
      out += v[i];
      continue;
    }
    size_t j = i + 1;
    if (j < v.size() && v[j] == '#') {
      const bool hex = j + 1 < v.size() && (v[j + 1] == 'x' || v[j + 1] == 'X');
      size_t k = j + (hex ? 2 : 1);
      const size_t digits = k;
      while (k < v.size() && (hex ? std::isxdigit(static_cast<unsigned char>(v[k]))
                                  : std::isdigit(static_cast<unsigned char>(v[k]))))
        ++k;
      if (k > digits) {
        AppendUtf8(std::strtoul(v.substr(digits, k - digits).c_str(), nullptr, hex ? 16 : 10),
                   &out);
        i = k < v.size() && v[k] == ';' ? k : k - 1;
        continue;
      }
    } else {
      while (j < v.size() && std::isalnum(static_cast<unsigned char>(v[j]))) ++j;
      const auto named = kNamed.find(v.substr(i + 1, j - i - 1));
      // In an attribute, a reference without its ';' before '=' or a letter is not one.
      const bool terminated = j < v.size() && v[j] == ';';
      if (named != kNamed.end() && (terminated || j >= v.size() || v[j] != '=')) {
        out += named->second;
        i = terminated ? j : j - 1;
        continue;
      }
    }
    out += '&';
  }
  return out;
}

// x/net/html's escape: &'<>" and CR.
std::string EscapeAttribute(const std::string& v) {
  std::string out;
  for (char c : v) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '\'':
        out += "&#39;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\r':
        out += "&#13;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

bool IsHtmlSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'; }

}  // namespace

std::string CleanPath(const std::string& path) {
  if (path.empty()) return ".";
  const bool rooted = path[0] == '/';
  std::vector<std::string> out;
  for (size_t start = 0; start <= path.size();) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    const std::string seg = path.substr(start, slash - start);
    start = slash + 1;
    if (seg.empty() || seg == ".") continue;
    if (seg == "..") {
      if (!out.empty() && out.back() != "..")
        out.pop_back();
      else if (!rooted)
        out.push_back("..");
      continue;
    }
    out.push_back(seg);
  }
  std::string result = rooted ? "/" : "";
  for (size_t i = 0; i < out.size(); ++i) result += (i ? "/" : "") + out[i];
  return result.empty() ? "." : result;
}

std::string EscapePath(const std::string& path) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) ||
        std::string_view("-_.~$&+,/:;=@").find(static_cast<char>(c)) != std::string_view::npos) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string CanonicalHeaderKey(const std::string& name) {
  if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return IsTokenChar(c); }))
    return name;
  std::string out = name;
  bool upper = true;
  for (char& c : out) {
    c = static_cast<char>(upper ? std::toupper(static_cast<unsigned char>(c))
                                : std::tolower(static_cast<unsigned char>(c)));
    upper = c == '-';
  }
  return out;
}

ProxyPath ProxyPathFor(const std::string& method, const std::string& request_path,
                       const std::string& rest, const std::string& raw_query) {
  const bool trailing = EndsWith(request_path, "/");
  // getRequestOptions: the parts after "proxy" (the path's own trailing slashes trimmed), with a
  // leading '/' and the request's trailing '/'.
  std::string sub = rest;
  while (!sub.empty() && sub.back() == '/') sub.pop_back();
  if (!sub.empty() && sub[0] == '/') sub.erase(0, 1);
  if (!sub.empty() && sub[0] != '/') sub = "/" + sub;
  if (trailing && !EndsWith(sub, "/")) sub += "/";
  // JoinPreservingTrailingSlash("", sub).
  ProxyPath p;
  p.backend_path = JoinPath("", sub);
  if (EndsWith(sub, "/") && !EndsWith(p.backend_path, "/")) p.backend_path += "/";
  // defaultProxyTransport: the prepend is the request's path without the backend's part.
  std::string suffix = p.backend_path;
  if (trailing && !EndsWith(suffix, "/")) suffix += "/";
  p.prepend = EndsWith(request_path, suffix)
                  ? request_path.substr(0, request_path.size() - suffix.size())
                  : request_path;
  // ServeHTTP: the request's trailing '/', then the redirect of an empty path.
  if (trailing && !EndsWith(p.backend_path, "/")) p.backend_path += "/";
  if (p.backend_path.empty() && (method == "GET" || method == "HEAD"))
    p.redirect = request_path + "/" + (raw_query.empty() ? "" : "?" + raw_query);
  p.forwarded_uri = JoinPath(p.prepend, p.backend_path);
  if (EndsWith(p.backend_path, "/")) p.forwarded_uri += "/";
  return p;
}

HeaderList BackendRequestHeaders(const HeaderList& request, const std::string& client_ip,
                                 const std::string& forwarded_uri) {
  const std::set<std::string> named = Tokens(request, "Connection");
  std::string user_agent, forwarded_for;
  bool te_trailers = false;
  HeaderList kept;
  for (const auto& [raw, value] : request) {
    const std::string k = CanonicalHeaderKey(raw);
    if (k == "Te" && Lower(Trim(value)).find("trailers") != std::string::npos) te_trailers = true;
    if (IsHopHeader(k) || named.count(k) || k == "Host" || k == "Content-Length" ||
        k == "Authorization" || k == "X-Remote-User" || k == "X-Remote-Group" ||
        StartsWith(k, "X-Remote-Extra-") || k == "X-Forwarded-Uri")
      continue;
    if (k == "User-Agent") {
      if (user_agent.empty()) user_agent = value;
      continue;
    }
    if (k == "X-Forwarded-For") {
      forwarded_for += (forwarded_for.empty() ? "" : ", ") + value;
      continue;
    }
    kept.emplace_back(k, value);
  }
  if (te_trailers) kept.emplace_back("Te", "trailers");
  kept.emplace_back("X-Forwarded-For",
                    forwarded_for.empty() ? client_ip : forwarded_for + ", " + client_ip);
  kept.emplace_back("X-Forwarded-Uri", forwarded_uri);
  std::stable_sort(kept.begin(), kept.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  HeaderList out;
  if (!user_agent.empty()) out.emplace_back("User-Agent", user_agent);
  out.insert(out.end(), kept.begin(), kept.end());
  return out;
}

HeaderList ClientResponseHeaders(const HeaderList& backend, const std::string& backend_host,
                                 const std::string& request_host, const std::string& prepend) {
  const std::set<std::string> named = Tokens(backend, "Connection");
  HeaderList out;
  bool location_done = false;
  for (const auto& [raw, value] : backend) {
    const std::string k = CanonicalHeaderKey(raw);
    if (IsHopHeader(k) || named.count(k) || k == "Access-Control-Allow-Credentials" ||
        k == "Access-Control-Allow-Headers" || k == "Access-Control-Allow-Methods" ||
        k == "Access-Control-Allow-Origin")
      continue;
    if (k == "Location") {  // Header.Set: one value, the first one rewritten
      if (!location_done)
        out.emplace_back(k, RewriteLocation(value, backend_host, request_host, prepend));
      location_done = true;
      continue;
    }
    out.emplace_back(k, value);
  }
  return out;
}

std::string RewriteLocation(const std::string& location, const std::string& backend_host,
                            const std::string& request_host, const std::string& prepend) {
  // url.Parse, far enough for this: [scheme:][//authority]path[?query][#fragment].
  std::string rest = location, scheme_part, authority, host;
  bool has_authority = false;
  if (const size_t colon = rest.find(':');
      colon != std::string::npos && colon > 0 &&
      std::isalpha(static_cast<unsigned char>(rest[0])) &&
      std::all_of(rest.begin(), rest.begin() + static_cast<long>(colon), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
      })) {
    scheme_part = rest.substr(0, colon + 1);
    rest = rest.substr(colon + 1);
  }
  if (StartsWith(rest, "//")) {
    has_authority = true;
    const size_t end = rest.find_first_of("/?#", 2);
    authority = rest.substr(2, end == std::string::npos ? std::string::npos : end - 2);
    rest = end == std::string::npos ? "" : rest.substr(end);
    host = authority.substr(authority.find('@') == std::string::npos ? 0 : authority.find('@') + 1);
  }
  const size_t path_end = rest.find_first_of("?#");
  const std::string raw_path = rest.substr(0, path_end);
  const std::string tail = path_end == std::string::npos ? "" : rest.substr(path_end);
  std::string path;
  if (!Unescape(raw_path, &path)) return location;  // url.Parse fails: kept as it is
  const bool different_host = !host.empty() && host != backend_host && host != request_host;
  if (different_host || !StartsWith(path, "/")) return location;
  // The Transport's scheme and host are the incoming request URL's, empty on a server: the URL
  // loses its own unless its host is the request's.
  std::string front;
  if (has_authority && host == request_host) front = scheme_part + "//" + authority;
  if (StartsWith(path, prepend)) return front + raw_path + tail;
  std::string joined = JoinPath(prepend, path);
  if (EndsWith(path, "/")) joined += "/";
  return front + EscapePath(joined) + tail;
}

std::string RewriteHtml(const std::string& html, const std::string& backend_host,
                        const std::string& request_host, const std::string& prepend) {
  std::string out;
  out.reserve(html.size() + html.size() / 8);
  const size_t n = html.size();
  size_t i = 0;
  auto starts = [&](size_t at, const char* s) { return html.compare(at, std::strlen(s), s) == 0; };
  while (i < n) {
    const size_t lt = html.find('<', i);
    if (lt == std::string::npos || lt + 1 >= n) {  // text to the end
      out.append(html, i, std::string::npos);
      break;
    }
    out.append(html, i, lt - i);
    i = lt;
    const char next = html[i + 1];
    if (starts(i, "<!--")) {  // a comment, to "-->"
      const size_t end = html.find("-->", i + 4);
      const size_t stop = end == std::string::npos ? n : end + 3;
      out.append(html, i, stop - i);
      i = stop;
      continue;
    }
    if (next == '!' || next == '?' || next == '/') {  // doctype, bogus comment, end tag: to '>'
      const size_t end = html.find('>', i + 2);
      const size_t stop = end == std::string::npos ? n : end + 1;
      out.append(html, i, stop - i);
      i = stop;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(next))) {  // "<" as text
      out += '<';
      ++i;
      continue;
    }
    // A start tag: its name, then attributes (name, optional =value), to '>' or "/>".
    size_t p = i + 1;
    std::string name;
    while (p < n && !IsHtmlSpace(html[p]) && html[p] != '/' && html[p] != '>')
      name += static_cast<char>(std::tolower(static_cast<unsigned char>(html[p++])));
    HeaderList attrs;  // (key, unescaped value)
    bool self_closing = false, closed = false;
    while (p < n) {
      while (p < n && (IsHtmlSpace(html[p]) || (html[p] == '/' && p + 1 < n && html[p + 1] != '>')))
        ++p;
      if (p >= n) break;
      if (html[p] == '>') {
        closed = true;
        ++p;
        break;
      }
      if (html[p] == '/') {  // "/>"
        self_closing = closed = true;
        p += 2;
        break;
      }
      std::string key;
      key += static_cast<char>(std::tolower(static_cast<unsigned char>(html[p++])));  // may be '='
      while (p < n && !IsHtmlSpace(html[p]) && html[p] != '/' && html[p] != '=' && html[p] != '>')
        key += static_cast<char>(std::tolower(static_cast<unsigned char>(html[p++])));
      size_t q = p;
      while (q < n && IsHtmlSpace(html[q])) ++q;
      std::string value;
      if (q < n && html[q] == '=') {
        ++q;
        while (q < n && IsHtmlSpace(html[q])) ++q;
        if (q < n && (html[q] == '"' || html[q] == '\'')) {
          const char quote = html[q];
          const size_t end = html.find(quote, q + 1);
          value = html.substr(q + 1, end == std::string::npos ? std::string::npos : end - q - 1);
          q = end == std::string::npos ? n : end + 1;
        } else {
          const size_t start = q;
          while (q < n && !IsHtmlSpace(html[q]) && html[q] != '>') ++q;
          value = html.substr(start, q - start);
        }
        p = q;
      }
      attrs.emplace_back(key, UnescapeAttribute(value));
    }
    if (!closed) break;  // a tag cut off by the end: the tokenizer stops there, and so does this
    const auto urls = UrlAttributes().find(name);
    out += "<" + name;
    for (auto& [key, value] : attrs) {
      if (urls != UrlAttributes().end() && urls->second.count(key))
        value = RewriteLocation(value, backend_host, request_host, prepend);
      out += " " + key + "=\"" + EscapeAttribute(value) + "\"";
    }
    out += self_closing ? "/>" : ">";
    i = p;
    if (IsRawTextTag(name) && !self_closing) {  // its text, to its end tag, as it is
      size_t end = i;
      for (;; ++end) {
        end = html.find("</", end);
        if (end == std::string::npos) break;
        const size_t after = end + 2 + name.size();
        bool same = after <= n;
        for (size_t k = 0; same && k < name.size(); ++k)
          same = std::tolower(static_cast<unsigned char>(html[end + 2 + k])) == name[k];
        if (same &&
            (after == n || IsHtmlSpace(html[after]) || html[after] == '/' || html[after] == '>'))
          break;
      }
      const size_t stop = end == std::string::npos ? n : end;
      out.append(html, i, stop - i);
      i = stop;
    }
  }
  return out;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

}  // namespace sim
