// web_load: the load of issue 43 against the controller's web port, and what its probes see
// meanwhile. One thread, one epoll loop, so that it takes little of the cores it shares with the
// controller it measures (2 on the test machine):
//   - idle connections that each send half a request head and then nothing, as a slowloris
//     client does; when the server closes one, its slot connects again at once (an attacker
//     does), and the reconnects are counted. --idle_from spreads them over consecutive source
//     addresses (127.0.0.2, 127.0.0.3, ...) bound before connect, so a per-client cap can be
//     met from one address or from many;
//   - a flood of full requests paced at --flood_rps on a few keep-alive connections (or a new
//     connection per request), open-loop: a request falls due every 1/rps seconds whether or not
//     the last was answered, and waits for a free connection;
//   - probes: every --probe_every seconds each --probe target gets one full request on a fresh
//     connection; its latency runs from the start of connect() to the last byte of the answer,
//     with a hard timeout, as a kubelet probe or a Prometheus scrape would see it.
// It prints one JSON object on stdout (the keys in Report(); --help lists the flags).
// test/integration/test_web_port.py runs it against the real binary:
//
//   web_load --target=127.0.0.1:9000 --idle=256 --idle_from=127.0.0.2 --idle_sources=64
//       --flood_rps=1000 --flood_path='/api/v1/history?nodes=node-00002' --flood_from=127.0.1.1
//       --probe=127.0.0.1:9001/healthz --probe=127.0.0.1:9000/metrics --probe_every=0.2
//       --duration=20 --watch_pid=PID --json
//
// Only the C++ standard library and POSIX: it builds without the project's dependencies.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

// ---------------------------------------------------------------------------------------------
// Pure parts: the response parser, the figures, the JSON writer, the flags.

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// One HTTP/1.x response read as its bytes arrive: the status as soon as the status line is in,
// then the body framed by Content-Length, the chunked coding, or the end of the connection.
// Bytes after a complete response are ignored (requests are never pipelined).
class ResponseParser {
 public:
  enum class Result { kMore, kDone, kError };
  static constexpr size_t kMaxHead = 64 << 10;
  static constexpr size_t kMaxLine = 4 << 10;

  // Feeds the next bytes of the connection.
  Result Feed(std::string_view data) {
    size_t i = 0;
    while (i < data.size() && state_ != State::kDone && state_ != State::kError) {
      switch (state_) {
        case State::kHead: {
          const size_t old = head_.size();
          head_.append(data.substr(i));
          if (status_ == 0) {
            const size_t eol = head_.find("\r\n");
            if (eol != std::string::npos &&
                !ParseStatusLine(std::string_view(head_).substr(0, eol)))
              return Fail();
          }
          const size_t end = head_.find("\r\n\r\n", old >= 3 ? old - 3 : 0);
          if (end == std::string::npos) {
            if (head_.size() > kMaxHead) return Fail();
            return Result::kMore;
          }
          i += end + 4 - old;
          head_.resize(end + 4);
          if (!ParseHead()) return Fail();
          break;
        }
        case State::kLength:
        case State::kChunkData: {
          const size_t n = std::min<size_t>(left_, data.size() - i);
          left_ -= static_cast<long long>(n);
          i += n;
          body_bytes_ += n;
          if (left_ == 0) state_ = state_ == State::kLength ? State::kDone : State::kChunkEnd;
          break;
        }
        case State::kChunkSize:
        case State::kChunkEnd:
        case State::kTrailers: {
          const char c = data[i++];
          if (c != '\n') {
            if (line_.size() > kMaxLine) return Fail();
            line_ += c;
            break;
          }
          const std::string_view line = Trim(line_);
          if (!LineDone(line)) return Fail();
          line_.clear();
          break;
        }
        case State::kUntilClose:
          body_bytes_ += data.size() - i;
          i = data.size();
          break;
        case State::kDone:
        case State::kError:
          break;
      }
    }
    return state_ == State::kDone    ? Result::kDone
           : state_ == State::kError ? Result::kError
                                     : Result::kMore;
  }

  // The connection ended (EOF or reset after the bytes fed so far): completes a body that runs
  // to the end of the connection; anything else unfinished is an error.
  Result Eof() {
    if (state_ == State::kUntilClose) state_ = State::kDone;
    if (state_ == State::kDone) return Result::kDone;
    state_ = State::kError;
    return Result::kError;
  }

  int status() const { return status_; }  // 0 until the status line is in
  bool close() const { return close_; }   // the server will close after this answer
  long long body_bytes() const { return body_bytes_; }
  void Reset() { *this = ResponseParser(); }

 private:
  enum class State {
    kHead,
    kLength,
    kChunkSize,
    kChunkData,
    kChunkEnd,
    kTrailers,
    kUntilClose,
    kDone,
    kError
  };

  Result Fail() {
    state_ = State::kError;
    return Result::kError;
  }

  bool ParseStatusLine(std::string_view line) {
    // "HTTP/1.1 200 OK"
    if (line.size() < 12 || line.substr(0, 5) != "HTTP/" || line[8] != ' ') return false;
    http10_ = line.substr(0, 8) == "HTTP/1.0";
    int code = 0;
    for (size_t k = 9; k < 12; ++k) {
      if (line[k] < '0' || line[k] > '9') return false;
      code = code * 10 + (line[k] - '0');
    }
    status_ = code;
    return true;
  }

