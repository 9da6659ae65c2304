// Fault injection for tests, gathered in one place. The hooks are compiled into every build and
// do nothing unless their FIBER_FAULT_* variable is set; a process in which one is set says so
// once, as a warning, when it starts. Free of MPI. Internal.
//   FIBER_FAULT_DROP_MESSAGE=<n>@<file>  the one worker that creates <file> discards the n-th
//                                        message from its master, as a faulty transport would
//   FIBER_FAULT_LINGER_MS=<ms>           a worker lingers this long after its last message, its
//                                        progress thread still running, as a slow exit does
//   FIBER_FAULT_FINALIZE_WATCHDOG_S=<s>  the watchdog over MPI_Finalize (Settings) fires after <s>
//                                        seconds instead of 10, so a test reaches it sooner
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace fiber::internal {

/// The FIBER_FAULT_* variables set in this process ("FIBER_FAULT_LINGER_MS=500 ..."), empty
/// when none is.
std::string active_fault_hooks();

/// FIBER_FAULT_DROP_MESSAGE: the number of the master's message this process is to discard,
/// when it is the process that created the file (a worker asks once, as it starts); 0 otherwise.
uint64_t claim_message_to_drop();

/// FIBER_FAULT_LINGER_MS: how long a worker lingers after its last message; 0 when unset.
std::chrono::milliseconds linger_after_last_message();

/// FIBER_FAULT_FINALIZE_WATCHDOG_S: the finalize watchdog's time (at least 1 s); nullopt when
/// unset.
std::optional<std::chrono::seconds> finalize_watchdog_override();

}  // namespace fiber::internal
