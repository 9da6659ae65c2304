#include "fiber/base/process_presence.h"

#include <signal.h>

#include <cerrno>

namespace fiber::internal {

bool process_gone(pid_t pid) { return pid > 0 && ::kill(pid, 0) == -1 && errno == ESRCH; }

}  // namespace fiber::internal
