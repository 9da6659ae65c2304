#include "fiber/master/spawner.h"

#include <algorithm>
#include <cstdio>

#include "fiber/base/log.h"
#include "fiber/base/process_presence.h"
#include "fiber/base/stack_dump.h"
#include "mpi_bridge/launch_environment.h"
#include "mpi_bridge/spawn.h"

namespace fiber::internal {
Spawner::Spawner(const Settings& settings, ProgressEngine& engine, SpawnerHost& host)
    : settings_(settings), engine_(engine), host_(host) {}

void Spawner::start() {
  thread_ = std::thread([this] { loop(); });
}

void Spawner::wait_for_exiting(std::unique_lock<std::mutex>& lock) {
  const std::vector<int> exiting = host_.take_exiting_pids_locked();
  // After a kill, finalizing children can hang until their watchdog ends them.
  const auto limit = host_.worker_lost_locked()
                         ? settings_.finalize_watchdog + std::chrono::seconds(1)
                         : std::chrono::seconds(2);
  const auto give_up = Clock::now() + limit;
  lock.unlock();
  bool stop = false;
  while (!stop && Clock::now() < give_up &&
         std::any_of(exiting.begin(), exiting.end(), process_present)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    lock.lock();
    stop = host_.stopping_locked();
    lock.unlock();
  }
  lock.lock();
}

void Spawner::loop() {
  struct Exit {
    std::atomic<bool>& exited;
    ~Exit() { exited.store(true); }
  } mark_exit{exited_};
  auto lock = engine_.lock();
  for (;;) {
    wake_.wait(lock, [this] {
      return host_.stopping_locked() || (stuck_.empty() && host_.spawn_wanted_locked() > 0);
    });
    if (host_.stopping_locked()) return;
    wait_for_exiting(lock);
    if (const auto not_before = host_.spawn_not_before_locked()) {
      wake_.wait_until(lock, *not_before, [this] { return host_.stopping_locked(); });
      if (host_.stopping_locked()) return;
    }
    // Meanwhile the runtime may have begun to shut down, or what was wanted may have been
    // cancelled (a terminated pool) or served (a worker came back to the reserve): spawn only
    // what is still wanted, in one batch of at least min_spawn_batch (the extra ones wait in the
    // reserve: a spawn pauses traffic about as long whatever its size).
    if (host_.stopping_locked()) return;
    const int wanted = host_.spawn_wanted_locked();
    if (wanted == 0) continue;
    // Batches of one: MPICH's MPI_Finalize is a barrier over a spawn batch, and workers leave
    // one by one. Where the launcher's allocation spans hosts, Open MPI 5.0 places a later
    // batch from the host after its last one, so it often straddles two hosts, and such a
    // batch failed MPI_Init with "PML add procs failed" (its processes' addresses "Not found"),
    // which ends the job; a first batch across hosts, and batches of one, did not (measured on
    // 5.0.11 with two hosts).
    const int largest =
        bridge::built_against_mpi() == MpiFamily::kMpich || host_.spans_hosts_locked()
            ? 1
            : std::max(1, settings_.max_spawn_batch);
    const int count = std::clamp(std::max(wanted, settings_.min_spawn_batch), 1, largest);
    const SpawnOptions options = host_.spawn_options_locked();
    try {
      host_.spawn_starting_locked(count, typical_pause_);
    } catch (const std::exception& e) {
      FIBER_LOG_ERROR("preparing a spawn failed: %s", e.what());
    }
    started_ = Clock::now();
    count_ = count;
    lock.unlock();
    // The sends just queued leave before traffic stops.
    try {
      engine_.outbox().progress();
    } catch (const std::exception& e) {
      FIBER_LOG_ERROR("progress error: %s", e.what());
    }
    auto link = std::make_unique<Link>();
    std::string error;
    engine_.hold_traffic();
    try {
      link->comm = bridge::spawn(options, count);
      link->spawned = true;
      link->executable = options.executable;
      link->live_slots = count;
      link->expected_hellos = count;
      link->created = Clock::now();
      link->last_heard = link->created;
    } catch (const std::exception& e) {
      error = e.what();
    }
    engine_.release_traffic();
    lock.lock();
    const auto took =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - *started_);
    const auto longest_counted =
        std::chrono::duration_cast<std::chrono::microseconds>(settings_.spawn_timeout) / 10;
    FIBER_LOG_DEBUG("MPI_Comm_spawn of %d processes took %.3f s", count, took.count() / 1e6);
    typical_pause_ = (3 * typical_pause_ + std::min(took, longest_counted)) / 4;
    started_.reset();
    const bool was_stuck = !stuck_.empty();
    if (was_stuck) {
      // It was slow, not stuck: spawning resumes.
      stuck_.clear();
      host_.spawn_came_back_locked(error.empty() ? count : 0);
    } else {
      host_.traffic_resumed_locked();
    }
    if (!error.empty()) {
      if (!was_stuck) host_.spawn_failed_locked(count, error, false);
      continue;
    }
    host_.spawned_locked(std::move(link));
  }
}

void Spawner::check_watchdog(Clock::time_point now) {
  auto lock = engine_.lock();
  if (!started_ || !stuck_.empty() || now - *started_ < settings_.spawn_timeout) return;
  stuck_ = "MPI_Comm_spawn of " + std::to_string(count_) + " processes has not completed after " +
           std::to_string(settings_.spawn_timeout.count()) +
           " s; Open MPI's runtime is stuck, so no more processes can be spawned in this run";
  FIBER_LOG_ERROR("%s", stuck_.c_str());
  // Traffic of the workers already running must go on even though the spawn never returns.
  engine_.release_traffic();
  host_.spawn_failed_locked(count_, stuck_, true);
  host_.traffic_resumed_locked();
  if (stacks_wanted_when_stuck()) {
    // Where it is stuck (the spawning thread, Open MPI's daemon, the processes it started) while
    // it still is: the cause of a hang seen once in many runs. Taken here, before the run can
    // end, it holds up this thread's other work (on the progress thread, the workers' traffic)
    // for a second or so a process: asked for where the run fails anyway (tests).
    const std::string why = stuck_;
    lock.unlock();
    dump_process_tree_stacks(why);
  }
}

bool Spawner::stop() {
  {
    auto lock = engine_.lock();
    wake_.notify_all();
  }
  if (!thread_.joinable()) return true;
  for (;;) {
    if (exited_.load()) {
      thread_.join();
      return true;
    }
    {
      auto lock = engine_.lock();
      if (!stuck_.empty() && started_.has_value()) {
        // Inside an MPI_Comm_spawn that will not return.
        thread_.detach();
        return false;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace fiber::internal
