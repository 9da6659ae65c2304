#include "fiber/runtime/worker_loop.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "fiber/errors.h"
#include "fiber/invoke.h"
#include "fiber/runtime/runtime.h"
#include "fiber/worker/fatal_signal.h"
#include "fiber/worker/master_link.h"

namespace fiber::internal {
namespace {

Runtime* g_worker_runtime = nullptr;

// A task that calls std::exit(n) ends its process: report n as the exit code first.
void report_exit_from_task(int status, void*) {
  const uint64_t id = running_process();
  if (id == 0 || !g_worker_runtime) return;
  set_running_process(0);
  std::fflush(nullptr);
  g_worker_runtime->worker().report_exit(id, status, "called exit(" + std::to_string(status) + ")",
                                         true);
  g_worker_runtime->finish_worker(0);
}

/// Runs the assignment's process; its exit code, and how it ended when it threw.
std::pair<int, std::string> execute(const Assignment& assignment) {
  std::string error;
  try {
    detail::run_task(assignment.task, nullptr);
    return {0, {}};
  } catch (const std::exception& e) {
    error = "uncaught " + detail::current_exception_type_name() + ": " + e.what();
  } catch (...) {
    error = "uncaught " + detail::current_exception_type_name();
  }
  std::fprintf(stderr, "%s (pid %d): %s\n", assignment.name.c_str(), static_cast<int>(::getpid()),
               error.c_str());
  std::fflush(stderr);
  return {1, std::move(error)};
}

}  // namespace

[[noreturn]] void run_worker(Runtime& runtime) {
  g_worker_runtime = &runtime;
  MasterLink& link = runtime.worker();
  try {
    link.handshake();
  } catch (const SpawnError&) {
    // Refused (another binary or protocol). Exit status 0: Open MPI treats a non-zero one as a
    // failure of the whole job.
    runtime.finish_worker(0);
  }
  install_fatal_signal_reports(link.run_directory(), link.joined());
  ::on_exit(report_exit_from_task, nullptr);
  // The GPUs this process started with, for the processes the master gives none.
  const char* started_with = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::optional<std::string> own_gpus =
      started_with ? std::optional<std::string>(started_with) : std::nullopt;
  for (;;) {
    Assignment assignment = link.next_assignment();
    if (assignment.shutdown) {
      link.say_goodbye();
      runtime.finish_worker(0, assignment.run_ends);
    }
    // Before any of the process's code runs: CUDA reads it once, when it starts in a process.
    if (!assignment.visible_gpus.empty()) {
      ::setenv("CUDA_VISIBLE_DEVICES", assignment.visible_gpus.c_str(), 1);
    } else if (own_gpus) {
      ::setenv("CUDA_VISIBLE_DEVICES", own_gpus->c_str(), 1);
    } else {
      ::unsetenv("CUDA_VISIBLE_DEVICES");
    }
    runtime.set_current(assignment.process_id, assignment.name);
    set_running_process(assignment.process_id);
    const auto [code, error] = execute(assignment);
    runtime.end_children();
    set_running_process(0);
    std::fflush(nullptr);
    // A spawned worker ends with its process unless the master keeps it in the reserve.
    const bool leaves = link.spawned() && !assignment.stay_after;
    link.report_exit(assignment.process_id, code, error, leaves);
    if (leaves) runtime.finish_worker(0);
  }
}

}  // namespace fiber::internal
