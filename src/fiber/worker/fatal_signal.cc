#include "fiber/worker/fatal_signal.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>

#include "mpi_bridge/launch_environment.h"

namespace fiber::internal {
namespace {

std::atomic<uint64_t> g_running_process{0};
char g_signal_path[4096] = {};
bool g_joined = false;

void rearm(void (*handler)(int), int flags) {
  struct sigaction again {};
  again.sa_handler = handler;
  again.sa_flags = flags;
  sigemptyset(&again.sa_mask);
  ::sigaction(SIGTERM, &again, nullptr);
}

// Only async-signal-safe calls here.
void report_fatal_signal(int signal) {
  if (signal == SIGTERM && g_joined) {
    // A joined job being shut down (a pod stopping, mpirun forwarding SIGTERM): leave cleanly,
    // after the work in hand.
    g_leave_requested.store(true);
    rearm(report_fatal_signal, 0);
    return;
  }
  if (signal == SIGTERM && g_running_process.load() == 0) {
    // A terminate() that raced with the end of its process: this worker is idle and lives on.
    rearm(report_fatal_signal, SA_RESETHAND);
    return;
  }
  if (g_running_process.load() != 0 && g_signal_path[0] != '\0') {
    const int fd = ::open(g_signal_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      char digits[16];
      int count = 0;
      int value = signal;
      do {
        digits[count++] = static_cast<char>('0' + value % 10);
        value /= 10;
      } while (value > 0);
      char text[16];
      int length = 0;
      while (count > 0) text[length++] = digits[--count];
      [[maybe_unused]] const ssize_t written = ::write(fd, text, static_cast<size_t>(length));
      ::close(fd);
    }
  }
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

}  // namespace

void install_fatal_signal_reports(const std::string& directory, bool joined) {
  g_joined = joined;
  if (directory.empty()) return;
  std::snprintf(g_signal_path, sizeof g_signal_path, "%s/%d", directory.c_str(),
                static_cast<int>(::getpid()));
  struct sigaction action {};
  action.sa_handler = report_fatal_signal;
  action.sa_flags = SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  for (int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGHUP, SIGQUIT,
                     SIGUSR1, SIGUSR2, SIGALRM}) {
    // MPICH's process manager tells every process of a job that one of them ended without
    // MPI_Finalize (a killed worker) with SIGUSR1, which MPICH's own handler takes: no death.
    if (signal == SIGUSR1 && bridge::built_against_mpi() == MpiFamily::kMpich) continue;
    ::sigaction(signal, &action, nullptr);
  }
}

void set_running_process(uint64_t id) { g_running_process.store(id); }

uint64_t running_process() { return g_running_process.load(); }

}  // namespace fiber::internal
