// fiber::Process: run a function in another process, like multiprocessing.Process.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fiber/invoke.h"

namespace fiber {

namespace internal {
struct ProcessState;
}  // namespace internal

namespace detail {
std::shared_ptr<internal::ProcessState> make_process_state(TaskSpec task);
}  // namespace detail

/// A function call that runs in its own OS process. The function must be a free function or a
/// captureless lambda (it travels by reference); the arguments are serialized when the Process is
/// constructed. Under mpirun an idle rank of the static world runs it; otherwise, or when none is
/// idle, a process is spawned (several start() calls in a row share one spawn).
///
/// Copies refer to the same process, as Python references do.
class Process {
 public:
  template <class Fn, class... Args>
  explicit Process(Fn&& fn, Args&&... args)
      : state_(detail::make_process_state(
            detail::make_task(std::forward<Fn>(fn), std::forward<Args>(args)...))) {}

  /// Starts it. Returns at once; placement happens in the background. Throws fiber::UsageError
  /// when called twice or from a worker process.
  void start();
  /// Waits until it ends. Rethrows fiber::SpawnError if it could not be started.
  void join();
  /// Waits at most `timeout`; true when it has ended.
  template <class Rep, class Period>
  bool join(std::chrono::duration<Rep, Period> timeout) {
    return join_for(std::chrono::duration_cast<std::chrono::nanoseconds>(timeout));
  }
  /// Sends SIGTERM (works while it runs user code); exitcode becomes -SIGTERM.
  void terminate();
  /// Sends SIGKILL, which the process cannot catch; exitcode becomes -SIGKILL. Its pool work
  /// and queue handles are treated as for any process that dies.
  void kill();
  /// Started and not yet ended.
  bool is_alive() const;
  /// Empty before the end; 0 after a normal return, 1 after an uncaught exception, n after
  /// std::exit(n), minus the signal number when killed by a signal (SIGKILL when unknown).
  std::optional<int> exitcode() const;
  /// OS pid of the process running it; waits for placement if just started, 0 before start().
  int pid() const;
  /// "Process-N" unless set.
  std::string name() const;
  void set_name(std::string name);
  /// Daemonic processes are terminated when the program ends instead of being waited for.
  bool daemon() const;
  void set_daemon(bool daemon);
  /// What it needs, as a pool's Options::cpus_per_worker, memory_per_worker (bytes) and
  /// gpus_per_worker (Fiber's @meta(cpu, memory, gpu)): the process is bound to `cpus` cores of
  /// its own and given `gpus` GPUs of its host (CUDA_VISIBLE_DEVICES) while it runs; 0 asks for
  /// nothing in particular. Before start(); throws fiber::UsageError when the request cannot fit
  /// where the program runs (a Slurm allocation, a FiberJob's pods, this machine), naming both
  /// sides.
  void set_resources(int cpus, uint64_t memory, int gpus);

 private:
  friend Process current_process();
  friend std::vector<Process> active_children();
  explicit Process(std::shared_ptr<internal::ProcessState> state) : state_(std::move(state)) {}
  bool join_for(std::chrono::nanoseconds timeout);
  bool is_self() const;

  std::shared_ptr<internal::ProcessState> state_;
};

/// The process this code runs in: "MainProcess" in the master, the Process being run in a worker.
Process current_process();

/// The children of this program that have been started and have not ended.
std::vector<Process> active_children();

}  // namespace fiber
