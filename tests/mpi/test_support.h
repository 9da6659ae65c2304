// Small helpers shared by the multi-process tests.
#pragma once

#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fiber/fiber.h"

namespace fiber::testing {

namespace detail {
inline void write_status(int status, void*) {
  const char* path = std::getenv("FIBER_TEST_STATUS_FILE");
  if (!path) return;
  if (std::FILE* file = std::fopen(path, "w")) {
    std::fprintf(file, "%d\n", status);
    std::fclose(file);
  }
}
}  // namespace detail

/// fiber::init for test programs. In the master it also arranges for the program's exit status
/// to reach tests/checked_run.sh through FIBER_TEST_STATUS_FILE (Open MPI 4.1's
/// `mpirun --enable-recovery` does not pass it on). The status is written as the program exits,
/// just before fibermpi shuts down: a shutdown that then hangs runs into the test's timeout, and
/// one that crashes a singleton shows in its exit status.
inline void init(int& argc, char**& argv, fiber::Config config = {}) {
  fiber::init(argc, argv, std::move(config));
  // Only the master gets here (a worker process never returns from fiber::init); registered
  // after fiber::init's own exit handler, so it runs before it.
  ::on_exit(detail::write_status, nullptr);
}

/// The launch mode CTest started this program in: "singleton", "mpirun1" or "mpirun4".
inline std::string launch_mode() {
  const char* mode = std::getenv("FIBER_TEST_MODE");
  return mode ? mode : "singleton";
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace fiber::testing
