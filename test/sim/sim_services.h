// core/v1 Services and Endpoints in the simulator: the objects the service proxy subresource
// (sim_server_proxy.cc) reads to find where a request goes, stored with the API server's defaults
// and the part of its validation a client meets (pkg/apis/core/validation/validation.go
// ValidateService, ValidateEndpoints; pkg/apis/core/v1/defaults.go).
//
// Services get what the registry fills (pkg/registry/core/service/storage): spec.type ClusterIP,
// sessionAffinity None, a spec.clusterIP from 10.96.0.0/12 (unless "None": headless) mirrored in
// spec.clusterIPs, ipFamilies [IPv4], ipFamilyPolicy SingleStack, internalTrafficPolicy Cluster,
// each port's protocol TCP and targetPort its port, status.loadBalancer {}. Endpoints get each
// port's protocol TCP. The server fills metadata.uid, creationTimestamp and resourceVersion (the
// cluster-wide counter, Store::NextRv).
//
// Validation, worded as the API server's 422 Invalid: a Service's name is a DNS-1035 label, its
// ports are required (unless headless or ExternalName), named when more than one, with unique
// DNS-1123 label names, port numbers 1-65535 and protocols TCP, UDP or SCTP; an Endpoints
// subset needs addresses or notReadyAddresses, each address a valid IP that is not unspecified,
// loopback (127.0.0.0/8, ::1), link-local or link-local multicast (ValidateEndpointIP: the API
// server refuses 127.0.0.1 in Endpoints), its ports named when more than one.
//
// Deleting a Service deletes its Endpoints, as the registry's afterDelete does. Not modelled:
// the endpoints controller (a Service with a selector gets no Endpoints from its pods: Endpoints
// are what clients write, as for a selectorless Service), NodePort and LoadBalancer allocation,
// EndpointSlices, watches.
//
// Thread-safe. Lock order: ServiceStore::mu_ before Store's mutex. HTTP lives in
// sim_server_services.cc.
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/label_selector.h"
#include "common/mutex.h"
#include "test/sim/sim_pods.h"
#include "test/sim/sim_store.h"

namespace sim {

class ServiceStore {
 public:
  enum class Kind { kService, kEndpoints };

  explicit ServiceStore(Store* cluster) : cluster_(cluster) {}

  // The selectable fields of both kinds (the generic metadata.name and metadata.namespace).
  static const std::vector<std::string>& SelectableFields();

  // POST /api/v1/namespaces/NS/{services,endpoints}. On success *out is the stored object.
  // Errors: 400 (undecodable body, metadata.namespace other than NS), 422 Invalid (see above),
  // 409 AlreadyExists.
  ApiError Create(Kind kind, const std::string& ns, const std::string& body, std::string* out);
  // 404 NotFound `services "NAME" not found` / `endpoints "NAME" not found`.
  ApiError Get(Kind kind, const std::string& ns, const std::string& name, std::string* out) const;
  // PUT: the body replaces the object. A metadata.resourceVersion other than the stored one is a
  // 409 Conflict, a name other than NAME a 400; a Service keeps its allocated clusterIP when the
  // body has none (and may not change it: 422). A missing Service is a 404; a missing Endpoints
  // is created (*created set), as the Endpoints registry allows create on update.
  ApiError Replace(Kind kind, const std::string& ns, const std::string& name,
                   const std::string& body, std::string* out, bool* created);
  // PATCH (merge, strategic merge or JSON patch), then the checks of Replace. A strategic merge
  // patch merges a Service's spec.ports by port and metadata.ownerReferences by uid and honours
  // their `$patch: delete` items and `$setElementOrder` lists; other lists are replaced whole, as
  // an Endpoints' subsets are. A patch that changes nothing is not stored (*changed false).
  ApiError Patch(Kind kind, const std::string& ns, const std::string& name, PatchType type,
                 const std::string& patch, std::string* out, bool* changed);
  // *out is the deleted object. 404 when missing. A Service takes its Endpoints with it.
  ApiError Delete(Kind kind, const std::string& ns, const std::string& name, std::string* out);
  // Matching objects (ns "": all namespaces) in (namespace, name) order.
  std::vector<std::string> List(Kind kind, const std::string& ns, const ds::LabelSelector& labels,
                                const FieldSelector& fields, uint64_t* list_rv) const;

 private:
  struct Stored {
    std::string json;
    PodKeys keys;  // metadata.name, metadata.namespace and labels, for selectors
  };

  std::map<std::string, Stored>& Objects(Kind kind) REQUIRES(mu_) {
    return kind == Kind::kService ? services_ : endpoints_;
  }
  const std::map<std::string, Stored>& Objects(Kind kind) const REQUIRES(mu_) {
    return kind == Kind::kService ? services_ : endpoints_;
  }
  // Validates `doc` (a whole object of `kind` in `ns`), fills the defaults and, for an update of
  // `old` (nullptr: a create), keeps what the server allocated; then stores it under `key` with
  // the next resourceVersion and sets *out.
  ApiError Put(Kind kind, const std::string& key, rapidjson::Document* doc,
               const rapidjson::Value* old, std::string* out) REQUIRES(mu_);
  // The next free address of 10.96.0.0/12 (skipping .0 and .1, the network and the kubernetes
  // Service's address).
  std::string AllocateClusterIp() REQUIRES(mu_);

  Store* const cluster_;
  mutable ds::Mutex mu_;
  std::map<std::string, Stored> services_ GUARDED_BY(mu_);   // "ns/name"
  std::map<std::string, Stored> endpoints_ GUARDED_BY(mu_);  // "ns/name"
  uint64_t uid_counter_ GUARDED_BY(mu_) = 0;
  uint32_t next_ip_ GUARDED_BY(mu_) = 10;  // offset in 10.96.0.0/12 of the next cluster IP
};

}  // namespace sim
