// Kubernetes timestamps to and from std::chrono: metav1.Time is RFC 3339 in UTC with whole seconds
// ("2006-01-02T15:04:05Z"), metav1.MicroTime has six fractional digits
// ("2006-01-02T15:04:05.000000Z").
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace fiber::k8s {

using SystemTime = std::chrono::system_clock::time_point;

/// Formats `time` as a metav1.Time: UTC, whole seconds (truncated), e.g. "2024-05-01T12:00:03Z".
std::string format_time(SystemTime time);

/// Formats `time` as a metav1.MicroTime: UTC with microseconds, e.g. "2024-05-01T12:00:03.250000Z".
std::string format_micro_time(SystemTime time);

/// Parses an RFC 3339 timestamp: "Z" or a "+hh:mm"/"-hh:mm" offset, any number of fractional
/// digits (kept to the microsecond). Returns nullopt for anything else.
std::optional<SystemTime> parse_time(std::string_view text);

/// Like parse_time(), but throws std::invalid_argument naming the text when it is not a timestamp.
SystemTime parse_time_or_throw(std::string_view text);

}  // namespace fiber::k8s
