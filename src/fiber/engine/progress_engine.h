// The progress engine: the thread that moves this process's messages, the waits that poll MPI
// themselves while traffic flows, the doorbell that wakes sleeping pollers, and the pause of all
// traffic while an MPI_Comm_spawn runs. It knows links and envelopes, not what messages mean:
// that is the MessageSink's business (the master's side or a worker's). Internal.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "fiber/engine/link.h"
#include "fiber/engine/settings.h"
#include "mpi_bridge/backoff.h"
#include "mpi_bridge/doorbell.h"
#include "mpi_bridge/transport.h"

namespace fiber::internal {

/// What makes sense of the messages one process receives.
class MessageSink {
 public:
  virtual ~MessageSink() = default;
  /// A message arrived on `link`. Called by the polling thread, without the runtime's lock.
  virtual void on_message(Link& link, bridge::Received& message) = 0;
  /// MPI reported that these ranks of `link` died (the failures are acknowledged).
  virtual void on_peers_failed(Link& link, const std::vector<int>& ranks) = 0;
  /// After each pass over the links; `tick` is true once every tick interval (periodic checks).
  /// Called by the polling thread, without the runtime's lock.
  virtual void after_receiving(Clock::time_point now, bool tick) = 0;
  /// A poll while traffic is held for a spawn (no MPI call may be made).
  virtual void while_held(Clock::time_point now) = 0;
  /// Peers ring this process's doorbell after sending to it, so idle sleeps can be long.
  virtual bool rung_by_peers() const = 0;
};

class ProgressEngine {
 public:
  /// `tick_interval`: how often after_receiving gets tick = true; `deep_sleep`: how long an idle
  /// poller sleeps when peers ring it.
  ProgressEngine(const Settings& settings, std::chrono::milliseconds tick_interval,
                 std::chrono::microseconds deep_sleep);
  ProgressEngine(const ProgressEngine&) = delete;
  ProgressEngine& operator=(const ProgressEngine&) = delete;
  ~ProgressEngine();

  /// Starts the progress thread, which delivers to `sink`.
  void start(MessageSink& sink);

  // ---- The runtime's lock and waits ----
  std::unique_lock<std::mutex> lock() { return std::unique_lock(mu_); }
  std::mutex& mutex() { return mu_; }
  /// Waits until `pred` (evaluated with the lock held) is true, or the deadline passes (false).
  /// While traffic flows the waiting thread polls MPI itself, saving a thread hand-off per
  /// message; once quiet it sleeps until rung. `lock` holds mutex(). A deadline already passed
  /// makes it a check: one poll, if no other thread is polling, as MPI_Test drives progress.
  bool await(std::unique_lock<std::mutex>& lock, const std::function<bool()>& pred,
             std::optional<Clock::time_point> deadline = std::nullopt);
  /// await() taking the lock itself.
  bool wait_until(const std::function<bool()>& pred,
                  std::optional<Clock::time_point> deadline = std::nullopt);
  /// Wakes every thread of this process waiting for a state change; with the lock held.
  void notify_locked();
  /// Wakes threads blocked on the lock's condition variable without polling (cv waits).
  std::condition_variable& changes() { return cv_; }

  // ---- Sending ----
  /// Starts sending (or queues while traffic is held).
  void post(MPI_Comm comm, int dest, const bridge::Envelope& envelope,
            std::span<const std::byte> payload);
  /// Rings the doorbell of process `pid` on this host (after sending to it).
  void ring(int pid);
  /// Opens this process's doorbell in `directory`, the run's directory of doorbells.
  bool open_doorbell(const std::string& directory, int pid);
  bool doorbell_open() const noexcept { return doorbell_.is_open(); }
  /// Closes the doorbell of process `pid`, whose last message arrived or which died, and removes
  /// its files: a process killed, or ending without its destructors, leaves them behind.
  void forget_peer(int pid) {
    doorbell_.forget(pid);
    bridge::Doorbell::remove_files_of(doorbell_directory_, pid);
  }
  bridge::Outbox& outbox() { return outbox_; }

