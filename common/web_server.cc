#include "common/web_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <glog/logging.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <thread>
#include <unordered_map>

#include "common/http_request_head.h"
#include "common/mutex.h"

namespace ds {

StatusOr<ListenAddress> ParseListenAddress(const std::string& addr) {
  auto colon = addr.rfind(':');
  if (colon == std::string::npos)
    return Status::InvalidArgument("\"" + addr + "\": expected [host]:port, e.g. :9000");
  std::string host = addr.substr(0, colon), port = addr.substr(colon + 1);
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) > 65535)
    return Status::InvalidArgument("\"" + addr + "\": port must be a number 0-65535");
  ListenAddress out;
  out.port = std::stoi(port);
  if (host.empty()) return out;
  if (host.front() == '[') {
    in6_addr a6;
    if (host.back() != ']' || host.size() < 3 ||
        inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &a6) != 1)
      return Status::InvalidArgument("\"" + addr + "\": expected [IPv6 address]:port");
    out.host = host.substr(1, host.size() - 2);
    out.ipv6 = true;
    return out;
  }
  if (host == "localhost") host = "127.0.0.1";
  in_addr a4;
  if (inet_pton(AF_INET, host.c_str(), &a4) != 1)
    return Status::InvalidArgument("\"" + addr + "\": host must be an IP address");
  out.host = host;
  return out;
}

namespace {

using Seconds = double;
Seconds Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

const char* ReasonPhrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 301:
      return "Moved Permanently";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 413:
      return "Content Too Large";
    case 414:
      return "URI Too Long";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return status < 400 ? "OK" : status < 500 ? "Client Error" : "Server Error";
  }
}

// The bytes of an answer: status line, headers, body (none for HEAD).
std::string Serialize(const WebResponse& r, bool head_only, bool keep_alive, int minor_version) {
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + ReasonPhrase(r.status) +
                    "\r\nContent-Type: " + r.content_type +
                    "\r\nContent-Length: " + std::to_string(r.body.size()) + "\r\n";
  for (const auto& h : r.headers) out += h + "\r\n";
  if (!keep_alive)
    out += "Connection: close\r\n";
  else if (minor_version == 0)
    out += "Connection: keep-alive\r\n";
  out += "\r\n";
  if (!head_only) out += r.body;
  return out;
}

std::string PlainAnswer(int status, const std::string& text, const char* extra = nullptr) {
  WebResponse r;
  r.status = status;
  r.body = text + "\n";
  if (extra != nullptr) r.headers.push_back(extra);
  return Serialize(r, false, false, 1);
}

std::string AddressOf(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(ss).sin_addr, buf, sizeof(buf));
  } else if (ss.ss_family == AF_INET6) {
    // IPv6 listeners are IPV6_V6ONLY (Start): no IPv4-mapped clients to tell apart.
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr, buf, sizeof(buf));
  }
  return buf;
}

std::string SslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown TLS error" : out;
}

// The certificate and key, loaded into a server context; reloaded when either file changes (a
// rotated Secret is a new file behind the same path).
class TlsFiles {
 public:
  TlsFiles(std::string cert, std::string key) : cert_(std::move(cert)), key_(std::move(key)) {}
  ~TlsFiles() {
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
  }
  bool enabled() const { return !cert_.empty(); }
  SSL_CTX* ctx() const { return ctx_; }

  // Loads the files if they changed since the last load. The first load's failure is the
  // caller's error; a later one is logged and the running context kept.
  Status Refresh() {
    const std::string stamp = Stamp(cert_) + "|" + Stamp(key_);
    if (ctx_ != nullptr && stamp == stamp_) return Status::OK();
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == nullptr) return Status::Internal("TLS: " + SslErrors());
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, key_.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
      std::string err = SslErrors();
      SSL_CTX_free(ctx);
      stamp_ = stamp;  // do not retry the same broken files every few seconds
      Status st = Status::InvalidArgument("-web_tls_cert_file " + cert_ + " / -web_tls_key_file " +
                                          key_ + ": " + err);
      if (ctx_ != nullptr)
        LOG(WARNING) << st.message() << " (still serving the certificate loaded before)";
      return st;
    }
    if (ctx_ != nullptr) {
      LOG(INFO) << "http: TLS certificate " << cert_ << " reloaded";
      SSL_CTX_free(ctx_);
    }
    ctx_ = ctx;
    stamp_ = stamp;
    return Status::OK();
  }

 private:
  static std::string Stamp(const std::string& path) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return "missing";
    return std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
           std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
  }
  const std::string cert_, key_;
  SSL_CTX* ctx_ = nullptr;
  std::string stamp_;
};