  bool ParseHead() {
    std::string_view rest(head_);
    rest.remove_prefix(rest.find("\r\n") + 2);
    bool chunked = false, keep_alive = false;
    std::optional<long long> length;
    close_ = false;
    while (!rest.empty()) {
      const size_t eol = rest.find("\r\n");
      const std::string_view line = rest.substr(0, eol);
      rest.remove_prefix(eol + 2);
      if (line.empty()) break;
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos) return false;
      const std::string_view name = Trim(line.substr(0, colon));
      const std::string_view value = Trim(line.substr(colon + 1));
      if (EqualsIgnoreCase(name, "content-length")) {
        long long n = 0;
        if (value.empty()) return false;
        for (char c : value) {
          if (c < '0' || c > '9' || n > (1LL << 40)) return false;
          n = n * 10 + (c - '0');
        }
        length = n;
      } else if (EqualsIgnoreCase(name, "transfer-encoding")) {
        chunked = value.size() >= 7 && EqualsIgnoreCase(value.substr(value.size() - 7), "chunked");
      } else if (EqualsIgnoreCase(name, "connection")) {
        close_ = close_ || EqualsIgnoreCase(value, "close");
        keep_alive = EqualsIgnoreCase(value, "keep-alive");
      }
    }
    if (http10_ && !keep_alive) close_ = true;
    if (status_ / 100 == 1 || status_ == 204 || status_ == 304) {
      state_ = State::kDone;
    } else if (chunked) {
      state_ = State::kChunkSize;
    } else if (length.has_value()) {
      left_ = *length;
      state_ = left_ == 0 ? State::kDone : State::kLength;
    } else {
      close_ = true;
      state_ = State::kUntilClose;
    }
    return true;
  }

  bool LineDone(std::string_view line) {
    switch (state_) {
      case State::kChunkSize: {
        const std::string_view hex = Trim(line.substr(0, line.find(';')));
        if (hex.empty() || hex.size() > 12) return false;
        long long n = 0;
        for (char c : hex) {
          const int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                        : (c | 0x20) >= 'a' && (c | 0x20) <= 'f'    ? (c | 0x20) - 'a' + 10
                                                                    : -1;
          if (d < 0) return false;
          n = n * 16 + d;
        }
        left_ = n;
        state_ = n == 0 ? State::kTrailers : State::kChunkData;
        return true;
      }
      case State::kChunkEnd:
        if (!line.empty()) return false;
        state_ = State::kChunkSize;
        return true;
      case State::kTrailers:
        if (line.empty()) state_ = State::kDone;
        return true;
      default:
        return false;
    }
  }

  State state_ = State::kHead;
  std::string head_;  // the head, until its blank line
  std::string line_;  // the chunk-size or trailer line being read
  long long left_ = 0;
  long long body_bytes_ = 0;
  int status_ = 0;
  bool http10_ = false;
  bool close_ = false;
};

// Percentiles with linear interpolation between the closest ranks (bench/run_bench.py's pct).
double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return NAN;
  const double k = (sorted.size() - 1) * p / 100.0;
  const size_t f = static_cast<size_t>(k);
  const size_t c = std::min(f + 1, sorted.size() - 1);
  return sorted[f] + (sorted[c] - sorted[f]) * (k - f);
}

// A JSON text built with a writer, never by formatting: a path or an error name cannot break it.
class JsonWriter {
 public:
  explicit JsonWriter(bool pretty) : pretty_(pretty) {}

  void StartObject() { Open('{'); }
  void EndObject() { Close('}'); }
  void StartArray() { Open('['); }
  void EndArray() { Close(']'); }
  void Key(std::string_view k) {
    Separate();
    String(k);
    out_ += pretty_ ? ": " : ":";
    after_key_ = true;
  }
  void Int(long long v) {
    Value();
    out_ += std::to_string(v);
  }
  void Double(double v) {
    Value();
    if (!std::isfinite(v)) {
      out_ += "null";
      return;
    }
    char b[32];
    snprintf(b, sizeof(b), "%.6g", v);
    out_ += b;
  }
  void Bool(bool v) {
    Value();
    out_ += v ? "true" : "false";
  }
  void Str(std::string_view s) {
    Value();
    String(s);
  }
  const std::string& str() const { return out_; }

 private:
  void Open(char c) {
    Value();
    out_ += c;
    first_.push_back(true);
  }
  void Close(char c) {
    const bool empty = first_.back();
    first_.pop_back();
    if (pretty_ && !empty) Newline();
    out_ += c;
  }
  // Before a key, or an array element: the comma and the line break.
  void Separate() {
    if (first_.empty()) return;
    if (!first_.back()) out_ += ',';
    first_.back() = false;
    if (pretty_) Newline();
  }
  void Value() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    Separate();
  }
  void Newline() {
    out_ += '\n';
    out_.append(2 * first_.size(), ' ');
  }
  void String(std::string_view s) {
    out_ += '"';
    for (unsigned char c : s) {
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += static_cast<char>(c);
      } else if (c < 0x20) {
        char b[8];
        snprintf(b, sizeof(b), "\\u%04x", c);
        out_ += b;
      } else {
        out_ += static_cast<char>(c);
      }
    }
    out_ += '"';
  }

  const bool pretty_;
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

void WriteSummary(JsonWriter& w, std::vector<double> v) {
  std::sort(v.begin(), v.end());
  w.StartObject();
  w.Key("n");
  w.Int(static_cast<long long>(v.size()));
  for (auto [name, p] : {std::pair<const char*, double>{"p50", 50}, {"p90", 90}, {"p99", 99}}) {
    w.Key(name);
    w.Double(Percentile(v, p));
  }
  w.Key("max");
  w.Double(v.empty() ? NAN : v.back());
  w.EndObject();
}

