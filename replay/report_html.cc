#include "replay/report_html.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include "common/json_util.h"
#include "common/rfc3339.h"

namespace ds {

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

struct MarkDoc {
  double start = 0, end = 0;  // end: `to` while still marked
  bool open = false;
  std::vector<std::string> rules;
};

struct NodeDoc {
  std::string name;
  std::vector<MarkDoc> marks;
  double marked_seconds = 0;
  double cap_hits = -1;
};

struct ResultDoc {
  double from = 0, to = 0, step = 0;
  std::vector<std::string> rules;
  std::vector<NodeDoc> nodes;
  const rapidjson::Value* totals = nullptr;
};

Status Time(const rapidjson::Value& v, const char* name, const std::string& where, double* out) {
  const rapidjson::Value* m = JsonMember(v, name);
  if (!m || !m->IsString() || !ParseRfc3339(m->GetString(), out))
    return Status::InvalidArgument(where + name + ": want an RFC 3339 time");
  return Status::OK();
}

Status Names(const rapidjson::Value* v, const std::string& where, std::vector<std::string>* out) {
  if (!v) return Status::OK();
  if (!v->IsArray()) return Status::InvalidArgument(where + ": want an array of names");
  for (const rapidjson::Value& n : v->GetArray()) {
    if (!n.IsString()) return Status::InvalidArgument(where + ": want an array of names");
    out->emplace_back(n.GetString(), n.GetStringLength());
  }
  return Status::OK();
}

double Number(const rapidjson::Value* v, double def) {
  return v && v->IsNumber() ? v->GetDouble() : def;
}

Status ParseResult(const rapidjson::Value& root, const std::string& where, ResultDoc* out) {
  if (!root.IsObject()) return Status::InvalidArgument(where + "want an object");
  RETURN_NOT_OK(Time(root, "from", where, &out->from));
  RETURN_NOT_OK(Time(root, "to", where, &out->to));
  if (out->to < out->from) return Status::InvalidArgument(where + "to is before from");
  out->step = Number(JsonMember(root, "step_seconds"), 0);
  RETURN_NOT_OK(Names(JsonMember(root, "rules"), where + "rules", &out->rules));
  const rapidjson::Value* nodes = JsonMember(root, "nodes");
  if (!nodes || !nodes->IsObject()) return Status::InvalidArgument(where + "nodes: want an object");
  for (const auto& n : nodes->GetObject()) {
    NodeDoc node;
    node.name.assign(n.name.GetString(), n.name.GetStringLength());
    std::string at = where + "nodes." + node.name;
    const rapidjson::Value* marks = JsonMember(n.value, "marks");
    if (!marks || !marks->IsArray()) return Status::InvalidArgument(at + ".marks: want an array");
    for (const rapidjson::Value& m : marks->GetArray()) {
      MarkDoc mark;
      RETURN_NOT_OK(Time(m, "start", at + ".marks[].", &mark.start));
      const rapidjson::Value* end = JsonMember(m, "end");
      if (!end || end->IsNull()) {
        mark.open = true;
        mark.end = out->to;
      } else {
        RETURN_NOT_OK(Time(m, "end", at + ".marks[].", &mark.end));
      }
      if (mark.end < mark.start)
        return Status::InvalidArgument(at + ": a mark ends before it starts");
      RETURN_NOT_OK(Names(JsonMember(m, "rules"), at + ".marks[].rules", &mark.rules));
      node.marks.push_back(std::move(mark));
    }
    std::sort(node.marks.begin(), node.marks.end(),
              [](const MarkDoc& a, const MarkDoc& b) { return a.start < b.start; });
    node.marked_seconds = Number(JsonMember(n.value, "marked_seconds"), 0);
    node.cap_hits = Number(JsonMember(n.value, "cap_hits"), -1);
    out->nodes.push_back(std::move(node));
  }
  const rapidjson::Value* totals = JsonMember(root, "totals");
  if (totals && totals->IsObject()) out->totals = totals;
  return Status::OK();
}

StatusOr<rapidjson::Document> Parse(const std::string& json) {
  rapidjson::Document d;
  d.Parse(json.c_str(), json.size());
  if (d.HasParseError()) return Status::InvalidArgument("replay.json: " + JsonParseError(d));
  return d;
}

NodeStats StatsOf(const NodeDoc& n) {
  NodeStats s;
  s.name = n.name;
  s.marks = n.marks.size();
  s.marked_seconds = n.marked_seconds;
  s.cap_hits = n.cap_hits;
  for (size_t i = 0; i < n.marks.size(); ++i) {
    s.longest_seconds = std::max(s.longest_seconds, n.marks[i].end - n.marks[i].start);
    if (i > 0 && !n.marks[i - 1].open && n.marks[i].start - n.marks[i - 1].end <= kFlapSeconds)
      ++s.flaps;
  }
  return s;
}

std::vector<NodeStats> StatsOf(const ResultDoc& doc) {
  std::vector<NodeStats> out;
  for (const NodeDoc& n : doc.nodes)
    if (!n.marks.empty()) out.push_back(StatsOf(n));
  std::stable_sort(out.begin(), out.end(), [](const NodeStats& a, const NodeStats& b) {
    if (a.marked_seconds != b.marked_seconds) return a.marked_seconds > b.marked_seconds;
    return a.name < b.name;
  });
  return out;
}

// How many nodes carried a mark that `rule` held at its start ("": any mark), as a step function:
// (time, count from then on), time ascending, starting at `from` with 0.
std::vector<std::pair<double, int>> MarkedOverTime(const ResultDoc& doc, const std::string& rule) {
  std::vector<std::pair<double, int>> events;
  for (const NodeDoc& n : doc.nodes)
    for (const MarkDoc& m : n.marks) {
      if (!rule.empty() && std::find(m.rules.begin(), m.rules.end(), rule) == m.rules.end())
        continue;
      events.emplace_back(m.start, +1);
      if (!m.open) events.emplace_back(m.end, -1);
    }
  std::sort(events.begin(), events.end());  // a mark's end before another's start at one time
  std::vector<std::pair<double, int>> out = {{doc.from, 0}};
  int count = 0;
  for (const auto& [t, d] : events) {
    count += d;
    if (out.back().first == t)
      out.back().second = count;
    else
      out.emplace_back(t, count);
  }
  return out;
}

int MaxOf(const std::vector<std::pair<double, int>>& points) {
  int m = 0;
  for (const auto& p : points) m = std::max(m, p.second);
  return m;
}

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string DurationText(double s) {
  if (!std::isfinite(s) || s < 0) return "&mdash;";
  long long t = std::llround(s);
  char buf[64];
  if (t < 60)
    std::snprintf(buf, sizeof buf, "%llds", t);
  else if (t < 3600)
    std::snprintf(buf, sizeof buf, "%lldm %02llds", t / 60, t % 60);
  else if (t < 86400)
    std::snprintf(buf, sizeof buf, "%lldh %02lldm", t / 3600, t % 3600 / 60);
  else
    std::snprintf(buf, sizeof buf, "%lldd %02lldh", t / 86400, t % 86400 / 3600);
  return buf;
}

std::string Bytes(double b) {
  if (!std::isfinite(b)) return "&mdash;";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::fabs(b) >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return Fixed(b, u == 0 ? 0 : 1) + " " + units[u];
}

std::string Cores(double c) { return std::isfinite(c) ? Fixed(c, 3) : "&mdash;"; }

// "3.2×" of the request, flagged when over it; "—" when either is unknown or nothing is requested.
std::string OverRequest(double used, double requested) {
  if (!std::isfinite(used) || !std::isfinite(requested) || requested <= 0) return "&mdash;";
  double r = used / requested;
  std::string text = Fixed(r, 2) + "&times;";
  return r > 1 ? "<span class=\"over\">" + text + "</span>" : text;
}

std::string Count(double v) { return v < 0 ? "&mdash;" : Fixed(v, 0); }

// A step line of `points` over [from, to], y from 0 to `max` (at least 1), `w` pixels wide.
std::string Chart(const std::string& title, const std::vector<std::pair<double, int>>& points,
                  double from, double to, int max, const std::string& line_class, double w = 720) {
  const double h = 140, left = 36, right = 8, top = 8, bottom = 20;
  max = std::max(max, 1);
  double span = to > from ? to - from : 1;
  auto x = [&](double t) {
    return left + (std::clamp(t, from, to) - from) / span * (w - left - right);
  };
  auto y = [&](int c) { return top + (1 - static_cast<double>(c) / max) * (h - top - bottom); };
  std::string path = "M" + Fixed(x(from), 1) + " " + Fixed(y(0), 1);
  for (const auto& [t, c] : points) path += " H" + Fixed(x(t), 1) + " V" + Fixed(y(c), 1);
  path += " H" + Fixed(x(to), 1);
  std::string s = "<div class=\"chart\"><h3>" + HtmlEscape(title) + "</h3>";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Fixed(w, 0) + "\" height=\"" +
       Fixed(h, 0) + "\" role=\"img\" data-max=\"" + std::to_string(MaxOf(points)) + "\">";
  s += "<title>" + HtmlEscape(title) + "</title>";
  s += "<line class=\"axis\" x1=\"" + Fixed(left, 0) + "\" y1=\"" + Fixed(y(0), 1) + "\" x2=\"" +
       Fixed(w - right, 0) + "\" y2=\"" + Fixed(y(0), 1) + "\"/>";
  s += "<text x=\"2\" y=\"" + Fixed(top + 10, 0) + "\">" + std::to_string(max) + "</text>";
  s += "<text x=\"2\" y=\"" + Fixed(y(0), 1) + "\">0</text>";
  s += "<text x=\"" + Fixed(left, 0) + "\" y=\"" + Fixed(h - 4, 0) + "\">" +
       HtmlEscape(FormatRfc3339(from)) + "</text>";
  s += "<text x=\"" + Fixed(w - right, 0) + "\" y=\"" + Fixed(h - 4, 0) +
       "\" text-anchor=\"end\">" + HtmlEscape(FormatRfc3339(to)) + "</text>";
  s += "<path class=\"line " + line_class + "\" d=\"" + path + "\"/></svg></div>";
  return s;
}

std::string Card(const std::string& value, const std::string& label) {
  return "<div class=\"card\"><div class=\"value\">" + value + "</div><div class=\"label\">" +
         label + "</div></div>";
}

double Total(const ResultDoc& doc, const char* name) {
  return doc.totals ? Number(JsonMember(*doc.totals, name), -1) : -1;
}

std::string Charts(const ResultDoc& doc, const std::string& line_class, const std::string& prefix) {
  std::string s = "<div class=\"charts\">";
  auto any = MarkedOverTime(doc, "");
  s += Chart(prefix + "marked nodes, any rule", any, doc.from, doc.to, MaxOf(any), line_class);
  for (const std::string& rule : doc.rules) {
    auto points = MarkedOverTime(doc, rule);
    s += Chart(prefix + "marked by " + rule, points, doc.from, doc.to, MaxOf(points), line_class);
  }
  return s + "</div>";
}

std::string NodesTable(const std::vector<NodeStats>& stats, const ResultDoc& doc) {
  std::string s =
      "<table class=\"grid nodes\"><thead><tr><th>node</th><th>marks</th>"
      "<th>marked time</th><th>flaps</th><th>herd-cap hits</th><th>longest mark</th>"
      "</tr></thead><tbody>";
  for (const NodeStats& n : stats) {
    s += "<tr><td>" + HtmlEscape(n.name) + "</td><td class=\"num\">" + std::to_string(n.marks) +
         "</td><td class=\"num\">" + DurationText(n.marked_seconds) + "</td><td class=\"num\">" +
         std::to_string(n.flaps) + "</td><td class=\"num\">" + Count(n.cap_hits) +
         "</td><td class=\"num\">" + DurationText(n.longest_seconds) + "</td></tr>";
  }
  s += "</tbody></table>";
  s += "<p class=\"muted\">" + std::to_string(stats.size()) + " of " +
       std::to_string(doc.nodes.size()) +
       " nodes were marked. A flap: a mark removed and set again within " +
       DurationText(kFlapSeconds) + ".</p>";
  return s;
}

std::string WorkloadsTable(const rapidjson::Value* workloads) {
  if (!workloads || !workloads->IsArray() || workloads->Empty())
    return "<p class=\"muted\">No workload figures (the rule file has no "
           "<code>rebalance.podUsage</code>, "
           "or no pod was listed).</p>";
  std::string s =
      "<table class=\"grid workloads\"><thead><tr><th>workload</th><th>CPU P95</th>"
      "<th>CPU request</th><th>of request</th><th>memory P95</th><th>memory request</th>"
      "<th>of request</th><th>share of hot node-time</th></tr></thead><tbody>";
  size_t n = 0;
  for (const rapidjson::Value& w : workloads->GetArray()) {
    if (n++ == kReportWorkloads) break;
    double cpu = Number(JsonMember(w, "cpu_p95_cores"), NAN);
    double cpu_req = Number(JsonMember(w, "cpu_request_cores"), NAN);
    double mem = Number(JsonMember(w, "memory_p95_bytes"), NAN);
    double mem_req = Number(JsonMember(w, "memory_request_bytes"), NAN);
    double share = Number(JsonMember(w, "hot_node_seconds_share"), NAN);
    s += "<tr><td>" + HtmlEscape(JsonString(w, "namespace")) + "/" +
         HtmlEscape(JsonString(w, "kind")) + "/" + HtmlEscape(JsonString(w, "name")) +
         "</td><td class=\"num\">" + Cores(cpu) + "</td><td class=\"num\">" + Cores(cpu_req) +
         "</td><td class=\"num\">" + OverRequest(cpu, cpu_req) + "</td><td class=\"num\">" +
         Bytes(mem) + "</td><td class=\"num\">" + Bytes(mem_req) + "</td><td class=\"num\">" +
         OverRequest(mem, mem_req) + "</td><td class=\"num\">" +
         (std::isfinite(share) ? Fixed(share * 100, 1) + " %" : "&mdash;") + "</td></tr>";
  }
  s += "</tbody></table><p class=\"muted\">The top " + std::to_string(kReportWorkloads) + " of " +
       std::to_string(workloads->Size()) +
       " workloads (all are in replay.json): P95 of one pod's real usage over the window against "
       "one pod's request; the share of hot node-time is the time its pods spent on marked "
       "nodes.</p>";
  return s;
}

std::string RebalanceSection(const rapidjson::Value* r) {
  if (!r || !r->IsObject()) return "";
  std::string s = "<h2>The rebalancer, estimated</h2><p class=\"note\">" +
                  HtmlEscape(JsonString(*r, "note")) + "</p>";
  if (const rapidjson::Value* missing = JsonMember(*r, "missing"); missing && missing->IsString())
    return s + "<p>Not estimated: " + HtmlEscape(missing->GetString()) + "</p>";
  const rapidjson::Value* episodes = JsonMember(*r, "episodes");
  if (!episodes || !episodes->IsArray() || episodes->Empty()) return s + "<p>No hot episode.</p>";
  s += "<table class=\"grid episodes\"><thead><tr><th>node</th><th>marked at</th><th>qualified</th>"
       "<th>would evict</th><th>held back</th></tr></thead><tbody>";
  for (const rapidjson::Value& e : episodes->GetArray()) {
    std::string pods, held;
    if (const rapidjson::Value* ev = JsonMember(e, "evictions"); ev && ev->IsArray())
      for (const rapidjson::Value& p : ev->GetArray()) {
        pods += (pods.empty() ? "" : "<br>") + HtmlEscape(JsonString(p, "namespace")) + "/" +
                HtmlEscape(JsonString(p, "pod"));
        // A later cycle's eviction (a limit held the plan short at first) says when.
        if (const std::string at = JsonString(p, "at");
            !at.empty() && at != JsonString(e, "qualified_at"))
          pods += " (at " + HtmlEscape(at) + ")";
      }
    if (const rapidjson::Value* hb = JsonMember(e, "held_back"); hb && hb->IsArray())
      for (const rapidjson::Value& p : hb->GetArray())
        held += (held.empty() ? "" : "<br>") + HtmlEscape(JsonString(p, "namespace")) + "/" +
                HtmlEscape(JsonString(p, "pod")) + " (" + HtmlEscape(JsonString(p, "limit")) + ")";
    const rapidjson::Value* q = JsonMember(e, "qualified_at");
    std::string qualified = q && q->IsString()
                                ? HtmlEscape(q->GetString())
                                : "no: " + HtmlEscape(JsonString(e, "qualification"));
    s += "<tr><td>" + HtmlEscape(JsonString(e, "node")) + "</td><td>" +
         HtmlEscape(JsonString(e, "start")) + "</td><td>" + qualified + "</td><td>" +
         (pods.empty() ? "&mdash;" : pods) + "</td><td>" + (held.empty() ? "&mdash;" : held) +
         "</td></tr>";
  }
  return s + "</tbody></table>";
}

std::string Pair(const rapidjson::Value* totals, const char* name, bool seconds) {
  const rapidjson::Value* v = totals ? JsonMember(*totals, name) : nullptr;
  if (!v || !v->IsArray() || v->Size() != 2 || !(*v)[0].IsNumber() || !(*v)[1].IsNumber())
    return "<td>&mdash;</td><td>&mdash;</td><td>&mdash;</td>";
  double a = (*v)[0].GetDouble(), b = (*v)[1].GetDouble();
  auto f = [&](double x) { return seconds ? DurationText(x) : Fixed(x, 0); };
  std::string diff = b == a ? "0" : (b > a ? "+" : "&minus;") + f(std::fabs(b - a));
  return "<td class=\"num\">" + f(a) + "</td><td class=\"num\">" + f(b) +
         "</td><td class=\"num\">" + diff + "</td>";
}

// Two charts side by side within a laptop's window (1280 pixels, margins and gaps included).
constexpr double kSideWidth = 560;

StatusOr<std::string> CompareSection(const rapidjson::Value* c, const ResultDoc& a) {
  if (!c) return std::string();
  if (!c->IsObject()) return Status::InvalidArgument("compare: want an object");
  std::vector<std::string> files;
  RETURN_NOT_OK(Names(JsonMember(*c, "files"), "compare.files", &files));
  if (files.size() != 2) return Status::InvalidArgument("compare.files: want two names");
  const rapidjson::Value* other = JsonMember(*c, "other");
  if (!other) return Status::InvalidArgument("compare.other: missing");
  ResultDoc b;
  RETURN_NOT_OK(ParseResult(*other, "compare.other.", &b));
  const rapidjson::Value* totals = JsonMember(*c, "totals");
  std::string fa = HtmlEscape(files[0]), fb = HtmlEscape(files[1]);
  std::string s = "<h2>Compare: " + fa + " and " + fb + "</h2>";
  s += "<table class=\"grid compare-totals\"><thead><tr><th></th><th>" + fa + "</th><th>" + fb +
       "</th><th>difference</th></tr></thead><tbody>";
  const std::pair<const char*, const char*> rows[] = {
      {"marks", "marks"},
      {"marked_node_seconds", "marked node-time"},
      {"max_marked_at_once", "most marked at once"},
      {"flaps", "flaps"},
      {"capped_node_seconds", "held back by the herd cap"}};
  for (const auto& [key, label] : rows) {
    bool seconds = std::string_view(key).ends_with("seconds");
    s += "<tr><th>" + std::string(label) + "</th>" + Pair(totals, key, seconds) + "</tr>";
  }
  s += "</tbody></table>";
  int max = std::max(MaxOf(MarkedOverTime(a, "")), MaxOf(MarkedOverTime(b, "")));
  s +=
      "<div class=\"side\">" +
      Chart(files[0] + ": marked nodes", MarkedOverTime(a, ""), a.from, a.to, max, "", kSideWidth) +
      Chart(files[1] + ": marked nodes", MarkedOverTime(b, ""), b.from, b.to, max, "b",
            kSideWidth) +
      "</div>";
  const rapidjson::Value* nodes = JsonMember(*c, "nodes");
  if (nodes && nodes->IsArray() && !nodes->Empty()) {
    s += "<h3>Nodes the two files mark differently</h3><table class=\"grid compare-nodes\"><thead>"
         "<tr><th>node</th><th>marks " +
         fa + "</th><th>marks " + fb + "</th><th>marked " + fa + "</th><th>marked " + fb +
         "</th></tr></thead><tbody>";
    for (const rapidjson::Value& n : nodes->GetArray()) {
      const rapidjson::Value* m = JsonMember(n, "marks");
      const rapidjson::Value* t = JsonMember(n, "marked_seconds");
      auto at = [](const rapidjson::Value* v, unsigned i) {
        return v && v->IsArray() && v->Size() == 2 && (*v)[i].IsNumber() ? (*v)[i].GetDouble()
                                                                         : NAN;
      };
      s += "<tr><td>" + HtmlEscape(JsonString(n, "name")) + "</td><td class=\"num\">" +
           Fixed(at(m, 0), 0) + "</td><td class=\"num\">" + Fixed(at(m, 1), 0) +
           "</td><td class=\"num\">" + DurationText(at(t, 0)) + "</td><td class=\"num\">" +
           DurationText(at(t, 1)) + "</td></tr>";
    }
    s += "</tbody></table>";
  } else {
    s += "<p>Both files mark the same nodes as often for as long.</p>";
  }
  return s;
}

}  // namespace

