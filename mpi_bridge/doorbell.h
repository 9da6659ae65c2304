// Waking a process that sleeps between polls of MPI. Open MPI offers no way to sleep until a
// message arrives (its blocking calls spin a core), so an idle fibermpi process sleeps in poll(2)
// on a FIFO of its own, and a peer on the same host that has just sent it a message writes one
// byte into that FIFO. The sleeper wakes within microseconds instead of at the end of its sleep,
// so sleeps can be long (near-zero idle CPU) without costing latency.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <unordered_map>

namespace fiber::bridge {

class Doorbell {
 public:
  Doorbell() = default;
  Doorbell(const Doorbell&) = delete;
  Doorbell& operator=(const Doorbell&) = delete;
  ~Doorbell();

  /// The FIFO path of the process `pid` under `directory`.
  static std::string path_for(const std::string& directory, int pid);

  /// Creates this process's FIFO in `directory` (which must exist); false if it cannot.
  bool open(const std::string& directory, int pid);
  bool is_open() const noexcept { return fd_ >= 0; }

  /// Sleeps until rung or `timeout` passes (plain sleep when no FIFO is open); drains the rings.
  /// True when it was rung: the caller should then poll for a while before sleeping again,
  /// because a peer skips rings that follow its previous one closely.
  bool sleep(std::chrono::microseconds timeout);
  /// Wakes this process's own sleepers, if any thread sleeps.
  void ring_self();
  /// Wakes process `pid`, whose FIFO is under `directory`. Rings to the same process closer
  /// together than `min_gap` are skipped: it is still polling after the previous one.
  void ring(const std::string& directory, int pid, std::chrono::microseconds min_gap);
  /// Closes the FIFO of a process that is gone.
  void forget(int pid);

 private:
  struct Peer {
    int fd = -1;
    std::chrono::steady_clock::time_point last_ring{};
  };
  int fd_ = -1;
  std::string path_;
  std::atomic<int> sleepers_{0};
  std::mutex peers_mutex_;
  std::unordered_map<int, Peer> peers_;
};

}  // namespace fiber::bridge
