// Waking a process that sleeps between polls of MPI. Open MPI offers no way to sleep until a
// message arrives (its blocking calls spin a core), so an idle fibermpi process sleeps in poll(2)
// on a FIFO of its own, and a peer on the same host that has just sent it a message writes one
// byte into that FIFO. The sleeper wakes within microseconds instead of at the end of its sleep,
// so sleeps can be long (near-zero idle CPU) without costing latency.
//
// Beside the FIFO each process shares one word with its peers (a small file mapped by all of
// them): how many of its threads are about to sleep or sleeping. A peer writes to the FIFO only
// when that count is not zero, so a busy receiver costs its senders no system call, and a ring is
// never skipped when it is needed. The sleeper announces itself before its last look for work
// (prepare_sleep, then a poll, then sleep or cancel_sleep); a sender makes its message visible
// before it reads the count (ring). One of the two always sees the other, so no wake-up is lost
// for a message MPI delivered when it was sent.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
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
  /// The path of the word process `pid` shares with its peers (its sleepers).
  static std::string sleepers_path_for(const std::string& directory, int pid);

  /// Creates this process's FIFO and shared word in `directory` (which must exist); false if it
  /// cannot.
  bool open(const std::string& directory, int pid);
  bool is_open() const noexcept { return fd_ >= 0; }

  /// Announces that the calling thread is about to sleep: from now on peers that ring this
  /// process write to its FIFO. Look for work once more, then sleep() or cancel_sleep().
  void prepare_sleep() noexcept;
  /// The last look found work: the thread does not sleep after all.
  void cancel_sleep() noexcept;
  /// Sleeps (after prepare_sleep) until rung or `timeout` passes (a plain sleep when no FIFO is
  /// open); drains the rings and ends the announcement. True when it was rung.
  bool sleep(std::chrono::microseconds timeout);
  /// Wakes this process's own sleepers, if any thread but the calling one is about to sleep or
  /// sleeps.
  void ring_self();
  /// Wakes process `pid`, whose FIFO is under `directory`, if one of its threads sleeps. Call
  /// after the message it should see was sent.
  void ring(const std::string& directory, int pid);
  /// Closes the FIFO of a process that is gone (ended or died).
  void forget(int pid);
  /// Removes the FIFO and shared word of process `pid` under `directory`, which has ended: a
  /// process killed, or ending without running its destructors, leaves its own behind.
  static void remove_files_of(const std::string& directory, int pid);

 private:
  struct Peer {
    int fd = -1;
    /// The peer's sleepers, mapped from its file; null where it has none (then every ring is
    /// written).
    std::atomic<uint32_t>* sleepers = nullptr;
  };
  static std::atomic<uint32_t>* map_sleepers(int fd);
  static void unmap_sleepers(std::atomic<uint32_t>* sleepers);
  /// Where this process counts its sleepers: the shared word once open, before that a word of
  /// its own (threads that sleep while the doorbell opens are woken by their timers).
  std::atomic<uint32_t>& own_sleepers() noexcept {
    std::atomic<uint32_t>* shared = shared_.load(std::memory_order_acquire);
    return shared ? *shared : local_sleepers_;
  }

  int fd_ = -1;
  std::string path_;
  std::string sleepers_path_;
  std::atomic<std::atomic<uint32_t>*> shared_{nullptr};
  std::atomic<uint32_t> local_sleepers_{0};
  std::mutex peers_mutex_;
  std::unordered_map<int, Peer> peers_;
};

}  // namespace fiber::bridge