StatusOr<std::vector<NodeStats>> NodeStatsOf(const std::string& replay_json) {
  ASSIGN_OR_RETURN(rapidjson::Document d, Parse(replay_json));
  ResultDoc doc;
  RETURN_NOT_OK(ParseResult(d, "replay.json: ", &doc));
  return StatsOf(doc);
}

StatusOr<std::string> RenderReportHtml(const std::string& replay_json) {
  ASSIGN_OR_RETURN(rapidjson::Document d, Parse(replay_json));
  ResultDoc doc;
  RETURN_NOT_OK(ParseResult(d, "replay.json: ", &doc));
  std::vector<NodeStats> stats = StatsOf(doc);
  size_t flaps = 0;
  for (const NodeStats& n : stats) flaps += n.flaps;
  ASSIGN_OR_RETURN(std::string compare, CompareSection(JsonMember(d, "compare"), doc));

  std::string rules;
  for (const std::string& r : doc.rules) rules += (rules.empty() ? "" : ", ") + HtmlEscape(r);
  std::string s =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>dynamic-scheduler replay</title><style>";
  s += ReportCss();
  s += "</style></head><body><h1>What dynamic-scheduler would have done</h1>";
  s += "<p class=\"muted\">" + HtmlEscape(FormatRfc3339(doc.from)) + " to " +
       HtmlEscape(FormatRfc3339(doc.to)) + ", every " + DurationText(doc.step) +
       "; rules: " + (rules.empty() ? "&mdash;" : rules) + "</p>";
  s += "<div class=\"cards\">" + Card(Count(Total(doc, "marks")), "marks") +
       Card(DurationText(Total(doc, "marked_node_seconds")), "marked node-time") +
       Card(DurationText(Total(doc, "hot_marked_node_seconds")),
            "hot marked node-time (not yet at or below the clear threshold)") +
       Card(DurationText(Total(doc, "time_to_relief_median_seconds")),
            "time to relief, median (mark to clear threshold)") +
       Card(DurationText(Total(doc, "time_to_relief_p90_seconds")), "time to relief, 90 %") +
       Card(Count(Total(doc, "max_marked_at_once")), "most marked at once") +
       Card(std::to_string(flaps), "flaps") +
       Card(DurationText(Total(doc, "capped_node_seconds")), "held back by the herd cap") +
       Card(Count(Total(doc, "unmatched_series")), "series matching no node") + "</div>";
  s += "<h2>Marked nodes over time</h2>" + Charts(doc, "", "");
  s += "<h2>Nodes</h2>" + NodesTable(stats, doc);
  s += "<h2>Workloads: requests against real usage</h2>" +
       WorkloadsTable(JsonMember(d, "workloads"));
  s += RebalanceSection(JsonMember(d, "rebalance"));
  s += compare;
  s += "</body></html>\n";
  return s;
}

}  // namespace ds
