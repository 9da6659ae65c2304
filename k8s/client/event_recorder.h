// Records core/v1 Events about objects, the way `kubectl describe` shows them. Recording never
// fails the caller: errors are logged.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "k8s/client/api_client.h"
#include "k8s/client/log_sink.h"

namespace fiber::k8s {

/// Event type: Normal or Warning.
enum class EventType { kNormal, kWarning };

/// Settings of an EventRecorder.
struct EventRecorderOptions {
  /// source.component and reportingComponent, e.g. "fiber-controller".
  std::string component = "fiber-controller";
  /// reportingInstance and source.host, e.g. the controller pod's name.
  std::string instance;
  /// A repeat of the same (object, type, reason, message) within this window increments the
  /// existing Event's count (PATCH) instead of creating a new one; 0 disables aggregation.
  std::chrono::seconds aggregation_window{600};
  LogSink log = stderr_log_sink();
};

/// Writes Events synchronously on the caller's thread. Thread-safe.
class EventRecorder {
 public:
  /// `client` must outlive the recorder.
  EventRecorder(ApiClient& client, EventRecorderOptions options);

  /// Records an Event about `object` (which needs apiVersion, kind, metadata.name; namespace,
  /// uid and resourceVersion are copied when present). The Event goes to the object's namespace
  /// ("default" for cluster-scoped objects), named "<object name>.<unique hex>". Never throws;
  /// returns false when it could not be written (the failure is logged).
  bool record(const nlohmann::json& object, EventType type, std::string_view reason,
              std::string_view message) noexcept;
  /// record() with EventType::kNormal.
  bool normal(const nlohmann::json& object, std::string_view reason,
              std::string_view message) noexcept;
  /// record() with EventType::kWarning.
  bool warning(const nlohmann::json& object, std::string_view reason,
               std::string_view message) noexcept;

  /// Events that could not be written so far.
  std::uint64_t failures() const;

 private:
  struct Recorded {
    std::string ns;
    std::string name;
    std::int64_t count = 0;
    std::chrono::system_clock::time_point last_seen;
  };

  bool record_or_throw(const nlohmann::json& object, EventType type, std::string_view reason,
                       std::string_view message);
  nlohmann::json build_event(const nlohmann::json& object, EventType type, std::string_view reason,
                             std::string_view message,
                             std::chrono::system_clock::time_point now) const;
  std::string unique_suffix();

  ApiClient& client_;
  EventRecorderOptions options_;
  mutable std::mutex mutex_;
  std::map<std::string, Recorded> recent_;  // by aggregation key
  std::uint64_t failures_ = 0;
  std::uint64_t sequence_ = 0;
};

}  // namespace fiber::k8s
