// Where a process that hangs inside a library call waits: every thread's stack of this process
// and of every process under it (an MPI runtime's daemon, the processes it spawned), taken with
// gdb. Asked for by FIBER_STACKS_WHEN_STUCK=1 (the tests set it), so that a hang seen once in
// many runs names the call it is stuck in. gdb stops each process for a moment, which can upset
// what runs on: for a run that fails anyway. Linux only; without gdb it says so. Internal.
#pragma once

#include <string>

namespace fiber::internal {

/// True when FIBER_STACKS_WHEN_STUCK is set to 1.
bool stacks_wanted_when_stuck();

/// Writes to stderr, headed by `why`, the stacks of every thread of this process and of its
/// descendants (each headed by its pid and command line); where this process's parent is an MPI
/// launcher's daemon (mpirun's prterun, orted...), of that daemon and all its descendants, among
/// them the processes this one spawned. Blocks until gdb is done (about a
/// second a process), at most 60 s a process. Tracing a process needs the right to: root's
/// CAP_SYS_PTRACE, or a kernel without Yama's ptrace_scope 1 (there a process other than this one
/// is not gdb's ancestor, and gdb says "ptrace: Operation not permitted" for it).
void dump_process_tree_stacks(const std::string& why);

}  // namespace fiber::internal
