// Small helpers shared by the multi-process tests.
#pragma once

#include <chrono>
#include <cstdlib>
#include <string>

namespace fiber::testing {

/// The launch mode CTest started this program in: "singleton", "mpirun1" or "mpirun4".
inline std::string launch_mode() {
  const char* mode = std::getenv("FIBER_TEST_MODE");
  return mode ? mode : "singleton";
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace fiber::testing