  // ---- Links (owned here; only the polling thread touches the list) ----
  /// Adds a link; it is polled from the next pass on. Any thread; add_link_locked with the
  /// runtime's lock held.
  void add_link(std::unique_ptr<Link> link);
  void add_link_locked(std::unique_ptr<Link> link);
  /// Frees links for which `done` is true. Only from after_receiving (the polling thread).
  void erase_links(const std::function<bool(const Link&)>& done);
  /// Visits every link. Only from after_receiving (the polling thread).
  void for_each_link(const std::function<void(Link&)>& visit);
  /// The first link (a worker's link to its master).
  Link* first_link();
  /// When receiving last resumed after a pause (a spawn holds all traffic, possibly for long):
  /// messages sent meanwhile are still to be read, so silence is measured from here.
  Clock::time_point receiving_since() const { return receiving_since_; }

  // ---- Holding all traffic while MPI_Comm_spawn runs ----
  /// Stops MPI traffic of this process: sends queue, polls return at once; waits until no poll
  /// is inside MPI any more. Open MPI 4.1 can hang or crash a spawn when other threads drive MPI
  /// meanwhile.
  void hold_traffic();
  /// hold_traffic() that ends by itself at `until` unless released before: for holds around a
  /// collective that waits for peers, one of which may have died (a stop must still be read).
  void hold_traffic_until(Clock::time_point until);
  void release_traffic();
  bool traffic_held() const { return traffic_held_.load(); }

  // ---- Ending ----
  /// Waits (at most `limit`) for queued and in-flight sends to complete.
  void drain(std::chrono::seconds limit);
  /// Stops the progress thread and waits (at most `limit`) until no thread is inside a poll; no
  /// poll starts afterwards. False when a poll is still inside MPI after `limit`.
  bool stop(std::chrono::seconds limit);
  /// Frees every link (after stop()).
  void clear_links();

 private:
  bridge::Backoff::Policy idle_policy(bool waiter) const;
  /// `sleep`, or a short one while a send is still in flight.
  std::chrono::microseconds sleep_while_sending(std::chrono::microseconds sleep);
  void progress_loop();
  bool poll_once();
  /// One poll_once() unless another thread is polling (nullopt then): whether it found anything.
  /// The caller holds neither lock.
  std::optional<bool> poll_unless_busy();
  /// await() whose deadline has passed: `pred`, one poll unless another thread is polling, `pred`.
  bool check_once(std::unique_lock<std::mutex>& lock, const std::function<bool()>& pred);
  /// Polls `link` rank by rank from now on (see Link::by_rank).
  void start_polling_by_rank(Link& link);
  /// One pass over a by_rank link's live ranks; true when a message arrived.
  bool poll_by_rank(Link& link);

  const Settings& settings_;
  const std::chrono::milliseconds tick_interval_;
  const std::chrono::microseconds deep_sleep_;
  MessageSink* sink_ = nullptr;

  std::mutex mu_;                        ///< The runtime's lock.
  std::condition_variable cv_;           ///< State changes under mu_.
  std::mutex progress_mu_;               ///< Held by whichever thread runs poll_once.
  std::condition_variable progress_cv_;  ///< Wakes the standing-aside progress thread to stop.
  bridge::Outbox outbox_;
  bridge::Doorbell doorbell_;
  std::string doorbell_directory_;

  std::vector<std::unique_ptr<Link>> links_;
  std::vector<std::unique_ptr<Link>> incoming_links_;  ///< Guarded by mu_.
  std::atomic<bool> has_incoming_links_{false};

  std::thread progress_thread_;
  std::atomic<bool> stop_progress_{false};
  std::atomic<int> active_waiters_{0};
  std::atomic<int64_t> last_waiter_left_ns_{0};
  /// When a poll last found something to do (sent or received), whichever thread polled.
  std::atomic<int64_t> last_active_ns_{0};
  std::atomic<bool> traffic_held_{false};
  std::atomic<int64_t> hold_until_ns_{0};  ///< When a hold_traffic_until ends; 0: no limit.
  std::atomic<int> polls_running_{0};      ///< Threads inside poll_once's MPI calls.

  Clock::time_point next_tick_{};
  Clock::time_point last_receive_pass_{};
  Clock::time_point receiving_since_{};
};

}  // namespace fiber::internal
