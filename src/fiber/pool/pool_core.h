// The master's side of a fiber::Pool, independent of task and result types: the jobs whose
// inputs are read (encoded) as workers have room for them, which worker holds which chunk, and
// where each result goes. Tasks and results
// travel directly between the master and the pool's workers (never through the queue hub), with
// several chunks in flight per worker. Internal.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "fiber/detail/job.h"
#include "fiber/invoke.h"
#include "fiber/pool/callback_runner.h"
#include "fiber/pool/pool_host.h"
#include "fiber/pool/pool_messages.h"
#include "fiber/pool/pool_settings.h"
#include "fiber/pool/task_message.h"

namespace fiber::internal {

class PoolCore {
 public:
  PoolCore(PoolHost& host, uint64_t id, PoolSettings settings);
  PoolCore(const PoolCore&) = delete;
  PoolCore& operator=(const PoolCore&) = delete;

  uint64_t id() const noexcept { return id_; }
  /// The size the pool keeps (with the lock held: resize changes it).
  int size() const noexcept { return settings_.processes; }

  // Everything below is called with the runtime's lock held.

  /// Starts the workers (static-world ranks first, then spawned).
  void start_workers_locked();
  /// Queues a job, whose inputs are read as workers have room for them; throws UsageError after
  /// close/terminate.
  void submit_locked(const std::shared_ptr<detail::Job>& job);
  /// No more submissions; workers leave once the backlog is done.
  void close_locked();
  /// Fails everything outstanding with TerminatedError and stops the workers now.
  void terminate_locked();
  /// Every worker has left (after close or terminate).
  bool finished_locked() const { return state_ != State::kRunning && workers_.empty(); }
  bool running_locked() const { return state_ == State::kRunning; }
  bool terminated_locked() const { return state_ == State::kTerminated; }
  int ready_workers_locked() const;
  /// Workers placed in a process, or waiting for one, that have not said they are ready yet.
  int starting_workers_locked() const;
  /// Replacements stopped failing (no new process can start) and no placed worker is still
  /// starting: the pool runs below its size with the ready workers it has, for good.
  bool short_for_good_locked() const;
  /// Workers that count towards the pool's size (not retired).
  int members_locked() const;
  /// Grows or shrinks the pool to `processes` workers; retired ones finish what they hold.
  void resize_locked(int processes);
  /// Pids of the ready workers that count towards the size.
  std::vector<int> pids_locked() const;
  /// Why no task can run any more (every worker failed to start, or the initializer threw).
  const std::string& broken_locked() const { return broken_; }
  /// Queues a job's callbacks for the callback thread.
  void schedule_callbacks_locked(detail::Job& job);

  /// A worker of a joining job is idle: grow by one worker onto it. False when this pool does not
  /// take joined workers (closed, or Options::take_joined_workers off).
  bool adopt_joined_worker_locked();
  /// The worker running `process_id` leaves after what it holds; the pool shrinks by one.
  void release_worker_locked(uint64_t process_id);
  /// Periodic bookkeeping (autoscaling), with the lock held.
  void tick_locked(std::chrono::steady_clock::time_point now);
  /// The master's traffic is about to stop for about `pause` (a spawn): queue enough work on
  /// every ready worker to keep it busy meanwhile.
  void cover_pause_locked(std::chrono::microseconds pause);
  /// Traffic flows again: back to the usual queue depth.
  void pause_over_locked();

  // Runtime events, with the lock held.
  void on_worker_ready(const ProcessState& process, const wire::PoolReady& ready);
  void on_result(const ProcessState& process, wire::PoolResult result);
  void on_started(const ProcessState& process, const wire::PoolStarted& started);
  void on_worker_ended(const std::shared_ptr<ProcessState>& process);

  /// Runs queued callbacks until stop_callbacks; started on first use.
  void stop_callbacks();