constexpr size_t kMaxHeadBytes = 16384;
// After an answer that closes the connection, what the client still sends is read and dropped for
// this long before the close: closing with unread bytes makes the kernel send a reset, which can
// destroy the answer before the client reads it (a 413 to a client still sending its body).
constexpr double kLingerSeconds = 2;
constexpr Seconds kSweepSeconds = 0.1;  // deadlines are checked this often
// A buffer grown for one large request is given back after it, not kept while the connection
// idles (a 1 MiB body would otherwise stay 1 MiB for the whole keep-alive).
constexpr size_t kKeepCapacity = 64 * 1024;

}  // namespace

// What the listener counts; owned by WebServer, so stats() never touches a loop being stopped.
struct WebServer::Counters {
  std::atomic<long long> open{0}, accepted{0}, refused{0}, evicted{0}, busy{0}, timed_out{0},
      bad{0}, tls_failed{0};
};

struct WebServer::Loop {
  enum class Phase { kHead, kBody, kHandling, kWriting, kLingering };
  struct Conn {
    int fd = -1;
    uint32_t gen = 0;
    std::string client;
    SSL* ssl = nullptr;
    bool tls_wants_write = false;  // a TLS read needs the socket writable first
    bool tls_broken = false;       // a fatal TLS error: no close_notify may be sent
    Phase phase = Phase::kHead;
    bool idle = true;  // kHead with nothing of the next request yet (keep-alive's wait)
    Seconds deadline = 0;
    Seconds since = 0;  // when the current request (or the connection) began: the eviction order
    std::string in;
    std::string out;
    size_t out_off = 0;
    bool close_after_write = false;
    bool peer_closed = false;  // the client shut its side: answer what it sent, then close
    int answered = 0;
    size_t reserved = 0;  // of the body budget, for the body arriving now
    HeadParse head;
    // Cleared when the connection closes: a queued request of a closed connection is not run.
    std::shared_ptr<std::atomic<bool>> alive = std::make_shared<std::atomic<bool>>(true);
  };
  struct Job {
    int fd;
    uint32_t gen;
    std::shared_ptr<std::atomic<bool>> alive;
    WebRequest req;
    bool head_only;
    bool keep_alive;
    int minor_version;
    size_t reserved;
  };
  struct Done {
    int fd;
    uint32_t gen;
    std::string client;
    std::string bytes;
    bool keep_alive;
    size_t reserved;
    bool skipped;  // the connection had closed: nothing was run
  };

  WebServerOptions opt;
  Handler handler;
  Counters* const count;
  TlsFiles tls;
  int listen_fd = -1, epoll_fd = -1, wake_fd = -1;
  bool accepting = true;
  Seconds accept_paused_until = 0;
  std::unordered_map<int, std::unique_ptr<Conn>> conns;
  std::unordered_map<std::string, int> per_client;  // open connections
  std::unordered_map<std::string, int> in_flight;   // requests queued or running
  size_t body_budget_used = 0;                      // request bodies held, in bytes
  uint32_t next_gen = 1;
  std::thread loop_thread;
  std::vector<std::thread> workers;
  std::atomic<bool> stopping{false};

  Mutex mu;
  CondVar work_cv;
  std::deque<Job> jobs GUARDED_BY(mu);
  std::deque<Done> done GUARDED_BY(mu);
  size_t handling GUARDED_BY(mu) = 0;  // jobs queued or running

