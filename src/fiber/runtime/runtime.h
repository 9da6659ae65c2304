// The runtime of one process: it starts MPI, tells how the process was launched, and runs either
// the master's side or a worker's side over a progress engine. The public API reaches the
// runtime's parts through it. Internal.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "fiber/base/shared_output.h"
#include "fiber/engine/progress_engine.h"
#include "fiber/engine/settings.h"
#include "fiber/init.h"
#include "fiber/kubernetes/join_token.h"
#include "fiber/manager/manager_access.h"
#include "fiber/queue/queue_access.h"

namespace fiber::internal {

class GroupClient;
class GroupInbox;
class JoinTurns;
struct KubernetesPod;
struct Link;
class Master;
class MasterLink;
class ManagerStub;
class NestedClient;
class PoolClient;
class PoolInbox;
class ProcessControl;
class QueueStub;
struct GroupSettings;
struct PoolSettings;

class Runtime {
 public:
  /// The runtime of this process; throws fiber::UsageError before fiber::init.
  static Runtime& instance();
  static bool exists();
  /// fiber::init: in a worker this never returns.
  static void start(int& argc, char**& argv, const Config& config);

  bool is_master() const noexcept { return master_ != nullptr; }
  /// The master's side; in a worker process throws UsageError(`misuse`), which says what cannot
  /// be done there.
  Master& master(const char* misuse = "only the master process can do this, not a worker");
  /// fiber::listen(): the master's MPI port, or with a join token the join address of its
  /// guarded turns (opened once).
  std::string listen();
  /// A worker's side (only in worker processes).
  MasterLink& worker();
  QueueAccess& queues();
  /// The shared objects of Managers: served here in the master, requested of it by a worker.
  ManagerAccess& manager();
  /// This process's children: the master's own, or (in a worker) those it asks the master for.
  ProcessControl& processes();
  /// A pool or group held by this process: run here in the master, run by the master for a
  /// worker's code (nesting).
  std::shared_ptr<PoolClient> make_pool(PoolSettings settings);
  std::shared_ptr<GroupClient> make_group(GroupSettings settings);
  /// In a worker, at the end of the process it ran: its children end with it (see
  /// NestedClient::end_children).
  void end_children();
  ProgressEngine& engine() { return *engine_; }
  const Settings& settings() const { return settings_; }

  std::unique_lock<std::mutex> lock() { return engine_->lock(); }
  void notify_locked() { engine_->notify_locked(); }

  /// Who runs here: the master (kMasterId, "MainProcess") or the Process being run.
  uint64_t self_id();
  std::string self_name();
  void set_current(uint64_t id, const std::string& name);

  /// Ends the runtime in the master (at exit, or fiber::shutdown()).
  void shutdown();
  /// shutdown() but for MPI_Finalize, which waits for the process's exit (where the exit status
  /// is known, so the finalize watchdog can leave with it): an interpreter's front end ends the
  /// runtime before the interpreter does.
  void shutdown_before_exit();
  /// Ends a worker process with `code`, without running the program's destructors.
  /// `with_the_job`: every worker of the run is ending now (the master's shutdown), so a
  /// finalize that waits for the other processes of this MPI job can complete.
  [[noreturn]] void finish_worker(int code, bool with_the_job = false);

 private:
  Runtime() = default;
  /// What this process is in the run, from how it was launched.
  struct LaunchPart {
    std::unique_ptr<Link> link;  ///< to the workers (master) or to the master; none alone
    bool master = true;
    bool spawned = false;  ///< a worker spawned by the master
    bool joined = false;   ///< a worker of a job that connected to the master
  };
  void begin(int& argc, char**& argv, const Config& config);
  /// Connects a joining job (a worker pod in its turn) and says which side this process runs.
  LaunchPart choose_part(const KubernetesPod* pod);
  void start_master(std::unique_ptr<Link> link, const KubernetesPod* pod);
  /// Never returns.
  [[noreturn]] void start_worker(std::unique_ptr<Link> link, bool spawned, bool joined);
  /// Finalises MPI (with a watchdog when a process of the run was lost) unless a thread may still
  /// be inside MPI, in which case finalising is left out. The watchdog's clock starts once the
  /// process `hold_while` (when > 0) is gone.
  void finalize(bool mpi_quiet, bool worker_lost, int status, int hold_while = 0);

  Settings settings_;
  std::unique_ptr<ProgressEngine> engine_;
  std::unique_ptr<Master> master_;
  std::unique_ptr<MasterLink> worker_;
  std::unique_ptr<NestedClient> nested_;         ///< In a worker: what its code starts,
  std::unique_ptr<QueueStub> queue_stub_;        ///< its queue operations,
  std::unique_ptr<ManagerStub> manager_stub_;    ///< its Manager objects',
  std::unique_ptr<PoolInbox> pool_inbox_;        ///< the chunks of the pools it serves,
  std::unique_ptr<GroupInbox> group_inbox_;      ///< its group members' plans and stops.
  std::unique_ptr<SharedOutput> shared_output_;  ///< The master's stdout for spawned processes.
  std::unique_ptr<JoinTurns> join_turns_;        ///< Turns for joining pods (a FiberJob's launcher)
                                                 ///< or jobs (fiber::listen() with a join token).
  std::optional<JoinToken> join_token_;          ///< FIBER_JOIN_TOKEN_FILE's token, when it is set.
  std::mutex listen_mutex_;                      ///< Guards the two above for fiber::listen().
  std::string published_join_address_;           ///< What fiber::listen() returns with a token.
  uint64_t self_id_ = 0;
  std::string self_name_ = "MainProcess";
  bool shut_down_ = false;
  /// shutdown_before_exit() left MPI_Finalize to the exit; whether the engine stopped quietly.
  bool finalize_pending_ = false;
  bool pending_quiet_ = false;
};

}  // namespace fiber::internal
