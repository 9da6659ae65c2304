#include "fiber/worker/start_up_watchdog.h"
#include "fiber/base/log.h"
#include "fiber/base/process_presence.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace fiber::internal {

void leave_if_start_up_stalls() {
  const char* pid_text = std::getenv("FIBER_MASTER_PID");
  const char* host_text = std::getenv("FIBER_MASTER_HOST");
  const char* limit_text = std::getenv("FIBER_START_TIMEOUT_S");
  if (!pid_text || !host_text || !limit_text) return;
  const int master_pid = std::atoi(pid_text);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const bool master_here = std::string(host_text) == host;
  const auto limit = std::chrono::seconds(std::max(1, std::atoi(limit_text)));
  std::thread([master_pid, master_here, limit] {
    const auto started = std::chrono::steady_clock::now();
    while (!g_welcomed.load(std::memory_order_acquire)) {
      std::string why;
      if (master_here && process_gone(master_pid)) {
        why = "its master (pid " + std::to_string(master_pid) + ") is gone";
      } else if (std::chrono::steady_clock::now() - started > 2 * limit) {
        why =
            "it was not welcomed by its master within " + std::to_string(2 * limit.count()) + " s";
      }
      if (!why.empty()) {
        FIBER_LOG_WARNING("leaving during start-up: %s", why.c_str());
        std::fflush(nullptr);
        // Status 0: a non-zero one makes mpirun treat the whole job as failed.
        std::_Exit(0);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }).detach();
}

}  // namespace fiber::internal
