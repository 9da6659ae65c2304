#include "fiber/base/fault_injection.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace fiber::internal {
namespace {

constexpr const char* kHooks[] = {"FIBER_FAULT_DROP_MESSAGE", "FIBER_FAULT_LINGER_MS",
                                  "FIBER_FAULT_FINALIZE_WATCHDOG_S"};

}  // namespace

std::string active_fault_hooks() {
  std::string active;
  for (const char* variable : kHooks) {
    const char* value = std::getenv(variable);
    if (!value || !*value) continue;
    active += (active.empty() ? "" : " ") + std::string(variable) + "=" + value;
  }
  return active;
}

uint64_t claim_message_to_drop() {
  const char* fault = std::getenv("FIBER_FAULT_DROP_MESSAGE");
  if (!fault || !*fault) return 0;
  // "<n>@<file>": only the process that creates <file> drops (one faulty worker per run).
  const std::string spec = fault;
  const auto at = spec.find('@');
  if (at == std::string::npos) return 0;
  const int fd = ::open(spec.substr(at + 1).c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return 0;
  ::close(fd);
  return std::strtoull(spec.substr(0, at).c_str(), nullptr, 10);
}

std::chrono::milliseconds linger_after_last_message() {
  const char* linger = std::getenv("FIBER_FAULT_LINGER_MS");
  return std::chrono::milliseconds(linger ? std::atoi(linger) : 0);
}

std::optional<std::chrono::seconds> finalize_watchdog_override() {
  const char* seconds = std::getenv("FIBER_FAULT_FINALIZE_WATCHDOG_S");
  if (!seconds || !*seconds) return std::nullopt;
  return std::chrono::seconds(std::max(1, std::atoi(seconds)));
}

}  // namespace fiber::internal
