// HTTP front for Events, core/v1 and events.k8s.io/v1 (the state and semantics live in
// sim_events.cc; both APIs serve the same stored objects): create, get, delete, patch (the
// events.k8s.io/v1 series update client-go's recorder sends), list across or within namespaces
// with label and field selectors and paging, watch with
// the same framing, bookmarks and 410s as Nodes, and server-side Table output for kubectl with
// the API server's columns (pkg/printers/internalversion/printers.go printEvent).
#include <rapidjson/document.h>

#include <cctype>

#include "common/json_util.h"
#include "test/sim/sim_events.h"
#include "test/sim/sim_http.h"
#include "test/sim/sim_rbac.h"
#include "test/sim/sim_server.h"

namespace sim {
namespace {

// kubectl get events: LAST SEEN, TYPE, REASON, OBJECT, MESSAGE (-o wide adds the rest; priority 1).
const std::vector<Column> kEventColumns = {
    {"Last Seen", 0}, {"Type", 0},    {"Reason", 0},     {"Object", 0}, {"Subobject", 1},
    {"Source", 1},    {"Message", 0}, {"First Seen", 1}, {"Count", 1},  {"Name", 1}};

// A timestamp's age as the printers show it: "<unknown>" when unset. MicroTimes lose their
// fraction first (Age reads whole seconds).
std::string AgeOf(const rapidjson::Value* v) {
  if (v == nullptr || !v->IsString() || v->GetStringLength() == 0) return "<unknown>";
  std::string ts = v->GetString();
  if (auto dot = ts.find('.'); dot != std::string::npos) ts = ts.substr(0, dot) + "Z";
  return Age(ts);
}

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// printEvent with Wide (the server always sends every column).
std::vector<std::string> EventCells(const rapidjson::Value& d) {
  static const rapidjson::Value kEmpty(rapidjson::kObjectType);
  const auto& meta = d["metadata"];
  const rapidjson::Value* io = ds::JsonMember(d, "involvedObject");
  const rapidjson::Value* src = ds::JsonMember(d, "source");
  if (io == nullptr || !io->IsObject()) io = &kEmpty;
  if (src == nullptr || !src->IsObject()) src = &kEmpty;
  const rapidjson::Value* first_ts = ds::JsonMember(d, "firstTimestamp");
  std::string first = first_ts != nullptr && first_ts->IsString()
                          ? AgeOf(first_ts)
                          : AgeOf(ds::JsonMember(d, "eventTime"));
  const rapidjson::Value* last_ts = ds::JsonMember(d, "lastTimestamp");
  std::string last = last_ts != nullptr && last_ts->IsString() ? AgeOf(last_ts) : first;
  int64_t count = 0;
  if (const auto* c = ds::JsonMember(d, "count"); c && c->IsInt64()) count = c->GetInt64();
  if (const auto* series = ds::JsonMember(d, "series"); series && series->IsObject()) {
    last = AgeOf(ds::JsonMember(*series, "lastObservedTime"));
    if (const auto* c = ds::JsonMember(*series, "count"); c && c->IsInt64()) count = c->GetInt64();
  } else if (count == 0) {
    count = 1;  // singleton events of the new API have no count
  }
  std::string kind = ds::JsonString(*io, "kind");
  for (auto& ch : kind) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const std::string io_name = ds::JsonString(*io, "name");
  const std::string target = io_name.empty() ? kind : kind + "/" + io_name;
  std::string component = ds::JsonString(*src, "component");
  if (component.empty()) component = ds::JsonString(d, "reportingComponent");
  std::string instance = ds::JsonString(*src, "host");
  if (instance.empty()) instance = ds::JsonString(d, "reportingInstance");
  const std::string source = instance.empty() ? component : component + ", " + instance;
  return {last,
          ds::JsonString(d, "type"),
          ds::JsonString(d, "reason"),
          target,
          ds::JsonString(*io, "fieldPath"),
          source,
          Trim(ds::JsonString(d, "message")),
          first,
          std::to_string(count),
          ds::JsonString(meta, "name")};
}

std::string EventTable(const std::vector<std::string>& events, uint64_t rv, const std::string& cont,
                       bool columns) {
  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  StartTable(w, rv != 0 ? std::to_string(rv) : "", cont);
  if (columns) WriteColumnDefs(w, kEventColumns);
  w.Key("rows");
  w.StartArray();
  for (const auto& json : events) {
    rapidjson::Document d;
    d.Parse(json.c_str());
    WriteTableRow(w, EventCells(d), d["metadata"]);
  }
  w.EndArray();
  w.EndObject();
  return sb.GetString();
}

std::string EventListJson(const std::vector<std::string>& items, uint64_t rv,
                          const std::string& cont, size_t remaining, bool v1) {
  std::string body = std::string("{\"kind\":\"EventList\",\"apiVersion\":\"") +
                     (v1 ? "events.k8s.io/v1" : "v1") + "\",\"metadata\":{\"resourceVersion\":\"" +
                     std::to_string(rv) + "\"";
  if (!cont.empty())
    body += ",\"continue\":\"" + cont + "\",\"remainingItemCount\":" + std::to_string(remaining);
  body += "},\"items\":[";
  for (size_t i = 0; i < items.size(); ++i)
    body += (i ? "," : "") + (v1 ? ToEventsV1(items[i]) : items[i]);
  return body + "]}";
}

// The Status a DELETE of an event answers (events are not returned when deleted).
std::string DeletedStatus(const std::string& event_json, bool v1) {
  rapidjson::Document d;
  d.Parse(event_json.c_str());
  const auto& meta = d["metadata"];
  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  w.StartObject();
  w.Key("name");
  ds::WriteString(w, ds::JsonString(meta, "name"));
  if (v1) {
    w.Key("group");
    w.String("events.k8s.io");
  }
  w.Key("kind");
  w.String("events");
  w.Key("uid");
  ds::WriteString(w, ds::JsonString(meta, "uid"));
  w.EndObject();
  return StatusJson(ApiError(200, "", "", "", sb.GetString()));
}

const ApiError kNoResource{404, "NotFound", "the server could not find the requested resource", ""};
const ApiError kNoMethod{405, "MethodNotAllowed",
                         "the server does not allow this method on the requested resource", ""};

}  // namespace

bool Server::HandleEvents(mg_connection* conn, const std::string& method, const std::string& path,
                          const std::string& query, const User& user, bool table, double drop_after,
                          size_t pad) {
  // /api/v1/events (all namespaces: list, watch) or /api/v1/namespaces/NS/events[/NAME], and
  // the same under /apis/events.k8s.io/v1.
  static const std::string kV1Prefix = "/apis/events.k8s.io/v1";
  const bool v1 = path.rfind(kV1Prefix + "/", 0) == 0;
  const EventApi api = v1 ? EventApi::kEventsV1 : EventApi::kCoreV1;
  const std::string prefix = v1 ? kV1Prefix : "/api/v1";
  std::string ns, name;
  if (path != prefix + "/events") {
    const std::string base = prefix + "/namespaces/";
    if (path.rfind(base, 0) != 0) return false;
    const size_t ns_end = path.find('/', base.size());
    if (ns_end == std::string::npos || ns_end == base.size()) return false;
    const std::string rest = path.substr(ns_end + 1);  // "events" or "events/NAME"
    if (rest != "events" && rest.rfind("events/", 0) != 0) return false;
    ns = path.substr(base.size(), ns_end - base.size());
    if (rest != "events") {
      name = rest.substr(std::string("events/").size());
      if (name.empty() || name.find('/') != std::string::npos) {
        SendError(conn, kNoResource);
        return true;
      }
    }
  }
  if (events_ == nullptr) {
    SendError(conn, kNoResource);
    return true;
  }
  if (method != "GET" && method != "HEAD" && user.read_only) {
    SendError(conn, ApiError{403, "Forbidden",
                             ForbiddenMessage(user.name, Attributes(method, path, false)), ""});
    return true;
  }
  std::string out;
  if (name.empty()) {
    if (method == "POST" && !ns.empty()) {
      ApiError e = events_->Create(ns, ReadBody(conn), &out, api);
      if (!e.ok())
        SendError(conn, e);
      else
        Send(conn, 201, out);
      return true;
    }
    if (method != "GET") {
      SendError(conn, kNoMethod);
      return true;
    }
    if (ParseBool(QueryParam(query, "watch"))) {
      EventWatch(conn, ns, query, v1, table, drop_after, pad);
      return true;
    }
    auto sel = LabelSelectorParam(conn, query);
    if (!sel) return true;
    FieldSelector fields;
    std::string err;
    if (!ParseFieldSelector(QueryParam(query, "fieldSelector"), EventSelectableFields(), &fields,
                            &err)) {
      SendError(conn, ApiError{400, "BadRequest", err, ""});
      return true;
    }
    auto paging = ListPagingParams(conn, query, events_->compacted_rv());
    if (!paging) return true;
    std::string next;
    uint64_t rv = 0;
    size_t remaining = 0;
    auto items =
        events_->List(ns, *sel, fields, paging->limit, paging->after, &next, &rv, &remaining);
    const uint64_t list_rv = paging->list_rv != 0 ? paging->list_rv : rv;
    const std::string token = next.empty() ? "" : MakeContinue(list_rv, next);
    if (table)
      Send(conn, 200, EventTable(items, list_rv, token, true));
    else
      Send(conn, 200, EventListJson(items, list_rv, token, remaining, v1));
    return true;
  }
  if (method == "GET") {
    ApiError e = events_->Get(ns, name, &out, api);
    if (!e.ok())
      SendError(conn, e);
    else if (table && events_->Get(ns, name, &out).ok())  // the table reads the core form
      Send(conn, 200, EventTable({out}, store_->CurrentRv(), "", true));
    else
      Send(conn, 200, out);
    return true;
  }
  if (method == "DELETE") {
    ReadBody(conn);  // DeleteOptions: nothing in them changes how an event goes
    ApiError e = events_->Delete(ns, name, &out, api);
    if (!e.ok())
      SendError(conn, e);
    else
      Send(conn, 200, DeletedStatus(out, v1));
    return true;
  }
  if (method == "PATCH" && v1) {
    // Merge and strategic merge patches are the same for an Event (its only map-valued fields
    // are objects; it has no merge-keyed lists); JSON patch and apply are not served here.
    const char* ct = mg_get_header(conn, "Content-Type");
    const std::string type = ct != nullptr ? ct : "";
    if (type.rfind("application/merge-patch+json", 0) != 0 &&
        type.rfind("application/strategic-merge-patch+json", 0) != 0) {
      ReadBody(conn);
      SendError(conn, ApiError{415, "UnsupportedMediaType",
                               "the body of the request was in an unknown format - accepted "
                               "media types include: application/merge-patch+json, "
                               "application/strategic-merge-patch+json",
                               ""});
      return true;
    }
    ApiError e = events_->Patch(ns, name, ReadBody(conn), &out);
    if (!e.ok())
      SendError(conn, e);
    else
      Send(conn, 200, out);
    return true;
  }
  SendError(conn, kNoMethod);
  return true;
}

void Server::EventWatch(mg_connection* conn, const std::string& ns, const std::string& query,
                        bool v1, bool table, double drop_after, size_t pad) {
  auto sel = LabelSelectorParam(conn, query);
  if (!sel) return;
  FieldSelector fields;
  std::string err;
  if (!ParseFieldSelector(QueryParam(query, "fieldSelector"), EventSelectableFields(), &fields,
                          &err)) {
    SendError(conn, ApiError{400, "BadRequest", err, ""});
    return;
  }
  auto matches = [&](const PodKeys& k) {
    return (ns.empty() || k.fields.at("metadata.namespace") == ns) && sel->Matches(k.labels) &&
           fields.Matches(k);
  };
  WatchSource src;
  src.kind = "Event";
  // The table is printed from the stored (core) form, so the objects are converted only for
  // JSON watches.
  const bool convert = v1 && !table;
  if (v1) src.api_version = "events.k8s.io/v1";
  src.list = [&](uint64_t* list_rv) {
    std::string next;
    size_t rem;
    auto items = events_->List(ns, *sel, fields, 0, "", &next, list_rv, &rem);
    if (convert)
      for (auto& j : items) j = ToEventsV1(j);
    return items;
  };
  src.events = [&](uint64_t rv, int wait_ms, std::vector<WatchSource::Event>* out, bool* expired) {
    std::vector<EventChange> changes;
    events_->ChangesAfter(rv, wait_ms, &changes, expired);
    for (auto& c : changes) {  // a series patch changes no selectable field: was == is
      const bool m = matches(c.keys);
      out->push_back(
          {c.rv, std::move(c.type), convert ? ToEventsV1(c.json) : std::move(c.json), m, m});
    }
  };
  src.compacted_rv = [&] { return events_->compacted_rv(); };
  src.table = [](const std::string& json, bool first) { return EventTable({json}, 0, "", first); };
  ServeWatch(conn, query, table, drop_after, pad, src);
}

}  // namespace sim