  Loop(WebServerOptions o, Handler h, Counters* c)
      : opt(std::move(o)),
        handler(std::move(h)),
        count(c),
        tls(opt.tls_cert_file, opt.tls_key_file) {}

  ~Loop() {
    for (auto& [fd, c] : conns) {
      if (c->ssl != nullptr) SSL_free(c->ssl);
      close(fd);
    }
    count->open = 0;
    if (listen_fd >= 0) close(listen_fd);
    if (epoll_fd >= 0) close(epoll_fd);
    if (wake_fd >= 0) close(wake_fd);
  }

  void Watch(int fd, uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    epoll_ctl(epoll_fd, op, fd, &ev);
  }

  // Whether the connection `fd` of generation `gen` is still open: a call that may close it
  // (Parse, Answer) is followed by this before the connection is touched again.
  bool Alive(int fd, uint32_t gen) const {
    auto it = conns.find(fd);
    return it != conns.end() && it->second->gen == gen;
  }

  // What the connection waits for now.
  void Interest(Conn& c) {
    uint32_t ev = 0;
    if (c.phase == Phase::kHead || c.phase == Phase::kBody || c.phase == Phase::kLingering)
      ev |= EPOLLIN;
    if (c.phase == Phase::kWriting || c.tls_wants_write) ev |= EPOLLOUT;
    Watch(c.fd, ev, EPOLL_CTL_MOD);
  }

