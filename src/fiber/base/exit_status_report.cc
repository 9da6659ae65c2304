#include "fiber/base/exit_status_report.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "fiber/base/command_search_path.h"
#include "fiber/base/launch_site.h"

namespace fiber::internal {
namespace {

std::atomic<pid_t> g_launcher{0};
std::atomic<bool> g_reported{false};
// The last signal that asks a program to end (SIGTERM, SIGINT, SIGHUP, SIGQUIT) and reached this
// process while the launcher ran, however sent; SIGUSR1/2 are notices (a checkpoint's), not ends.
std::atomic<int> g_end_signal_received{0};
static_assert(std::atomic<int>::is_always_lock_free, "set in a signal handler");

// What a pod's end, a batch system's cancel or a user at a terminal sends, passed on to the
// launcher and so to the program.
constexpr int kForwardedSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

sigset_t forwarded_set() {
  sigset_t set;
  ::sigemptyset(&set);
  for (int signal : kForwardedSignals) ::sigaddset(&set, signal);
  return set;
}

void forward_signal(int signal, siginfo_t* info, void*) {
  const int saved_errno = errno;
  if (signal != SIGUSR1 && signal != SIGUSR2) g_end_signal_received.store(signal);
  // A terminal's Ctrl-C goes to the whole foreground process group, the launcher included: passing
  // it on again would make it a second one, on which mpirun aborts at once. Only signals a process
  // sent (kill, sigqueue, tkill: the codes that say so) are passed on; the kernel's own (a
  // terminal's keys or hang-up) reached the launcher already.
  if (info != nullptr &&
      (info->si_code == SI_USER || info->si_code == SI_QUEUE || info->si_code == SI_TKILL)) {
    if (const pid_t launcher = g_launcher.load(); launcher > 0) ::kill(launcher, signal);
  }
  errno = saved_errno;
}

// The report's private folder: not a name another user could take first in a shared /tmp.
std::string make_report_folder(const std::string& directory) {
  std::string pattern = directory + "/fibermpi-exit-XXXXXX";
  if (!::mkdtemp(pattern.data())) return {};
  return pattern;
}

}  // namespace

void report_exit_status(int status) {
  const char* file = std::getenv(kExitStatusFileVariable);
  if (!file || !*file) return;
  if (g_reported.exchange(true)) return;
  std::ofstream out(file);
  out << status << "\n";
  out.close();
  if (!out) {
    std::fprintf(stderr, "fibermpi: cannot write the exit status to %s; 1 is reported instead\n",
                 file);
  }
}

bool is_program_master(const EnvironmentLookup& environment) {
  const auto set = [&](const char* name) { return !environment(name).value_or("").empty(); };
  if (set("FIBER_WORKER") || set("FIBER_CONNECT")) return false;
  if (environment("FIBER_K8S_ROLE").value_or("") == "worker") return false;
  if (!started_by_launcher(environment)) return true;
  return launcher_rank(environment).value_or(0) == 0;
}

int run_reporting_exit_status(const std::vector<std::string>& command, const std::string& directory,
                              const std::string& program,
                              const ExitReportExpectation& expectation) {
  const std::string folder = make_report_folder(directory);
  if (folder.empty()) {
    std::fprintf(stderr,
                 "fibermpi: cannot make a folder for the exit-status report in %s (%s); the "
                 "launcher's status is returned instead\n",
                 directory.c_str(), std::strerror(errno));
  }
  const std::string status_file = folder.empty() ? std::string() : folder + "/status";
  if (status_file.empty()) {
    ::unsetenv(kExitStatusFileVariable);
  } else {
    ::setenv(kExitStatusFileVariable, status_file.c_str(), 1);
  }
  // execvp looks on PATH; where it is unset, on the system's default path.
  if (!std::getenv("PATH")) {
    if (const std::string default_path = command_search_path(); !default_path.empty())
      ::setenv("PATH", default_path.c_str(), 1);
  }
  std::vector<std::string> words = command;
  if (status_file.empty()) {
    // Nothing to pass on: Open MPI's "-x" of an unset variable is an error or a warning.
    for (size_t i = 0; i + 1 < words.size(); ++i) {
      if (words[i] == "-x" && words[i + 1] == kExitStatusFileVariable) {
        words.erase(words.begin() + static_cast<std::ptrdiff_t>(i),
                    words.begin() + static_cast<std::ptrdiff_t>(i) + 2);
        break;
      }
    }
  }
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
    if (!folder.empty()) ::rmdir(folder.c_str());
    return 127;
  }
  g_end_signal_received.store(0);
  g_launcher.store(child);
  struct sigaction forward {};
  forward.sa_sigaction = forward_signal;
  forward.sa_flags = SA_SIGINFO | SA_RESTART;
  ::sigemptyset(&forward.sa_mask);
  struct sigaction saved[std::size(kForwardedSignals)];
  bool installed[std::size(kForwardedSignals)] = {};
  for (size_t i = 0; i < std::size(kForwardedSignals); ++i) {
    ::sigaction(kForwardedSignals[i], nullptr, &saved[i]);
    // A signal this process ignores (nohup) stays ignored, by it and by the launcher.
    if (saved[i].sa_handler == SIG_IGN) continue;
    ::sigaction(kForwardedSignals[i], &forward, nullptr);
    installed[i] = true;
  }
  ::sigprocmask(SIG_SETMASK, &previous, nullptr);
  int wait_status = 0;
  while (::waitpid(child, &wait_status, 0) < 0 && errno == EINTR) {
  }
  g_launcher.store(0);
  for (size_t i = 0; i < std::size(kForwardedSignals); ++i)
    if (installed[i]) ::sigaction(kForwardedSignals[i], &saved[i], nullptr);
  ::unsetenv(kExitStatusFileVariable);

  int status = -1;
  bool reported = false;
  if (!status_file.empty()) {
    std::ifstream report(status_file);
    reported = static_cast<bool>(report >> status);
    report.close();
    ::unlink(status_file.c_str());
    ::rmdir(folder.c_str());
  }
  if (reported) return status & 0xff;
  // Ended by a signal (a Ctrl-C, scancel, a pod's end) before the program could say: what a shell
  // says of a command a signal ended, whatever the launcher made of it. Not where the launcher
  // ended well and no report was due (a joined job that left on SIGTERM).
  const int end_signal = g_end_signal_received.load();
  const bool launcher_failed =
      WIFSIGNALED(wait_status) || (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) != 0);
  const bool report_due = expectation.expected && !status_file.empty();
  if (end_signal != 0 && (launcher_failed || report_due)) return 128 + end_signal;
  // No report: the launcher's own failure, if it failed, says the most.
  if (launcher_failed)
    return WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status) : WEXITSTATUS(wait_status);
  if (!report_due) {
    std::fprintf(
        stderr,
        "fibermpi: %s reported no exit status (%s); the launcher's status 0 is "
        "returned\n",
        program.c_str(),
        status_file.empty() ? "no report folder could be made" : expectation.why_missing.c_str());
    return 0;
  }
  std::fprintf(stderr,
               "fibermpi: %s ended without reporting its exit status (it crashed or was killed: "
               "see above)\n",
               program.c_str());
  return 1;
}

}  // namespace fiber::internal
