// The URI the name service (ompi-server -r -) prints, found in its pod's log.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fiber::k8s::controller {

/// Returns the first line of `log` that reads as an ompi-server URI: an identifier without
/// spaces, ';', then one or more `scheme://address` contact points separated by ';' (e.g.
/// "123456.0;tcp://10.244.1.5:40123" or "ompi-server.host.7@0.0;tcp4://10.0.0.2:5000"),
/// trimmed of surrounding white space. Returns nullopt when no line does, e.g. while the server
/// has not printed it yet.
std::optional<std::string> find_name_service_uri(std::string_view log);

}  // namespace fiber::k8s::controller