  // Reads what has arrived; false on an error or a client that sent more than one request can
  // hold. A client that closed its side sets peer_closed: what it sent is still answered. TLS
  // records are decrypted here.
  bool ReadSome(Conn& c) {
    char buf[16384];
    for (;;) {
      if (c.in.size() > 2 * kMaxHeadBytes + static_cast<size_t>(kMaxRequestBody)) return false;
      ssize_t n;
      if (c.ssl != nullptr) {
        ERR_clear_error();
        int r = SSL_read(c.ssl, buf, sizeof(buf));
        if (r <= 0) {
          int e = SSL_get_error(c.ssl, r);
          c.tls_wants_write = e == SSL_ERROR_WANT_WRITE;
          if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return true;
          if (e == SSL_ERROR_ZERO_RETURN) {
            c.peer_closed = true;
            return true;
          }
          c.tls_broken = true;  // SSL_ERROR_SYSCALL or SSL_ERROR_SSL: no shutdown may follow
          if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
            c.peer_closed = true;  // a TCP close without close_notify: what arrived still counts
            return true;
          }
          ++count->tls_failed;
          VLOG(1) << "http: TLS from " << c.client << ": " << SslErrors();
          return false;
        }
        c.tls_wants_write = false;
        n = r;
      } else {
        n = recv(c.fd, buf, sizeof(buf), 0);
        if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        if (n == 0) {
          c.peer_closed = true;
          return true;
        }
      }
      c.in.append(buf, static_cast<size_t>(n));
      if (c.ssl == nullptr && static_cast<size_t>(n) < sizeof(buf)) return true;
    }
  }

  // Writes what is pending; false when the connection is finished (an error).
  bool WriteSome(Conn& c) {
    while (c.out_off < c.out.size()) {
      const char* p = c.out.data() + c.out_off;
      const size_t left = c.out.size() - c.out_off;
      ssize_t n;
      if (c.ssl != nullptr) {
        ERR_clear_error();
        int r = SSL_write(c.ssl, p, static_cast<int>(std::min<size_t>(left, 1 << 20)));
        if (r <= 0) {
          int e = SSL_get_error(c.ssl, r);
          if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) return true;
          c.tls_broken = true;
          if (e != SSL_ERROR_SYSCALL) ++count->tls_failed;  // a reset is the client's business
          return false;
        }
        n = r;
      } else {
        n = send(c.fd, p, left, MSG_NOSIGNAL);
        if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
      }
      c.out_off += static_cast<size_t>(n);
      c.deadline = Now() + opt.write_timeout_seconds;  // bytes moving: the client takes them
    }
    return true;
  }

  void Close(int fd) {
    auto it = conns.find(fd);
    if (it == conns.end()) return;
    Conn& c = *it->second;
    c.alive->store(false);
    if (c.ssl != nullptr) {
      // close_notify, best effort, only on a connection whose TLS is intact (OpenSSL forbids it
      // after a fatal error); the socket is non-blocking and sends with SIGPIPE ignored (Start).
      if (!c.tls_broken && SSL_is_init_finished(c.ssl)) SSL_shutdown(c.ssl);
      SSL_free(c.ssl);
      ERR_clear_error();
    }
    body_budget_used -= c.reserved;
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
    if (auto p = per_client.find(c.client); p != per_client.end() && --p->second <= 0)
      per_client.erase(p);
    conns.erase(it);
    --count->open;
  }

  // Makes room by closing the connection that has waited longest for its request to be complete
  // (an idle keep-alive, a trickled head or body), of `client` only when given. False when there
  // is none: every connection is being answered.
  bool EvictOldestIncomplete(const std::string* client) {
    Conn* oldest = nullptr;
    for (auto& [fd, c] : conns) {
      if (c->phase != Phase::kHead && c->phase != Phase::kBody) continue;
      if (client != nullptr && c->client != *client) continue;
      if (oldest == nullptr || c->since < oldest->since) oldest = c.get();
    }
    if (oldest == nullptr) return false;
    ++count->evicted;
    Close(oldest->fd);
    return true;
  }

  // A refusal that costs nothing: the answer is written straight into the socket's buffer (it
  // fits), what the client sent is dropped, and the connection closed.
  static void Refuse(int fd, const std::string& answer) {
    if (!answer.empty()) (void)!send(fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    shutdown(fd, SHUT_WR);
    char sink[4096];
    while (recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0) {
    }
    close(fd);
  }

  void Accept() {
    const Seconds now = Now();
    for (int i = 0; i < 256; ++i) {
      sockaddr_storage ss{};
      socklen_t len = sizeof(ss);
      int fd =
          accept4(listen_fd, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors: stop accepting for a moment rather than spin on the listener.
          LOG_EVERY_N(WARNING, 100) << "http: cannot accept: " << strerror(errno);
          Watch(listen_fd, 0, EPOLL_CTL_MOD);
          accepting = false;
          accept_paused_until = now + 0.1;
        }
        return;
      }
      std::string client = AddressOf(ss);
      // One client over its share: its own oldest incomplete connection makes room where the
      // listener says so (the probes', whose clients share the node's address with every
      // hostNetwork pod), else the new one is refused. All clients over the total: the oldest
      // incomplete connection of anyone makes room (a slow or idle client yields to one with a
      // request), else refused.
      bool room = true;
      const char* cap = nullptr;
      if (per_client.count(client) != 0 && per_client[client] >= opt.max_connections_per_client) {
        cap = "-web_max_connections_per_client";
        room = opt.evict_within_client && EvictOldestIncomplete(&client);
      }
      if (room && static_cast<int>(conns.size()) >= opt.max_connections) {
        cap = "-web_max_connections";
        room = EvictOldestIncomplete(nullptr);
      }
      if (!room) {
        ++count->refused;
        LOG_EVERY_N(WARNING, 1000) << "http: refused a connection from " << client << " (" << cap
                                   << " reached; such refusals are logged once in 1000)";
        // Over TLS a plain answer would be noise before the handshake: the close says it.
        Refuse(fd, tls.enabled() ? std::string()
                                 : PlainAnswer(503, "too many connections", "Retry-After: 1"));
        continue;
      }
      ++per_client[client];
      ++count->accepted;
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      auto c = std::make_unique<Conn>();
      c->fd = fd;
      c->gen = next_gen++;
      c->client = std::move(client);
      c->deadline = now + opt.header_timeout_seconds;
      c->since = now;
      c->idle = false;  // a new connection has no idle allowance: it came to ask something
      if (tls.enabled()) {
        c->ssl = SSL_new(tls.ctx());
        if (c->ssl == nullptr || SSL_set_fd(c->ssl, fd) != 1) {
          ++count->tls_failed;
          if (c->ssl != nullptr) SSL_free(c->ssl);
          close(fd);
          if (--per_client[c->client] <= 0) per_client.erase(c->client);
          continue;
        }
        SSL_set_accept_state(c->ssl);
      }
      Watch(fd, EPOLLIN, EPOLL_CTL_ADD);
      conns.emplace(fd, std::move(c));
      ++count->open;
      // What has arrived with the connection is read now, not after the rest of this batch of
      // accepts: a client that asks at once (a probe) has its request complete, and so is no
      // longer one that eviction would pick, before the next connections come in.
      OnEvent(fd, EPOLLIN);
    }
  }

  // Starts writing `bytes` as the answer. May close the connection.
  void Answer(Conn& c, std::string bytes, bool keep_alive) {
    c.out = std::move(bytes);
    c.out_off = 0;
    c.close_after_write = !keep_alive;
    c.phase = Phase::kWriting;
    c.deadline = Now() + opt.write_timeout_seconds;
    if (!WriteSome(c)) return Close(c.fd);
    AfterWrite(c);
  }

  // Once an answer is out: the next request (already arrived, pipelined, or awaited) or close.
  // May close the connection.
  void AfterWrite(Conn& c) {
    if (c.out_off < c.out.size()) return Interest(c);
    std::string().swap(c.out);
    c.out_off = 0;
    if (c.in.capacity() > kKeepCapacity && c.in.size() < kKeepCapacity) c.in.shrink_to_fit();
    if (c.close_after_write) {
      if (c.ssl != nullptr || c.peer_closed) return Close(c.fd);
      shutdown(c.fd, SHUT_WR);  // the answer is complete: the client reads it, then its EOF
      c.phase = Phase::kLingering;
      std::string().swap(c.in);
      c.deadline = Now() + kLingerSeconds;
      return Interest(c);
    }
    c.phase = Phase::kHead;
    c.idle = c.in.empty();
    c.since = Now();
    c.deadline = c.since + (c.idle ? opt.idle_timeout_seconds : opt.header_timeout_seconds);
    Interest(c);
    if (!c.in.empty()) Parse(c);
  }

  // Looks at what has arrived: a complete request goes to a worker, an invalid one is answered.
  // May close the connection.
  void Parse(Conn& c) {
    if (c.phase == Phase::kHead) {
      // Resumes where the last look at this head stopped: a head trickled in a byte at a time
      // costs O(size), not O(size^2).
      const size_t resume = c.head.state == HeadState::kIncomplete ? c.head.scanned : 0;
      c.head = ParseRequestHead(c.in, kMaxHeadBytes, resume);
      if (c.head.state == HeadState::kIncomplete) return;
      if (c.head.state == HeadState::kError) {
        ++count->bad;
        c.in.clear();
        return Answer(c, PlainAnswer(c.head.status, c.head.error), false);
      }
      const long long length = c.head.head.content_length;
      if (length > kMaxRequestBody) {
        c.in.clear();
        return Answer(c, PlainAnswer(413, "request body too large"), false);
      }
      if (length > 0) {
        // Bodies are held before any handler (or the authentication it runs) has looked at the
        // request: together they get a budget, so that many connections each sending a large
        // body cannot grow the process without bound.
        if (body_budget_used + static_cast<size_t>(length) > opt.max_buffered_body_bytes) {
          ++count->busy;
          c.in.clear();
          return Answer(c,
                        PlainAnswer(503, "busy: too many request bodies at once", "Retry-After: 1"),
                        false);
        }
        c.reserved = static_cast<size_t>(length);
        body_budget_used += c.reserved;
      }
      c.phase = Phase::kBody;
      c.deadline = Now() + opt.header_timeout_seconds;
      // 100-continue on plain HTTP only, where the two lines fit the socket's buffer; a TLS
      // client waits its second and sends the body anyway (curl: 1 s).
      if (c.head.head.expect_continue && length > 0 && c.in.size() == c.head.length &&
          c.ssl == nullptr) {
        static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        (void)!send(c.fd, kContinue.data(), kContinue.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      }
    }
    const size_t body = static_cast<size_t>(std::max(0LL, c.head.head.content_length));
    if (c.in.size() < c.head.length + body) return;  // the body is still coming
    RequestHead& h = c.head.head;
    Job job;
    job.fd = c.fd;
    job.gen = c.gen;
    job.alive = c.alive;
    job.req.method = std::move(h.method);
    job.req.path = std::move(h.path);
    job.req.query = std::move(h.query);
    job.req.authorization = std::move(h.authorization);
    job.req.content_length = h.content_length;
    job.req.client = c.client;
    if (job.req.method == "POST") job.req.body = c.in.substr(c.head.length, body);
    job.head_only = job.req.method == "HEAD";
    job.minor_version = h.minor_version;
    job.reserved = c.reserved;
    c.reserved = 0;
    ++c.answered;
    job.keep_alive = h.keep_alive && !c.peer_closed &&
                     c.answered < opt.max_requests_per_connection && !stopping.load();
    c.in.erase(0, c.head.length + body);
    c.head = HeadParse{};
    c.phase = Phase::kHandling;
    Interest(c);
    // One client may have only so many requests waiting for the workers: the others' requests
    // are not queued behind all of its.
    int& mine = in_flight[c.client];
    bool queued = false;
    if (mine < opt.max_queued_per_client) {
      MutexLock l(&mu);
      if (handling < static_cast<size_t>(opt.max_queued_requests) + opt.workers) {
        ++handling;
        jobs.push_back(std::move(job));
        work_cv.Signal();
        queued = true;
      }
    }
    if (queued) {
      ++mine;
      return;
    }
    if (mine == 0) in_flight.erase(c.client);
    body_budget_used -= job.reserved;
    ++count->busy;
    LOG_EVERY_N(WARNING, 1000) << "http: busy, answered 503 to " << c.client
                               << " (the workers' queue, or this client's share of it, is full; "
                                  "logged once in 1000)";
    Answer(c, PlainAnswer(503, "busy: too many requests at once", "Retry-After: 1"), false);
  }

  void OnEvent(int fd, uint32_t events) {
    auto it = conns.find(fd);
    if (it == conns.end()) return;
    Conn& c = *it->second;
    const uint32_t gen = c.gen;
    if ((events & (EPOLLERR | EPOLLHUP)) && !(events & EPOLLIN)) return Close(fd);
    if (c.phase == Phase::kWriting) {
      if (!WriteSome(c)) return Close(fd);
      return AfterWrite(c);
    }
    if (c.phase == Phase::kLingering) {
      char sink[16384];
      for (;;) {
        ssize_t n = recv(fd, sink, sizeof(sink), 0);
        if (n > 0) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
        return Close(fd);  // the client's EOF (it has read the answer), or an error
      }
    }
    if (c.phase == Phase::kHead || c.phase == Phase::kBody) {
      const bool was_idle = c.idle && c.in.empty();
      if (!ReadSome(c)) return Close(fd);
      if (was_idle && !c.in.empty()) {
        c.idle = false;  // the next request has begun: it has the head's time, not the idle time
        c.since = Now();
        c.deadline = c.since + opt.header_timeout_seconds;
      }
      Interest(c);
      Parse(c);
      if (!Alive(fd, gen)) return;  // answered and closed
      // A client that closed its side before its request was complete will send no more.
      if (c.peer_closed && (c.phase == Phase::kHead || c.phase == Phase::kBody)) Close(fd);
    }
  }

  void CollectDone() {
    std::deque<Done> ready;
    {
      MutexLock l(&mu);
      ready.swap(done);
    }
    for (Done& d : ready) {
      body_budget_used -= d.reserved;
      if (auto f = in_flight.find(d.client); f != in_flight.end() && --f->second <= 0)
        in_flight.erase(f);
      if (d.skipped || !Alive(d.fd, d.gen)) continue;  // closed meanwhile (fd maybe reused)
      Answer(*conns[d.fd], std::move(d.bytes), d.keep_alive);
    }
  }

  void Sweep(Seconds now) {
    std::vector<int> expired;
    for (auto& [fd, c] : conns)
      if (c->phase != Phase::kHandling && now > c->deadline) expired.push_back(fd);
    for (int fd : expired) {
      Conn& c = *conns[fd];
      // A client between requests, or already answered, is just closed; one caught mid-request
      // learns why.
      if (c.phase != Phase::kLingering && (!c.idle || !c.in.empty())) {
        ++count->timed_out;
        if (c.phase != Phase::kWriting && c.ssl == nullptr) {
          const std::string a = PlainAnswer(408, "request timeout");
          (void)!send(fd, a.data(), a.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        }
      }
      Close(fd);
    }
  }

  void Run() {
    Seconds last_sweep = Now(), last_tls = last_sweep;
    epoll_event events[256];
    while (!stopping.load()) {
      int n = epoll_wait(epoll_fd, events, 256, static_cast<int>(kSweepSeconds * 1000));
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == listen_fd) {
          Accept();
        } else if (fd == wake_fd) {
          uint64_t v;
          (void)!read(wake_fd, &v, sizeof(v));
        } else {
          OnEvent(fd, events[i].events);
        }
      }
      CollectDone();
      const Seconds now = Now();
      if (now - last_sweep >= kSweepSeconds) {
        Sweep(now);
        last_sweep = now;
        if (!accepting && now >= accept_paused_until) {
          Watch(listen_fd, EPOLLIN, EPOLL_CTL_MOD);
          accepting = true;
        }
      }
      if (tls.enabled() && now - last_tls >= opt.tls_reload_seconds) {
        (void)tls.Refresh();
        last_tls = now;
      }
    }
  }

  void Work() {
    for (;;) {
      Job job;
      {
        MutexLock l(&mu);
        while (jobs.empty() && !stopping.load()) work_cv.Wait(&mu);
        // Stopping: what is still queued is dropped (a review against a hung API server each
        // would outlast the pod's grace period); what runs now finishes.
        if (stopping.load()) return;
        job = std::move(jobs.front());
        jobs.pop_front();
      }
      Done d{job.fd, job.gen, job.req.client, "", job.keep_alive, job.reserved, true};
      if (job.alive->load()) {  // a connection closed while its request waited: nobody to answer
        WebResponse resp = handler(job.req);
        d.bytes = Serialize(resp, job.head_only, job.keep_alive, job.minor_version);
        d.skipped = false;
      }
      {
        MutexLock l(&mu);
        --handling;
        done.push_back(std::move(d));
      }
      const uint64_t one = 1;
      (void)!write(wake_fd, &one, sizeof(one));
    }
  }
};

