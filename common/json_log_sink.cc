#include "common/json_log_sink.h"

#include <unistd.h>

#include <cerrno>
#include <vector>

#include "common/json_util.h"
#include "common/log_fields.h"

namespace ds {
namespace {

// "controller/node_writer.cc:203": the last folder and the file, as zap's ShortCallerEncoder.
std::string Caller(std::string_view path, int line) {
  size_t cut = path.rfind('/');
  if (cut != std::string_view::npos && cut > 0) {
    const size_t folder = path.rfind('/', cut - 1);
    path.remove_prefix(folder == std::string_view::npos ? 0 : folder + 1);
  }
  return std::string(path) + ":" + std::to_string(line);
}

bool Reserved(std::string_view key) {
  return key == "ts" || key == "caller" || key == "msg" || key == "v";
}

// The verbosity a "v" field gives, or -1 if it is no small non-negative integer.
int Verbosity(const LogField& f) {
  if (!f.bare || f.value.empty() || f.value.size() > 2) return -1;
  int v = 0;
  for (char c : f.value) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

void WriteField(JsonWriter& w, const LogField& f) {
  if (f.bare) {  // a JSON number or boolean, as SplitLogFields checked
    w.RawValue(
        f.value.data(), f.value.size(),
        f.value == "true" || f.value == "false" ? rapidjson::kTrueType : rapidjson::kNumberType);
  } else {
    WriteString(w, ValidUtf8(f.value));
  }
}

}  // namespace

StatusOr<LogFormat> ParseLogFormat(std::string_view value, std::string_view flag) {
  if (value == "text") return LogFormat::kText;
  if (value == "json") return LogFormat::kJson;
  return Status::InvalidArgument("-" + std::string(flag) + " must be text or json, not \"" +
                                 std::string(value) + "\"");
}

std::string FormatJsonLogLine(google::LogSeverity severity, std::string_view full_filename,
                              int line, double unix_seconds, std::string_view message) {
  std::string_view text;
  std::vector<LogField> fields;
  SplitLogFields(message, &text, &fields);
  const bool error = severity >= google::GLOG_ERROR;
  int v = 0;
  for (const LogField& f : fields)
    if (f.key == "v" && Verbosity(f) >= 0) v = Verbosity(f);

  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  w.Key("ts");
  w.Double(unix_seconds * 1000);
  w.Key("caller");
  WriteString(w, ValidUtf8(Caller(full_filename, line)));
  w.Key("msg");
  WriteString(w, ValidUtf8(text));
  if (!error) {
    w.Key("v");
    w.Int(v);
  }
  for (const LogField& f : fields) {
    if (f.key == "err") continue;                     // last
    if (f.key == "v" && Verbosity(f) >= 0) continue;  // the "v" above (none on an error line)
    WriteString(w, Reserved(f.key) ? f.key + "_" : f.key);
    WriteField(w, f);
  }
  for (const LogField& f : fields) {
    if (f.key != "err") continue;
    w.Key("err");
    WriteField(w, f);
  }
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

void JsonLogSink::send(google::LogSeverity severity, const char* full_filename,
                       const char* /*base_filename*/, int line, const google::LogMessageTime& time,
                       const char* message, size_t message_len) {
  // LogMessageTime's timestamp() and usec() are the wall clock when the message was made.
  const double seconds =
      static_cast<double>(time.timestamp()) + static_cast<double>(time.usec()) / 1e6;
  std::string out = FormatJsonLogLine(severity, full_filename == nullptr ? "" : full_filename, line,
                                      seconds, std::string_view(message, message_len)) +
                    "\n";
  // No LOG or CHECK in here: glog holds its locks while it calls a sink.
  MutexLock l(&mu_);
  for (size_t done = 0; done < out.size();) {
    const ssize_t n = ::write(fd_, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // stderr is gone: nothing else could report it
    done += static_cast<size_t>(n);
  }
}

void UseJsonLogs() {
  // Leaked on purpose: other threads may still log while static destructors run at exit.
  static JsonLogSink* const sink = new JsonLogSink(STDERR_FILENO);
  // glog's text to stderr off: not at any severity (FATAL included: the sink writes its line
  // before glog aborts), and no log files instead ("" = no file for that severity).
  FLAGS_logtostderr = false;
  FLAGS_alsologtostderr = false;
  FLAGS_stderrthreshold = google::NUM_SEVERITIES;
  for (int s = 0; s < google::NUM_SEVERITIES; ++s) google::SetLogDestination(s, "");
  google::AddLogSink(sink);
}

}  // namespace ds
