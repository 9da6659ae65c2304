#include "k8s/client/resource_ref.h"

#include <stdexcept>

namespace fiber::k8s {

ResourceRef ResourceRef::in_namespace(std::string_view namespace_name) const {
  ResourceRef copy = *this;
  copy.ns = std::string(namespace_name);
  return copy;
}

std::string ResourceRef::group_version_path() const {
  if (group.empty()) return "/api/" + version;
  return "/apis/" + group + "/" + version;
}

std::string ResourceRef::collection_path() const {
  std::string path = group_version_path();
  if (!ns.empty()) path += "/namespaces/" + ns;
  return path + "/" + plural;
}

std::string ResourceRef::object_path(std::string_view name, std::string_view subresource) const {
  if (name.empty()) {
    throw std::invalid_argument("an object path of " + plural + " needs a name");
  }
  std::string path = collection_path() + "/" + std::string(name);
  if (!subresource.empty()) path += "/" + std::string(subresource);
  return path;
}

std::string ResourceRef::api_version() const {
  if (group.empty()) return version;
  return group + "/" + version;
}

ResourceRef pods_ref(std::string_view ns) { return ResourceRef{"", "v1", "pods", std::string(ns)}; }

ResourceRef services_ref(std::string_view ns) {
  return ResourceRef{"", "v1", "services", std::string(ns)};
}

ResourceRef events_ref(std::string_view ns) {
  return ResourceRef{"", "v1", "events", std::string(ns)};
}

ResourceRef leases_ref(std::string_view ns) {
  return ResourceRef{"coordination.k8s.io", "v1", "leases", std::string(ns)};
}

ResourceRef fiberjobs_ref(std::string_view ns) {
  return ResourceRef{"fibermpi.io", "v1alpha1", "fiberjobs", std::string(ns)};
}

}  // namespace fiber::k8s
