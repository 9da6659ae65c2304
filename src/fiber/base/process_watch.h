// Which of many processes of this host have ended, for the master's pid checks of its local
// workers: one system call per round of checks however many processes it watches (a pidfd per
// process, Linux 5.3 and later, in one epoll set: a pidfd turns readable once its process has
// ended), where asking each pid with kill(pid, 0) every 20 ms cost the master about 0.2 ms of CPU
// per worker and second. Where a pidfd cannot be had (an older kernel, a seccomp policy), that
// pid is asked with kill(pid, 0) as before. Free of MPI. Internal; not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace fiber::internal {

class ProcessWatch {
 public:
  ProcessWatch();
  ~ProcessWatch();
  ProcessWatch(const ProcessWatch&) = delete;
  ProcessWatch& operator=(const ProcessWatch&) = delete;

  /// Starts a round of checks: takes in which watched processes ended since the last round.
  void begin_round();
  /// True when `pid` (> 0) has ended. The first question about a pid starts watching it; a pid
  /// not asked about during a round is no longer watched after it (end_round).
  bool gone(int pid);
  /// Ends the round: pids not asked about during it are dropped (a later process may reuse
  /// the number).
  void end_round();

  /// Processes watched through a pidfd (for tests and figures).
  size_t watched_by_pidfd() const;

 private:
  struct Watched {
    int pidfd = -1;  ///< -1: asked with kill(pid, 0).
    bool ended = false;
    uint64_t round = 0;  ///< The last round that asked about it.
  };
  void forget(std::unordered_map<int, Watched>::iterator it);

  int epoll_ = -1;
  uint64_t round_ = 0;
  std::unordered_map<int, Watched> watched_;
};

}  // namespace fiber::internal
