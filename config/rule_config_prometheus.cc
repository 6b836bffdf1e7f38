// The sections that say where the rules' values come from and how long they last: prometheus
// (with its credentials), interval, missingDataGrace, onPrometheusDown and releaseAfter
// (config/rule_config_parse.h).
#include <string>

#include "common/http_auth.h"
#include "config/rule_config.h"
#include "config/rule_config_parse.h"

namespace ds {
namespace rule_config_parse {
namespace {

// These sections' steps, reading their fields through FieldReader.
class PrometheusParser : public FieldReader {
 public:
  explicit PrometheusParser(const FieldReader& in) : FieldReader(in) {}

  // prometheus: where it is, how long a query may take, and the credentials.
  Status ParsePrometheus(const YAML::Node& p, RuleConfig* cfg) const {
    RETURN_NOT_OK(CheckKeys(p, "prometheus",
                            {"url", "timeout", "bearerTokenFile", "basicAuth", "headers", "tls"}));
    RETURN_NOT_OK(ParsePrometheusAuth(p, &cfg->prometheus_auth));
    if (p["url"]) {
      ASSIGN_OR_RETURN(cfg->prometheus_url, String(p["url"], "prometheus.url"));
    }
    if (p["timeout"]) {
      ASSIGN_OR_RETURN(cfg->query_timeout_seconds,
                       PositiveSeconds(p["timeout"], "prometheus.timeout"));
    }
    return Status::OK();
  }

  // prometheus.bearerTokenFile / basicAuth / headers / tls: the same choices as the -prom_*
  // flags, refused in the same combinations.
  Status ParsePrometheusAuth(const YAML::Node& p, HttpAuthConfig* auth) const {
    if (p["bearerTokenFile"]) {
      ASSIGN_OR_RETURN(auth->bearer_token_file,
                       NonEmptyString(p["bearerTokenFile"], "prometheus.bearerTokenFile"));
    }
    if (const YAML::Node b = p["basicAuth"]) {
      RETURN_NOT_OK(CheckKeys(b, "prometheus.basicAuth", {"username", "passwordFile"}));
      if (p["bearerTokenFile"])
        return Error(b, "prometheus.basicAuth",
                     "give either bearerTokenFile or basicAuth, not both");
      if (!b["username"] || !b["passwordFile"])
        return Error(b, "prometheus.basicAuth", "needs both username and passwordFile");
      ASSIGN_OR_RETURN(auth->basic_auth_user,
                       NonEmptyString(b["username"], "prometheus.basicAuth.username"));
      if (auth->basic_auth_user.find(':') != std::string::npos)
        return Error(b["username"], "prometheus.basicAuth.username", "must not contain ':'");
      ASSIGN_OR_RETURN(auth->basic_auth_password_file,
                       NonEmptyString(b["passwordFile"], "prometheus.basicAuth.passwordFile"));
    }
    if (const YAML::Node h = p["headers"]) {
      if (!h.IsMap()) return Error(h, "prometheus.headers", "must be a mapping of name: value");
      for (const auto& kv : h) {
        const std::string field = "prometheus.headers." + kv.first.Scalar();
        ASSIGN_OR_RETURN(std::string value, String(kv.second, field));
        auto line = CheckHeaderLine(kv.first.Scalar() + ": " + value);
        if (!line.ok()) return Error(kv.first, field, line.status().message());
        auth->headers.push_back(std::move(*line));
      }
    }
    if (const YAML::Node t = p["tls"]) {
      RETURN_NOT_OK(
          CheckKeys(t, "prometheus.tls", {"caFile", "certFile", "keyFile", "insecureSkipVerify"}));
      if (t["caFile"]) {
        ASSIGN_OR_RETURN(auth->ca_file, NonEmptyString(t["caFile"], "prometheus.tls.caFile"));
      }
      if (t["certFile"]) {
        ASSIGN_OR_RETURN(auth->cert_file, NonEmptyString(t["certFile"], "prometheus.tls.certFile"));
      }
      if (t["keyFile"]) {
        ASSIGN_OR_RETURN(auth->key_file, NonEmptyString(t["keyFile"], "prometheus.tls.keyFile"));
      }
      if (t["certFile"].IsDefined() != t["keyFile"].IsDefined())
        return Error(t, "prometheus.tls", "certFile and keyFile go together");
      if (t["insecureSkipVerify"]) {
        ASSIGN_OR_RETURN(auth->insecure_skip_verify,
                         Bool(t["insecureSkipVerify"], "prometheus.tls.insecureSkipVerify"));
        if (auth->insecure_skip_verify && !auth->ca_file.empty())
          return Error(t["insecureSkipVerify"], "prometheus.tls.insecureSkipVerify",
                       "true with caFile: a CA that is not checked is a mistake; drop one");
      }
    }
    return Status::OK();
  }

  // interval and missingDataGrace: how often the rules are evaluated, and how long a verdict
  // outlives its data.
  Status ParseCycle(const YAML::Node& root, RuleConfig* cfg) const {
    if (root["interval"]) {
      ASSIGN_OR_RETURN(cfg->interval_seconds, PositiveSeconds(root["interval"], "interval"));
    }
    if (root["missingDataGrace"]) {
      ASSIGN_OR_RETURN(cfg->missing_data_grace_seconds,
                       Seconds(root["missingDataGrace"], "missingDataGrace"));
    }
    return Status::OK();
  }

  // onPrometheusDown and releaseAfter: what happens to the marks while Prometheus does not answer
  // (rules/outage.h).
  Status ParseOutagePolicy(const YAML::Node& root, RuleConfig* cfg) const {
    if (const YAML::Node o = root["onPrometheusDown"]) {
      ASSIGN_OR_RETURN(std::string action, String(o, "onPrometheusDown"));
      if (action != "hold" && action != "release")
        return Error(o, "onPrometheusDown", "\"" + action + "\" is neither hold nor release");
      cfg->release_on_outage = action == "release";
    }
    if (const YAML::Node a = root["releaseAfter"]) {
      if (!cfg->release_on_outage)
        return Error(a, "releaseAfter", "only with onPrometheusDown: release (marks are held)");
      ASSIGN_OR_RETURN(cfg->release_after_seconds, PositiveSeconds(a, "releaseAfter"));
    }
    return Status::OK();
  }
};

}  // namespace

Status ParsePrometheus(const FieldReader& in, const YAML::Node& p, RuleConfig* cfg) {
  return PrometheusParser(in).ParsePrometheus(p, cfg);
}

Status ParseCycle(const FieldReader& in, const YAML::Node& root, RuleConfig* cfg) {
  return PrometheusParser(in).ParseCycle(root, cfg);
}

Status ParseOutagePolicy(const FieldReader& in, const YAML::Node& root, RuleConfig* cfg) {
  return PrometheusParser(in).ParseOutagePolicy(root, cfg);
}

}  // namespace rule_config_parse
}  // namespace ds
