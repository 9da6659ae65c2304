#include "k8s/client/json_fields.h"

namespace fiber::k8s {
namespace {

const nlohmann::json* member(const nlohmann::json& object, std::string_view field) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(field);
  return it == object.end() ? nullptr : &*it;
}

}  // namespace

std::string string_field(const nlohmann::json& object, std::string_view field) {
  const nlohmann::json* value = member(object, field);
  return value && value->is_string() ? value->get<std::string>() : std::string();
}

std::string metadata_field(const nlohmann::json& object, std::string_view field) {
  const nlohmann::json* metadata = member(object, "metadata");
  return metadata ? string_field(*metadata, field) : std::string();
}

std::string label_value(const nlohmann::json& object, std::string_view label) {
  const nlohmann::json* metadata = member(object, "metadata");
  const nlohmann::json* labels = metadata ? member(*metadata, "labels") : nullptr;
  return labels ? string_field(*labels, label) : std::string();
}

std::string string_at(const nlohmann::json& object, const nlohmann::json::json_pointer& pointer) {
  if (!object.contains(pointer)) return {};
  const nlohmann::json& value = object.at(pointer);
  return value.is_string() ? value.get<std::string>() : std::string();
}

}  // namespace fiber::k8s
