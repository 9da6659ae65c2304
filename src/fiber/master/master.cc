// The master's processes and slots: starting, placing, ending, and shutting down.
#include "fiber/master/master.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <thread>
#include <vector>

#include "fiber/base/log.h"
#include "fiber/base/process_presence.h"
#include "fiber/errors.h"
#include "fiber/kubernetes/fiberjob_scaler.h"
#include "fiber/serialization.h"
#include "mpi_bridge/environment.h"
#include "mpi_bridge/launch_environment.h"
#include "mpi_bridge/spawn.h"

namespace fiber::internal {
namespace {

// How long after a static-world rank's death the spawner waits before it spawns.
constexpr auto kSpawnSettleAfterRankLoss = std::chrono::milliseconds(500);

}  // namespace

Master::Master(Settings& settings, ProgressEngine& engine, std::unique_ptr<Link> static_world)
    : settings_(settings),
      engine_(engine),
      host_(bridge::Environment::hostname()),
      table_(settings),
      liveness_(settings, [this](int pid) { return process_watch_.gone(pid); }),
      queues_(engine,
              [this](MPI_Comm comm, int rank, const wire::Reply& reply) {
                send_locked(comm, rank, reply.encode());
              }),
      manager_(engine,
               [this](MPI_Comm comm, int rank, const wire::Reply& reply) {
                 send_locked(comm, rank, reply.encode());
               }),
      spawner_(settings, engine, *this),
      acceptor_(engine) {
  // The master bound by its launcher (mpirun binds rank 0 to a core) keeps that core.
  binder_.hold_launcher_cores(static_cast<int>(::getpid()));
  register_handlers();
  if (static_world) {
    slots_expected_ = static_world->expected_hellos;
    engine_.add_link(std::move(static_world));
  }
}

void Master::start() {
  // What a spawned worker needs to give up on a start-up that cannot complete.
  settings_.spawn.env.emplace_back("FIBER_MASTER_PID", std::to_string(::getpid()));
  settings_.spawn.env.emplace_back("FIBER_MASTER_HOST", host_);
  // Spawned workers log as the master does, wherever its level and directory came from.
  const auto has_variable = [&](const std::string& name) {
    for (const auto& [variable, value] : settings_.spawn.env)
      if (variable == name) return true;
    return false;
  };
  if (!has_variable("FIBER_LOG_LEVEL"))
    settings_.spawn.env.emplace_back("FIBER_LOG_LEVEL", settings_.log_level);
  if (!settings_.log_dir.empty() && !has_variable("FIBER_LOG_DIR"))
    settings_.spawn.env.emplace_back("FIBER_LOG_DIR", settings_.log_dir);
  settings_.spawn.env.emplace_back("FIBER_START_TIMEOUT_S",
                                   std::to_string(settings_.spawn_timeout.count()));
  char dir[] = "/tmp/fibermpi-XXXXXX";
  if (::mkdtemp(dir)) signal_dir_ = dir;
  engine_.open_doorbell(signal_dir_, static_cast<int>(::getpid()));
  spawner_.start();
}

bool Master::worker_lost() const {
  auto held = engine_.lock();
  return worker_lost_;
}

// ---------------------------------------------------------------------------------------------
// Processes

std::shared_ptr<ProcessState> Master::new_process(detail::TaskSpec task) {
  auto held = engine_.lock();
  return new_process_locked(std::move(task), "Process");
}

std::shared_ptr<ProcessState> Master::new_process_locked(detail::TaskSpec task,
                                                         const std::string& name_prefix) {
  return table_.create(std::move(task), name_prefix);
}

void Master::start_process(const std::shared_ptr<ProcessState>& process) {
  auto held = engine_.lock();
  start_process_locked(process);
}

void Master::start_process_locked(const std::shared_ptr<ProcessState>& process) {
  if (stopping_) throw UsageError("cannot start a Process: fibermpi is shutting down");
  if (process->status != ProcessStatus::kCreated)
    throw UsageError(process->name + ": processes can only be started once");
  process->status = ProcessStatus::kPending;
  for (const uint64_t queue : process->task.produces) {
    if (queues_.hub().exists(queue)) queues_.hub().add_producer(queue, process->id);
  }
  table_.children()[process->id] = process;
  table_.pending().push_back(process);
  assign_idle_slots_locked();
  if (!spawner_.stuck_locked().empty())
    fail_pending_locked(table_.pending().size(), spawner_.stuck_locked());
  spawner_.wake_locked();
}

void Master::assign_idle_slots_locked() {
  if (stopping_) return;
  auto& pending = table_.pending();
  for (auto it = pending.begin(); it != pending.end();) {
    Slot* slot = table_.pick_idle_slot(**it, settings_.spawn.executable);
    if (!slot) {
      ++it;
      continue;
    }
    auto process = *it;
    it = pending.erase(it);
    slot->state = Slot::State::kBusy;
    slot->used = true;
    slot->process = process;
    bind_locked(*slot);
    process->slot = slot;
    process->pid = slot->pid;
    process->host = slot->host;
    process->status = ProcessStatus::kRunning;
    // A spawned pool worker waits in the reserve afterwards; anything else run in a spawned
    // process ends it (a Process is the whole life of its process, as in Python).
    const bool stay_after = slot->spawned() && process->pool != 0;
    // GPUs are shared out among the workers on this host; elsewhere they are not known here.
    const std::string gpus =
        process->gpus > 0 && slot->local ? gpus_.assign(slot->pid, process->gpus) : "";
    if (!gpus.empty())
      FIBER_LOG_INFO("worker pid %d on %s: GPUs %s", slot->pid, host_.c_str(), gpus.c_str());
    send_locked(slot->link->comm.get(), slot->rank,
                wire::Run{process->id, stay_after, process->name, process->task, gpus}.encode());
    if (GroupCore* group = group_of_locked(*process)) group->on_member_placed_locked(*process);
    nested_process_placed_locked(*process);
    if (slot->spawned() && process->pool == 0) processes_started_ = true;
  }
  // A Process that has to wait for a spawn: keep some started ahead from now on. Those that
  // workers already starting will take (static ranks saying hello at the start of a run) do not
  // count: one placed on a spawned worker sets it above.
  const auto waiting =
      std::count_if(pending.begin(), pending.end(), [](const auto& p) { return p->pool == 0; });
  if (waiting > slots_expected_) processes_started_ = true;
  // A never-used worker may have been taken: the spawner tops the reserve up.
  spawner_.wake_locked();
  if (pods_) pods_->wake_locked();
  engine_.notify_locked();
}

void Master::end_process_locked(const std::shared_ptr<ProcessState>& process,
                                std::optional<int> code, const std::string& how) {
  if (process->status == ProcessStatus::kEnded) return;
  process->status = ProcessStatus::kEnded;
  process->exitcode = code;
  process->slot = nullptr;
  table_.children().erase(process->id);
  if (process->pool != 0) {
    if (auto pool = pools_.find(process->pool); pool != pools_.end())
      pool->second->on_worker_ended(process);
  }
  // A group's next attempt starts its members (producers of the queues they were given) before
  // the queues learn that this one ended, so no get sees a moment without producers.
  if (GroupCore* group = group_of_locked(*process)) group->on_member_ended_locked(*process);
  nested_process_ended_locked(*process);
  queues_.hub().process_ended(process->id, how);
  manager_.process_ended_locked(process->id, how);
  engine_.notify_locked();
}

GroupCore* Master::group_of_locked(const ProcessState& process) {
  if (process.group == 0) return nullptr;
  auto group = groups_.find(process.group);
  return group == groups_.end() ? nullptr : group->second.get();
}

void Master::fail_pending_locked(size_t count, const std::string& reason) {
  auto& pending = table_.pending();
  for (size_t i = 0; i < count && !pending.empty(); ++i) {
    auto process = pending.front();
    pending.pop_front();
    process->start_error =
        std::make_exception_ptr(SpawnError(process->name + " could not start: " + reason));
    end_process_locked(process, std::nullopt, describe_exit(*process, std::nullopt));
  }
}

void Master::retire_locked(Slot& slot) {
  if (slot.gone()) return;
  slot.state = Slot::State::kGone;
  --slot.link->live_slots;
  // The process ends (its goodbye, its death): its doorbell is rung no more, and its descriptor,
  // shared word and files would otherwise stay for the whole run.
  if (slot.local) engine_.forget_peer(slot.pid);
  if (!slot.spawned() && slot.local) binder_.drop_launcher_cores(slot.pid);
}

void Master::shut_down_slot_locked(Slot& slot, bool run_ends) {
  send_locked(slot.link->comm.get(), slot.rank, wire::Shutdown{run_ends}.encode());
  if (slot.spawned() && slot.local) exiting_pids_.push_back(slot.pid);
  // Gone once its goodbye arrives (or it dies): until then it may still send.
  slot.state = Slot::State::kClosing;
  slot.process.reset();
  unbind_locked(slot, false);
}

void Master::bind_locked(Slot& slot) {
  if (!slot.spawned() || !slot.local) return;
  const std::string binding = binder_.bind(slot.pid, slot.process ? slot.process->cores : 1);
  // The binding of each worker, for those who ask (log level info or debug).
  if (!binding.empty())
    FIBER_LOG_INFO("worker pid %d on %s: %s", slot.pid, host_.c_str(), binding.c_str());
}

void Master::unbind_locked(Slot& slot, bool still_running) {
  if (slot.local) gpus_.release(slot.pid);
  if (slot.spawned() && slot.local) binder_.release(slot.pid, still_running);
}

void Master::note_other_host_locked(const std::string& host) {
  spans_hosts_ = true;
  FIBER_LOG_INFO("processes run on %s as well as on %s: workers are spawned one at a time",
                 host.c_str(), host_.c_str());
  // Open MPI 5.0's PMIx keeps job data in shared memory by default (gds "shmem2"), and with it
  // the launcher's daemon on another host died of a corrupted heap ("free(): invalid pointer",
  // "PRTE has lost communication with a remote daemon") in about half the runs that spawned
  // workers there; with its "hash" store, in 0 of 10 runs of a plain spawn and about 1 in 8 of
  // a pool (measured on 5.0.11 with two hosts).
  const char* stores = std::getenv("PMIX_GDS_MODULE");
  if (bridge::built_against_mpi() == MpiFamily::kOpenMpi5 && stores != nullptr &&
      std::string_view(stores).find("shmem") != std::string_view::npos) {
    FIBER_LOG_WARNING(
        "this job spans hosts (%s, %s) and its launcher's PMIx keeps job data in shared memory "
        "(PMIX_GDS_MODULE=%s): Open MPI 5.0's daemons on other hosts crashed in about half the "
        "runs that spawned there; start it with mpirun --pmixmca gds hash (fibermpi run does)",
        host_.c_str(), host.c_str(), stores);
  }
}

void Master::remember_spawned_pid_locked(int pid) {
  if (local_spawned_pids_.size() >= 256) {
    std::erase_if(local_spawned_pids_, [](int known) { return process_gone(known); });
  }
  local_spawned_pids_.push_back(pid);
}

uint64_t Master::requester_of(const Slot* slot) const {
  return slot && slot->process ? slot->process->id : UINT64_MAX;
}

bool Master::wait_ended(const std::shared_ptr<ProcessState>& process,
                        std::optional<Clock::time_point> deadline) {
  return engine_.wait_until([&] { return process->status == ProcessStatus::kEnded; }, deadline);
}

int Master::wait_pid(const std::shared_ptr<ProcessState>& process) {
  auto held = engine_.lock();
  engine_.changes().wait(
      held, [&] { return process->pid != 0 || process->status == ProcessStatus::kEnded; });
  return process->pid;
}

void Master::terminate(const std::shared_ptr<ProcessState>& process, int signal) {
  auto held = engine_.lock();
  terminate_locked(process, signal);
}

void Master::terminate_locked(const std::shared_ptr<ProcessState>& process, int signal) {
  if (process->status == ProcessStatus::kEnded || process->status == ProcessStatus::kCreated)
    return;
  process->signal_sent = signal;
  if (process->status == ProcessStatus::kPending) {
    std::erase(table_.pending(), process);
    end_process_locked(process, -signal,
                       describe(*process) +
                           (signal == SIGKILL ? " was killed" : " was terminated") +
                           " before it started");
    return;
  }
  Slot* slot = process->slot;
  if (!slot) return;
  // In band, also for workers on this host: a SIGTERM sent from here could reach the worker
  // before the message that tells it to run the process, and be taken for a late one (a child
  // terminated just after it started lived on). The worker raises it once it knows the process.
  send_locked(slot->link->comm.get(), slot->rank, wire::Terminate{process->id, signal}.encode());
}

std::vector<std::shared_ptr<ProcessState>> Master::live_children() {
  auto held = engine_.lock();
  std::vector<std::shared_ptr<ProcessState>> live;
  for (auto& [id, process] : table_.children()) live.push_back(process);
  return live;
}

void Master::set_executable(const std::string& path) {
  bridge::check_spawnable(path);
  auto held = engine_.lock();
  settings_.spawn.executable = path;
}

void Master::send_to_process_locked(const ProcessState& process, const Outgoing& message) {
  const Slot* slot = process.slot;
  if (!slot || slot->gone()) return;
  send_locked(slot->link->comm.get(), slot->rank, message);
}

bool Master::on_static_rank_locked(const ProcessState& process) const {
  return process.slot && process.slot->static_rank();
}

bool Master::on_joined_job_locked(const ProcessState& process) const {
  return process.slot && process.slot->joined();
}

// ---------------------------------------------------------------------------------------------
// Pools and the rendezvous

std::shared_ptr<PoolCore> Master::create_pool(PoolSettings settings) {
  auto held = engine_.lock();
  return create_pool_locked(std::move(settings));
}

const char* Master::why_no_fresh_processes_locked() const {
  if (pods_) return "a FiberJob's launcher, whose workers are the pods'";
  if (std::getenv("SLURM_STEP_ID") && !std::getenv("OMPI_COMM_WORLD_SIZE") &&
      bridge::Environment::recovery_disabled_under_launcher())
    return "a program srun started, which has no MPI_Comm_spawn";
  return nullptr;
}

std::shared_ptr<PoolCore> Master::create_pool_locked(PoolSettings settings) {
  if (stopping_ || shut_down_) throw UsageError("cannot create a Pool: fibermpi is shutting down");
  if (settings.fresh_processes) {
    if (const char* why = why_no_fresh_processes_locked()) {
      // Workers that cannot be fresh still run: in the processes there are, one after another.
      FIBER_LOG_WARNING(
          "a pool asked for fresh processes (maxtasksperchild), which %s cannot "
          "start: its workers run in processes that serve one after another",
          why);
      settings.fresh_processes = false;
    }
  }
  auto pool = std::make_shared<PoolCore>(*this, next_pool_id_++, std::move(settings));
  pools_[pool->id()] = pool;
  pool->start_workers_locked();
  return pool;
}

void Master::release_pool(uint64_t id) {
  auto held = engine_.lock();
  pools_.erase(id);
}

// ---------------------------------------------------------------------------------------------
// Groups

std::shared_ptr<GroupCore> Master::create_group(GroupSettings settings) {
  auto held = engine_.lock();
  return create_group_locked(std::move(settings));
}

std::shared_ptr<GroupCore> Master::create_group_locked(GroupSettings settings) {
  if (stopping_ || shut_down_) throw UsageError("cannot create a Group: fibermpi is shutting down");
  // A member told to stop ends within moments; one whose runtime cannot act is given up on
  // after a heartbeat timeout, as a silent worker is.
  auto group = std::make_shared<GroupCore>(*this, next_group_id_++, std::move(settings),
                                           settings_.heartbeat_timeout);
  groups_[group->id()] = group;
  return group;
}

void Master::release_group(uint64_t id) {
  auto held = engine_.lock();
  groups_.erase(id);
}

std::optional<GroupHost::Placement> Master::placement_locked(const ProcessState& process) const {
  const Slot* slot = process.slot;
  if (!slot || slot->gone()) return std::nullopt;
  // A link is one MPI world seen from here: the static world, one spawn batch (whose children's
  // world is the link's remote group, in the same order) or one joined job.
  return Placement{slot->link, slot->rank, slot->static_rank()};
}

void Master::give_up_locked(const ProcessState& process, const std::string& why) {
  if (Slot* slot = process.slot; slot && !slot->gone()) declare_unreachable_locked(*slot, why);
}

std::string Master::listen() {
  auto held = engine_.lock();
  if (stopping_ || shut_down_)
    throw UsageError("cannot open a rendezvous: fibermpi is shutting down");
  return acceptor_.open();
}

// ---------------------------------------------------------------------------------------------
// The spawner's side

std::optional<Clock::time_point> Master::spawn_not_before_locked() const {
  // mpirun (Open MPI 5 with recovery) ended a run that had finished well with status 255 when a
  // replacement was spawned within about 100 ms of a static rank's death on another host,
  // before its runtime had taken note of the death; 100 ms later the run ended with 0.
  if (!static_rank_lost_at_) return std::nullopt;
  return *static_rank_lost_at_ + kSpawnSettleAfterRankLoss;
}

int Master::spawn_wanted_locked() const {
  // A FiberJob's launcher gets its workers from pods, never from MPI_Comm_spawn.
  if (pods_) return 0;
  return table_.spawn_wanted(slots_expected_, processes_started_, settings_.spawn.executable);
}

std::vector<int> Master::take_exiting_pids_locked() { return std::exchange(exiting_pids_, {}); }

void Master::spawn_starting_locked(int count, std::chrono::microseconds pause) {
  slots_expected_ += count;
  // Workers run their queued chunks while the master's traffic stops: queue enough to last.
  for (auto& [id, pool] : pools_) pool->cover_pause_locked(pause);
}

void Master::traffic_resumed_locked() {
  for (auto& [id, pool] : pools_) pool->pause_over_locked();
}

void Master::spawned_locked(std::unique_ptr<Link> link) {
  engine_.add_link_locked(std::move(link));
}

void Master::spawn_failed_locked(int count, const std::string& error, bool stuck) {
  slots_expected_ -= count;
  try {
    fail_pending_locked(stuck ? table_.pending().size() : static_cast<size_t>(count), error);
  } catch (const std::exception& e) {
    FIBER_LOG_WARNING("%s", e.what());
  }
}

void Master::spawn_came_back_locked(int count) { slots_expected_ += count; }

// ---------------------------------------------------------------------------------------------
// Worker pods (a FiberJob's launcher)

void Master::provision_pods(std::unique_ptr<FiberJobScaler> scaler, int slots_per_pod) {
  auto held = engine_.lock();
  if (pods_) throw UsageError("worker pods are already provisioned");
  pods_ =
      std::make_unique<PodProvisioner>(settings_, engine_, *this, std::move(scaler), slots_per_pod);
  pods_->start();
}

int Master::pod_slots_wanted_locked(int coming) const {
  return table_.spawn_wanted(coming, false, settings_.spawn.executable);
}

std::map<std::string, PodUse> Master::pods_locked() const {
  std::map<std::string, PodUse> pods;
  for (const auto& [key, slot] : table_.slots()) {
    if (slot->pod.empty() || slot->gone()) continue;
    PodUse& use = pods[slot->pod];
    // The pod's ranks are one joined job, one link: those still to say hello are coming.
    use.starting = std::max(0, slot->link->expected_hellos - slot->link->hellos);
    ++use.live;
    if (slot->state == Slot::State::kIdle && !slot->process) {
      ++use.idle;
      use.idle_since = std::max(use.idle_since, slot->idle_since);
    }
    use.releasing = use.releasing || slot->releasing;
  }
  return pods;
}

void Master::set_pod_releasing_locked(const std::string& pod, bool releasing) {
  for (auto& [key, slot] : table_.slots())
    if (slot->pod == pod && !slot->gone()) slot->releasing = releasing;
  if (!releasing) assign_idle_slots_locked();
}

void Master::shut_down_pod_locked(const std::string& pod) {
  for (auto& [key, slot] : table_.slots()) {
    if (slot->pod != pod || slot->gone()) continue;
    if (slot->state == Slot::State::kIdle) shut_down_slot_locked(*slot);
  }
  engine_.notify_locked();
}

void Master::fail_waiting_locked(size_t count, const std::string& why) {
  fail_pending_locked(count, why);
}

// ---------------------------------------------------------------------------------------------
// Shutdown

bool Master::shutdown() {
  auto held = engine_.lock();
  if (shut_down_) return true;
  shut_down_ = true;
  // Pools still alive at exit stop now (like Python's pools at interpreter exit).
  for (auto& [id, pool] : std::unordered_map(pools_)) pool->terminate_locked();
  // Like Python: daemonic children are terminated, the others are waited for.
  for (auto& [id, process] : std::map(table_.children())) {
    if (!process->daemon) continue;
    try {
      terminate_locked(process, SIGTERM);
    } catch (const std::exception& e) {
      FIBER_LOG_WARNING("could not terminate %s: %s", process->name.c_str(), e.what());
    }
  }
  engine_.await(held, [this] { return table_.children().empty(); });
  stopping_ = true;
  held.unlock();
  // Objects of users' classes a Manager made end with the program, in the master.
  manager_.stop();
  auto remove_run_directory = [this] {
    std::error_code ignored;
    if (!signal_dir_.empty()) std::filesystem::remove_all(signal_dir_, ignored);
  };
  if (pods_) pods_->stop();
  // False: the spawner is inside an MPI_Comm_spawn that will not return. The rest of MPI still
  // works (the watchdog let traffic go on), so the workers are still told to leave: a static rank
  // left waiting would take the master's exit for a death and fail the run. Only MPI_Finalize is
  // skipped.
  const bool spawner_quiet = spawner_.stop();
  bool mpi_quiet = acceptor_.stop() && spawner_quiet;
  held.lock();
  // Workers still starting up get their shutdown once they have said hello.
  engine_.await(
      held, [this] { return slots_expected_ <= 0; },
      Clock::now() + settings_.starting_workers_limit);
  if (static_rank_lost_at_) {
    // The ranks' MPI_Finalize (a fence over the whole static world) can wait forever for a rank
    // that was killed if it starts before mpirun has taken note of the death; give it time.
    const auto settle = *static_rank_lost_at_ + settings_.static_rank_settle;
    held.unlock();
    std::this_thread::sleep_until(settle);
    held.lock();
  }
  for (auto& [key, slot] : table_.slots())
    if (slot->state == Slot::State::kIdle) shut_down_slot_locked(*slot, /*run_ends=*/true);
  held.unlock();
  engine_.drain(settings_.master_drain_limit);
  // MPICH's mpiexec kills what its job spawned and is still running once the job's rank 0 has
  // ended, and reports the job as failed: the workers told to leave get a moment to do so.
  if (bridge::built_against_mpi() == MpiFamily::kMpich) {
    held.lock();
    const std::vector<int> leaving = local_spawned_pids_;
    held.unlock();
    const auto give_up = Clock::now() + std::chrono::seconds(2);
    while (Clock::now() < give_up && std::any_of(leaving.begin(), leaving.end(), process_present))
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  remove_run_directory();
  return mpi_quiet;
}

}  // namespace fiber::internal
