// The per-process engine behind the public API: owns the links to other processes, the thread
// that moves messages, process bookkeeping in the master and the queue store. Internal.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "fiber/init.h"
#include "fiber/invoke.h"
#include "fiber/pool_core.h"
#include "fiber/protocol.h"
#include "fiber/queue_hub.h"
#include "mpi_bridge/backoff.h"
#include "mpi_bridge/communicator.h"
#include "mpi_bridge/doorbell.h"
#include "mpi_bridge/rendezvous.h"
#include "mpi_bridge/transport.h"

namespace fiber::detail {

using Clock = std::chrono::steady_clock;

/// Set (from a signal handler) when a worker of a joined job is asked to leave (SIGTERM).
inline std::atomic<bool> g_leave_requested{false};
using Bytes = std::vector<std::byte>;

enum class ProcessStatus { kCreated, kPending, kRunning, kEnded };

struct Slot;

/// Everything the master knows about one fiber::Process. Guarded by the runtime's lock.
struct ProcessState {
  uint64_t id = 0;
  std::string name;
  TaskSpec task;
  bool daemon = false;
  ProcessStatus status = ProcessStatus::kCreated;
  std::optional<int> exitcode;
  int pid = 0;
  std::string host;
  std::exception_ptr start_error;  ///< Why it never ran (spawn or handshake failure).
  int signal_sent = 0;
  Slot* slot = nullptr;
  uint64_t pool = 0;  ///< The pool it serves as a worker, 0 for a plain Process.
  /// The worker process it runs in leaves when it ends instead of waiting in the reserve (a pool
  /// worker at maxtasksperchild wants a fresh process next).
  bool retire_worker_after = false;
};

/// A communicator to a group of workers: the static world, or one MPI_Comm_spawn call's children.
struct Link {
  bridge::Communicator comm;
  bool spawned = false;
  bool connected = false;  ///< A job that joined through the rendezvous.
  int live_slots = 0;
  int expected_hellos = 0;  ///< Workers started on it; each must say hello within spawn_timeout.
  int hellos = 0;
  std::chrono::steady_clock::time_point created;
  std::chrono::steady_clock::time_point last_heard;  ///< Last message on it (any rank).
  std::string executable;                            ///< What a spawned link's workers run.
};

/// One worker process as the master sees it.
struct Slot {
  Link* link = nullptr;
  int rank = 0;
  int pid = 0;
  std::string host;
  bool local = false;  ///< Same host as the master: its pid can be checked.
  /// kClosing: told to shut down, its last word (kGoodbye) not yet read.
  enum class State { kIdle, kBusy, kClosing, kGone } state = State::kIdle;
  std::shared_ptr<ProcessState> process;
  std::optional<Clock::time_point> missing_since;  ///< When its pid was first seen gone.
  bool leaving = false;  ///< A joined worker that asked to leave: retired once its process ends.
  bool used = false;     ///< Has run a process (a Process needs one that has run nothing).
  Clock::time_point idle_since;  ///< When it last became idle (the reserve's idle timeout).
  Clock::time_point last_heard;  ///< Its last message (heartbeats included).
  /// Delivery check: every message to a worker is counted, and its heartbeats say how many
  /// arrived. Messages sent before its previous heartbeat that have still not arrived are owed.
  uint64_t messages_sent = 0;
  uint64_t sent_at_last_beat = 0;
  std::optional<Clock::time_point> owing_since;
  /// Smallest (master's read time - worker's send stamp) of its heartbeats: clock offset plus
  /// the quickest delivery. A heartbeat read much later than that is stale (the master was
  /// behind reading) and says nothing about messages sent meanwhile.
  int64_t least_heartbeat_lag_ns = INT64_MAX;
  /// Messages that came from it; each heartbeat says how many it had sent before, and MPI keeps
  /// their order, so fewer means some were lost on the way.
  uint64_t messages_received = 0;
};

/// Result of a queue get or poll.
struct QueueResult {
  Outcome outcome = Outcome::kTimeout;
  Bytes item;
  std::string reason;
};

/// What a worker is told to do next.
struct Assignment {
  bool shutdown = false;
  bool stay_after = false;  ///< kStayAfterRun: serve on after this process ends.
  uint64_t process_id = 0;
  std::string name;
  TaskSpec task;
};

class Runtime {
 public:
  /// The runtime of this process; throws fiber::UsageError before fiber::init.
  static Runtime& instance();
  static bool exists();

