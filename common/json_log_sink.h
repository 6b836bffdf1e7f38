// -log_format=json: every glog line as one JSON object on stderr, in the shape Kubernetes
// components write with --logging-format=json (k8s.io/component-base/logs/json), so log stacks
// (Loki, Elasticsearch, Cloud Logging) parse ours like theirs:
//
//   {"ts":1715940000123.456,"caller":"controller/node_writer.cc:203",
//    "msg":"set status=presure","v":0,"node":"n1","reason":"cpu 95 > 80"}        (one line)
//
//   ts      milliseconds since the epoch, a float (component-base's epochMillisTimeEncoder)
//   caller  the source file's folder and name, and the line (zap's ShortCallerEncoder)
//   msg     the message text, without the fields block (common/log_fields.h)
//   v       the verbosity, on INFO and WARNING lines only: 0, or the "v" field of a VLOG line.
//           ERROR and FATAL lines have no "v", which is how klog's JSON marks an error (its
//           warnings are info lines at v 0 too)
//   ...     each field as a top-level key, in order; numbers and booleans as JSON values; a
//           field named like one of the keys above gets a trailing '_'
//   err     the "err" field, last (as klog's ErrorS writes it)
//
// It is a google::LogSink, not a second logging path: LOG, VLOG, CHECK and glog's FATAL handling
// stay as they are, and UseJsonLogs turns glog's own text output off.
#pragma once

#include <glog/logging.h>

#include <string>
#include <string_view>

#include "common/mutex.h"
#include "common/status.h"

namespace ds {

enum class LogFormat { kText, kJson };

// "text" or "json"; anything else is an error that names `flag`.
StatusOr<LogFormat> ParseLogFormat(std::string_view value, std::string_view flag);

// One line (without the newline) for a message glog hands a sink. Pure.
std::string FormatJsonLogLine(google::LogSeverity severity, std::string_view full_filename,
                              int line, double unix_seconds, std::string_view message);

// Writes each message as one line to a file descriptor with a single write(2), so lines from
// different threads never interleave and nothing is buffered: a line is out when send returns,
// before a FATAL aborts, and nothing is left to flush at exit. Thread-safe.
class JsonLogSink : public google::LogSink {
 public:
  explicit JsonLogSink(int fd) : fd_(fd) {}
  void send(google::LogSeverity severity, const char* full_filename, const char* base_filename,
            int line, const google::LogMessageTime& time, const char* message,
            size_t message_len) override;

 private:
  const int fd_;
  Mutex mu_;  // one line at a time, even where write(2) would split a long one
};

// From now on every glog line goes to stderr as JSON through one JsonLogSink (which lives to the
// end of the process: glog may log from any thread until exit), and glog writes neither its text
// lines to stderr nor log files. Call once, early in main; not thread-safe against concurrent
// calls of itself.
void UseJsonLogs();

}  // namespace ds