 private:
  enum class State { kRunning, kClosed, kTerminated };
  struct Task {
    uint64_t id = 0;
    std::shared_ptr<detail::Job> job;
    detail::Job::Made chunk;
    detail::Bytes payload;
    int attempts = 0;
    uint64_t worker = 0;  ///< Process id of the worker holding it.
    uint64_t sent = 0;    ///< Send order: a worker runs its chunks in this order.
  };
  struct Worker {
    std::shared_ptr<ProcessState> process;
    bool ready = false;
    bool leaving = false;  ///< Told to stop, or given its last task (maxtasksperchild).
    bool retired = false;  ///< Leaving because the pool shrank or closed: not to be replaced.
    bool joined = false;   ///< Runs in a job that joined through the rendezvous.
    int in_flight = 0;
    uint64_t assigned = 0;
    std::chrono::steady_clock::time_point idle_since{};
    std::vector<uint64_t> unsent;  ///< Task ids assigned, waiting for the next flush.
    size_t bytes_in_flight = 0;    ///< Argument bytes of the chunks it holds.
    /// The first sent of the chunks it holds has started there (kPoolStarted, or the last
    /// result's next_started): only such a chunk counts an attempt when the worker is lost.
    bool front_started = false;
  };

  void launch_worker_locked();
  /// The pool runs, or still holds work: workers that end are worth replacing.
  bool work_may_come_locked() const;
  bool autoscaling() const { return settings_.max_processes > 0; }
  void grow_for_backlog_locked();
  void dispatch_locked();
  /// The next chunk to send, into `task`: a lost one first, then the next of the oldest job
  /// still reading its inputs. False when none can go now.
  bool next_task_locked(Task& task);
  /// A chunk could go now (next_task_locked would find one).
  bool work_waiting_locked() const;
  /// Chunks that could go now, counting an input range of unknown length as many.
  size_t chunks_waiting_locked() const;
  /// Some job may still give chunks (drops those whose inputs are all read).
  bool inputs_pending_locked();
  bool can_take(const Worker& worker) const;
  /// Gives `task` to `worker`; it leaves with the worker's next flush_sends_locked().
  void assign_task(Worker& worker, Task task);
  /// Sends every worker's assigned chunks, several per message.
  void flush_sends_locked();
  /// Fails assigned chunks that could not be sent, with `why`.
  void fail_unsent_locked(Worker& worker, const std::vector<uint64_t>& tasks,
                          const std::string& why);
  void release_idle_workers_locked();
  void complete_chunk(detail::Job& job, const detail::Job::Made& chunk,
                      detail::ChunkOutcome outcome);
  void fail_all_locked(const std::exception_ptr& error);
  int tasks_in_flight_limit() const;

  PoolHost& host_;
  const uint64_t id_;
  PoolSettings settings_;
  detail::Bytes initializer_bytes_;
  State state_ = State::kRunning;
  std::string broken_;
  uint64_t next_task_ = 1;
  uint64_t sends_ = 0;
  std::deque<Task> backlog_;  ///< Chunks to send again (their worker was lost).
  std::deque<std::shared_ptr<detail::Job>> sources_;  ///< Jobs still reading inputs, oldest first.
  std::unordered_map<uint64_t, Task> in_flight_;
  std::map<uint64_t, Worker> workers_;      ///< By process id.
  int failed_starts_ = 0;                   ///< Workers in a row that ended before becoming ready.
  bool replacements_stopped_ = false;       ///< Starting workers keeps failing; live ones carry on.
  std::string replacements_stopped_why_;    ///< The failed starts that stopped them.
  double mean_compute_us_ = 0;              ///< Moving average of a chunk's run time in a worker...
  uint64_t compute_samples_ = 0;            ///< ...over this many results.
  std::vector<uint64_t> workers_to_flush_;  ///< Workers with assigned, unsent chunks.
  /// Scratch space of flush_sends_locked.
  struct FlushScratch {
    TaskMessageBuilder message;
    std::vector<uint64_t> batch;
    std::vector<uint64_t> unsent;
    std::vector<uint64_t> workers;
  };
  FlushScratch flush_scratch_;
  bool flushing_ = false;  ///< Inside flush_sends_locked.
  int pause_depth_ = 0;    ///< Chunks per worker while a traffic pause is covered.

  std::shared_ptr<CallbackRunner> callbacks_;
};

}  // namespace fiber::internal
