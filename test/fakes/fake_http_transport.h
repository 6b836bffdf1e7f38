// Scripted HttpTransport that records every request it is given (the fake promised by
// common/http_transport.h). Answers come from a queue of responses or errors, then from an
// optional handler; a streamed body is handed to on_data in chunks of a chosen size, so tests
// can cut watch events at any byte. Honours send_if, cancelled() and max_body_bytes as
// CurlTransport does. Thread-safe: the script and the records are guarded by one mutex, and
// send_if, cancelled, on_data and the handler are called without it held.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "common/http_transport.h"
#include "common/mutex.h"

namespace ds {

class FakeHttpTransport : public HttpTransport {
 public:
  // One request as the transport got it.
  struct Recorded {
    HttpRequest request;         // a copy, without send_if (it captures the caller's state)
    bool streamed = false;       // came through Stream rather than Do
    bool had_send_if = false;    // request.send_if was set
    bool send_if_result = true;  // what send_if returned (true when not set)
    // False when nothing left: send_if said no, or the stream was cancelled before sending.
    bool sent = false;

    // Value of the first header "Name: value" with this name (case-insensitive), or nullopt.
    std::optional<std::string> Header(std::string_view name) const {
      for (const auto& h : request.headers) {
        size_t colon = h.find(':');
        if (colon != name.size()) continue;
        bool same = std::equal(name.begin(), name.end(), h.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        });
        if (!same) continue;
        size_t v = h.find_first_not_of(' ', colon + 1);
        return v == std::string::npos ? std::string() : h.substr(v);
      }
      return std::nullopt;
    }
  };

  // Answers requests the queue has nothing for. Called without the lock held.
  using Handler = std::function<StatusOr<HttpResponse>(const HttpRequest&)>;

  // Queues an answer. Headers are given with lower-case names, as the real transport reports.
  void AddResponse(int status, std::string body,
                   std::vector<std::pair<std::string, std::string>> headers = {}) {
    HttpResponse r;
    r.status = status;
    r.body = std::move(body);
    r.headers = std::move(headers);
    MutexLock l(&mu_);
    script_.emplace_back(std::move(r));
  }
  // Queues a transport error (no HTTP answer: connect, TLS, timeout).
  void AddError(Status st) {
    MutexLock l(&mu_);
    script_.emplace_back(std::move(st));
  }
  void SetHandler(Handler h) {
    MutexLock l(&mu_);
    handler_ = std::move(h);
  }
  // Stream hands a 2xx body to on_data this many bytes at a time; 0 (the default): all at once.
  void SetStreamChunkBytes(size_t bytes) {
    MutexLock l(&mu_);
    chunk_bytes_ = bytes;
  }

  std::vector<Recorded> requests() const {
    MutexLock l(&mu_);
    return requests_;
  }
  // Only those that left (send_if allowed them, not cancelled first).
  std::vector<Recorded> sent_requests() const {
    MutexLock l(&mu_);
    std::vector<Recorded> out;
    for (const auto& r : requests_)
      if (r.sent) out.push_back(r);
    return out;
  }
  size_t request_count() const {
    MutexLock l(&mu_);
    return requests_.size();
  }
  // REQUIRES: request_count() > 0.
  Recorded last_request() const {
    MutexLock l(&mu_);
    return requests_.back();
  }
  // Scripted answers not consumed yet.
  size_t pending() const {
    MutexLock l(&mu_);
    return script_.size();
  }

  StatusOr<HttpResponse> Do(const HttpRequest& req) override {
    if (!Admit(req, /*streamed=*/false, /*cancelled=*/nullptr)) return NotSent(req);
    ASSIGN_OR_RETURN(HttpResponse resp, NextAnswer(req));
    if (resp.body.size() > req.max_body_bytes)
      return Status::Unavailable(req.method + " " + Path(req) + ": response body exceeds " +
                                 std::to_string(req.max_body_bytes) + " bytes");
    return resp;
  }

  StatusOr<StreamResult> Stream(const HttpRequest& req,
                                const std::function<bool(std::string_view)>& on_data,
                                const std::function<bool()>& cancelled) override {
    if (!Admit(req, /*streamed=*/true, &cancelled)) {
      if (cancelled && cancelled()) return Status::Cancelled("stream cancelled");
      return NotSent(req);
    }
    ASSIGN_OR_RETURN(HttpResponse resp, NextAnswer(req));
    StreamResult result;
    result.status = resp.status;
    result.headers = std::move(resp.headers);
    if (resp.status < 200 || resp.status >= 300) {
      result.error_body = std::move(resp.body);  // as the real one: error bodies are collected
      return result;
    }
    size_t chunk;
    {
      MutexLock l(&mu_);
      chunk = chunk_bytes_;
    }
    std::string_view body = resp.body;
    if (chunk == 0) chunk = std::max<size_t>(body.size(), 1);
    for (size_t at = 0; at < body.size(); at += chunk) {
      if (cancelled && cancelled()) return Status::Cancelled("stream cancelled");
      if (!on_data(body.substr(at, chunk))) return result;  // the reader stopped: OK
    }
    return result;
  }

 private:
  using Answer = std::variant<HttpResponse, Status>;

  static std::string Path(const HttpRequest& req) { return req.url.substr(0, req.url.find('?')); }
  static Status NotSent(const HttpRequest& req) {
    return Status::Cancelled(req.method + " " + Path(req) +
                             ": not sent (its precondition no longer holds)");
  }

  // Records the request; returns whether it is sent (send_if allows it and, for a stream, it
  // was not cancelled before it left).
  bool Admit(const HttpRequest& req, bool streamed, const std::function<bool()>* cancelled) {
    Recorded rec;
    rec.request = req;
    rec.streamed = streamed;
    rec.had_send_if = static_cast<bool>(req.send_if);
    if (cancelled != nullptr && *cancelled && (*cancelled)()) {
      rec.sent = false;
    } else {
      rec.send_if_result = rec.had_send_if ? req.send_if() : true;
      rec.sent = rec.send_if_result;
    }
    rec.request.send_if = nullptr;  // may capture objects that end with the call
    MutexLock l(&mu_);
    requests_.push_back(std::move(rec));
    return requests_.back().sent;
  }

  StatusOr<HttpResponse> NextAnswer(const HttpRequest& req) {
    Handler handler;
    {
      MutexLock l(&mu_);
      if (!script_.empty()) {
        Answer a = std::move(script_.front());
        script_.pop_front();
        if (auto* st = std::get_if<Status>(&a)) return *st;
        return std::get<HttpResponse>(std::move(a));
      }
      handler = handler_;
    }
    if (handler) return handler(req);
    return Status::Internal("FakeHttpTransport: nothing scripted for " + req.method + " " +
                            req.url);
  }

  mutable Mutex mu_;
  std::deque<Answer> script_ GUARDED_BY(mu_);
  Handler handler_ GUARDED_BY(mu_);
  size_t chunk_bytes_ GUARDED_BY(mu_) = 0;
  std::vector<Recorded> requests_ GUARDED_BY(mu_);
};

}  // namespace ds
