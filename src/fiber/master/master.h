// The master's side of the runtime: it routes the workers' messages, keeps the process table,
// acts on the liveness monitor's verdicts, starts workers through the spawner and the join
// acceptor, serves queues, and hosts the pools. Internal.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fiber/base/core_binder.h"
#include "fiber/base/gpu_assigner.h"
#include "fiber/base/process_watch.h"
#include "fiber/base/worker_resources.h"
#include "fiber/engine/progress_engine.h"
#include "fiber/engine/settings.h"
#include "fiber/group/group_core.h"
#include "fiber/kubernetes/join_host.h"
#include "fiber/kubernetes/pod_provisioner.h"
#include "fiber/manager/manager_service.h"
#include "fiber/master/join_acceptor.h"
#include "fiber/master/liveness_monitor.h"
#include "fiber/master/process_table.h"
#include "fiber/master/spawner.h"
#include "fiber/nesting/nested_messages.h"
#include "fiber/pool/pool_core.h"
#include "fiber/pool/pool_host.h"
#include "fiber/process/process_control.h"
#include "fiber/process/process_messages.h"
#include "fiber/queue/queue_service.h"
#include "fiber/wire/handler_table.h"
#include "fiber/wire/link_messages.h"

namespace fiber::internal {

class FiberJobScaler;

class Master final : public MessageSink,
                     public ProcessControl,
                     public PoolHost,
                     public GroupHost,
                     public SpawnerHost,
                     public PodProvisionerHost,
                     public JoinHost {
 public:
  /// `static_world`: the link to ranks 1..N-1 under mpirun -n N, or null.
  Master(Settings& settings, ProgressEngine& engine, std::unique_ptr<Link> static_world);
  Master(const Master&) = delete;
  Master& operator=(const Master&) = delete;

  /// Opens the doorbell directory and starts the spawner.
  void start();
  /// Ends the master's side at exit: pools stop, daemonic children are terminated and the others
  /// waited for, idle workers are released. False when a thread is left inside MPI (a stuck
  /// spawn, a pending accept): MPI must then not be finalised.
  bool shutdown();
  /// A worker was lost in this run (finalize may then hang: see Settings::finalize_watchdog).
  bool worker_lost() const;

  // ---- Processes (ProcessControl: the master's own children) ----
  std::shared_ptr<ProcessState> new_process(detail::TaskSpec task) override;
  std::shared_ptr<ProcessState> new_process_locked(detail::TaskSpec task,
                                                   const std::string& name_prefix) override;
  void start_process(const std::shared_ptr<ProcessState>& process) override;
  void start_process_locked(const std::shared_ptr<ProcessState>& process) override;
  void terminate(const std::shared_ptr<ProcessState>& process, int signal) override;
  void terminate_locked(const std::shared_ptr<ProcessState>& process, int signal) override;
  bool wait_ended(const std::shared_ptr<ProcessState>& process,
                  std::optional<Clock::time_point> deadline) override;
  int wait_pid(const std::shared_ptr<ProcessState>& process) override;
  std::vector<std::shared_ptr<ProcessState>> live_children() override;
  void set_executable(const std::string& path);

  // ---- Pools ----
  std::shared_ptr<PoolCore> create_pool(PoolSettings settings);
  /// Why this master cannot start processes that ran nothing before (a pool's
  /// fresh_processes), or null when it can.
  const char* why_no_fresh_processes_locked() const;
  std::shared_ptr<PoolCore> create_pool_locked(PoolSettings settings);
  /// Forgets a pool whose workers have all left.
  void release_pool(uint64_t id);

  // ---- Groups ----
  std::shared_ptr<GroupCore> create_group(GroupSettings settings);
  std::shared_ptr<GroupCore> create_group_locked(GroupSettings settings);
  /// Forgets a group nobody holds any more.
  void release_group(uint64_t id);

  // ---- JoinHost (kubernetes/join_host.h) ----
  std::string listen() override;
  void begin_join_turn() override;
  void end_join_turn() override;
  void pod_connection_closed(const std::string& pod, int pid) override;
  void provision_pods(std::unique_ptr<FiberJobScaler> scaler, int slots_per_pod) override;
  QueueService& queues() { return queues_; }
  ManagerService& manager() { return manager_; }

  // ---- PoolHost ----
  void send_to_process_locked(const ProcessState& process, const Outgoing& message) override;
  bool on_static_rank_locked(const ProcessState& process) const override;
  bool on_joined_job_locked(const ProcessState& process) const override;
  std::unique_lock<std::mutex> lock() override { return engine_.lock(); }
  Clock::time_point now() const override { return Clock::now(); }
  // ---- GroupHost ----
  std::optional<Placement> placement_locked(const ProcessState& process) const override;
  void give_up_locked(const ProcessState& process, const std::string& why) override;

  // ---- MessageSink ----
  void on_message(Link& link, bridge::Received& message) override;
  void on_peers_failed(Link& link, const std::vector<int>& ranks) override;
  void after_receiving(Clock::time_point now, bool tick) override;
  void while_held(Clock::time_point now) override;
  bool rung_by_peers() const override { return true; }

  // ---- SpawnerHost ----
  bool stopping_locked() const override { return stopping_; }
  int spawn_wanted_locked() const override;
  std::vector<int> take_exiting_pids_locked() override;
  bool worker_lost_locked() const override { return worker_lost_; }
  std::optional<Clock::time_point> spawn_not_before_locked() const override;
  bool spans_hosts_locked() const override { return spans_hosts_; }
  SpawnOptions spawn_options_locked() const override { return settings_.spawn; }
  void spawn_starting_locked(int count, std::chrono::microseconds pause) override;
  void traffic_resumed_locked() override;
  void spawned_locked(std::unique_ptr<Link> link) override;
  void spawn_failed_locked(int count, const std::string& error, bool stuck) override;
  void spawn_came_back_locked(int count) override;
  // ---- PodProvisionerHost ----
  int pod_slots_wanted_locked(int coming) const override;
  size_t waiting_processes_locked() const override { return table_.pending().size(); }
  std::map<std::string, PodUse> pods_locked() const override;
  void set_pod_releasing_locked(const std::string& pod, bool releasing) override;
  void shut_down_pod_locked(const std::string& pod) override;
  void fail_waiting_locked(size_t count, const std::string& why) override;

 private:
  // Messages (master_messages.cc).
  void route_locked(Link& link, bridge::Received& message);
  /// Fills the handler tables: the master's own kinds, then its services'.
  void register_handlers();
  /// True when `message` is the one expected next from `slot`; otherwise the worker is given up.
  bool check_sequence_locked(Slot& slot, const bridge::Received& message);
  /// Numbers the message for the worker at (comm, dest) and sends it.
  void send_locked(MPI_Comm comm, int dest, const Outgoing& message);
  void on_hello_locked(Link& link, int rank, const wire::Hello& hello);
  void on_exited_locked(Slot& slot, const wire::Exited& exited);
  void on_leave_locked(Slot& slot);
  /// A pool worker's message, for the pool its aux word names (none: a pool already gone).
  PoolCore* pool_of_locked(const Slot* slot, const bridge::Received& message);
  GroupCore* group_of_locked(const ProcessState& process);

  // Nesting (master_nested.cc): what workers' code starts, owned by the process that started it.

  /// A handler of a nesting request (what a worker's code starts), given the worker's slot and
  /// the process it runs (the new work's owner).
  using NestedHandler = void (Master::*)(Slot& slot, uint64_t owner, bridge::Received& message);
  /// Serves `kind` with `handler`: a request of a worker that runs no process is refused, and
  /// what the handler throws (but a ProtocolError) is the request's answer.
  void serve_nested(Kind kind, NestedHandler handler);
  void register_nested_handlers();
  void on_process_start_request_locked(Slot& slot, uint64_t owner, bridge::Received& message);
  void on_process_terminate_request_locked(Slot& slot, uint64_t owner, bridge::Received& message);
  void on_pool_create_request_locked(Slot& slot, uint64_t owner, bridge::Received& message);
  void on_pool_call_request_locked(Slot& slot, uint64_t owner, bridge::Received& message);
  void on_pool_submit_request_locked(Slot& slot, uint64_t owner, bridge::Received& message);
  void on_group_create_request_locked(Slot& slot, uint64_t owner, bridge::Received& message);
  void on_group_call_request_locked(Slot& slot, uint64_t owner, bridge::Received& message);
  void on_pool_call_locked(Slot& slot, uint64_t owner, const wire::PoolCall& call);
  void on_pool_submit_locked(uint64_t owner, wire::PoolSubmit submit);
  void on_group_call_locked(uint64_t owner, const wire::GroupCall& call);
  /// Sends an event to the worker running `owner`; dropped when it runs nowhere any more.
  void notify_owner_locked(uint64_t owner, const Outgoing& event);
  void reply_locked(const Slot& slot, const wire::Reply& reply);
  void reply_error_locked(const Slot& slot, uint64_t request, const std::exception_ptr& error);
  /// The live slot running `process`, or null.
  Slot* slot_of_locked(uint64_t process);
  /// `process` was placed or ended: its owner is told; when it ended, what it owned ends too.
  void nested_process_placed_locked(const ProcessState& process);
  void nested_process_ended_locked(const ProcessState& process);
  /// Answers the requests that wait for a pool (wait_ready, join) once they can be.
  void answer_nested_waits_locked();
  PoolCore& owned_pool_locked(uint64_t owner, uint64_t pool);
  GroupCore& owned_group_locked(uint64_t owner, uint64_t group);

  // Processes and slots (master.cc).
  void assign_idle_slots_locked();
  void end_process_locked(const std::shared_ptr<ProcessState>& process, std::optional<int> code,
                          const std::string& how);
  /// Fails up to `count` pending processes with SpawnError(`reason`).
  void fail_pending_locked(size_t count, const std::string& reason);
  void retire_locked(Slot& slot);
  /// Tells an idle worker to exit; it is gone once its goodbye arrives (or it dies). `run_ends`
  /// at the master's shutdown, when every idle worker is told at once.
  void shut_down_slot_locked(Slot& slot, bool run_ends = false);
  uint64_t requester_of(const Slot* slot) const;

  // Liveness (master_liveness.cc).
  void periodic_checks_locked(Clock::time_point now);
  /// Workers that were started but never said hello within Settings::hello_timeout.
  void check_hellos_locked(Clock::time_point now);
  void check_gone_pods_locked(Clock::time_point now);
  void act_on_locked(const LivenessMonitor::Verdict& verdict);
  void declare_dead_locked(Slot& slot);
  /// Gives up on a worker that lives but whose messages are lost in either direction.
  void declare_unreachable_locked(Slot& slot, const std::string& what);
  void trim_reserve_locked(Clock::time_point now);
  std::vector<Slot*> live_slots_locked() const;
  /// A spawned worker on this host starting to run a process: bound to a core of its own
  /// (Config::bind); unbound again when that process ends or the worker is gone.
  void bind_locked(Slot& slot);
  /// `still_running`: the worker lives on in the reserve and floats again.
  /// Notes a local spawned worker's pid for local_spawned_pids_ (dropping those gone first
  /// once the list is long).
  void remember_spawned_pid_locked(int pid);
  /// The first static rank or spawned worker on another host (`host`): spawns go one process
  /// at a time from now on, and a launcher whose PMIx keeps job data in shared memory is named.
  void note_other_host_locked(const std::string& host);
  void unbind_locked(Slot& slot, bool still_running);

  Settings& settings_;
  ProgressEngine& engine_;
  std::string host_;
  /// Stamped on every message (a getpid() per message is a system call).
  const uint32_t own_pid_ = static_cast<uint32_t>(::getpid());
  std::string signal_dir_;  ///< The run's directory: doorbells and fatal-signal reports.
  ProcessTable table_;
  CoreBinder binder_{settings_.bind == "core"};
  GpuAssigner gpus_{visible_gpus(process_environment())};
  ProcessWatch process_watch_;  ///< The pid checks of local workers (before liveness_ uses it).
  LivenessMonitor liveness_;
  QueueService queues_;
  ManagerService manager_;
  /// The handlers of the workers' messages: the master's own (the link, processes, pools,
  /// nesting), called with the sender's slot (null: not known yet, a hello)...
  wire::HandlerTable<Link&, Slot*> handlers_;
  /// ...and its services' (queues, managers), called with who asks.
  wire::HandlerTable<const wire::Requester&> services_;
  Spawner spawner_;
  JoinAcceptor acceptor_;
  std::unique_ptr<PodProvisioner> pods_;  ///< In a FiberJob's launcher: workers come from pods.
  std::unordered_map<uint64_t, std::shared_ptr<PoolCore>> pools_;
  uint64_t next_pool_id_ = 1;
  std::unordered_map<uint64_t, std::shared_ptr<GroupCore>> groups_;
  uint64_t next_group_id_ = 1;
  /// Owners of the pools and groups workers' code made (the master's own are not listed).
  std::unordered_map<uint64_t, uint64_t> pool_owners_;
  std::unordered_map<uint64_t, uint64_t> group_owners_;
  /// Groups whose owner ended, forgotten once they end.
  std::vector<uint64_t> orphan_groups_;
  /// A request answered once its pool is ready (wait_ready) or finished (join).
  struct NestedWait {
    uint64_t owner = 0;
    uint64_t request = 0;
    uint64_t pool = 0;
    wire::PoolCall::Op op = wire::PoolCall::Op::kWaitReady;
  };
  std::vector<NestedWait> nested_waits_;

  bool stopping_ = false;
  bool shut_down_ = false;
  /// A static rank or spawned worker said hello from another host (joined jobs and pods are
  /// not counted: their launcher is not this one).
  bool spans_hosts_ = false;
  /// Hellos expected from workers being started (spawns in flight, static ranks starting up).
  int slots_expected_ = 0;
  /// A Process had to be spawned: keep never-used workers started ahead from now on.
  bool processes_started_ = false;
  /// How long a join turn stops traffic, measured (a moving average), and when the one under
  /// way began.
  std::chrono::microseconds join_pause_{300'000};
  std::optional<Clock::time_point> join_turn_began_;
  std::vector<int> exiting_pids_;  ///< Local spawned workers told to exit or that said so.
  /// MPICH: every local spawned worker that said hello and may still run (those seen gone are
  /// dropped as more come); the master waits for them at its end (shutdown()).
  std::vector<int> local_spawned_pids_;
  std::optional<Clock::time_point> static_rank_lost_at_;  ///< Last death of a static-world rank.
  bool worker_lost_ = false;                              ///< Any worker was declared dead.
  /// Workers of joined pods whose connection closed, and when (pod_connection_closed).
  struct GoneWorker {
    std::string pod;
    int pid = 0;
    Clock::time_point closed_at;
  };
  std::vector<GoneWorker> pods_gone_;
};

}  // namespace fiber::internal
