#include "k8s/client/event_recorder.h"

#include <cstdio>
#include <stdexcept>

#include "k8s/client/json_fields.h"
#include "k8s/client/time_format.h"

namespace fiber::k8s {
namespace {

using nlohmann::json;

const char* type_name(EventType type) { return type == EventType::kWarning ? "Warning" : "Normal"; }

// Remembered repeats are dropped past this many, oldest first, so memory stays bounded.
constexpr std::size_t kMaxRemembered = 4096;

}  // namespace

EventRecorder::EventRecorder(ApiClient& client, EventRecorderOptions options)
    : client_(client), options_(std::move(options)) {}

bool EventRecorder::normal(const json& object, std::string_view reason,
                           std::string_view message) noexcept {
  return record(object, EventType::kNormal, reason, message);
}

bool EventRecorder::warning(const json& object, std::string_view reason,
                            std::string_view message) noexcept {
  return record(object, EventType::kWarning, reason, message);
}

bool EventRecorder::record(const json& object, EventType type, std::string_view reason,
                           std::string_view message) noexcept {
  try {
    return record_or_throw(object, type, reason, message);
  } catch (const std::exception& error) {
    {
      std::lock_guard lock(mutex_);
      ++failures_;
    }
    log_to(options_.log, LogLevel::kWarning,
           "cannot record event " + std::string(reason) + " (" + std::string(message) +
               "): " + error.what());
  } catch (...) {
    std::lock_guard lock(mutex_);
    ++failures_;
  }
  return false;
}

std::uint64_t EventRecorder::failures() const {
  std::lock_guard lock(mutex_);
  return failures_;
}

std::string EventRecorder::unique_suffix() {
  // Nanoseconds since the epoch like other recorders, plus a counter for events of the same tick.
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  std::uint64_t sequence;
  {
    std::lock_guard lock(mutex_);
    sequence = ++sequence_;
  }
  char text[40];
  std::snprintf(text, sizeof text, "%llx",
                static_cast<unsigned long long>(
                    std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()) +
                    static_cast<unsigned long long>(sequence));
  return text;
}

json EventRecorder::build_event(const json& object, EventType type, std::string_view reason,
                                std::string_view message,
                                std::chrono::system_clock::time_point now) const {
  const json metadata = object.value("metadata", json::object());
  const std::string name = string_field(metadata, "name");
  const std::string object_ns = string_field(metadata, "namespace");
  json involved = {{"apiVersion", string_field(object, "apiVersion")},
                   {"kind", string_field(object, "kind")},
                   {"name", name}};
  if (!object_ns.empty()) involved["namespace"] = object_ns;
  for (const char* field : {"uid", "resourceVersion"}) {
    const std::string value = string_field(metadata, field);
    if (!value.empty()) involved[field] = value;
  }
  const std::string timestamp = format_time(now);
  json source = {{"component", options_.component}};
  if (!options_.instance.empty()) source["host"] = options_.instance;
  return json{{"apiVersion", "v1"},
              {"kind", "Event"},
              {"metadata", {{"namespace", object_ns.empty() ? "default" : object_ns}}},
              {"involvedObject", std::move(involved)},
              {"type", type_name(type)},
              {"reason", std::string(reason)},
              {"message", std::string(message)},
              {"source", std::move(source)},
              {"reportingComponent", options_.component},
              {"reportingInstance", options_.instance},
              {"firstTimestamp", timestamp},
              {"lastTimestamp", timestamp},
              {"count", 1}};
}

bool EventRecorder::record_or_throw(const json& object, EventType type, std::string_view reason,
                                    std::string_view message) {
  const json metadata = object.is_object() ? object.value("metadata", json::object()) : json();
  const std::string name = string_field(metadata, "name");
  if (name.empty() || string_field(object, "kind").empty() ||
      string_field(object, "apiVersion").empty()) {
    throw std::invalid_argument("the object has no apiVersion, kind or metadata.name");
  }
  const auto now = std::chrono::system_clock::now();
  const std::string key = string_field(object, "kind") + "\n" +
                          string_field(metadata, "namespace") + "\n" + name + "\n" +
                          string_field(metadata, "uid") + "\n" + type_name(type) + "\n" +
                          std::string(reason) + "\n" + std::string(message);

  if (options_.aggregation_window.count() > 0) {
    std::optional<Recorded> repeat;
    {
      std::lock_guard lock(mutex_);
      const auto it = recent_.find(key);
      if (it != recent_.end() && now - it->second.last_seen < options_.aggregation_window) {
        repeat = it->second;
      }
    }
    if (repeat) {
      const json patch = {{"count", repeat->count + 1}, {"lastTimestamp", format_time(now)}};
      try {
        client_.patch(events_ref(repeat->ns), repeat->name, patch);
        std::lock_guard lock(mutex_);
        recent_[key] = Recorded{repeat->ns, repeat->name, repeat->count + 1, now};
        return true;
      } catch (const ApiError& error) {
        if (!error.is_not_found()) throw;
        // The Event expired on the server (events have a TTL): start a new one.
      }
    }
  }

  json event = build_event(object, type, reason, message, now);
  const std::string event_ns = event["metadata"]["namespace"].get<std::string>();
  const std::string event_name = name + "." + unique_suffix();
  event["metadata"]["name"] = event_name;
  client_.create(events_ref(event_ns), event);
  if (options_.aggregation_window.count() > 0) {
    std::lock_guard lock(mutex_);
    if (recent_.size() >= kMaxRemembered) {
      auto oldest = recent_.begin();
      for (auto it = recent_.begin(); it != recent_.end(); ++it) {
        if (it->second.last_seen < oldest->second.last_seen) oldest = it;
      }
      recent_.erase(oldest);
    }
    recent_[key] = Recorded{event_ns, event_name, 1, now};
  }
  return true;
}

}  // namespace fiber::k8s