void WriteCounts(JsonWriter& w, const std::map<std::string, long long>& counts) {
  w.StartObject();
  for (const auto& [k, n] : counts) {
    w.Key(k);
    w.Int(n);
  }
  w.EndObject();
}

struct Endpoint {
  sockaddr_in addr{};
  std::string host;  // "127.0.0.1:9000", for the Host header and the report
  std::string path;  // probes only
};

std::optional<in_addr> ParseIPv4(const std::string& s) {
  in_addr a{};
  if (s == "localhost") return ParseIPv4("127.0.0.1");
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) return std::nullopt;
  return a;
}

// "127.0.0.1:9000", ":9000" (127.0.0.1), and for probes "127.0.0.1:9001/healthz".
std::optional<Endpoint> ParseEndpoint(const std::string& s, bool with_path) {
  Endpoint e;
  std::string hostport = s;
  if (with_path) {
    const size_t slash = s.find('/');
    if (slash == std::string::npos) return std::nullopt;
    hostport = s.substr(0, slash);
    e.path = s.substr(slash);
  }
  const size_t colon = hostport.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  const std::string host = colon == 0 ? "127.0.0.1" : hostport.substr(0, colon);
  const std::string port = hostport.substr(colon + 1);
  char* end = nullptr;
  const long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 1 || p > 65535) return std::nullopt;
  const std::optional<in_addr> a = ParseIPv4(host);
  if (!a.has_value()) return std::nullopt;
  e.addr.sin_family = AF_INET;
  e.addr.sin_port = htons(static_cast<uint16_t>(p));
  e.addr.sin_addr = *a;
  e.host = host + ":" + port;
  return e;
}

struct Options {
  std::optional<Endpoint> target;  // where the idle connections and the flood go
  double duration = 10;            // seconds of load; in-flight probes are then awaited
  double warmup = 1;               // probes start this long after the load
  int idle = 0;
  std::optional<in_addr> idle_from;
  int idle_sources = 1;
  std::string idle_path = "/metrics";
  double idle_min_cycle = 0.5;
  double flood_rps = 0;
  std::vector<std::string> flood_paths;
  int flood_conns = 8;
  bool flood_new_connections = false;
  std::optional<in_addr> flood_from;
  int flood_sources = 1;
  double flood_timeout = 5;
  std::vector<Endpoint> probes;
  double probe_every = 0.2;
  double probe_timeout = 5;
  double probe_slo = 1;
  std::optional<in_addr> probe_from;
  int watch_pid = 0;
  bool json = false;
};

constexpr const char* kUsage = R"(usage: web_load [flags]
  --target=HOST:PORT        the web port the idle connections and the flood go to
  --duration=S              seconds of load (10); probes in flight are then awaited
  --warmup=S                probes start S seconds after the load (1)
  --idle=N                  connections that send half a request head, then nothing (0)
  --idle_path=PATH          the path of that half request (/metrics)
  --idle_from=IP            first source address of the idle connections (default: the kernel's)
  --idle_sources=K          spread them over K consecutive source addresses from --idle_from (1)
  --idle_min_cycle=S        a slot connects again at once when the server closes its connection,
                            but at most once per S seconds (0.5): a server that refuses at once
                            would otherwise have this tool burn a core on connects
  --flood_rps=R             full requests per second, paced (0)
  --flood_path=PATH         the flood's path; repeat for several, taken in turn
                            (/api/v1/history?nodes=node-00002)
  --flood_conns=N           keep-alive connections carrying the flood, one request in flight on
                            each (8)
  --flood_new_connections   a new connection per request (Connection: close) instead
  --flood_from=IP, --flood_sources=K   source addresses of the flood, as for the idle ones
  --flood_timeout=S         a flood request not answered within S seconds is an error (5)
  --probe=HOST:PORT/PATH    a probe target (repeatable): one full request on a fresh connection
                            every --probe_every seconds, one at a time per target
  --probe_every=S           (0.2)
  --probe_timeout=S         a probe not answered within S seconds fails as "timeout" (5)
  --probe_slo=S             probes slower than this are counted as "slow" (1)
  --probe_from=IP           source address of the probes (default: the kernel's)
  --watch_pid=PID           samples that process's VmRSS and threads every 0.1 s, and its CPU time
  --json                    one line of JSON (default: the same JSON, indented)
)";

bool ParseDouble(const std::string& v, double* out) {
  char* end = nullptr;
  *out = std::strtod(v.c_str(), &end);
  return !v.empty() && *end == '\0' && std::isfinite(*out);
}

bool ParseInt(const std::string& v, int* out) {
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < 0 || n > 1000000) return false;
  *out = static_cast<int>(n);
  return true;
}

