// Whether a process of this host still exists, asked of the kernel with signal 0. The master
// watches its local workers this way, and a worker its local master. Free of MPI. Internal.
#pragma once

#include <sys/types.h>

namespace fiber::internal {

/// True when `pid` names no process any more (kill(pid, 0) fails with ESRCH). A pid of 0 or less
/// names no single process, so it is never reported gone. A process that exists but is not ours
/// to signal (EPERM) is not gone.
bool process_gone(pid_t pid);

/// True while `pid` (> 0) may still be running: the opposite of process_gone for real pids.
inline bool process_present(pid_t pid) { return pid > 0 && !process_gone(pid); }

}  // namespace fiber::internal
