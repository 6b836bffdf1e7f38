// HTTP helpers shared by the simulator's handlers (sim_server.cc, sim_server_pods.cc).
#pragma once

#include <civetweb.h>
#include <rapidjson/document.h>

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "common/json_util.h"
#include "common/label_selector.h"
#include "test/sim/sim_store.h"

namespace sim {

// Buffers live on the heap: CivetWeb runs handlers on threads with small stacks, and these
// helpers are inlined many times into the handlers' frames (under AddressSanitizer, each copy of
// a stack buffer keeps its own slot: the simulator's worker threads overflowed).
inline std::string QueryParam(const std::string& query, const char* name) {
  std::string buf(4096, '\0');
  int n = mg_get_var(query.c_str(), query.size(), name, buf.data(), buf.size());
  buf.resize(n >= 0 ? static_cast<size_t>(n) : 0);
  return buf;
}

// What the server does with a connection after an answer; mg_start's user data.
struct ConnectionPolicy {
  bool keep_alive = false;
};

inline void Send(mg_connection* conn, int code, const std::string& body,
                 const std::string& content_type = "application/json",
                 const std::string& extra = "") {
  // Without keep-alive CivetWeb closes the connection after the answer: say so, or an HTTP/1.1
  // client sends its next request on it and finds it closed (urllib3: RemoteDisconnected).
  const auto* policy = static_cast<const ConnectionPolicy*>(mg_get_user_data(mg_get_context(conn)));
  const bool close = policy == nullptr || !policy->keep_alive;
  std::string head = "HTTP/1.1 " + std::to_string(code) + " " +
                     mg_get_response_code_text(conn, code) + "\r\nContent-Type: " + content_type +
                     "\r\nContent-Length: " + std::to_string(body.size()) +
                     "\r\nCache-Control: no-cache, private\r\n" +
                     (close ? "Connection: close\r\n" : "") + extra + "\r\n";
  mg_write(conn, head.data(), head.size());
  mg_write(conn, body.data(), body.size());
}

inline void SendError(mg_connection* conn, const ApiError& e) { Send(conn, e.code, StatusJson(e)); }

// Reads straight into the string, for the same reason.
inline std::string ReadBody(mg_connection* conn) {
  std::string body;
  for (;;) {
    const size_t at = body.size();
    body.resize(at + 16384);
    const int n = mg_read(conn, body.data() + at, 16384);
    body.resize(at + static_cast<size_t>(n > 0 ? n : 0));
    if (n <= 0 || body.size() > (8u << 20)) break;
  }
  return body;
}

// "1d", "5h", "3m", "42s" like kubectl's age column.
inline std::string Age(const std::string& ts) {
  struct tm tm {};
  if (strptime(ts.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm) == nullptr) return "<unknown>";
  long s = static_cast<long>(time(nullptr) - timegm(&tm));
  if (s < 0) s = 0;
  if (s < 120) return std::to_string(s) + "s";
  if (s < 7200) return std::to_string(s / 60) + "m";
  if (s < 172800) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

// The start of a server-side Table up to its metadata: resourceVersion and continue when not empty.
inline void StartTable(ds::JsonWriter& w, const std::string& rv, const std::string& cont) {
  w.StartObject();
  w.Key("kind");
  w.String("Table");
  w.Key("apiVersion");
  w.String("meta.k8s.io/v1");
  w.Key("metadata");
  w.StartObject();
  if (!rv.empty()) {
    w.Key("resourceVersion");
    ds::WriteString(w, rv);
  }
  if (!cont.empty()) {
    w.Key("continue");
    ds::WriteString(w, cont);
  }
  w.EndObject();
}

// One row of a server-side Table: its cells, and the object's metadata as PartialObjectMetadata.
inline void WriteTableRow(ds::JsonWriter& w, const std::vector<std::string>& cells,
                          const rapidjson::Value& meta) {
  w.StartObject();
  w.Key("cells");
  w.StartArray();
  for (const auto& c : cells) ds::WriteString(w, c);
  w.EndArray();
  w.Key("object");
  w.StartObject();
  w.Key("kind");
  w.String("PartialObjectMetadata");
  w.Key("apiVersion");
  w.String("meta.k8s.io/v1");
  w.Key("metadata");
  meta.Accept(w);
  w.EndObject();
  w.EndObject();
}

// A column of a server-side Table: its name and priority (0: shown, 1: only with -o wide).
struct Column {
  const char* name;
  int priority;
};

inline void WriteColumnDefs(ds::JsonWriter& w, const std::vector<Column>& cols) {
  w.Key("columnDefinitions");
  w.StartArray();
  for (const auto& c : cols) {
    w.StartObject();
    w.Key("name");
    w.String(c.name);
    w.Key("type");
    w.String("string");
    w.Key("format");
    w.String(std::string(c.name) == "Name" ? "name" : "");
    w.Key("description");
    w.String("");
    w.Key("priority");
    w.Int(c.priority);
    w.EndObject();
  }
  w.EndArray();
}

// Go's strconv.ParseBool, which the API server uses for query flags.
inline bool ParseBool(const std::string& v) {
  return v == "1" || v == "t" || v == "T" || v == "true" || v == "TRUE" || v == "True";
}

// The labelSelector query parameter; nullopt (after answering 400) when it does not parse.
inline std::optional<ds::LabelSelector> LabelSelectorParam(mg_connection* conn,
                                                           const std::string& query) {
  auto sel = ds::LabelSelector::Parse(QueryParam(query, "labelSelector"));
  if (!sel.ok()) {
    SendError(conn, ApiError{400, "BadRequest",
                             "unable to parse requirement: " + sel.status().message(), ""});
    return std::nullopt;
  }
  return std::move(*sel);
}

inline bool SendChunk(mg_connection* conn, const std::string& s) {
  return mg_send_chunk(conn, s.data(), static_cast<unsigned>(s.size())) > 0;
}

// Continue tokens carry the list's resourceVersion and the last name returned.
inline std::string MakeContinue(uint64_t rv, const std::string& last) {
  return std::to_string(rv) + ":" + last;
}

// A LIST's paging parameters: `limit` and the `continue` token, split into the list's
// resourceVersion (0: a first page) and the key to continue after.
struct ListPaging {
  size_t limit = 0;
  uint64_t list_rv = 0;
  std::string after;
};

// Reads them; nullopt after answering 400 (a token that is not ours) or 410 (a token older than
// the compaction point), in the API server's words.
inline std::optional<ListPaging> ListPagingParams(mg_connection* conn, const std::string& query,
                                                  uint64_t compacted_rv) {
  ListPaging p;
  if (std::string l = QueryParam(query, "limit"); !l.empty())
    p.limit = std::strtoul(l.c_str(), nullptr, 10);
  const std::string cont = QueryParam(query, "continue");
  if (cont.empty()) return p;
  const auto colon = cont.find(':');
  if (colon == std::string::npos) {
    SendError(conn, ApiError{400, "BadRequest", "continue key is not valid", ""});
    return std::nullopt;
  }
  const uint64_t crv = std::strtoull(cont.substr(0, colon).c_str(), nullptr, 10);
  if (crv < compacted_rv) {
    SendError(conn, ApiError{410, "Expired",
                             "The provided continue parameter is too old to display a consistent "
                             "list result. You can start a new list without the continue "
                             "parameter.",
                             ""});
    return std::nullopt;
  }
  p.after = cont.substr(colon + 1);
  p.list_rv = crv;
  return p;
}

}  // namespace sim