  static void start(int& argc, char**& argv, Config config);
  void shutdown();

  bool is_master() const noexcept { return master_; }
  uint64_t self_id() const noexcept { return self_id_; }
  std::string self_name() const;
  std::unique_lock<std::mutex> lock() { return std::unique_lock(mu_); }
  void set_executable(const std::string& path);

  /// Waits until `pred` (evaluated with the lock held) is true, or the deadline passes: false.
  /// The waiting thread polls MPI itself while traffic flows.
  bool wait_until(const std::function<bool()>& pred,
                  std::optional<Clock::time_point> deadline = std::nullopt);
  /// Wakes every thread of this process waiting for a state change; with lock() held.
  void notify_locked();

  // Processes; master only. The _locked forms expect lock() to be held.
  std::shared_ptr<ProcessState> new_process_locked(TaskSpec task, const std::string& name_prefix);
  void start_process(const std::shared_ptr<ProcessState>& process);
  void start_process_locked(const std::shared_ptr<ProcessState>& process);
  void terminate_locked(const std::shared_ptr<ProcessState>& process);
  /// Sends to the worker running `process`; dropped when it is not running anywhere.
  void send_to_process_locked(const ProcessState& process, Kind kind, uint64_t id, uint64_t aux,
                              std::span<const std::byte> payload, uint32_t flags = 0);
  /// The process runs on a rank of the static world (not a spawned or connected worker).
  bool on_static_rank_locked(const ProcessState& process) const;
  /// The process runs in a job that joined through the rendezvous.
  bool on_connected_job_locked(const ProcessState& process) const;

  /// Opens the rendezvous other jobs join through (once) and returns its address.
  std::string listen();

  // Pools; master only.
  std::shared_ptr<PoolCore> create_pool(PoolSettings settings);
  /// Forgets a pool whose workers have all left.
  void release_pool(uint64_t id);
  /// Waits until the process ends or the deadline passes; true when it ended.
  bool wait_ended(const std::shared_ptr<ProcessState>& process,
                  std::optional<Clock::time_point> deadline);
  /// Waits until the process has a pid (or ended); returns it, 0 if it never ran.
  int wait_pid(const std::shared_ptr<ProcessState>& process);
  void terminate(const std::shared_ptr<ProcessState>& process);
  std::vector<std::shared_ptr<ProcessState>> live_children();

  // Queues; any process (workers ask the master).
  uint64_t queue_create(bool pipe_channel);
  void queue_put(uint64_t queue, Bytes item);
  QueueResult queue_wait(uint64_t queue, bool take,
                         std::optional<std::chrono::microseconds> timeout);
  size_t queue_size(uint64_t queue);
  void queue_close(uint64_t queue);

  // Worker side.
  void handshake();
  Assignment next_assignment();
  /// Tells the master a process ended; `worker_leaves` when this worker process ends with it
  /// (spawned workers, or a task that called std::exit), so it gets no further work.
  void report_exit(uint64_t process_id, int code, const std::string& error, bool worker_leaves);
  [[noreturn]] void finish_worker(int code);
  /// Answers the master's kShutdown with this worker's last message.
  void say_goodbye();
  void send_to_master(Kind kind, uint64_t id, uint64_t aux, uint32_t flags,
                      std::span<const std::byte> payload);
  /// The next kPoolTask or kPoolStop for `pool` (messages left over from a pool this process
  /// served before are dropped).
  bridge::Received next_pool_message(uint64_t pool);
  bool spawned_worker() const noexcept { return spawned_worker_; }
  /// A worker of a job that joined through the rendezvous.
  bool joined_worker() const noexcept { return joined_worker_; }
  const std::string& signal_directory() const noexcept { return signal_dir_; }
  void set_current(uint64_t id, const std::string& name);

 private:
  Runtime() = default;
  void begin(int& argc, char**& argv, Config config);

