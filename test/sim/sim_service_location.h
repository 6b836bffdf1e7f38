// Where kube-apiserver's service proxy subresource sends a request: the address of one ready
// endpoint of the Service, chosen from the id in the URL
// (.../services/{[scheme:]name[:port]}/proxy/...), as the Service registry's ResourceLocation
// does (kubernetes pkg/registry/core/service/storage/storage.go). A pure function of the id and
// of the objects it reads, which come in through the lookups, so the rules below are its whole
// behaviour:
//   - the id splits as apimachinery's SplitSchemeNamePort (pkg/util/net/port_split.go):
//     "name", "name:port" or "scheme:name:port" (scheme "", "http" or "https"; so "https:name"
//     is the Service "https" on port "name"); anything else, or an empty name, is a 400
//     `invalid service request "ID"`;
//   - a port that parses as a number is looked up among the Service's spec.ports (the Service
//     must exist: its 404 otherwise) and stands for that port's name; a number no port has is a
//     503 `no service port N found for service "NAME"`. A port given by name is not checked
//     against the Service at all, and no port means the port named "" (a one-port Service's
//     port is usually unnamed);
//   - the Endpoints of that name must exist (a 404 `endpoints "NAME" not found` otherwise: for
//     an unknown Service without a numeric port, that is the answer); none of its subsets is a
//     503 `no endpoints available for service "NAME"`;
//   - a subset qualifies when it has ready addresses (notReadyAddresses never count) and a port
//     whose name equals the wanted one; starting from a random subset and a random address, the
//     first address that is valid wins: one whose targetRef names a Pod in the request's
//     namespace that exists and has the address among its status.podIPs (isValidAddress: an
//     address without a targetRef -- a selectorless Service's hand-written Endpoints -- is
//     skipped, kubernetes issue 114670);
//   - no such address is a 503 `no endpoints available for service "ID"` (the whole id).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "test/sim/sim_store.h"

namespace sim {

// The backend of one proxied request.
struct ServiceEndpoint {
  std::string scheme;  // "" (plain HTTP, as "http") or "https" (TLS, certificate not verified)
  std::string ip;
  int port = 0;
};

// SplitSchemeNamePort. False when the id is not one of the three forms or the name is empty.
bool SplitSchemeNamePort(const std::string& id, std::string* scheme, std::string* name,
                         std::string* port);

// Reads one object of the request's namespace: its JSON, or the API server's error for it.
using ObjectLookup = std::function<ApiError(const std::string& name, std::string* json)>;
// A Pod of the request's namespace: its status.podIPs, empty when it does not exist.
using PodIpsLookup = std::function<std::vector<std::string>(const std::string& name)>;

// ResourceLocation for `id` in namespace `ns`. `random` returns a number in [0, n) (the real
// server's rand.Intn; tests may pin it). On success *out is the endpoint; otherwise the error to
// answer with.
ApiError ResolveServiceEndpoint(const std::string& ns, const std::string& id,
                                const ObjectLookup& service, const ObjectLookup& endpoints,
                                const PodIpsLookup& pod_ips,
                                const std::function<size_t(size_t n)>& random,
                                ServiceEndpoint* out);

}  // namespace sim
