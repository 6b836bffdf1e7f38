#include "test/sim/sim_backend_conn.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "test/sim/sim_proxy_rules.h"

namespace sim {
namespace {

constexpr int kDialTimeoutMs = 30000;       // net.Dialer{Timeout: 30 * time.Second}
constexpr int kHandshakeTimeoutS = 10;      // TLSHandshakeTimeout
constexpr int kResponseTimeoutS = 600;      // none in Go; the simulator's request timeout
constexpr size_t kMaxHeadBytes = 1u << 20;  // Go's MaxResponseHeaderBytes default

// Go's syscall.Errno texts are glibc's with a lower-case first letter.
std::string ErrnoText(int err) {
  std::string s = std::strerror(err);
  if (!s.empty()) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

void SetTimeout(int fd, int seconds) {
  timeval tv{seconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

// Go's %q of a status line, far enough for the error text.
std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace

BackendConnection::~BackendConnection() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  if (ctx_ != nullptr) SSL_CTX_free(ctx_);
  if (fd_ >= 0) close(fd_);
}

bool BackendConnection::Connect(const std::string& ip, int port, bool tls, std::string* error) {
  sockaddr_storage addr{};
  socklen_t len = 0;
  const bool v6 = ip.find(':') != std::string::npos;
  peer_ = (v6 ? "[" + ip + "]" : ip) + ":" + std::to_string(port);
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET6, ip.c_str(), &a->sin6_addr) != 1) {
      *error = "dial tcp " + peer_ + ": invalid IP address";
      return false;
    }
    len = sizeof(sockaddr_in6);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&addr);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET, ip.c_str(), &a->sin_addr) != 1) {
      *error = "dial tcp " + peer_ + ": invalid IP address";
      return false;
    }
    len = sizeof(sockaddr_in);
  }
  fd_ = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) {
    *error = "dial tcp " + peer_ + ": socket: " + ErrnoText(errno);
    return false;
  }
  if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    if (errno != EINPROGRESS) {
      *error = "dial tcp " + peer_ + ": connect: " + ErrnoText(errno);
      return false;
    }
    pollfd p{fd_, POLLOUT, 0};
    const int n = poll(&p, 1, kDialTimeoutMs);
    if (n == 0) {
      *error = "dial tcp " + peer_ + ": i/o timeout";
      return false;
    }
    int err = 0;
    socklen_t err_len = sizeof(err);
    getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &err_len);
    if (n < 0 || err != 0) {
      *error = "dial tcp " + peer_ + ": connect: " + ErrnoText(n < 0 ? errno : err);
      return false;
    }
  }
  fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  const int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // as Go's net package sets
  if (!tls) {
    SetTimeout(fd_, kResponseTimeoutS);
    return true;
  }
  SetTimeout(fd_, kHandshakeTimeoutS);
  ctx_ = SSL_CTX_new(TLS_client_method());
  if (ctx_ == nullptr) {
    *error = "tls: cannot create a TLS context";
    return false;
  }
  SSL_CTX_set_verify(ctx_, SSL_VERIFY_NONE, nullptr);   // InsecureSkipVerify
  SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);  // Go's client minimum
  ssl_ = SSL_new(ctx_);
  SSL_set_fd(ssl_, fd_);
  ERR_clear_error();
  if (const int rc = SSL_connect(ssl_); rc != 1) {
    const int kind = SSL_get_error(ssl_, rc);
    const unsigned long e = ERR_peek_error();
    if (kind == SSL_ERROR_SYSCALL && e == 0) {
      *error = errno == EAGAIN || errno == EWOULDBLOCK ? "net/http: TLS handshake timeout" : "EOF";
    } else if (ERR_GET_REASON(e) == SSL_R_WRONG_VERSION_NUMBER ||
               ERR_GET_REASON(e) == SSL_R_PACKET_LENGTH_TOO_LONG ||
               ERR_GET_REASON(e) == SSL_R_HTTP_REQUEST) {
      // A plain-HTTP backend answered the handshake with an HTTP response.
      *error = "tls: first record does not look like a TLS handshake";
    } else {
      const char* reason = ERR_reason_error_string(e);
      *error = std::string("tls: ") + (reason != nullptr ? reason : "handshake failure");
    }
    ERR_clear_error();
    return false;
  }
  SetTimeout(fd_, kResponseTimeoutS);
  return true;
}

