// A spawned worker that never gets through MPI start-up and the handshake (Open MPI 4.1 can leave
// a child stuck in MPI_Init, or its first messages stuck, after other processes were killed)
// would otherwise live forever, and mpirun waits for every process it started. It leaves once its
// master is gone, or after twice the time the master waits for it to report. Internal.
#pragma once

#include <atomic>

namespace fiber::internal {

/// Set once the worker has been welcomed by its master: the watchdog stands down.
inline std::atomic<bool> g_welcomed{false};

/// Starts the watchdog thread, from what the master put in the environment of its children
/// (FIBER_MASTER_PID, FIBER_MASTER_HOST, FIBER_START_TIMEOUT_S); nothing without them.
void leave_if_start_up_stalls();

}  // namespace fiber::internal
