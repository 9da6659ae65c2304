#include "fiber/runtime/exit_status_report.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace fiber::detail {
namespace {

std::atomic<pid_t> g_launcher{0};

// What a pod's end, a batch system's cancel or a user at a terminal sends, passed on to the
// launcher and so to the program.
constexpr int kForwardedSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

sigset_t forwarded_set() {
  sigset_t set;
  ::sigemptyset(&set);
  for (int signal : kForwardedSignals) ::sigaddset(&set, signal);
  return set;
}

void forward_signal(int signal) {
  if (const pid_t launcher = g_launcher.load(); launcher > 0) ::kill(launcher, signal);
}

}  // namespace

void report_exit_status(int status) {
  const char* file = std::getenv(kExitStatusFileVariable);
  if (!file || !*file) return;
  std::ofstream out(file);
  out << status << "\n";
  out.close();
  if (!out) {
    std::fprintf(stderr, "fibermpi: cannot write the exit status to %s; 1 is reported instead\n",
                 file);
  }
}

int run_reporting_exit_status(const std::vector<std::string>& command, const std::string& directory,
                              const std::string& program) {
  const std::string status_file =
      directory + "/fibermpi-" + std::to_string(::getpid()) + ".exit-status";
  ::unlink(status_file.c_str());
  ::setenv(kExitStatusFileVariable, status_file.c_str(), 1);
  std::vector<std::string> words = command;
  std::vector<char*> argv;
  for (auto& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);

  // Blocked from before the fork until the handlers are in place, so none sent meanwhile is lost.
  const sigset_t forwarded = forwarded_set();
  sigset_t previous;
  ::sigprocmask(SIG_BLOCK, &forwarded, &previous);
  const pid_t child = ::fork();
  if (child == 0) {
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "fibermpi: cannot start %s: %s\n", argv[0], std::strerror(errno));
    std::_Exit(127);
  }
  if (child < 0) {
    const int error = errno;
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);
    std::fprintf(stderr, "fibermpi: cannot start %s: %s\n", argv[0], std::strerror(error));
    return 127;
  }
  g_launcher.store(child);
  struct sigaction forward {};
  forward.sa_handler = forward_signal;
  ::sigemptyset(&forward.sa_mask);
  struct sigaction saved[std::size(kForwardedSignals)];
  for (size_t i = 0; i < std::size(kForwardedSignals); ++i)
    ::sigaction(kForwardedSignals[i], &forward, &saved[i]);
  ::sigprocmask(SIG_SETMASK, &previous, nullptr);
  int wait_status = 0;
  while (::waitpid(child, &wait_status, 0) < 0 && errno == EINTR) {
  }
  g_launcher.store(0);
  for (size_t i = 0; i < std::size(kForwardedSignals); ++i)
    ::sigaction(kForwardedSignals[i], &saved[i], nullptr);
  ::unsetenv(kExitStatusFileVariable);

  int status = -1;
  std::ifstream reported(status_file);
  if (reported >> status) {
    reported.close();
    ::unlink(status_file.c_str());
    return status & 0xff;
  }
  // No report: the program was killed, or the launcher could not start it.
  if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) != 0) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  std::fprintf(stderr,
               "fibermpi: %s ended without reporting its exit status (it crashed or was killed: "
               "see above)\n",
               program.c_str());
  return 1;
}

}  // namespace fiber::detail