  void progress_loop();
  /// How a polling thread of this process backs off: long sleeps when every peer can ring its
  /// doorbell, shorter ones otherwise.
  bridge::Backoff::Policy idle_policy(bool waiter) const;
  void ring_peer(int pid);
  bool poll_once();
  /// Waits until `pred` holds (true) or the deadline passes (false). While traffic flows the
  /// waiting thread polls MPI itself, saving a thread hand-off per message; once quiet it sleeps
  /// until the progress thread signals. `lock` holds mu_.
  template <class Pred>
  bool await(std::unique_lock<std::mutex>& lock, Pred pred,
             std::optional<Clock::time_point> deadline = {});
  void handle(Link& link, bridge::Received& message);
  void handle_master(Link& link, bridge::Received& message);
  void handle_worker(bridge::Received& message);
  void send(MPI_Comm comm, int dest, Kind kind, uint64_t id, uint64_t aux, uint32_t flags,
            std::span<const std::byte> payload);
  void send_master(Kind kind, uint64_t id, uint64_t aux, std::span<const std::byte> payload);
  bridge::Received call_master(Kind kind, uint64_t aux, std::span<const std::byte> payload);
  void note_deadline(std::optional<Clock::time_point> deadline);
  void expire_deadlines(Clock::time_point now);

  // Master internals; called with mu_ held.
  void on_hello(Link& link, int rank, const Bytes& payload);
  void on_exited(Slot& slot, uint64_t id, const Bytes& payload);
  void on_leave(Slot& slot);
  void assign_idle_slots();
  /// The idle slot `process` should run on, or null: static-world ranks first, then joined
  /// jobs, then the reserve (used workers for pools, never-used ones for Processes).
  Slot* pick_idle_slot(const ProcessState& process);
  /// Spawned workers the spawner should start now: the pending processes no slot is coming
  /// for, plus never-used ones to keep Config::processes_ahead ready.
  int spawn_wanted_locked() const;
  /// Ends reserve workers idle longer than Config::reserve_idle_timeout or beyond
  /// Config::reserve_max_idle.
  void trim_reserve(Clock::time_point now);
  /// Tells an idle worker to exit and forgets it.
  void shut_down_slot(Slot& slot);
  /// A spawned worker started before set_executable chose another program serves nothing new.
  bool runs_current_executable(const Slot& slot) const;
  void end_process(const std::shared_ptr<ProcessState>& process, std::optional<int> code,
                   const std::string& how);
  void fail_pending(size_t count, const std::string& reason);
  void retire(Slot& slot);
  void check_liveness();
  void declare_dead(Slot& slot);
  /// A heartbeat said `received` messages reached the worker: a worker whose messages stay
  /// owed for heartbeat_timeout is declared dead (the transport to it lost or holds them).
  /// The delivery checks a heartbeat allows, both ways (before it is counted as received).
  void check_heartbeat(Slot& slot, const bridge::Received& heartbeat);
  void check_delivery(Slot& slot, uint64_t received, int64_t sent_stamp_ns);
  /// MPI reported that these ranks of `link` died (Open MPI 5's failure notices): a worker
  /// gives up on them at once; a worker whose master died exits.
  void on_peers_failed(Link& link, const std::vector<int>& ranks);
  /// Gives up on a worker whose messages are lost in either direction: `what` says which.
  void declare_unreachable(Slot& slot, const std::string& what);
  uint64_t requester_of(Slot* slot) const;
  Slot* find_slot(MPI_Comm comm, int rank);
  void spawner_loop();
  void acceptor_loop();
  void stop_acceptor();
  void check_spawn_watchdog();
  void check_master_alive();
  /// Waits (at most `limit`) for queued and in-flight sends to complete.
  void drain_outbox(std::chrono::seconds limit);
  /// Stops the progress thread and waits until no thread polls MPI any more.
  void stop_progress_thread();

  Config config_;
  bool master_ = true;
  bool spawned_worker_ = false;
  bool joined_worker_ = false;
  bool leave_sent_ = false;
  /// In a worker: its last message is posted; nothing more may be sent (see kGoodbye).
  bool last_word_sent_ = false;
  uint64_t self_id_ = kMasterId;
  std::string self_name_ = "MainProcess";
  std::string host_;
  std::string signal_dir_;
  bridge::Doorbell doorbell_;
  std::atomic<int> master_bell_pid_{0};  ///< Worker: the master's pid once it can be rung.

