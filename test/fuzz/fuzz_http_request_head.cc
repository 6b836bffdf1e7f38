// libFuzzer target: the request-head parser of the web server's event loop, which reads whatever
// anyone on the network sends. For every input, under the default limit and under a small one
// taken from the input (to reach the 414 and 431 paths):
//   - a complete head has 0 < length <= min(size, limit), ends with LF, and parses the same from a
//     copy of just its bytes and from a copy with other bytes after it (the body or the next
//     request is never looked at); its path starts with '/' and holds no control character;
//   - an error is final: the same status and message with more bytes after it; its status is one
//     of 400, 414, 431, 501, 505 and its message one non-empty line;
//   - incomplete only while size <= limit;
//   - every prefix of the input is incomplete or gives the input's own result (the loop, which
//     calls again after every read, sees no verdict it would have to take back), and the same
//     whether its search resumes from the previous prefix's `scanned` or starts over.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/http_request_head.h"

namespace {

constexpr size_t npos = std::string_view::npos;

void Require(bool ok) {
  if (!ok) std::abort();
}

void Check(std::string_view data, size_t limit) {
  using ds::HeadState;
  const ds::HeadParse p = ds::ParseRequestHead(data, limit);
  // What follows a complete head, or an error: another request, and bytes of the input.
  const std::string more = "GET / HTTP/1.1\r\nHost: h\r\n\r\n" + std::string(data.substr(0, 64));
  switch (p.state) {
    case HeadState::kIncomplete:
      Require(data.size() <= limit && p.length == 0 && p.status == 0 && p.error.empty());
      break;
    case HeadState::kComplete: {
      Require(p.length > 0 && p.length <= data.size() && p.length <= limit);
      Require(data[p.length - 1] == '\n' && p.status == 0 && p.error.empty());
      const ds::RequestHead& h = p.head;
      Require(!h.method.empty() && !h.path.empty() && h.path.front() == '/');
      for (char c : h.path) Require(static_cast<unsigned char>(c) >= 0x20 && c != '\x7f');
      Require(h.minor_version == 0 || h.minor_version == 1);
      Require(h.content_length >= -1);
      Require(h.minor_version == 1 || !h.expect_continue);
      const std::string exact(data.substr(0, p.length));
      Require(ds::ParseRequestHead(exact, limit) == p);
      Require(ds::ParseRequestHead(exact + more, limit) == p);
      break;
    }
    case HeadState::kError:
      Require(p.status == 400 || p.status == 414 || p.status == 431 || p.status == 501 ||
              p.status == 505);
      Require(!p.error.empty() && p.error.find('\n') == std::string::npos && p.length == 0);
      Require(ds::ParseRequestHead(std::string(data) + more, limit) == p);
      break;
  }
  // Prefixes, as the loop sees them arrive (all of them for small inputs, 64 spread over the input
  // otherwise), each parsed from the start and resumed where the previous one left off.
  const size_t step = data.size() <= 512 ? 1 : data.size() / 64;
  size_t resume = 0;
  for (size_t n = 0; n <= data.size(); n += step) {
    const ds::HeadParse q = ds::ParseRequestHead(data.substr(0, n), limit);
    Require(q.state == HeadState::kIncomplete || q == p);
    Require(q.state == HeadState::kIncomplete ? q.scanned <= n : q.scanned == 0);
    if (resume != npos) {
      const ds::HeadParse r = ds::ParseRequestHead(data.substr(0, n), limit, resume);
      Require(r == q);
      resume = r.state == HeadState::kIncomplete ? r.scanned : npos;
    }
  }
  Require(ds::ParseRequestHead(data, limit, resume == npos ? 0 : resume) == p);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Check(text, 16384);
  if (size > 0) Check(text.substr(1), data[0] % 96);  // the first byte picks a small limit
  return 0;
}