bool BackendConnection::Send(const std::string& bytes, std::string* error) {
  size_t done = 0;
  while (done < bytes.size()) {
    long n;
    if (ssl_ != nullptr) {
      n = SSL_write(ssl_, bytes.data() + done, static_cast<int>(bytes.size() - done));
      if (n <= 0) {
        ERR_clear_error();
        *error = "write tcp " + peer_ + ": broken pipe";
        return false;
      }
    } else {
      n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        *error = "write tcp " + peer_ + ": " + ErrnoText(errno);
        return false;
      }
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

long BackendConnection::Read(char* buf, size_t n, std::string* error) {
  if (buffered_.empty()) return ReadSocket(buf, n, error);
  const size_t take = std::min(n, buffered_.size());
  std::memcpy(buf, buffered_.data(), take);
  buffered_.erase(0, take);
  return static_cast<long>(take);
}

long BackendConnection::ReadSocket(char* buf, size_t n, std::string* error) {
  for (;;) {
    if (ssl_ != nullptr) {
      const int r = SSL_read(ssl_, buf, static_cast<int>(n));
      if (r > 0) return r;
      const int kind = SSL_get_error(ssl_, r);
      ERR_clear_error();
      if (kind == SSL_ERROR_ZERO_RETURN || (kind == SSL_ERROR_SYSCALL && errno == 0)) return 0;
      *error = errno == EAGAIN || errno == EWOULDBLOCK ? "read tcp " + peer_ + ": i/o timeout"
                                                       : "read tcp " + peer_ + ": tls read error";
      return -1;
    }
    const long r = ::recv(fd_, buf, n, 0);
    if (r >= 0) return r;
    if (errno == EINTR) continue;
    *error =
        "read tcp " + peer_ + ": " +
        (errno == EAGAIN || errno == EWOULDBLOCK ? std::string("i/o timeout") : ErrnoText(errno));
    return -1;
  }
}

bool BackendConnection::ReadLine(std::string* line, std::string* error) {
  line->clear();
  char buf[4096];
  for (;;) {
    if (const size_t nl = buffered_.find('\n'); nl != std::string::npos) {
      *line = buffered_.substr(0, nl);
      buffered_.erase(0, nl + 1);
      if (!line->empty() && line->back() == '\r') line->pop_back();
      return true;
    }
    if (buffered_.size() > kMaxHeadBytes) {
      *error = "net/http: server response headers exceeded 1048576 bytes; aborted";
      return false;
    }
    const long n = ReadSocket(buf, sizeof buf, error);
    if (n < 0) return false;
    if (n == 0) {
      if (error->empty()) *error = buffered_.empty() ? "EOF" : "unexpected EOF";
      return false;
    }
    buffered_.append(buf, static_cast<size_t>(n));
  }
}

bool BackendConnection::ReadHead(bool head_request, BackendResponseHead* head, std::string* error) {
  do {  // interim answers (100 Continue, 103 Early Hints) come before the final one
    if (!ReadOneHead(head, error)) return false;
  } while (head->status / 100 == 1 && head->status != 101);
  head->framing = BackendResponseHead::Framing::kUntilClose;
  if (head_request || head->status / 100 == 1 || head->status == 204 || head->status == 304) {
    head->framing = BackendResponseHead::Framing::kNone;
    return true;
  }
  for (const auto& [k, v] : head->headers) {
    const std::string name = Lower(k);
    if (name == "transfer-encoding" && Lower(v).find("chunked") != std::string::npos) {
      head->framing = BackendResponseHead::Framing::kChunked;
      return true;
    }
  }
  for (const auto& [k, v] : head->headers)
    if (Lower(k) == "content-length") {
      char* end = nullptr;
      head->length = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || head->length < 0) {
        *error = "bad Content-Length " + Quoted(v);
        return false;
      }
      head->framing = BackendResponseHead::Framing::kLength;
      return true;
    }
  return true;
}

bool BackendConnection::ReadOneHead(BackendResponseHead* head, std::string* error) {
  std::string line;
  if (!ReadLine(&line, error)) return false;
  // "HTTP/1.1 200 OK" (Go's ReadResponse: the proto, a space, three digits).
  const size_t sp = line.find(' ');
  if (sp == std::string::npos || line.compare(0, 5, "HTTP/") != 0) {
    *error = "malformed HTTP response " + Quoted(line);
    return false;
  }
  const std::string code = line.substr(sp + 1, 3);
  if (code.size() != 3 || !std::isdigit(static_cast<unsigned char>(code[0])) ||
      !std::isdigit(static_cast<unsigned char>(code[1])) ||
      !std::isdigit(static_cast<unsigned char>(code[2]))) {
    *error = "malformed HTTP status code " + Quoted(code);
    return false;
  }
  head->status = std::stoi(code);
  head->headers.clear();
  for (;;) {
    if (!ReadLine(&line, error)) return false;
    if (line.empty()) return true;
    const size_t colon = line.find(':');
    if (colon == std::string::npos || colon == 0) {
      *error = "malformed MIME header line: " + line;
      return false;
    }
    head->headers.emplace_back(line.substr(0, colon), Trim(line.substr(colon + 1)));
  }
}

bool BackendConnection::ReadBody(const BackendResponseHead& head,
                                 const std::function<bool(const char*, size_t)>& sink,
                                 std::string* error) {
  std::string buf(16384, '\0');
  using Framing = BackendResponseHead::Framing;
  if (head.framing == Framing::kNone) return true;
  if (head.framing == Framing::kLength || head.framing == Framing::kUntilClose) {
    long long left = head.length;
    while (head.framing == Framing::kUntilClose || left > 0) {
      const size_t want = head.framing == Framing::kLength
                              ? static_cast<size_t>(std::min<long long>(left, buf.size()))
                              : buf.size();
      const long n = Read(buf.data(), want, error);
      if (n < 0) return false;
      if (n == 0) {
        if (head.framing == Framing::kUntilClose) return true;
        *error = "unexpected EOF";
        return false;
      }
      left -= n;
      if (!sink(buf.data(), static_cast<size_t>(n))) return true;
    }
    return true;
  }
  // Chunked: "size[;ext]" CRLF data CRLF ... "0" CRLF [trailers] CRLF.
  for (;;) {
    std::string line;
    if (!ReadLine(&line, error)) return false;
    char* end = nullptr;
    const long long size = std::strtoll(line.c_str(), &end, 16);
    if (end == line.c_str() || size < 0) {
      *error = "malformed chunked encoding";
      return false;
    }
    if (size == 0) {
      do {  // trailers, dropped (Go's ReverseProxy passes announced ones on; none are here)
        if (!ReadLine(&line, error)) return false;
      } while (!line.empty());
      return true;
    }
    long long left = size;
    while (left > 0) {
      const long n =
          Read(buf.data(), static_cast<size_t>(std::min<long long>(left, buf.size())), error);
      if (n <= 0) {
        if (n == 0) *error = "unexpected EOF";
        return false;
      }
      left -= n;
      if (!sink(buf.data(), static_cast<size_t>(n))) return true;
    }
    if (!ReadLine(&line, error)) return false;  // the CRLF after the data
  }
}

}  // namespace sim
