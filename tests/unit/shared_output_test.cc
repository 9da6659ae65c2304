// The master's stdout and stderr handed to another process through SharedOutput's socket: what
// that process writes lands in the master's pipe, and nothing changes where none is reached.
#include "fiber/base/shared_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace {

using fiber::internal::adopt_shared_output;
using fiber::internal::SharedOutput;

std::string read_all(int fd) {
  std::string text;
  char chunk[256];
  for (ssize_t n; (n = ::read(fd, chunk, sizeof chunk)) > 0;) text.append(chunk, size_t(n));
  return text;
}

// Runs `master(out)` in a child process, `out` the write end of a pipe; what reached the pipe
// once every writer ended, and the child's exit code (-1 when it did not exit).
std::pair<std::string, int> run_master(void (*master)(int out)) {
  int pipe_ends[2];
  if (::pipe(pipe_ends) != 0) return {"", -1};
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(pipe_ends[0]);
    master(pipe_ends[1]);
  }
  ::close(pipe_ends[1]);
  std::string written = read_all(pipe_ends[0]);
  ::close(pipe_ends[0]);
  int status = 0;
  if (child < 0 || ::waitpid(child, &status, 0) != child || !WIFEXITED(status))
    return {written, -1};
  return {written, WEXITSTATUS(status)};
}

// In a "master" child: forks a "worker" whose stdout and stderr are /dev/null (no inherited
// descriptor to write through), runs `worker(address)` there, and exits with the worker's code.
[[noreturn]] void run_worker(const SharedOutput& shared,
                             int (*worker)(const std::string& address)) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
    ::_exit(worker(shared.address()));
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 4);
}

// In a child: a "master" whose stdout and stderr are the pipe `out`, and a worker that adopts them.
void master_and_worker(int out) {
  ::dup2(out, STDOUT_FILENO);
  ::dup2(out, STDERR_FILENO);
  ::close(out);
  SharedOutput shared;
  run_worker(shared, [](const std::string& address) {
    (void)!::write(STDOUT_FILENO, "lost\n", 5);
    if (!adopt_shared_output(address)) return 3;
    (void)!::write(STDOUT_FILENO, "out\n", 4);
    (void)!::write(STDERR_FILENO, "err\n", 4);
    return 0;
  });
}

TEST(SharedOutput, AnotherProcessWritesWhereTheMasterDoes) {
  const auto [written, code] = run_master(master_and_worker);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(written, "out\nerr\n");
}

// A master started with stdout closed: its socket may take descriptor 1, which is never handed
// out; stderr still is.
void master_without_stdout(int out) {
  ::close(STDOUT_FILENO);
  ::dup2(out, STDERR_FILENO);
  ::close(out);
  SharedOutput shared;
  run_worker(shared, [](const std::string& address) {
    if (!adopt_shared_output(address)) return 3;
    struct stat kept {};
    // Its stdout is still /dev/null, not the master's socket.
    if (::fstat(STDOUT_FILENO, &kept) != 0 || !S_ISCHR(kept.st_mode)) return 5;
    (void)!::write(STDERR_FILENO, "err\n", 4);
    return 0;
  });
}

TEST(SharedOutput, AClosedStdoutIsNotHandedOut) {
  const auto [written, code] = run_master(master_without_stdout);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(written, "err\n");
}

TEST(SharedOutput, NothingChangesWhereNoMasterAnswers) {
  const int before = ::dup(STDOUT_FILENO);
  EXPECT_FALSE(adopt_shared_output("fibermpi-output-no-such-master"));
  EXPECT_FALSE(adopt_shared_output(""));
  EXPECT_FALSE(adopt_shared_output(std::string(200, 'x')));
  struct stat now {
  }, then{};
  ASSERT_EQ(::fstat(STDOUT_FILENO, &now), 0);
  ASSERT_EQ(::fstat(before, &then), 0);
  EXPECT_EQ(now.st_ino, then.st_ino);
  ::close(before);
}

TEST(SharedOutput, EachMasterHasItsOwnAddress) {
  SharedOutput first, second;
  EXPECT_NE(first.address(), second.address());
  EXPECT_EQ(first.address().rfind("fibermpi-output-", 0), 0u);
}

}  // namespace
