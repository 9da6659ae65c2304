// Reading fields of Kubernetes objects held as nlohmann::json without throwing on a missing or
// mistyped field: watch events and list items come from the server, and a controller must
// survive an object that lacks what it expected.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace fiber::k8s {

/// `object[field]` when `object` is an object and that field is a string; "" otherwise.
std::string string_field(const nlohmann::json& object, std::string_view field);

/// `object.metadata[field]` (e.g. "name", "namespace", "uid", "resourceVersion") when it is a
/// string; "" otherwise.
std::string metadata_field(const nlohmann::json& object, std::string_view field);

/// `object.metadata.labels[label]` when it is a string; "" otherwise.
std::string label_value(const nlohmann::json& object, std::string_view label);

/// The value at `pointer` (e.g. "/status/phase") when it is there and a string; "" otherwise.
std::string string_at(const nlohmann::json& object, const nlohmann::json::json_pointer& pointer);

}  // namespace fiber::k8s
