// The spawner: a thread that starts worker processes with MPI_Comm_spawn when the master needs
// them, in batches, pausing the master's traffic while a spawn runs, and a watchdog that turns a
// spawn stuck inside Open MPI into fiber::SpawnError for the processes waiting on it. Internal.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fiber/engine/link.h"
#include "fiber/engine/progress_engine.h"
#include "fiber/engine/settings.h"
#include "fiber/spawn_options.h"

namespace fiber::internal {

/// What the spawner needs of the master. Everything is called with the runtime's lock held.
class SpawnerHost {
 public:
  virtual ~SpawnerHost() = default;
  virtual bool stopping_locked() const = 0;
  /// Workers wanted now (0: none).
  virtual int spawn_wanted_locked() const = 0;
  /// Pids of local spawned workers that are exiting; a spawn waits for them (bounded).
  virtual std::vector<int> take_exiting_pids_locked() = 0;
  /// A worker died in this run (exiting children may then hang in finalize for a while).
  virtual bool worker_lost_locked() const = 0;
  /// No spawn before this time (a static-world rank died just now), or none.
  virtual std::optional<Clock::time_point> spawn_not_before_locked() const = 0;
  /// A static rank or spawned worker runs on another host: the launcher's allocation spans
  /// several hosts.
  virtual bool spans_hosts_locked() const = 0;
  virtual SpawnOptions spawn_options_locked() const = 0;
  /// `count` workers are about to be spawned; the master's traffic stops for about `pause`.
  virtual void spawn_starting_locked(int count, std::chrono::microseconds pause) = 0;
  /// Traffic flows again (the spawn returned, or its watchdog fired).
  virtual void traffic_resumed_locked() = 0;
  /// The spawn returned its workers (`link->expected_hellos` of them).
  virtual void spawned_locked(std::unique_ptr<Link> link) = 0;
  /// The spawn of `count` failed, or never returned (`stuck`): the waiting processes fail.
  virtual void spawn_failed_locked(int count, const std::string& error, bool stuck) = 0;
  /// A spawn declared stuck returned after all (`count` workers coming, or none on an error).
  virtual void spawn_came_back_locked(int count) = 0;
};

class Spawner {
 public:
  Spawner(const Settings& settings, ProgressEngine& engine, SpawnerHost& host);
  Spawner(const Spawner&) = delete;
  Spawner& operator=(const Spawner&) = delete;

  void start();
  /// Something the spawner waits for changed; with the runtime's lock held.
  void wake_locked() { wake_.notify_one(); }
  /// A poll while traffic is held: a spawn running longer than spawn_timeout is declared stuck
  /// and traffic resumes without it. Takes the runtime's lock.
  void check_watchdog(Clock::time_point now);
  /// Why no process can be spawned any more in this run (a stuck spawn), or empty.
  const std::string& stuck_locked() const { return stuck_; }
  /// Ends the thread (the host says stopping_locked() by now), waiting for a spawn in flight to
  /// return. False when that spawn is declared stuck instead (its watchdog still runs in the
  /// progress thread): the thread is left inside MPI to the process exit, and MPI must not be
  /// finalised meanwhile.
  bool stop();

 private:
  void loop();
  /// Lets exiting children leave first: Open MPI 4.1's PMIx server sometimes never answers a new
  /// child's PMIx_Init while earlier children are still finalizing.
  void wait_for_exiting(std::unique_lock<std::mutex>& lock);

  const Settings& settings_;
  ProgressEngine& engine_;
  SpawnerHost& host_;
  std::condition_variable wake_;
  std::thread thread_;
  std::atomic<bool> exited_{false};           ///< The thread has returned.
  std::optional<Clock::time_point> started_;  ///< The running spawn's start.
  int count_ = 0;                             ///< ...and its size.
  std::string stuck_;
  /// How long a spawn holds all traffic, averaged over recent spawns (first guess 0.5 s).
  std::chrono::microseconds typical_pause_{500'000};
};

}  // namespace fiber::internal
