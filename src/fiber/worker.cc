// The life of a worker process: handshake, then run what the master assigns until told to stop.
#include <cxxabi.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "fiber/invoke.h"
#include "fiber/runtime.h"
#include "mpi_bridge/environment.h"
#include "mpi_bridge/function_ref.h"

namespace fiber::detail {
namespace {

Runtime* g_worker_runtime = nullptr;
uint64_t g_running_process = 0;
char g_signal_path[4096] = {};

// Records which signal is killing this process where the master can read it, then dies of it.
// Only async-signal-safe calls here.
bool g_joined = false;

void report_fatal_signal(int signal) {
  if (signal == SIGTERM && g_joined) {
    // A joined job being shut down (a pod stopping, mpirun forwarding SIGTERM): leave cleanly,
    // after the work in hand.
    g_leave_requested.store(true);
    struct sigaction again {};
    again.sa_handler = report_fatal_signal;
    sigemptyset(&again.sa_mask);
    ::sigaction(SIGTERM, &again, nullptr);
    return;
  }
  if (signal == SIGTERM && g_running_process == 0) {
    // A terminate() that raced with the end of its process: this worker is idle and lives on.
    struct sigaction again {};
    again.sa_handler = report_fatal_signal;
    again.sa_flags = SA_RESETHAND;
    sigemptyset(&again.sa_mask);
    ::sigaction(SIGTERM, &again, nullptr);
    return;
  }
  if (g_running_process != 0 && g_signal_path[0] != '\0') {
    const int fd = ::open(g_signal_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      char text[16];
      int length = 0;
      int value = signal;
      char digits[16];
      int count = 0;
      do {
        digits[count++] = static_cast<char>('0' + value % 10);
        value /= 10;
      } while (value > 0);
      while (count > 0) text[length++] = digits[--count];
      [[maybe_unused]] const ssize_t written = ::write(fd, text, static_cast<size_t>(length));
      ::close(fd);
    }
  }
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

void install_signal_reporting(const std::string& directory) {
  if (directory.empty()) return;
  std::snprintf(g_signal_path, sizeof g_signal_path, "%s/%d", directory.c_str(),
                static_cast<int>(::getpid()));
  struct sigaction action {};
  action.sa_handler = report_fatal_signal;
  action.sa_flags = SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  for (int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGHUP, SIGQUIT,
                     SIGUSR1, SIGUSR2, SIGALRM}) {
    ::sigaction(signal, &action, nullptr);
  }
}

// A task that calls std::exit(n) ends its process: report n as the exit code first.
void report_exit_from_task(int status, void*) {
  if (g_running_process == 0 || !g_worker_runtime) return;
  const uint64_t id = g_running_process;
  g_running_process = 0;
  std::fflush(nullptr);
  g_worker_runtime->report_exit(id, status, "called exit(" + std::to_string(status) + ")", true);
  g_worker_runtime->finish_worker(0);
}

int execute(const Assignment& assignment) {
  try {
    run_task(assignment.task, nullptr);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s (pid %d): uncaught %s: %s\n", assignment.name.c_str(),
                 static_cast<int>(::getpid()), current_exception_type_name().c_str(), e.what());
  } catch (...) {
    std::fprintf(stderr, "%s (pid %d): uncaught %s\n", assignment.name.c_str(),
                 static_cast<int>(::getpid()), current_exception_type_name().c_str());
  }
  std::fflush(stderr);
  return 1;
}

}  // namespace

std::string current_exception_type_name() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  if (!type) return "unknown exception";
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(type->name(), nullptr, nullptr, &status), &std::free);
  return status == 0 && demangled ? demangled.get() : type->name();
}

void run_task(const TaskSpec& task, serial::Writer* result) {
  auto& modules = bridge::ModuleTable::instance();
  const auto invoker = reinterpret_cast<Invoker>(modules.decode(task.invoker));
  void* fn = task.fn.module_id == 0 ? nullptr : modules.decode(task.fn);
  serial::Reader args(task.args);
  invoker(fn, args, result);
}

[[noreturn]] void run_worker(Runtime& runtime) {
  g_worker_runtime = &runtime;
  g_joined = runtime.joined_worker();
  runtime.handshake();
  install_signal_reporting(runtime.signal_directory());
  ::on_exit(report_exit_from_task, nullptr);
  for (;;) {
    Assignment assignment = runtime.next_assignment();
    if (assignment.shutdown) {
      runtime.say_goodbye();
      runtime.finish_worker(0);
    }
    runtime.set_current(assignment.process_id, assignment.name);
    g_running_process = assignment.process_id;
    const int code = execute(assignment);
    g_running_process = 0;
    std::fflush(nullptr);
    // A spawned worker ends with its process unless the master keeps it in the reserve.
    const bool leaves = runtime.spawned_worker() && !assignment.stay_after;
    runtime.report_exit(assignment.process_id, code, {}, leaves);
    if (leaves) runtime.finish_worker(0);
  }
}

}  // namespace fiber::detail
