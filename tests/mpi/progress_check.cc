// A pool's progress display (Pool::Options::progress) end to end: the master's stderr is made a
// pseudo-terminal, a map of 300 tasks runs on 2 workers, and what the terminal received is read
// back: redraws, then the summary of all 300 tasks and the 2 workers. With stderr a pipe, the
// same map shows nothing but one warning saying why. Prints "progress_check: OK" when so.
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "fiber/fiber.h"

namespace {

int slow_square(int x) {
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  return x * x;
}

std::string drain(int fd) {
  std::string text;
  char buffer[4096];
  for (;;) {
    pollfd ready{fd, POLLIN, 0};
    if (::poll(&ready, 1, 200) <= 0) return text;
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got <= 0) return text;
    text.append(buffer, static_cast<size_t>(got));
  }
}

// Runs a map of 300 tasks with stderr pointing at `fd`; false when a result is wrong.
bool run_map_with_stderr_on(int fd) {
  std::fflush(stderr);
  const int saved = ::dup(STDERR_FILENO);
  ::dup2(fd, STDERR_FILENO);
  fiber::Pool::Options options;
  options.processes = 2;
  options.progress = true;
  std::vector<int> inputs(300);
  std::iota(inputs.begin(), inputs.end(), 0);
  bool exact = true;
  {
    fiber::Pool pool(options);
    pool.wait_ready();
    const auto results = pool.map(slow_square, inputs, 1);
    for (int i = 0; i < 300; ++i) exact = exact && results[static_cast<size_t>(i)] == i * i;
  }
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  return exact;
}

}  // namespace

int main(int argc, char** argv) {
  // The tests run quiet; the warning on a pipe is part of what is checked.
  ::unsetenv("FIBER_QUIET");
  fiber::init(argc, argv);
  bool ok = true;
  const int leader = ::posix_openpt(O_RDWR | O_NOCTTY);
  if (leader < 0 || ::grantpt(leader) != 0 || ::unlockpt(leader) != 0) {
    std::printf("progress_check: FAILED: no pseudo-terminal\n");
    return 1;
  }
  const int follower = ::open(::ptsname(leader), O_RDWR | O_NOCTTY);
  ok = run_map_with_stderr_on(follower) && ok;
  const std::string shown = drain(leader);
  const bool redrawn = shown.find(" left, ") != std::string::npos;
  const bool summary = shown.find("\rfibermpi pool: 300/300 tasks (100%)") != std::string::npos &&
                       shown.find("done in ") != std::string::npos &&
                       shown.find("2 workers") != std::string::npos;
  std::printf("progress_check: the terminal got %zu bytes; redrawn %s, summary %s\n", shown.size(),
              redrawn ? "yes" : "no", summary ? "yes" : "no");
  if (!redrawn || !summary) {
    std::printf("progress_check: FAILED: %s\n", shown.c_str());
    ok = false;
  }
  int ends[2];
  if (::pipe(ends) != 0) return 1;
  ok = run_map_with_stderr_on(ends[1]) && ok;
  ::close(ends[1]);
  const std::string piped = drain(ends[0]);
  if (piped.find("fibermpi pool:") != std::string::npos ||
      piped.find("no progress display: stderr is not a terminal") == std::string::npos) {
    std::printf("progress_check: FAILED: on a pipe: %s\n", piped.c_str());
    ok = false;
  }
  std::printf("progress_check: %s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
