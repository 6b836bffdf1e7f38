// The head of an HTTP/1.x request (RFC 9112 §2-3 and §5-6, RFC 9110 §5, §7.2, §8.6, §10.1.1), as
// the controller's own web server reads it: a pure function of the bytes that have arrived so far
// on a connection, which the event loop (common/web_server.cc) calls again after each read until
// the head is complete or wrong. No I/O, clock or global state, so it is fuzzed
// (test/fuzz/fuzz_http_request_head.cc) and every rule below has a test.
//
// Strict on purpose: the clients are Prometheus, Alertmanager, kubelet probes, browsers, curl and
// kubectl, which all send well-formed heads; what they never send (folded lines, whitespace before
// a colon, two different Content-Lengths, Transfer-Encoding) is where request smuggling and parser
// confusion live, so it is refused rather than interpreted. Refused:
//   400  a request line other than `METHOD SP target SP HTTP/1.x`, single spaces, the method an
//        RFC 9110 token (case-sensitive, kept as sent); a target that is not origin-form ("/...")
//        or absolute-form (below): "*" (OPTIONS *) and authority-form (CONNECT host:port); a target
//        with a byte outside visible ASCII or a '#'; malformed or NUL/control percent-escapes in
//        the path; a CR not followed by LF anywhere; a NUL anywhere; a header line starting with SP
//        or HTAB (obs-fold), without a colon, with a name that is not a token or whitespace before
//        the colon; a control character other than HTAB in a value; Content-Length not all digits,
//        too large for long long, or with different values (repeated, or a list "42, 43"; the same
//        value repeated is accepted); Transfer-Encoding together with Content-Length (a smuggling
//        signal, RFC 9112 §6.1); an HTTP/1.1 request without a Host header, two Host headers or a
//        Host value with characters no host has (RFC 9112 §3.2); two Authorization headers (which
//        one would be checked?); a Connection element that is not a token.
//   414  no end of the request line within max_head_bytes.
//   431  no end of the head within max_head_bytes; more than 100 header fields.
//   501  Transfer-Encoding (the controller reads no request body but a small webhook JSON, which
//        every client sends with Content-Length).
//   505  any version but HTTP/1.0 and HTTP/1.1: HTTP/2 with prior knowledge (its preface starts
//        "PRI * HTTP/2.0"), HTTP/1.2, HTTP/3. (RFC 9110 §2.5 would let a server take 1.2 as 1.1;
//        no client sends it.)
// Accepted leniently, as RFC 9112 lets a recipient: bare LF line endings (§2.2), up to 8 empty
// lines before the request line (§2.2; they count in `length`; more → 400), unknown expectations in
// Expect (ignored, RFC 9110 §10.1.1), empty elements in comma lists.
//
// Absolute-form targets ("GET http://host:port/path?q HTTP/1.1", RFC 9112 §3.2.2; only proxies
// are required to send it, but a server must accept it): scheme http or https (any case), the path
// and query taken as from an origin-form target ("" path → "/"), `host` set from the authority
// (which then replaces the Host header's value, §3.2.2); userinfo ("user@host") is refused (400).
//
// Paths are percent-decoded once and nothing else: dot segments are not removed, "%2F" becomes '/',
// "//" stays, '+' stays '+'. Routes compare exact paths, so "/a/../metrics", "/metrics/" or
// "//metrics" match no route (404), which is the intent: no path reaches a handler by two spellings
// that a prefix check elsewhere might disagree on.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ds {

struct RequestHead {
  std::string method;     // "GET", as sent (case-sensitive, RFC 9110 token)
  std::string path;       // the target's path, percent-decoded ("/api/v1/state"); no '\0' nor other
                          // control character (an escape decoding to one is refused)
  std::string query;      // after the first '?', still percent-encoded; "" when absent
  int minor_version = 1;  // HTTP/1.<minor>, 0 or 1
  std::string authorization;      // the Authorization header's value, "" when absent
  long long content_length = -1;  // -1 when absent
  bool keep_alive = true;         // HTTP/1.1: unless "Connection: close"; HTTP/1.0: only with
                                  // "Connection: keep-alive" (and no "close")
  bool expect_continue = false;   // "Expect: 100-continue" in an HTTP/1.1 request (RFC 9110
                                  // §10.1.1: ignored in HTTP/1.0)
  std::string host;  // the Host header's value (the authority of an absolute-form target
                     // instead), "" when absent; for logs, not for routing

  bool operator==(const RequestHead&) const = default;
};

enum class HeadState { kIncomplete, kComplete, kError };

struct HeadParse {
  HeadState state = HeadState::kIncomplete;
  size_t length = 0;   // kComplete: bytes of the head including the final CRLFCRLF (or LF LF);
                       // the body, or the next pipelined request, starts here
  int status = 0;      // kError: the HTTP status to answer: 400, 414, 431, 501 or 505
  std::string error;   // kError: one line for the client and the log ("malformed request line:
                       // ..."); it quotes no header value, so never a credential
  RequestHead head;    // kComplete
  size_t scanned = 0;  // kIncomplete: where the next call on the same bytes with more appended may
                       // resume its search for the blank line (`resume` below); 0 otherwise

  bool operator==(const HeadParse&) const = default;
};

// Parses the head at the start of `data`: what has arrived so far on a connection.
//   kComplete  the head ends (blank line) within the first max_head_bytes bytes and is valid;
//              `length` <= max_head_bytes. What follows (a body, a pipelined request) is not looked
//              at: appending bytes to `data` never changes this result.
//   kIncomplete  no blank line yet, data.size() <= max_head_bytes, and nothing that has arrived is
//              wrong yet. Call again with more bytes.
//   kError     final: any longer `data` gives the same status and error. Answer `status` with
//              "Connection: close" and close the connection: where the next request would start is
//              unknown. An error can come before the blank line: the request line's method,
//              spaces and version are checked as soon as its LF has arrived (a wrong version or an
//              HTTP/2 preface is answered at once), and the first 64 bytes of the method before
//              that (so is a TLS handshake sent to this plain-HTTP port, not after the head
//              deadline). The target and the header lines are checked once the head is complete.
//              Once data.size() > max_head_bytes without a complete head: 414 when the request line
//              has not ended by then, else 431.
// `resume`: 0 (search the whole head), or the `scanned` of the previous call's kIncomplete result
// when `data` is that call's data with more bytes appended: the search for the blank line then
// starts there, so a head that arrives a byte at a time costs O(size) in all instead of O(size²)
// (16 KiB of "X: y\n" lines read one byte at a time: about 100 ms of CPU without it). Either way
// the result is the same.
// REQUIRES: resume is 0 or such a `scanned` (a larger one could make a complete head look
// incomplete).
// Cost of a call: O(min(data.size(), max_head_bytes + 1)), and until the blank line arrives only
// memchr-speed scans for line ends and spaces plus a check of the method and version; the whole
// head is checked once, when it is complete.
// Thread-safe (a pure function).
HeadParse ParseRequestHead(std::string_view data, size_t max_head_bytes = 16384, size_t resume = 0);

}  // namespace ds