WebServer::WebServer() : counters_(std::make_unique<Counters>()) {}
WebServer::~WebServer() { Stop(); }

Status WebServer::Start(const std::string& addr, Handler handler, WebServerOptions options) {
  ASSIGN_OR_RETURN(ListenAddress la, ParseListenAddress(addr));
  if (options.workers < 1 || options.max_connections < 1 ||
      options.max_connections_per_client < 1 || options.max_queued_requests < 0)
    return Status::InvalidArgument("web server: workers and connection caps must be at least 1");
  // Each connection is a descriptor: keep the cap under what the process may open, after raising
  // the soft limit to the hard one (as Go's runtime does at start), with room left for the rest of
  // the process (the API and Prometheus clients, the other listener, files).
  constexpr int kReserve = 512;
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    if (rl.rlim_cur != rl.rlim_max) {
      rl.rlim_cur = rl.rlim_max;
      setrlimit(RLIMIT_NOFILE, &rl);
      getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < static_cast<rlim_t>(options.max_connections) + kReserve)
      options.max_connections = std::max<int>(16, static_cast<int>(rl.rlim_cur) - kReserve);
  }
  // A client that resets its connection makes the next write to it raise SIGPIPE, which would end
  // the process: OpenSSL writes with write(2), which has no MSG_NOSIGNAL. Ignored process-wide
  // (as Go's runtime and most servers do); every write's error is handled where it happens.
  signal(SIGPIPE, SIG_IGN);
  auto loop = std::make_unique<Loop>(options, std::move(handler), counters_.get());
  if (loop->tls.enabled()) RETURN_NOT_OK(loop->tls.Refresh());

  sockaddr_storage ss{};
  socklen_t len;
  if (la.ipv6) {
    auto& a6 = reinterpret_cast<sockaddr_in6&>(ss);
    a6.sin6_family = AF_INET6;
    a6.sin6_port = htons(static_cast<uint16_t>(la.port));
    inet_pton(AF_INET6, la.host.c_str(), &a6.sin6_addr);
    len = sizeof(a6);
  } else {
    auto& a4 = reinterpret_cast<sockaddr_in&>(ss);
    a4.sin_family = AF_INET;
    a4.sin_port = htons(static_cast<uint16_t>(la.port));
    a4.sin_addr.s_addr = htonl(INADDR_ANY);
    if (!la.host.empty()) inet_pton(AF_INET, la.host.c_str(), &a4.sin_addr);
    len = sizeof(a4);
  }
  loop->listen_fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (loop->listen_fd < 0) return Status::Internal(addr + ": socket: " + strerror(errno));
  int one = 1;
  setsockopt(loop->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (la.ipv6) setsockopt(loop->listen_fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  // A connection is handed to accept() only once its first bytes have arrived (HTTP and TLS
  // clients speak first): one that sends nothing costs the kernel a half-open entry, never a slot
  // here; and the first bytes of every connection are there to read at once (Accept), so a client
  // that asks at once has a complete request before other connections come in.
  const int defer = std::max(1, static_cast<int>(std::ceil(options.header_timeout_seconds)));
  setsockopt(loop->listen_fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer, sizeof(defer));
  if (bind(loop->listen_fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 ||
      listen(loop->listen_fd, 1024) != 0)
    return Status::InvalidArgument(addr + ": cannot listen: " + strerror(errno));
  getsockname(loop->listen_fd, reinterpret_cast<sockaddr*>(&ss), &len);
  port_ = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(ss).sin6_port
                                         : reinterpret_cast<sockaddr_in&>(ss).sin_port);

  loop->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  loop->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (loop->epoll_fd < 0 || loop->wake_fd < 0)
    return Status::Internal(addr + ": epoll: " + strerror(errno));
  loop->Watch(loop->listen_fd, EPOLLIN, EPOLL_CTL_ADD);
  loop->Watch(loop->wake_fd, EPOLLIN, EPOLL_CTL_ADD);
  Loop* l = loop.get();
  for (int i = 0; i < options.workers; ++i) l->workers.emplace_back([l] { l->Work(); });
  l->loop_thread = std::thread([l] { l->Run(); });
  loop_ = std::move(loop);
  return Status::OK();
}

void WebServer::Stop() {
  if (loop_ == nullptr) return;
  loop_->stopping = true;
  {
    MutexLock l(&loop_->mu);
    loop_->work_cv.SignalAll();
  }
  const uint64_t one = 1;
  (void)!write(loop_->wake_fd, &one, sizeof(one));
  if (loop_->loop_thread.joinable()) loop_->loop_thread.join();
  for (auto& w : loop_->workers)
    if (w.joinable()) w.join();
  loop_.reset();
}

WebServerStats WebServer::stats() const {
  WebServerStats s;
  s.connections = counters_->open;
  s.accepted_total = counters_->accepted;
  s.refused_total = counters_->refused;
  s.evicted_total = counters_->evicted;
  s.busy_total = counters_->busy;
  s.timed_out_total = counters_->timed_out;
  s.bad_requests_total = counters_->bad;
  s.tls_failures_total = counters_->tls_failed;
  return s;
}

}  // namespace ds
