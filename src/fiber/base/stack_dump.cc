#include "fiber/base/stack_dump.h"

#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

extern char** environ;

namespace fiber::internal {
namespace {

// The parent of every process, from /proc/PID/stat (the field after the command, which may hold
// spaces and parentheses: hence the last ')').
std::map<pid_t, std::vector<pid_t>> children_by_parent() {
  std::map<pid_t, std::vector<pid_t>> children;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(text.substr(close + 1));
    std::string state;
    pid_t parent = 0;
    if (fields >> state >> parent) children[parent].push_back(std::stoi(name));
  }
  return children;
}

// Whether `pid` is an MPI launcher's daemon (/proc/PID/comm: the executable's name, at most 15
// characters): Open MPI 5's prterun, prte and prted, Open MPI 4's mpirun and orted, MPICH's
// Hydra.
bool is_launcher_daemon(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(file, name);
  for (const char* daemon : {"prterun", "prte", "prted", "mpirun", "mpiexec", "orterun", "orted",
                             "mpiexec.hydra", "hydra_pmi_proxy"}) {
    if (name == daemon) return true;
  }
  return false;
}

std::string command_line(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/cmdline");
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  for (char& c : text)
    if (c == '\0') c = ' ';
  return text;
}

// gdb's backtrace of every thread of `pid`, straight to stderr. `timeout` (coreutils) ends a gdb
// that takes longer than `limit`: a loop of ours could not, as gdb stops this very process while
// it reads its threads. A target that gdb left stopped is continued.
void run_gdb(pid_t pid, std::chrono::seconds limit) {
  const std::string target = std::to_string(pid);
  const std::string seconds = std::to_string(limit.count());
  std::vector<std::string> args = {"timeout", "-s",
                                   "KILL",    seconds,
                                   "gdb",     "-p",
                                   target,    "-batch",
                                   "-nx",     "-q",
                                   "-ex",     "set pagination off",
                                   "-ex",     "thread apply all bt"};
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);  // all of it on stderr
  pid_t child = 0;
  const int failed = posix_spawnp(&child, "timeout", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (failed != 0) {
    std::fprintf(stderr, "fibermpi: no stacks: timeout cannot be started\n");
    return;
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  kill(pid, SIGCONT);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    std::fprintf(stderr, "fibermpi: no stacks: gdb cannot be started (is it installed?)\n");
  else if (WIFEXITED(status) && WEXITSTATUS(status) == 137)
    std::fprintf(stderr, "fibermpi: gdb on pid %d gave up after %s s\n", pid, seconds.c_str());
}

}  // namespace

bool stacks_wanted_when_stuck() {
  const char* wanted = std::getenv("FIBER_STACKS_WHEN_STUCK");
  return wanted != nullptr && std::string(wanted) == "1";
}

void dump_process_tree_stacks(const std::string& why) {
  // A kernel with Yama's ptrace_scope 1 lets only ancestors trace a process: allow gdb, our child.
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  const auto children = children_by_parent();
  // Under mpirun the processes this one spawned are children of the launcher's daemon, not of
  // this process: the daemon and everything under it are taken then (this process included).
  const pid_t parent = getppid();
  std::vector<pid_t> tree = {is_launcher_daemon(parent) ? parent : getpid()};
  for (size_t i = 0; i < tree.size(); ++i) {
    const auto found = children.find(tree[i]);
    if (found != children.end())
      tree.insert(tree.end(), found->second.begin(), found->second.end());
  }
  std::fprintf(stderr, "fibermpi: stacks of %zu processes (%s)\n", tree.size(), why.c_str());
  for (const pid_t pid : tree) {
    std::fprintf(stderr, "=== pid %d: %s\n", pid, command_line(pid).c_str());
    std::fflush(stderr);
    run_gdb(pid, std::chrono::seconds(60));
  }
  std::fprintf(stderr, "fibermpi: end of stacks\n");
  std::fflush(stderr);
}

}  // namespace fiber::internal