  mutable std::mutex mu_;
  std::mutex progress_mu_;  ///< Held by whichever thread runs poll_once.
  std::condition_variable cv_;
  std::condition_variable spawn_cv_;
  std::condition_variable progress_cv_;  ///< Wakes the standing-aside progress thread to stop.
  bridge::Outbox outbox_;
  std::thread progress_thread_;
  std::thread spawner_thread_;
  std::unique_ptr<bridge::Rendezvous> rendezvous_;
  std::thread acceptor_thread_;
  std::atomic<bool> acceptor_stopping_{false};
  std::atomic<bool> stop_progress_{false};
  std::atomic<int> active_waiters_{0};
  std::atomic<int64_t> last_waiter_left_ns_{0};
  static constexpr int64_t kTakeOverNs =
      2'000'000;  ///< Quiet time before the progress thread polls again.
  std::atomic<bool> spawn_in_progress_{false};
  std::atomic<int> polls_running_{0};  ///< Threads inside poll_once's MPI calls.
  bool stopping_ = false;
  bool shut_down_ = false;

  // Links are owned by the progress thread; new ones arrive through incoming_links_.
  std::vector<std::unique_ptr<Link>> links_;
  std::vector<std::unique_ptr<Link>> incoming_links_;
  std::atomic<bool> has_incoming_links_{false};
  Clock::time_point next_liveness_check_{};
  Clock::time_point last_receive_pass_{};  ///< Master: when messages were last looked for...
  Clock::time_point receiving_since_{};    ///< ...and since when without a long pause.
  std::atomic<int64_t> next_deadline_ns_{INT64_MAX};

  // Master state.
  QueueHub hub_;
  std::unordered_map<uint64_t, std::shared_ptr<PoolCore>> pools_;
  uint64_t next_pool_id_ = 1;
  uint64_t next_process_id_ = 1;
  std::map<std::pair<MPI_Comm, int>, std::unique_ptr<Slot>> slots_;
  std::deque<std::shared_ptr<ProcessState>> pending_;
  std::map<uint64_t, std::shared_ptr<ProcessState>> children_;
  int slots_expected_ = 0;
  /// A Process had to be spawned: keep never-used workers started ahead from now on.
  bool processes_started_ = false;
  std::vector<int>
      finishing_pids_;  ///< Local spawned workers that reported their end and are exiting.
  std::optional<Clock::time_point> spawn_started_;
  int spawn_count_ = 0;
  /// How long a spawn holds all traffic, averaged over recent spawns (first guess 0.5 s).
  std::chrono::microseconds typical_spawn_{500'000};
  std::string spawn_stuck_;  ///< Why spawning is impossible for the rest of the run, once it is.
  std::optional<Clock::time_point> static_rank_lost_at_;  ///< Last death of a static-world rank.
  bool sending_stuck_reported_ = false;
  bool worker_lost_ = false;  ///< Any worker was declared dead.
  static constexpr std::chrono::seconds kStaticRankSettle{2};

  // Worker state.
  Link* master_link_ = nullptr;
  int master_rank_ = 0;
  int master_pid_ = 0;
  std::chrono::milliseconds heartbeat_interval_{0};  ///< Told by the master at welcome.
  Clock::time_point next_heartbeat_{};
  bool master_local_ = false;
  enum class Handshake { kWaiting, kAccepted, kRefused } handshake_ = Handshake::kWaiting;
  std::string refusal_;
  std::deque<bridge::Received> mailbox_;
  std::deque<bridge::Received> pool_inbox_;
  uint64_t next_request_ = 1;
  uint64_t messages_received_ = 0;  ///< In a worker: messages from the master so far.
  std::mutex send_order_mu_;        ///< In a worker: counts and posts each send as one step.
  uint64_t messages_sent_ = 0;      ///< In a worker: messages to the master so far.
  /// Fault injection (FIBER_FAULT_DROP_MESSAGE=<n>@<file>): the one worker that creates <file>
  /// discards the n-th message from its master, as a faulty transport would.
  uint64_t fault_drop_message_ = 0;
  uint64_t messages_seen_ = 0;
  std::unordered_map<uint64_t, std::optional<bridge::Received>> replies_;
};

}  // namespace fiber::detail
