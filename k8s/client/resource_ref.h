// Names one kind of resource on the API server and builds the REST paths of its objects.
#pragma once

#include <string>
#include <string_view>

namespace fiber::k8s {

/// A resource type, optionally in one namespace: group "" is the core API (/api/v1), any other
/// group is served under /apis/<group>/<version>.
struct ResourceRef {
  /// API group, "" for core (pods, services, events), e.g. "fibermpi.io", "coordination.k8s.io".
  std::string group;
  /// API version, e.g. "v1", "v1alpha1".
  std::string version;
  /// Lower-case plural resource name, e.g. "pods", "fiberjobs", "leases".
  std::string plural;
  /// Namespace of the objects; empty means all namespaces (list/watch) or a cluster-scoped
  /// resource.
  std::string ns;

  /// The same resource in namespace `namespace_name`.
  ResourceRef in_namespace(std::string_view namespace_name) const;
  /// "/api/v1" or "/apis/<group>/<version>".
  std::string group_version_path() const;
  /// Path of the collection, e.g. "/api/v1/namespaces/ns/pods" or "/apis/g/v/fiberjobs" (all
  /// namespaces).
  std::string collection_path() const;
  /// Path of one object, optionally of its subresource ("status", "scale", "log"); throws
  /// std::invalid_argument when `name` is empty.
  std::string object_path(std::string_view name, std::string_view subresource = {}) const;
  /// "group/version" or "version" for core: the apiVersion field of the objects.
  std::string api_version() const;

  friend bool operator==(const ResourceRef&, const ResourceRef&) = default;
};

/// Well-known resources, in namespace `ns` (empty: all namespaces).
ResourceRef pods_ref(std::string_view ns = {});
ResourceRef services_ref(std::string_view ns = {});
ResourceRef events_ref(std::string_view ns = {});
ResourceRef leases_ref(std::string_view ns = {});
ResourceRef fiberjobs_ref(std::string_view ns = {});

}  // namespace fiber::k8s
