// `kubectl dynamic-scheduler ...`: the same binary, installed as kubectl-dynamic_scheduler on
// PATH (kubectl's plugin naming: a dash in the command is an underscore in the file name), asks
// the running controller through the API server's service proxy
// (/api/v1/namespaces/NS/services/[SCHEME:]NAME:PORT/proxy/PATH) with the user's own kubeconfig:
// the API server checks the user's RBAC (get services/proxy on the controller's Service, which the
// Role dynamic-scheduler-explain of deploy/base/rbac.yaml grants to whoever is bound to it), and no
// port-forward is needed.
//
//   explain pod/NAME [-n NAMESPACE]   why the pod moved or stayed (reads the pod for its node)
//   explain node/NAME                 why the node is (not) relieved, its pods in order
//   status                            the controller's health check (/status)
//   nodes                             the marked nodes (/nodes)
//   replay ...                        the replay, as `dynamic-scheduler replay ...`
//
// Text for people, `-o json` for scripts. Options: --kubeconfig, --context, -n/--namespace (the
// pod's; else the context's), --controller-namespace (dynamic-scheduler), --service
// (dynamic-scheduler), --port (http), --scheme (http; https for a TLS web port).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "common/status.h"

namespace ds {

// Whether argv[0] names the plugin (kubectl-dynamic_scheduler, with any directory).
bool IsPluginName(const std::string& argv0);

struct PluginArgs {
  std::string command;     // explain, status, nodes
  std::string kind, name;  // explain: pod or node, and its name
  std::string ns;          // the pod's namespace ("" : the context's, else default)
  std::string output = "text";
  std::string kubeconfig, context;
  std::string controller_namespace = "dynamic-scheduler";
  std::string service = "dynamic-scheduler";
  std::string port = "http";
  std::string scheme;  // "" (http) or "https"
};

// The arguments after the plugin's name. An error says what is wrong and how it is used.
StatusOr<PluginArgs> ParsePluginArgs(const std::vector<std::string>& args);

// The service proxy's path to the controller's `path` ("/explain?pod=...").
std::string ServiceProxyPath(const PluginArgs& a, const std::string& path);

// /explain's JSON as text for people. Pure.
std::string ExplainText(const std::string& json);

// Runs the plugin; the exit code (0 ok, 1 the controller or API server said no, 2 bad usage).
int RunPlugin(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace ds