// The flags, checked; an error names the flag.
std::optional<std::string> ParseFlags(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") return std::string(kUsage);
    if (a.rfind("--", 0) != 0) return "unexpected argument " + a;
    a = a.substr(2);
    const size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    const std::string v = eq == std::string::npos ? "" : a.substr(eq + 1);
    auto number = [&](double* out, double min) -> std::optional<std::string> {
      if (ParseDouble(v, out) && *out >= min) return std::nullopt;
      char b[32];
      snprintf(b, sizeof(b), "%g", min);
      return "--" + name + ": \"" + v + "\" is not a number >= " + b;
    };
    auto count = [&](int* out, int min) -> std::optional<std::string> {
      if (ParseInt(v, out) && *out >= min) return std::nullopt;
      return "--" + name + ": \"" + v + "\" is not a count >= " + std::to_string(min);
    };
    auto address = [&](std::optional<in_addr>* out) -> std::optional<std::string> {
      *out = ParseIPv4(v);
      if (!out->has_value()) return "--" + name + ": \"" + v + "\" is not an IPv4 address";
      return std::nullopt;
    };
    std::optional<std::string> err;
    if (name == "target") {
      o->target = ParseEndpoint(v, false);
      if (!o->target) err = "--target: \"" + v + "\" is not HOST:PORT (IPv4)";
    } else if (name == "duration") {
      err = number(&o->duration, 0.1);
    } else if (name == "warmup") {
      err = number(&o->warmup, 0);
    } else if (name == "idle") {
      err = count(&o->idle, 0);
    } else if (name == "idle_path") {
      o->idle_path = v;
    } else if (name == "idle_from") {
      err = address(&o->idle_from);
    } else if (name == "idle_sources") {
      err = count(&o->idle_sources, 1);
    } else if (name == "idle_min_cycle") {
      err = number(&o->idle_min_cycle, 0);
    } else if (name == "flood_rps") {
      err = number(&o->flood_rps, 0);
    } else if (name == "flood_path") {
      o->flood_paths.push_back(v);
    } else if (name == "flood_conns") {
      err = count(&o->flood_conns, 1);
    } else if (name == "flood_new_connections") {
      o->flood_new_connections = true;
    } else if (name == "flood_from") {
      err = address(&o->flood_from);
    } else if (name == "flood_sources") {
      err = count(&o->flood_sources, 1);
    } else if (name == "flood_timeout") {
      err = number(&o->flood_timeout, 0.001);
    } else if (name == "probe") {
      std::optional<Endpoint> e = ParseEndpoint(v, true);
      if (!e)
        err = "--probe: \"" + v + "\" is not HOST:PORT/PATH (IPv4)";
      else
        o->probes.push_back(*e);
    } else if (name == "probe_every") {
      err = number(&o->probe_every, 0.001);
    } else if (name == "probe_timeout") {
      err = number(&o->probe_timeout, 0.001);
    } else if (name == "probe_slo") {
      err = number(&o->probe_slo, 0);
    } else if (name == "probe_from") {
      err = address(&o->probe_from);
    } else if (name == "watch_pid") {
      err = count(&o->watch_pid, 1);
    } else if (name == "json") {
      o->json = true;
    } else {
      err = "unknown flag --" + name;
    }
    if (err) return err;
  }
  if (o->flood_paths.empty()) o->flood_paths.push_back("/api/v1/history?nodes=node-00002");
  if ((o->idle > 0 || o->flood_rps > 0) && !o->target)
    return std::string("--idle and --flood_rps need --target");
  if (o->idle == 0 && o->flood_rps == 0 && o->probes.empty())
    return std::string("nothing to do: give --idle, --flood_rps or --probe");
  return std::nullopt;
}

// The n-th of `count` consecutive addresses from `first` (n taken modulo count).
in_addr NthSource(in_addr first, int count, long long n) {
  in_addr a = first;
  a.s_addr = htonl(ntohl(first.s_addr) + static_cast<uint32_t>(n % count));
  return a;
}

std::string ErrnoName(int e) {
  switch (e) {
    case ECONNREFUSED:
      return "ECONNREFUSED";
    case ECONNRESET:
      return "ECONNRESET";
    case ETIMEDOUT:
      return "ETIMEDOUT";
    case EADDRNOTAVAIL:
      return "EADDRNOTAVAIL";
    case EADDRINUSE:
      return "EADDRINUSE";
    case EMFILE:
      return "EMFILE";
    case ENFILE:
      return "ENFILE";
    case EPIPE:
      return "EPIPE";
    case ENETUNREACH:
      return "ENETUNREACH";
    case EHOSTUNREACH:
      return "EHOSTUNREACH";
    default:
      return "errno " + std::to_string(e);
  }
}

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// ---------------------------------------------------------------------------------------------
// The shell: sockets, the loop, /proc.

// What one connection slot is for.
enum class Kind { kIdle, kFlood, kProbe };

struct Slot {
  Kind kind;
  int index = 0;  // within its kind: the idle slot, the flood connection, the probe target
  int fd = -1;
  bool connected = false;
  uint64_t serial = 0;       // bumped by every connection and request: stale timers see it moved
  double connect_start = 0;  // connect() of the current connection
  double connected_at = 0;
  std::string out;  // bytes still to write
  ResponseParser parser;
  // Flood and probes: a request in flight since request_start. Idle: the answer was recorded.
  bool busy = false;
  double request_start = 0;
  bool answered = false;
  bool free = false;  // flood: in the list of connections a due request may take
};

struct Timer {
  double at;
  Slot* slot;
  uint64_t serial;  // the slot's serial when set; the timer is void once the slot moved on
  enum What { kConnect, kDeadline, kProbe, kRelease } what;
  bool operator>(const Timer& o) const { return at > o.at; }
};

struct ProcessSample {
  long rss_kb = -1, threads = -1;
};

ProcessSample ReadStatus(int pid) {
  ProcessSample s;
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) s.rss_kb = std::atol(line.c_str() + 6);
    if (line.rfind("Threads:", 0) == 0) s.threads = std::atol(line.c_str() + 8);
  }
  return s;
}

// utime + stime in seconds, or NaN when the process is gone.
double ReadCpuSeconds(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return NAN;
  std::istringstream rest(text.substr(paren + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::atof(field.c_str());  // utime, stime
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

class Load {
 public:
  explicit Load(const Options& o) : o_(o) {}

  int Run() {
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0) {
      perror("epoll_create1");
      return 1;
    }
    start_ = Now();
    end_ = start_ + o_.duration;
    if (o_.watch_pid > 0) {
      cpu_start_ = ReadCpuSeconds(o_.watch_pid);
      Sample();
    }
    for (int i = 0; i < o_.idle; ++i) Open(NewSlot(Kind::kIdle, i));
    if (o_.flood_rps > 0) {
      for (int i = 0; i < o_.flood_conns; ++i) {
        Slot* s = NewSlot(Kind::kFlood, i);
        Release(s);
        if (!o_.flood_new_connections) Open(s);  // ready before the first request falls due
      }
    }
    for (size_t i = 0; i < o_.probes.size(); ++i) {
      Slot* s = NewSlot(Kind::kProbe, static_cast<int>(i));
      timers_.push({start_ + o_.warmup, s, s->serial, Timer::kProbe});
    }
    probe_stats_.resize(o_.probes.size());

    std::vector<epoll_event> events(256);
    double next_sample = start_ + 0.1;
    for (;;) {
      const double now = Now();
      if (now >= end_ && !stopping_) Stop();
      if (stopping_ && probes_in_flight_ == 0) break;
      if (!stopping_) Flood(now);
      RunTimers(now);
      if (o_.watch_pid > 0 && now >= next_sample) {
        Sample();
        next_sample = now + 0.1;
      }
      const int n = epoll_wait(epfd_, events.data(), static_cast<int>(events.size()),
                               WaitMillis(Now(), next_sample));
      if (n < 0 && errno != EINTR) {
        perror("epoll_wait");
        return 1;
      }
      for (int k = 0; k < n; ++k) OnEvent(static_cast<Slot*>(events[k].data.ptr), events[k].events);
    }
    const double elapsed = Now() - start_;
    CloseAll();
    close(epfd_);
    if (o_.watch_pid > 0) Sample();
    Report(elapsed);
    return 0;
  }

 private:
  Slot* NewSlot(Kind kind, int index) {
    slots_.push_back(std::make_unique<Slot>());
    Slot* s = slots_.back().get();
    s->kind = kind;
    s->index = index;
    return s;
  }

  // Starts a connection for `s` and queues what it sends first: the half request of an idle
  // slot, a probe's request. A failure is counted and, for an idle slot, retried later.
  void Open(Slot* s) {
    ++s->serial;
    s->connected = false;
    s->connect_start = Now();
    s->parser.Reset();
    s->answered = false;
    const Endpoint& to = s->kind == Kind::kProbe ? o_.probes[s->index] : *o_.target;
    std::optional<in_addr> from;
    if (s->kind == Kind::kIdle && o_.idle_from)
      from = NthSource(*o_.idle_from, o_.idle_sources, s->index);
    if (s->kind == Kind::kFlood && o_.flood_from)
      from = NthSource(*o_.flood_from, o_.flood_sources, flood_connects_);
    if (s->kind == Kind::kProbe && o_.probe_from) from = o_.probe_from;
    if (s->kind == Kind::kIdle) {
      ++idle_connects_;
      s->out = "GET " + o_.idle_path + " HTTP/1.1\r\nHost: " + to.host +
               "\r\nUser-Agent: web_load\r\n";  // no blank line: the head never ends
    } else if (s->kind == Kind::kFlood) {
      ++flood_connects_;
    }
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return ConnectFailed(s, errno);
    s->fd = fd;
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (from.has_value()) {
      // The port is chosen at connect(), per destination, not at bind(): many connections
      // from one source address then do not run out of ports.
      setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
      sockaddr_in src{};
      src.sin_family = AF_INET;
      src.sin_addr = *from;
      if (bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof(src)) != 0)
        return ConnectFailed(s, errno);
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.ptr = s;
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) return ConnectFailed(s, errno);
    if (connect(fd, reinterpret_cast<const sockaddr*>(&to.addr), sizeof(to.addr)) != 0 &&
        errno != EINPROGRESS)
      return ConnectFailed(s, errno);
    // The rest happens on EPOLLOUT (edge-triggered: reported once the connect completes).
  }

  void ConnectFailed(Slot* s, int err) {
    const std::string what = ErrnoName(err);
    switch (s->kind) {
      case Kind::kIdle:
        ++idle_connect_errors_[what];
        break;
      case Kind::kFlood:
        if (!s->busy) ++flood_errors_["connect " + what];  // else Closed counts the request
        break;
      case Kind::kProbe:
        break;  // ProbeDone counts it
    }
    Closed(s, "connect " + what);
  }

  // A flood connection free for the next due request (once, however many ways it got free).
  void Release(Slot* s) {
    if (s->free || stopping_) return;
    s->free = true;
    free_flood_.push_back(s);
  }

  void Close(Slot* s) {
    if (s->fd >= 0) {
      close(s->fd);  // also leaves the epoll set
      s->fd = -1;
    }
    if (s->kind == Kind::kIdle && s->connected) --idle_open_;
    s->connected = false;
    s->out.clear();
    ++s->serial;
  }

  // The connection of `s` ended (`why`: "" after a complete answer the server or we closed).
  void Closed(Slot* s, const std::string& why) {
    const double now = Now();
    const bool was_connected = s->connected;
    Close(s);
    switch (s->kind) {
      case Kind::kIdle:
        if (was_connected) {
          ++idle_closed_by_server_;
          if (!s->answered) ++idle_closed_silently_;
          idle_life_.push_back(now - s->connected_at);
        }
        if (!stopping_) {
          const double at = std::max(now, s->connect_start + o_.idle_min_cycle);
          timers_.push({at, s, s->serial, Timer::kConnect});
        }
        break;
      case Kind::kFlood:
        if (s->busy) {
          s->busy = false;
          ++flood_errors_[why.empty() ? "closed before the answer" : why];
        }
        if (why.rfind("connect ", 0) == 0) {
          // Refused at once (the listener is gone): not again for a while, or this loop spins.
          if (!stopping_) timers_.push({now + 0.1, s, s->serial, Timer::kRelease});
        } else {
          Release(s);
        }
        break;
      case Kind::kProbe:
        if (s->busy) ProbeDone(s, now, why.empty() ? "closed before the answer" : why);
        break;
    }
  }

  void OnEvent(Slot* s, uint32_t ev) {
    if (s->fd < 0) return;
    if (!s->connected) {
      if (!(ev & (EPOLLOUT | EPOLLERR | EPOLLHUP))) return;
      int err = 0;
      socklen_t len = sizeof(err);
      getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) return ConnectFailed(s, err);
      s->connected = true;
      s->connected_at = Now();
      if (s->kind == Kind::kIdle) idle_open_max_ = std::max(idle_open_max_, ++idle_open_);
    }
    if (!s->out.empty() && !Flush(s)) return;
    if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) Read(s);
  }

  // Writes what is queued; false when the connection failed (and was closed).
  bool Flush(Slot* s) {
    while (!s->out.empty()) {
      const ssize_t n = send(s->fd, s->out.data(), s->out.size(), MSG_NOSIGNAL);
      if (n > 0) {
        s->out.erase(0, static_cast<size_t>(n));
      } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return true;  // EPOLLOUT says when to go on
      } else {
        // The server closed first (a refusal, a deadline): its answer may still be readable.
        const std::string why = "send " + ErrnoName(errno);
        Read(s);
        if (s->fd >= 0) Closed(s, why);
        return false;
      }
    }
    return true;
  }

  void Read(Slot* s) {
    static char buf[64 << 10];
    for (;;) {
      const ssize_t n = recv(s->fd, buf, sizeof(buf), 0);
      if (n > 0) {
        if (!Received(s, std::string_view(buf, static_cast<size_t>(n)))) return;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      // EOF or an error (a reset after the server's answer is how a refusal may end).
      const std::string why = n == 0 ? "" : ErrnoName(errno);
      if (s->busy && s->parser.Eof() == ResponseParser::Result::kDone) {
        Answered(s, /*eof=*/true);  // an answer that ran to the end of the connection
        return;
      }
      if (s->kind == Kind::kIdle && !s->answered && s->parser.status() != 0) RecordIdleAnswer(s);
      Closed(s, why);
      return;
    }
  }

  // Bytes from the server; false when the connection was closed meanwhile.
  bool Received(Slot* s, std::string_view data) {
    const ResponseParser::Result r = s->parser.Feed(data);
    if (s->kind == Kind::kIdle) {
      // Whatever a server says to a half request (503 at once, 408 at the deadline) ends it.
      if (!s->answered && s->parser.status() != 0) RecordIdleAnswer(s);
      return true;  // read on until the server closes
    }
    if (!s->busy) return true;  // stray bytes on a kept-alive connection
    if (r == ResponseParser::Result::kError) {
      if (s->kind == Kind::kFlood) {
        s->busy = false;
        ++flood_errors_["malformed answer"];
        Close(s);
        Release(s);
      } else {
        ProbeDone(s, Now(), "malformed answer");
      }
      return false;
    }
    if (r == ResponseParser::Result::kDone) {
      Answered(s, /*eof=*/false);
      return s->fd >= 0;
    }
    return true;
  }

  void RecordIdleAnswer(Slot* s) {
    s->answered = true;
    ++idle_statuses_[std::to_string(s->parser.status())];
    idle_answer_.push_back(Now() - s->connect_start);
  }

  // A complete answer on a flood or probe slot (`eof`: the connection ended with it).
  void Answered(Slot* s, bool eof) {
    const double now = Now();
    const int status = s->parser.status();
    if (s->kind == Kind::kProbe) {
      ProbeDone(s, now, status == 200 ? "" : "status " + std::to_string(status));
      return;
    }
    s->busy = false;
    ++flood_statuses_[std::to_string(status)];
    flood_latency_.push_back(now - s->request_start);
    if (eof || s->parser.close() || o_.flood_new_connections) Close(s);
    s->parser.Reset();
    Release(s);
  }

  // The end of a probe: its figures, its connection closed, the next one scheduled.
  void ProbeDone(Slot* s, double now, const std::string& failure) {
    if (!s->busy) return;
    s->busy = false;
    --probes_in_flight_;
    ProbeStats& p = probe_stats_[s->index];
    ++p.count;
    const double latency = now - s->request_start;
    if (s->parser.status() != 0) {
      ++p.statuses[std::to_string(s->parser.status())];
      p.latency.push_back(latency);
    }
    if (!failure.empty()) ++p.failures[failure];
    if (!failure.empty() || latency > o_.probe_slo) ++p.slow;
    Close(s);
    if (!stopping_) {
      // One at a time per target: the next on the schedule's next tick.
      const double first = start_ + o_.warmup;
      const double ticks = std::floor((now - first) / o_.probe_every) + 1;
      timers_.push({first + ticks * o_.probe_every, s, s->serial, Timer::kProbe});
    }
  }

  void StartProbe(Slot* s) {
    const Endpoint& e = o_.probes[s->index];
    ++probes_in_flight_;
    s->busy = true;
    s->request_start = Now();
    s->out = "GET " + e.path + " HTTP/1.1\r\nHost: " + e.host +
             "\r\nUser-Agent: web_load\r\nConnection: close\r\n\r\n";
    Open(s);
    if (s->fd < 0) return;  // the connect failed at once: ProbeDone counted it
    timers_.push({s->request_start + o_.probe_timeout, s, s->serial, Timer::kDeadline});
  }

  // Issues the requests that fell due, on free flood connections.
  void Flood(double now) {
    if (o_.flood_rps <= 0) return;
    const long long due = static_cast<long long>((now - start_) * o_.flood_rps);
    pending_ += due - scheduled_;
    scheduled_ = due;
    // Requests wait at most 100 ms' worth for a free connection; beyond, the server is not
    // keeping up with the connections given, and they are counted as not sent.
    const long long cap = static_cast<long long>(o_.flood_rps / 10) + 1;
    if (pending_ > cap) {
      flood_not_sent_ += pending_ - cap;
      pending_ = cap;
    }
    while (pending_ > 0 && !free_flood_.empty()) {
      Slot* s = free_flood_.back();
      free_flood_.pop_back();
      s->free = false;
      --pending_;
      const std::string& path = o_.flood_paths[flood_sent_ % o_.flood_paths.size()];
      ++flood_sent_;
      s->busy = true;
      s->request_start = now;
      s->parser.Reset();
      s->out = "GET " + path + " HTTP/1.1\r\nHost: " + o_.target->host +
               (o_.flood_new_connections ? "\r\nConnection: close" : "") +
               "\r\nUser-Agent: web_load\r\n\r\n";
      if (s->fd < 0) {
        Open(s);                  // sends on connect
        if (s->fd < 0) continue;  // refused at once: counted, the slot rests a while
      }
      ++s->serial;
      timers_.push({now + o_.flood_timeout, s, s->serial, Timer::kDeadline});
      if (s->connected) Flush(s);
    }
  }

  void RunTimers(double now) {
    while (!timers_.empty() && timers_.top().at <= now) {
      const Timer t = timers_.top();
      timers_.pop();
      Slot* s = t.slot;
      if (t.serial != s->serial) continue;  // the slot moved on
      switch (t.what) {
        case Timer::kConnect:
          if (!stopping_) Open(s);
          break;
        case Timer::kProbe:
          if (!stopping_) StartProbe(s);
          break;
        case Timer::kDeadline:
          if (!s->busy) break;
          if (s->kind == Kind::kProbe) {
            ProbeDone(s, now, "timeout");
          } else {
            s->busy = false;
            ++flood_errors_["timeout"];
            Close(s);
            Release(s);
          }
          break;
        case Timer::kRelease:
          Release(s);
          break;
      }
    }
  }

  // The end of the load: no new requests, probes or reconnects. The connections stay as they are
  // until the probes in flight have their answer (or their timeout), so that the last probes
  // see the load too, and not its end.
  void Stop() {
    stopping_ = true;
    idle_open_at_end_ = idle_open_;
  }

  void CloseAll() {
    for (auto& s : slots_) {
      if (s->kind == Kind::kFlood && s->busy) ++flood_in_flight_at_end_;
      s->busy = false;
      Close(s.get());
    }
  }

  int WaitMillis(double now, double next_sample) const {
    double until = stopping_ ? now + 0.1 : end_;
    if (!timers_.empty()) until = std::min(until, timers_.top().at);
    if (o_.watch_pid > 0) until = std::min(until, next_sample);
    if (!stopping_ && o_.flood_rps > 0 && (pending_ == 0 || !free_flood_.empty()))
      until = std::min(until, start_ + (scheduled_ + 1) / o_.flood_rps);
    return std::max(0, static_cast<int>(std::ceil((until - now) * 1000)));
  }

  void Sample() {
    const ProcessSample p = ReadStatus(o_.watch_pid);
    if (p.rss_kb < 0) {
      watched_gone_ = true;
      return;
    }
    if (rss_start_kb_ < 0) rss_start_kb_ = p.rss_kb;
    rss_max_kb_ = std::max(rss_max_kb_, p.rss_kb);
    rss_end_kb_ = p.rss_kb;
    threads_max_ = std::max(threads_max_, p.threads);
  }

  void Report(double elapsed) {
    JsonWriter w(!o_.json);
    w.StartObject();
    w.Key("duration_s");  // of the load
    w.Double(o_.duration);
    w.Key("elapsed_s");  // with the wait for the last probes
    w.Double(elapsed);
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    w.Key("tool_cpu_s");  // this tool's own CPU time: what it took from the shared cores
    w.Double(ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
             ru.ru_stime.tv_usec * 1e-6);
    if (o_.idle > 0) {
      w.Key("idle");
      w.StartObject();
      w.Key("slots");
      w.Int(o_.idle);
      w.Key("sources");
      w.Int(o_.idle_from ? o_.idle_sources : 0);
      w.Key("path");
      w.Str(o_.idle_path);
      w.Key("connects");
      w.Int(idle_connects_);
      w.Key("reconnects");
      w.Int(idle_connects_ - o_.idle);
      w.Key("open_max");
      w.Int(idle_open_max_);
      w.Key("open_at_end");
      w.Int(idle_open_at_end_);
      w.Key("closed_by_server");
      w.Int(idle_closed_by_server_);
      w.Key("closed_without_answer");  // of those, closed (or reset) without a status line
      w.Int(idle_closed_silently_);
      w.Key("connect_errors");
      WriteCounts(w, idle_connect_errors_);
      w.Key("statuses");  // what the server answered to half requests
      WriteCounts(w, idle_statuses_);
      w.Key("answer_s");  // connect() to the status line of that answer
      WriteSummary(w, idle_answer_);
      w.Key("life_s");  // connected to closed by the server
      WriteSummary(w, idle_life_);
      w.EndObject();
    }
    if (o_.flood_rps > 0) {
      w.Key("flood");
      w.StartObject();
      w.Key("target_rps");
      w.Double(o_.flood_rps);
      w.Key("paths");
      w.StartArray();
      for (const std::string& p : o_.flood_paths) w.Str(p);
      w.EndArray();
      w.Key("conns");
      w.Int(o_.flood_conns);
      w.Key("new_connections");
      w.Bool(o_.flood_new_connections);
      w.Key("sent");
      w.Int(flood_sent_);
      long long answered = 0;
      for (const auto& [k, n] : flood_statuses_) answered += n;
      w.Key("answered");
      w.Int(answered);
      w.Key("achieved_rps");
      w.Double(answered / o_.duration);
      w.Key("not_sent");  // fell due while every connection waited for an answer
      w.Int(flood_not_sent_);
      w.Key("in_flight_at_end");
      w.Int(flood_in_flight_at_end_);
      w.Key("connects");
      w.Int(flood_connects_);
      w.Key("statuses");
      WriteCounts(w, flood_statuses_);
      w.Key("errors");
      WriteCounts(w, flood_errors_);
      w.Key("latency_s");
      WriteSummary(w, flood_latency_);
      w.EndObject();
    }
    w.Key("probes");
    w.StartArray();
    for (size_t i = 0; i < o_.probes.size(); ++i) {
      const ProbeStats& p = probe_stats_[i];
      long long failures = 0;
      for (const auto& [k, n] : p.failures) failures += n;
      w.StartObject();
      w.Key("target");
      w.Str(o_.probes[i].host + o_.probes[i].path);
      w.Key("count");
      w.Int(p.count);
      w.Key("ok");
      w.Int(p.count - failures);
      w.Key("failures");
      w.Int(failures);
      w.Key("failure_reasons");
      WriteCounts(w, p.failures);
      w.Key("statuses");
      WriteCounts(w, p.statuses);
      w.Key("slow");  // failed, or slower than --probe_slo
      w.Int(p.slow);
      w.Key("latency_s");  // connect() to the last byte, over the probes that got an answer
      WriteSummary(w, p.latency);
      w.EndObject();
    }
    w.EndArray();
    if (o_.watch_pid > 0) {
      w.Key("process");
      w.StartObject();
      w.Key("pid");
      w.Int(o_.watch_pid);
      w.Key("alive_at_end");
      w.Bool(!watched_gone_);
      w.Key("rss_kb_start");
      w.Int(rss_start_kb_);
      w.Key("rss_kb_max");
      w.Int(rss_max_kb_);
      w.Key("rss_kb_end");
      w.Int(rss_end_kb_);
      w.Key("threads_max");
      w.Int(threads_max_);
      w.Key("cpu_s");  // utime + stime over the run
      w.Double(ReadCpuSeconds(o_.watch_pid) - cpu_start_);
      w.EndObject();
    }
    w.EndObject();
    printf("%s\n", w.str().c_str());
  }

  struct ProbeStats {
    long long count = 0, slow = 0;
    std::map<std::string, long long> failures, statuses;
    std::vector<double> latency;
  };

  const Options& o_;
  int epfd_ = -1;
  double start_ = 0, end_ = 0;
  bool stopping_ = false;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;

  long long idle_connects_ = 0, idle_closed_by_server_ = 0, idle_closed_silently_ = 0,
            idle_open_ = 0, idle_open_max_ = 0, idle_open_at_end_ = 0;
  std::map<std::string, long long> idle_connect_errors_, idle_statuses_;
  std::vector<double> idle_answer_, idle_life_;

  std::vector<Slot*> free_flood_;
  long long scheduled_ = 0, pending_ = 0, flood_sent_ = 0, flood_not_sent_ = 0, flood_connects_ = 0,
            flood_in_flight_at_end_ = 0;
  std::map<std::string, long long> flood_statuses_, flood_errors_;
  std::vector<double> flood_latency_;

  int probes_in_flight_ = 0;
  std::vector<ProbeStats> probe_stats_;

  double cpu_start_ = NAN;
  long rss_start_kb_ = -1, rss_max_kb_ = -1, rss_end_kb_ = -1, threads_max_ = -1;
  bool watched_gone_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (std::optional<std::string> err = ParseFlags(argc, argv, &o)) {
    const bool help = err->rfind("usage:", 0) == 0;
    fprintf(help ? stdout : stderr, "%s%s", help ? "" : "web_load: ", err->c_str());
    if (!help) fprintf(stderr, "\n%s", kUsage);
    return help ? 0 : 2;
  }
  signal(SIGPIPE, SIG_IGN);
  // 256 idle connections, the flood's and the probes' need more descriptors than a default
  // soft limit of 1024 may leave when --idle is large.
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  Load load(o);
  return load.Run();
}
