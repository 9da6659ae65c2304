#include "fiber/runtime.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "fiber/errors.h"
#include "mpi_bridge/backoff.h"
#include "mpi_bridge/environment.h"
#include "mpi_bridge/error.h"
#include "mpi_bridge/failure_notice.h"
#include "mpi_bridge/function_ref.h"
#include "mpi_bridge/serialization.h"

namespace fiber::detail {

[[noreturn]] void run_worker(Runtime& runtime);

namespace {

// Never destroyed: the exit handler, a detached spawner stuck in MPI and late signal handlers may
// all still reach it while static destructors run.
Runtime* g_runtime = nullptr;
std::atomic<bool> g_running{false};

// Sleeps of a few microseconds are otherwise stretched by the default 50 us timer slack.
void precise_sleeps() {
  static thread_local bool done = false;
  if (!done) {
    ::prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    done = true;
  }
}

bool pid_gone(int pid) { return pid > 0 && ::kill(pid, 0) == -1 && errno == ESRCH; }

std::string describe(const ProcessState& process) {
  return process.name + " (pid " + std::to_string(process.pid) + ")";
}

std::string describe_exit(const ProcessState& process, std::optional<int> code) {
  if (!code) return describe(process) + " could not start";
  if (*code < 0) return describe(process) + " was killed by signal " + std::to_string(-*code);
  return describe(process) + " exited with code " + std::to_string(*code);
}

int read_signal_file(const std::string& dir, int pid) {
  if (dir.empty()) return 0;
  const std::string path = dir + "/" + std::to_string(pid);
  std::ifstream file(path);
  int signal = 0;
  if (file >> signal) {
    file.close();
    std::filesystem::remove(path);
    return signal;
  }
  return 0;
}

// How long the master waits for the hello of a worker that was started (a spawned one, a static
// rank, a rank of a joining job) before giving up on it.
constexpr std::chrono::seconds kHelloTimeout{15};

// A communicator whose workers are all gone is freed once nothing has arrived on it for this
// long: messages of a worker that died may still be on the way (see kGoodbye in protocol.h).
constexpr std::chrono::seconds kLinkQuietPeriod{1};

// How long a process waits for an MPI_Finalize that may never return after a kill.
constexpr std::chrono::seconds kFinalizeWatchdog{10};

// The status the program is exiting with, once exit() has been called.
std::atomic<int> g_exit_status{-1};

void shutdown_at_exit(int status, void*) {
  g_exit_status.store(status);
  if (g_runtime) g_runtime->shutdown();
}

// Open MPI 4.1's MPI_Finalize is a fence over the whole static world, and after a rank of it was
// killed that fence sometimes never completes. When a rank was lost, the exit is made not to
// depend on it: after a grace period the process leaves with the status it was exiting with.
void exit_if_finalize_hangs(int status) {
  std::thread([status] {
    std::this_thread::sleep_for(kFinalizeWatchdog);
    std::fprintf(stderr,
                 "fibermpi: MPI_Finalize has not returned after %d s (a process of this run was "
                 "killed earlier); exiting without it\n",
                 static_cast<int>(kFinalizeWatchdog.count()));
    std::fflush(nullptr);
    std::_Exit(status);
  }).detach();
}

// Set once a worker has been welcomed by its master.
std::atomic<bool> g_welcomed{false};

// A spawned worker that never gets through MPI start-up and the handshake (Open MPI 4.1 can leave
// a child stuck in MPI_Init, or its first messages stuck, after other processes were killed)
// would otherwise live forever, and mpirun waits for every process it started. It leaves once
// its master is gone, or after twice the time the master waits for it to report.
void leave_if_start_up_stalls() {
  const char* pid_text = std::getenv("FIBER_MASTER_PID");
  const char* host_text = std::getenv("FIBER_MASTER_HOST");
  const char* limit_text = std::getenv("FIBER_START_TIMEOUT_S");
  if (!pid_text || !host_text || !limit_text) return;
  const int master_pid = std::atoi(pid_text);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const bool master_here = std::string(host_text) == host;
  const auto limit = std::chrono::seconds(std::max(1, std::atoi(limit_text)));
  std::thread([master_pid, master_here, limit] {
    const auto started = std::chrono::steady_clock::now();
    while (!g_welcomed.load(std::memory_order_acquire)) {
      std::string why;
      if (master_here && pid_gone(master_pid)) {
        why = "its master (pid " + std::to_string(master_pid) + ") is gone";
      } else if (std::chrono::steady_clock::now() - started > 2 * limit) {
        why =
            "it was not welcomed by its master within " + std::to_string(2 * limit.count()) + " s";
      }
      if (!why.empty()) {
        std::fprintf(stderr, "fibermpi worker %d: leaving during start-up: %s\n",
                     static_cast<int>(::getpid()), why.c_str());
        std::fflush(nullptr);
        // Status 0: a non-zero one makes mpirun treat the whole job as failed.
        std::_Exit(0);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }).detach();
}

}  // namespace

Runtime& Runtime::instance() {
  if (!g_running.load(std::memory_order_acquire)) {
    throw UsageError(
        "fibermpi is not running: call fiber::init(argc, argv) at the start of main()");
  }
  return *g_runtime;
}

bool Runtime::exists() { return g_running.load(std::memory_order_acquire); }

void Runtime::start(int& argc, char**& argv, Config config) {
  if (g_runtime) throw UsageError("fiber::init was called twice");
  g_runtime = new Runtime();
  g_runtime->begin(argc, argv, std::move(config));
}

void Runtime::begin(int& argc, char**& argv, Config config) {
  config_ = std::move(config);
  if (const char* timeout = std::getenv("FIBER_SPAWN_TIMEOUT_S")) {
    config_.spawn_timeout = std::chrono::seconds(std::max(1, std::atoi(timeout)));
  }
  if (const char* timeout = std::getenv("FIBER_HEARTBEAT_TIMEOUT_MS")) {
    config_.heartbeat_timeout = std::chrono::milliseconds(std::max(1, std::atoi(timeout)));
  }
  if (const char* checks = std::getenv("FIBER_PID_CHECKS")) {
    config_.pid_checks = std::string(checks) != "0";
  }
  if (const char* batch = std::getenv("FIBER_MIN_SPAWN_BATCH")) {
    config_.min_spawn_batch = std::max(1, std::atoi(batch));
  }
  if (const char* idle = std::getenv("FIBER_RESERVE_MAX_IDLE")) {
    config_.reserve_max_idle = std::max(0, std::atoi(idle));
  }
  if (const char* timeout = std::getenv("FIBER_RESERVE_IDLE_TIMEOUT_S")) {
    config_.reserve_idle_timeout = std::chrono::seconds(std::max(0, std::atoi(timeout)));
  }
  if (config_.max_spawn_batch < 1 || config_.min_spawn_batch < 1 || config_.reserve_max_idle < 0 ||
      config_.processes_ahead < 0) {
    throw UsageError("fiber::Config: max_spawn_batch (" + std::to_string(config_.max_spawn_batch) +
                     ") and min_spawn_batch (" + std::to_string(config_.min_spawn_batch) +
                     ") must be at least 1, reserve_max_idle (" +
                     std::to_string(config_.reserve_max_idle) + ") and processes_ahead (" +
                     std::to_string(config_.processes_ahead) + ") at least 0");
  }
  if (config_.heartbeat_interval <= std::chrono::milliseconds(0) ||
      config_.heartbeat_timeout <= config_.heartbeat_interval) {
    throw UsageError("fiber::Config: heartbeat_timeout (" +
                     std::to_string(config_.heartbeat_timeout.count()) +
                     " ms) must be longer than a positive heartbeat_interval (" +
                     std::to_string(config_.heartbeat_interval.count()) + " ms)");
  }
  // A job started to join a running master: --fiber-connect <address> works like FIBER_CONNECT.
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string address;
    int used = 0;
    if (arg == "--fiber-connect" && i + 1 < argc) {
      address = argv[i + 1];
      used = 2;
    } else if (arg.rfind("--fiber-connect=", 0) == 0) {
      address = arg.substr(std::strlen("--fiber-connect="));
      used = 1;
    }
    if (used == 0) continue;
    ::setenv("FIBER_CONNECT", address.c_str(), 1);
    for (int j = i; j + used <= argc; ++j) argv[j] = argv[j + used];
    argc -= used;
    break;
  }
  // Open MPI's TCP transport writes to sockets of peers that may have died; the default SIGPIPE
  // would kill this process with them. Ignored unless the program installed its own handler.
  struct sigaction pipe_action {};
  if (::sigaction(SIGPIPE, nullptr, &pipe_action) == 0 && pipe_action.sa_handler == SIG_DFL)
    ::signal(SIGPIPE, SIG_IGN);
  if (std::getenv("FIBER_WORKER")) leave_if_start_up_stalls();
  bridge::Environment::initialize(&argc, &argv);
  host_ = bridge::Environment::hostname();
  const auto mode = bridge::Environment::launch_mode();
  if (config_.spawn.executable.empty())
    config_.spawn.executable = bridge::ModuleTable::executable_path();
  config_.spawn.env.emplace_back("FIBER_WORKER", "1");
  for (int i = 1; i < argc; ++i) config_.spawn.args.emplace_back(argv[i]);

  auto link = std::make_unique<Link>();
  if (mode == bridge::LaunchMode::kSpawned) {
    master_ = false;
    spawned_worker_ = true;
    // The parent intercommunicator is MPI's own handle: used, never freed.
    link->comm = bridge::Communicator::borrow(bridge::Environment::parent());
    master_rank_ = 0;
  } else if (mode == bridge::LaunchMode::kConnected) {
    // Every rank of this job is a worker of the master it joins.
    master_ = false;
    joined_worker_ = true;
    link->comm = bridge::connect(bridge::Environment::connect_address());
    link->connected = true;
    master_rank_ = 0;
  } else if (mode == bridge::LaunchMode::kStaticWorld && bridge::Environment::world_size() > 1) {
    link->comm = bridge::Communicator::duplicate(MPI_COMM_WORLD);
    master_ = bridge::Environment::world_rank() == 0;
    if (master_) {
      link->live_slots = bridge::Environment::world_size() - 1;
      link->expected_hellos = link->live_slots;
      link->created = Clock::now();
      slots_expected_ = link->live_slots;
    }
  } else {
    link.reset();
  }
  if (link) {
    master_link_ = link.get();
    links_.push_back(std::move(link));
  }

  if (master_) {
    // What a spawned worker needs to give up on a start-up that cannot complete.
    config_.spawn.env.emplace_back("FIBER_MASTER_PID", std::to_string(::getpid()));
    config_.spawn.env.emplace_back("FIBER_MASTER_HOST", host_);
    config_.spawn.env.emplace_back("FIBER_START_TIMEOUT_S",
                                   std::to_string(config_.spawn_timeout.count()));
    char dir[] = "/tmp/fibermpi-XXXXXX";
    if (::mkdtemp(dir)) signal_dir_ = dir;
    doorbell_.open(signal_dir_, static_cast<int>(::getpid()));
    if (bridge::Environment::recovery_disabled_under_launcher() && !std::getenv("FIBER_QUIET")) {
      const char* option = bridge::Environment::recovery_option();
      std::fprintf(stderr,
                   "fibermpi: started by mpirun without %s: a child process that is killed will "
                   "abort the whole job (add %s, or set FIBER_QUIET=1 to hide this)\n",
                   option, option);
    }
  } else {
    self_name_ = "Worker";
    if (const char* fault = std::getenv("FIBER_FAULT_DROP_MESSAGE"); fault) {
      // "<n>@<file>": only the process that creates <file> drops (one faulty worker per run).
      const std::string spec = fault;
      const auto at = spec.find('@');
      if (at != std::string::npos) {
        const int fd = ::open(spec.substr(at + 1).c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
        if (fd >= 0) {
          ::close(fd);
          fault_drop_message_ = std::strtoull(spec.substr(0, at).c_str(), nullptr, 10);
        }
      }
    }
  }
  g_running.store(true, std::memory_order_release);
  progress_thread_ = std::thread([this] { progress_loop(); });
  if (master_) {
    spawner_thread_ = std::thread([this] { spawner_loop(); });
    ::on_exit(shutdown_at_exit, nullptr);
    return;
  }
  run_worker(*this);
}

std::string Runtime::self_name() const {
  std::lock_guard lock(mu_);
  return self_name_;
}

void Runtime::set_current(uint64_t id, const std::string& name) {
  std::lock_guard lock(mu_);
  self_id_ = id;
  if (!name.empty()) self_name_ = name;
}

void Runtime::set_executable(const std::string& path) {
  bridge::check_spawnable(path);
  std::lock_guard lock(mu_);
  config_.spawn.executable = path;
}

// ---------------------------------------------------------------------------------------------
// Progress

bridge::Backoff::Policy Runtime::idle_policy(bool waiter) const {
  bridge::Backoff::Policy policy;
  if (waiter) policy.spin = std::chrono::microseconds(300);
  const bool rung = doorbell_.is_open() && (master_ || master_bell_pid_.load() != 0);
  if (!rung) return policy;
  // Peers ring after sending, so sleeping long costs no latency. The master still wakes at
  // every liveness interval to check its workers' pids; a worker checks on its master every
  // 200 ms.
  policy.max_sleep = std::chrono::microseconds(2000);
  policy.deep_after = std::chrono::milliseconds(50);
  policy.deep_sleep = master_ ? std::chrono::microseconds(config_.liveness_interval)
                              : std::chrono::microseconds(100000);
  return policy;
}

void Runtime::ring_peer(int pid) {
  // A receiver polls for at least 100 us after waking or after any message, so a second ring
  // within 50 us would only cost a system call.
  doorbell_.ring(signal_dir_, pid, std::chrono::microseconds(50));
}

void Runtime::notify_locked() {
  cv_.notify_all();
  doorbell_.ring_self();
}

void Runtime::progress_loop() {
  precise_sleeps();
  bool rung_policy = false;
  bridge::Backoff backoff(idle_policy(false));
  while (!stop_progress_.load(std::memory_order_acquire)) {
    if (const bool rung = doorbell_.is_open() && (master_ || master_bell_pid_.load() != 0);
        rung != rung_policy) {
      rung_policy = rung;
      backoff = bridge::Backoff(idle_policy(false));
    }
    const int64_t since_waiter =
        Clock::now().time_since_epoch().count() - last_waiter_left_ns_.load();
    const bool waiting = active_waiters_.load(std::memory_order_acquire) > 0;
    if (waiting || since_waiter < kTakeOverNs) {
      // A thread waiting for a result polls MPI itself; this thread stands aside. A thread that
      // just stopped waiting usually waits again soon (a get per task, a worker between tasks),
      // so polling resumes here only once nobody has waited for a while: taking over at once
      // would make the two threads trade the MPI lock on every message.
      std::unique_lock lock(mu_);
      const auto pause = waiting ? std::chrono::nanoseconds(10 * kTakeOverNs)
                                 : std::chrono::nanoseconds(kTakeOverNs - since_waiter);
      progress_cv_.wait_for(lock, pause, [this] { return stop_progress_.load(); });
      backoff.reset();
      continue;
    }
    bool active = false;
    try {
      std::lock_guard progress(progress_mu_);
      active = poll_once();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fibermpi: progress error: %s\n", e.what());
    }
    if (active) {
      backoff.reset();
    } else if (const auto sleep = backoff.next_sleep(); sleep.count() > 0) {
      if (doorbell_.sleep(sleep)) backoff.reset();
    }
  }
}

bool Runtime::poll_once() {
  // Open MPI 4.1 can hang MPI_Comm_spawn when other threads drive MPI progress during it (seen
  // as children stuck in MPI_Init), so traffic pauses while a spawn runs.
  // Announce this poll before looking at the flag; the spawner sets the flag before waiting for
  // polls to end. One of the two always sees the other (sequentially consistent atomics).
  struct PollGuard {
    std::atomic<int>& running;
    explicit PollGuard(std::atomic<int>& r) : running(r) { running.fetch_add(1); }
    ~PollGuard() { running.fetch_sub(1); }
  } poll_guard(polls_running_);
  if (spawn_in_progress_.load()) {
    check_spawn_watchdog();
    expire_deadlines(Clock::now());
    return false;
  }
  bool active = outbox_.progress() > 0;
  if (master_) {
    // After a pause in receiving (a spawn holds all traffic, possibly for long), the workers'
    // heartbeats sent meanwhile are still to be read: their silence is measured from here.
    const auto pass = Clock::now();
    if (pass - last_receive_pass_ > config_.heartbeat_interval) receiving_since_ = pass;
    last_receive_pass_ = pass;
  }
  if (has_incoming_links_.exchange(false)) {
    std::lock_guard lock(mu_);
    for (auto& link : incoming_links_) links_.push_back(std::move(link));
    incoming_links_.clear();
  }
  for (auto& link : links_) {
    if (!link->comm.valid()) continue;
    for (int i = 0; i < 64; ++i) {
      bridge::Received message;
      try {
        if (!bridge::try_receive(link->comm.get(), message)) break;
      } catch (const bridge::PeersFailed& failed) {
        // Acknowledged: receiving from the others works again.
        on_peers_failed(*link, failed.ranks());
        continue;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "fibermpi: receive failed: %s\n", e.what());
        break;
      }
      active = true;
      link->last_heard = Clock::now();
      handle(*link, message);
    }
  }
  const auto now = Clock::now();
  if (now >= next_liveness_check_) {
    next_liveness_check_ =
        now + (master_ ? config_.liveness_interval : std::chrono::milliseconds(200));
    if (master_) {
      std::lock_guard lock(mu_);
      check_liveness();
      for (auto& [id, pool] : pools_) pool->tick_locked(now);
      // Free communicators whose workers are all gone, once the last messages to them (a
      // shutdown) have left; only this thread touches links_.
      // Messages of workers that died may still be on the way: the link must also have been
      // quiet for a while (see kGoodbye in protocol.h).
      std::erase_if(links_, [this, now](const std::unique_ptr<Link>& link) {
        return (link->spawned || link->connected) && link->live_slots <= 0 &&
               link.get() != master_link_ && !outbox_.has_sends(link->comm.get()) &&
               now - link->last_heard > kLinkQuietPeriod;
      });
    } else {
      check_master_alive();
    }
  }
  if (joined_worker_ && !leave_sent_ && g_leave_requested.load() &&
      heartbeat_interval_.count() > 0) {
    leave_sent_ = true;
    std::lock_guard lock(mu_);
    send_master(Kind::kLeave, 0, 0, {});
  }
  if (!master_ && heartbeat_interval_.count() > 0 && now >= next_heartbeat_) {
    next_heartbeat_ = now + heartbeat_interval_;
    std::lock_guard lock(mu_);
    // How many messages arrived, for the master's delivery check.
    send_master(Kind::kHeartbeat, 0, messages_received_,
                serial::to_bytes(static_cast<int64_t>(now.time_since_epoch().count())));
  }
  expire_deadlines(now);
  return active;
}

void Runtime::expire_deadlines(Clock::time_point now) {
  if (!master_ ||
      now.time_since_epoch().count() < next_deadline_ns_.load(std::memory_order_relaxed))
    return;
  std::lock_guard lock(mu_);
  const auto next = hub_.expire(now);
  next_deadline_ns_.store(next ? next->time_since_epoch().count() : INT64_MAX);
  notify_locked();
}

template <class Pred>
bool Runtime::await(std::unique_lock<std::mutex>& lock, Pred pred,
                    std::optional<Clock::time_point> deadline) {
  // The waiting thread becomes this process's poller (the progress thread stands aside while
  // anyone waits), so a reply is picked up by the thread that wants it: no hand-off, and never
  // more than one thread per process spinning on a machine with few cores.
  precise_sleeps();
  struct WaiterGuard {
    Runtime& runtime;
    explicit WaiterGuard(Runtime& r) : runtime(r) { runtime.active_waiters_.fetch_add(1); }
    ~WaiterGuard() {
      runtime.last_waiter_left_ns_.store(Clock::now().time_since_epoch().count());
      runtime.active_waiters_.fetch_sub(1);
    }
  } guard(*this);
  bridge::Backoff backoff(idle_policy(true));
  int missed_polls = 0;
  bool satisfied = pred();
  while (!satisfied) {
    if (deadline && Clock::now() >= *deadline) break;
    lock.unlock();
    bool active = false;
    bool polled = false;
    {
      std::unique_lock progress(progress_mu_, std::try_to_lock);
      if (progress.owns_lock() && !stop_progress_.load()) {
        polled = true;
        try {
          active = poll_once();
        } catch (const std::exception& e) {
          std::fprintf(stderr, "fibermpi: progress error: %s\n", e.what());
        }
      }
    }
    lock.lock();
    satisfied = pred();
    if (satisfied) break;
    if (!polled) {
      // Another thread is polling: the progress thread stands aside after its current round,
      // a user thread notifies when it is done. Spinning on mu_ here would starve either.
      if (++missed_polls < 16) {
        lock.unlock();
        std::this_thread::yield();
        lock.lock();
        satisfied = pred();
      } else {
        satisfied = cv_.wait_for(lock, std::chrono::microseconds(50), pred);
      }
      continue;
    }
    missed_polls = 0;
    if (active) {
      backoff.reset();
      continue;
    }
    auto sleep = backoff.next_sleep();
    if (sleep.count() == 0) {
      // Spinning: let the other processes sharing these cores run meanwhile.
      lock.unlock();
      std::this_thread::yield();
      lock.lock();
      satisfied = pred();
      continue;
    }
    if (deadline) {
      sleep = std::min(
          sleep, std::chrono::duration_cast<std::chrono::microseconds>(*deadline - Clock::now()) +
                     std::chrono::microseconds(1));
      if (sleep.count() <= 0) continue;
    }
    // Peers ring this process's doorbell after sending to it, and local threads after changing
    // what `pred` looks at, so this sleep ends as soon as there is something to see.
    lock.unlock();
    const bool rung = doorbell_.sleep(sleep);
    lock.lock();
    if (rung) backoff.reset();
    satisfied = pred();
  }
  return satisfied;
}

void Runtime::note_deadline(std::optional<Clock::time_point> deadline) {
  if (!deadline) return;
  const int64_t ns = deadline->time_since_epoch().count();
  int64_t current = next_deadline_ns_.load();
  while (ns < current && !next_deadline_ns_.compare_exchange_weak(current, ns)) {
  }
}

void Runtime::handle(Link& link, bridge::Received& message) {
  try {
    if (master_) {
      handle_master(link, message);
    } else {
      handle_worker(message);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fibermpi: ignored a bad message (kind %u) from rank %d: %s\n",
                 message.envelope.kind, message.source, e.what());
  }
}

void Runtime::send(MPI_Comm comm, int dest, Kind kind, uint64_t id, uint64_t aux, uint32_t flags,
                   std::span<const std::byte> payload) {
  bridge::Envelope envelope{static_cast<uint32_t>(kind),       flags, id, aux,
                            static_cast<uint32_t>(::getpid()), 0};
  if (master_) {
    // Called with mu_ held, which guards slots_.
    Slot* slot = find_slot(comm, dest);
    if (slot) envelope.seq = static_cast<uint32_t>(slot->messages_sent++);
    outbox_.post(comm, dest, bridge::frame(envelope, payload));
    if (slot && slot->local) ring_peer(slot->pid);
    return;
  }
  {
    // A heartbeat tells how many messages went before it; numbered and posted in one step, so
    // the numbers follow the order MPI delivers them in.
    std::lock_guard order(send_order_mu_);
    if (last_word_sent_) return;
    if (kind == Kind::kGoodbye || (kind == Kind::kExited && (flags & kWorkerLeaves) != 0))
      last_word_sent_ = true;
    if (kind == Kind::kHeartbeat) envelope.id = messages_sent_;
    envelope.seq = static_cast<uint32_t>(messages_sent_++);
    outbox_.post(comm, dest, bridge::frame(envelope, payload));
  }
  if (const int master = master_bell_pid_.load(std::memory_order_acquire); master != 0)
    ring_peer(master);
}

void Runtime::send_master(Kind kind, uint64_t id, uint64_t aux,
                          std::span<const std::byte> payload) {
  send(master_link_->comm.get(), master_rank_, kind, id, aux, 0, payload);
}

// ---------------------------------------------------------------------------------------------
// Master: handshakes, processes, liveness

Slot* Runtime::find_slot(MPI_Comm comm, int rank) {
  auto it = slots_.find({comm, rank});
  return it == slots_.end() ? nullptr : it->second.get();
}

uint64_t Runtime::requester_of(Slot* slot) const {
  return slot && slot->process ? slot->process->id : UINT64_MAX;
}

void Runtime::handle_master(Link& link, bridge::Received& message) {
  std::lock_guard lock(mu_);
  const auto kind = static_cast<Kind>(message.envelope.kind);
  const MPI_Comm comm = link.comm.get();
  const int source = message.source;
  Slot* slot = find_slot(comm, source);
  const uint64_t request = message.envelope.id;
  const uint64_t queue = message.envelope.aux;
  if (slot && slot->state != Slot::State::kGone) {
    if (message.envelope.sender != static_cast<uint32_t>(slot->pid) ||
        message.envelope.seq != static_cast<uint32_t>(slot->messages_received)) {
      // Not the message expected next from this worker: one was lost, or MPI delivered a stale
      // message of another process in its place. Either way what it carried cannot be trusted
      // and something it sent is missing: its work runs elsewhere.
      declare_unreachable(*slot, "a message arrived in place of its message " +
                                     std::to_string(slot->messages_received) + " (sent by pid " +
                                     std::to_string(message.envelope.sender) + " as its message " +
                                     std::to_string(message.envelope.seq) + ", kind " +
                                     std::to_string(message.envelope.kind) + ")");
      notify_locked();
      return;
    }
    slot->last_heard = Clock::now();
    if (kind == Kind::kHeartbeat) check_heartbeat(*slot, message);
    ++slot->messages_received;
  }
  auto reply = [this, comm, source, request](Outcome outcome, uint64_t aux,
                                             std::span<const std::byte> payload) {
    send(comm, source, Kind::kReply, request, aux, static_cast<uint32_t>(outcome), payload);
  };
  auto reply_text = [&reply](Outcome outcome, const std::string& text) {
    reply(outcome, 0, std::as_bytes(std::span(text.data(), text.size())));
  };
  switch (kind) {
    case Kind::kHello:
      on_hello(link, source, message.payload);
      break;
    case Kind::kHeartbeat:  // checked above
      break;
    case Kind::kGoodbye:
      if (slot) retire(*slot);
      break;
    case Kind::kLeave:
      if (slot) on_leave(*slot);
      break;
    case Kind::kExited:
      if (!slot) throw ProtocolError("exit report from an unknown worker");
      on_exited(*slot, message.envelope.id, message.payload);
      break;
    case Kind::kQueueCreate:
      reply(Outcome::kValue, hub_.create(message.envelope.aux == 1), {});
      break;
    case Kind::kQueuePut:
      hub_.put(queue, std::move(message.payload));
      break;
    case Kind::kQueueGet:
    case Kind::kQueuePoll: {
      const auto timeout_us = serial::from_bytes<int64_t>(message.payload);
      std::optional<Clock::time_point> deadline;
      if (timeout_us >= 0) deadline = Clock::now() + std::chrono::microseconds(timeout_us);
      auto done = [this, comm, source, request](Outcome outcome, Bytes item,
                                                const std::string& reason) {
        if (outcome == Outcome::kEof)
          item.assign(reinterpret_cast<const std::byte*>(reason.data()),
                      reinterpret_cast<const std::byte*>(reason.data() + reason.size()));
        // A completion runs inside hub bookkeeping, which must not be cut short by a throw.
        try {
          send(comm, source, Kind::kReply, request, 0, static_cast<uint32_t>(outcome), item);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "fibermpi: could not answer rank %d: %s\n", source, e.what());
        }
      };
      if (!hub_.exists(queue)) {
        reply_text(Outcome::kError, "unknown queue id " + std::to_string(queue));
      } else if (kind == Kind::kQueueGet) {
        hub_.get(queue, requester_of(slot), deadline, std::move(done));
      } else {
        hub_.poll(queue, requester_of(slot), deadline, std::move(done));
      }
      note_deadline(deadline);
      break;
    }
    case Kind::kQueueSize:
      if (!hub_.exists(queue)) {
        reply_text(Outcome::kError, "unknown queue id " + std::to_string(queue));
      } else {
        reply(Outcome::kValue, hub_.size(queue), {});
      }
      break;
    case Kind::kPoolReady:
    case Kind::kPoolResult: {
      auto pool = pools_.find(message.envelope.aux);
      if (!slot || !slot->process || pool == pools_.end()) break;  // a pool already gone
      if (kind == Kind::kPoolReady) {
        pool->second->on_worker_ready(*slot->process, message.envelope.flags != 0, message.payload);
      } else {
        pool->second->on_result(*slot->process, message.envelope.id, message.envelope.flags,
                                std::move(message.payload));
      }
      break;
    }
    case Kind::kQueueClose:
      if (hub_.exists(queue) && slot && slot->process) {
        hub_.close_producer(queue, slot->process->id, describe(*slot->process) + " closed its end");
      }
      break;
    default:
      throw ProtocolError("unexpected message kind " + std::to_string(message.envelope.kind));
  }
  notify_locked();
}

void Runtime::on_hello(Link& link, int rank, const Bytes& payload) {
  serial::Reader reader(payload);
  const auto protocol = serial::read<uint32_t>(reader);
  const auto module = serial::read<uint64_t>(reader);
  const auto pid = serial::read<int>(reader);
  const auto host = serial::read<std::string>(reader);
  if (slots_expected_ > 0) --slots_expected_;
  ++link.hellos;
  std::string refusal;
  if (protocol != kProtocolVersion) {
    refusal = "worker speaks fibermpi protocol " + std::to_string(protocol) + ", the master " +
              std::to_string(kProtocolVersion);
  } else if (module != bridge::ModuleTable::instance().main_module_id()) {
    refusal = "worker pid " + std::to_string(pid) + " on " + host +
              " runs a different binary than the master (build-id hash " + std::to_string(module) +
              " vs " + std::to_string(bridge::ModuleTable::instance().main_module_id()) +
              "): rebuild or redeploy so every process runs the same executable";
  }
  if (!refusal.empty()) {
    send(link.comm.get(), rank, Kind::kRefuse, 0, 0, 0, serial::to_bytes(refusal));
    --link.live_slots;
    std::fprintf(stderr, "fibermpi: refused a worker: %s\n", refusal.c_str());
    if (link.spawned) fail_pending(1, refusal);
    return;
  }
  auto slot = std::make_unique<Slot>();
  slot->link = &link;
  slot->rank = rank;
  slot->pid = pid;
  slot->host = host;
  slot->local = host == host_;
  slot->last_heard = Clock::now();
  slot->idle_since = slot->last_heard;
  slot->messages_received = 1;  // its hello
  serial::Writer welcome;
  serial::save(welcome, static_cast<int>(::getpid()));
  serial::save(welcome, host_);
  serial::save(welcome, signal_dir_);
  serial::save(welcome, static_cast<int64_t>(config_.heartbeat_interval.count()));
  slots_[{link.comm.get(), rank}] = std::move(slot);
  send(link.comm.get(), rank, Kind::kWelcome, 0, 0, 0, welcome.buffer());
  if (link.connected) {
    // A worker of a job that joined: the first pool that takes such workers grows onto it.
    for (auto& [id, pool] : std::map(pools_.begin(), pools_.end()))
      if (pool->adopt_joined_worker_locked()) break;
  }
  assign_idle_slots();
}

Slot* Runtime::pick_idle_slot(const ProcessState& process) {
  const bool needs_fresh_process = process.pool == 0;
  Slot* best = nullptr;
  int best_preference = 0;
  for (auto& [key, slot] : slots_) {
    if (slot->state != Slot::State::kIdle || slot->leaving || !runs_current_executable(*slot))
      continue;
    int preference = 0;  // lower is better
    if (!slot->link->spawned) {
      // The static world's ranks and joined jobs are there anyway; they run one process after
      // another.
      preference = slot->link->connected ? 1 : 0;
    } else if (needs_fresh_process) {
      if (slot->used) continue;
      preference = 2;
    } else {
      // Pools take workers that served a pool before, keeping never-used ones for Processes.
      preference = slot->used ? 2 : 3;
    }
    if (!best || preference < best_preference) {
      best = slot.get();
      best_preference = preference;
    }
  }
  return best;
}

void Runtime::assign_idle_slots() {
  if (stopping_) return;
  for (auto it = pending_.begin(); it != pending_.end();) {
    Slot* slot = pick_idle_slot(**it);
    if (!slot) {
      ++it;
      continue;
    }
    auto process = *it;
    it = pending_.erase(it);
    slot->state = Slot::State::kBusy;
    slot->used = true;
    slot->process = process;
    process->slot = slot;
    process->pid = slot->pid;
    process->host = slot->host;
    process->status = ProcessStatus::kRunning;
    serial::Writer run;
    serial::save(run, process->name);
    save_task(run, process->task);
    // A spawned pool worker waits in the reserve afterwards; anything else run in a spawned
    // process ends it (a Process is the whole life of its process, as in Python).
    const uint32_t flags = slot->link->spawned && process->pool != 0 ? kStayAfterRun : 0;
    send(slot->link->comm.get(), slot->rank, Kind::kRun, process->id, 0, flags, run.buffer());
    if (slot->link->spawned && process->pool == 0) processes_started_ = true;
  }
  // A Process that had to wait for a spawn: keep some started ahead from now on.
  if (std::any_of(pending_.begin(), pending_.end(), [](const auto& p) { return p->pool == 0; }))
    processes_started_ = true;
  // A never-used worker may have been taken: the spawner tops the reserve up.
  spawn_cv_.notify_one();
  notify_locked();
}

void Runtime::on_exited(Slot& slot, uint64_t id, const Bytes& payload) {
  serial::Reader reader(payload);
  const auto code = serial::read<int>(reader);
  serial::read<std::string>(reader);
  const bool worker_leaves = serial::read<bool>(reader);
  if (!slot.process || slot.process->id != id) {
    throw ProtocolError("worker pid " + std::to_string(slot.pid) + " reported the end of process " +
                        std::to_string(id) + ", which it was not running");
  }
  auto process = slot.process;
  slot.process.reset();
  // The slot's fate is settled before the process ends, so that a replacement the pool starts
  // as it learns of the end can take this very slot (a static rank stays in use).
  if (worker_leaves) {
    if (slot.link->spawned && slot.local) finishing_pids_.push_back(slot.pid);
    retire(slot);
  } else if (slot.leaving || (slot.link->spawned &&
                              (process->retire_worker_after || config_.reserve_max_idle == 0 ||
                               !runs_current_executable(slot)))) {
    shut_down_slot(slot);
  } else {
    // Idle again: a static rank or joined worker waits for the next process, a spawned pool
    // worker waits in the reserve.
    slot.state = Slot::State::kIdle;
    slot.idle_since = Clock::now();
  }
  end_process(process, code, describe_exit(*process, code));
  assign_idle_slots();
}

bool Runtime::runs_current_executable(const Slot& slot) const {
  return !slot.link->spawned || slot.link->executable == config_.spawn.executable;
}

void Runtime::shut_down_slot(Slot& slot) {
  send(slot.link->comm.get(), slot.rank, Kind::kShutdown, 0, 0, 0, {});
  if (slot.link->spawned && slot.local) finishing_pids_.push_back(slot.pid);
  // Gone once its goodbye arrives (or it dies): until then it may still send.
  slot.state = Slot::State::kClosing;
  slot.process.reset();
}

void Runtime::trim_reserve(Clock::time_point now) {
  std::vector<Slot*> idle;
  for (auto& [key, slot] : slots_) {
    if (slot->link->spawned && slot->state == Slot::State::kIdle && !slot->process)
      idle.push_back(slot.get());
  }
  // Beyond the size limit, workers that served a pool leave before never-used ones (kept for
  // Processes), the longest idle first.
  std::sort(idle.begin(), idle.end(), [](const Slot* a, const Slot* b) {
    if (a->used != b->used) return a->used;
    return a->idle_since < b->idle_since;
  });
  const auto limit = static_cast<size_t>(config_.reserve_max_idle);
  size_t excess = idle.size() > limit ? idle.size() - limit : 0;
  for (Slot* slot : idle) {
    const bool over_limit = excess > 0;
    if (over_limit) --excess;
    const bool expired = now - slot->idle_since > config_.reserve_idle_timeout;
    if (!over_limit && !expired && runs_current_executable(*slot)) continue;
    // No Process wanted a started-ahead worker for the whole idle timeout: stop keeping some
    // ahead until the next Process starts.
    if (expired && !slot->used) processes_started_ = false;
    shut_down_slot(*slot);
  }
}

int Runtime::spawn_wanted_locked() const {
  // Pending processes that no idle slot can take and no spawn in flight will serve...
  const int missing = static_cast<int>(pending_.size()) - slots_expected_;
  int wanted = std::max(0, missing);
  if (processes_started_) {
    // ...plus never-used workers to keep ready for the next Processes (those in flight beyond
    // the pending ones count).
    int fresh = std::max(0, -missing);
    for (const auto& [key, slot] : slots_) {
      if (slot->link->spawned && slot->state == Slot::State::kIdle && !slot->used &&
          !slot->leaving && runs_current_executable(*slot))
        ++fresh;
    }
    const int ahead = std::min(config_.processes_ahead, config_.reserve_max_idle);
    wanted += std::max(0, ahead - fresh);
  }
  return wanted;
}

void Runtime::on_leave(Slot& slot) {
  slot.leaving = true;
  if (!slot.process) {
    if (slot.state == Slot::State::kIdle) shut_down_slot(slot);
    return;
  }
  // Whatever it runs finishes first: a pool worker drains, a Process runs to its end.
  if (slot.process->pool != 0) {
    if (auto pool = pools_.find(slot.process->pool); pool != pools_.end())
      pool->second->release_worker_locked(slot.process->id);
  }
}

void Runtime::end_process(const std::shared_ptr<ProcessState>& process, std::optional<int> code,
                          const std::string& how) {
  if (process->status == ProcessStatus::kEnded) return;
  process->status = ProcessStatus::kEnded;
  process->exitcode = code;
  process->slot = nullptr;
  children_.erase(process->id);
  hub_.process_ended(process->id, how);
  if (process->pool != 0) {
    if (auto pool = pools_.find(process->pool); pool != pools_.end())
      pool->second->on_worker_ended(process);
  }
  notify_locked();
}

void Runtime::fail_pending(size_t count, const std::string& reason) {
  for (size_t i = 0; i < count && !pending_.empty(); ++i) {
    auto process = pending_.front();
    pending_.pop_front();
    process->start_error =
        std::make_exception_ptr(SpawnError(process->name + " could not start: " + reason));
    end_process(process, std::nullopt, describe_exit(*process, std::nullopt));
  }
}

void Runtime::retire(Slot& slot) {
  if (slot.state == Slot::State::kGone) return;
  slot.state = Slot::State::kGone;
  --slot.link->live_slots;
}

void Runtime::check_liveness() {
  const auto now = Clock::now();
  for (auto& link : links_) {
    const int missing = link->expected_hellos - link->hellos;
    // Children have finished MPI_Init when the spawn returns, so a hello is due within moments;
    // one that has not come after kHelloTimeout is stuck (Open MPI's TCP transport sometimes
    // refuses a new child's connection: "received unexpected process identifier").
    const auto hello_timeout = std::min<Clock::duration>(config_.spawn_timeout, kHelloTimeout);
    if (missing <= 0 || now - link->created < hello_timeout) continue;
    // Workers that died before saying hello have no slot to watch; stop waiting for them so
    // replacements get spawned.
    std::fprintf(stderr,
                 "fibermpi: %d worker(s) never reported after starting; giving up on them\n",
                 missing);
    link->hellos = link->expected_hellos;
    link->live_slots -= missing;
    slots_expected_ = std::max(0, slots_expected_ - missing);
    spawn_cv_.notify_one();
  }
  for (auto& [key, slot] : slots_) {
    if (slot->state == Slot::State::kGone) continue;
    if (!slot->local || !config_.pid_checks) {
      // No pid to look at: silence is the only sign.
      if (now - std::max(slot->last_heard, receiving_since_) > config_.heartbeat_timeout) {
        std::fprintf(stderr,
                     "fibermpi: worker pid %d on %s sent nothing for %.1f s (heartbeat timeout); "
                     "declaring it dead\n",
                     slot->pid, slot->host.c_str(),
                     std::chrono::duration<double>(now - slot->last_heard).count());
        declare_dead(*slot);
      }
      continue;
    }
    if (!pid_gone(slot->pid)) {
      slot->missing_since.reset();
      // Alive, yet silent: it is stopped or hung, or its messages no longer reach this process
      // (a transport connection that broke one way). Its work must not wait for it.
      if (const auto silent = now - std::max(slot->last_heard, receiving_since_);
          silent > config_.heartbeat_timeout) {
        declare_unreachable(
            *slot, "its process is alive but nothing from it arrived for " +
                       std::to_string(
                           std::chrono::duration_cast<std::chrono::milliseconds>(silent).count()) +
                       " ms, not even a heartbeat");
      }
      continue;
    }
    // Messages it sent just before dying may still be in transit: give them two rounds.
    if (!slot->missing_since) {
      slot->missing_since = now;
    } else if (now - *slot->missing_since >= 2 * config_.liveness_interval) {
      declare_dead(*slot);
    }
  }
  trim_reserve(now);
  std::erase_if(slots_,
                [](const auto& entry) { return entry.second->state == Slot::State::kGone; });
}

void Runtime::declare_dead(Slot& slot) {
  outbox_.abandon(slot.link->comm.get(), slot.rank);
  doorbell_.forget(slot.pid);
  if (!slot.link->spawned && !slot.link->connected) static_rank_lost_at_ = Clock::now();
  worker_lost_ = true;
  if (auto process = slot.process) {
    int signal = read_signal_file(signal_dir_, slot.pid);
    if (signal == 0) signal = process->signal_sent != 0 ? process->signal_sent : SIGKILL;
    end_process(process, -signal, describe_exit(*process, -signal));
  }
  slot.process.reset();
  retire(slot);
}

void Runtime::on_peers_failed(Link& link, const std::vector<int>& ranks) {
  if (!master_) {
    // In the static world the link is shared with the other workers, whose deaths do not matter.
    if (&link != master_link_ || std::find(ranks.begin(), ranks.end(), master_rank_) == ranks.end())
      return;
    std::fprintf(stderr, "fibermpi worker %d: MPI reports that the master died, exiting\n",
                 static_cast<int>(::getpid()));
    std::_Exit(1);
  }
  std::lock_guard lock(mu_);
  for (const int rank : ranks) {
    Slot* slot = find_slot(link.comm.get(), rank);
    if (!slot || slot->state == Slot::State::kGone) continue;
    std::fprintf(stderr, "fibermpi: MPI reports that worker pid %d on %s died\n", slot->pid,
                 slot->host.c_str());
    declare_dead(*slot);
  }
  notify_locked();
}

void Runtime::check_heartbeat(Slot& slot, const bridge::Received& heartbeat) {
  if (slot.state == Slot::State::kGone) return;
  // It says how many messages it sent before this one (id); MPI keeps their order.
  const uint64_t sent = heartbeat.envelope.id;
  if (slot.messages_received < sent) {
    declare_unreachable(slot, std::to_string(sent - slot.messages_received) + " of its " +
                                  std::to_string(sent) +
                                  " messages to the master never arrived (lost by Open MPI's "
                                  "transport)");
    return;
  }
  // And how many of the master's arrived (aux), as of when it was sent (payload).
  check_delivery(slot, heartbeat.envelope.aux, serial::from_bytes<int64_t>(heartbeat.payload));
}

void Runtime::check_delivery(Slot& slot, uint64_t received, int64_t sent_stamp_ns) {
  const auto now = Clock::now();
  // Only a heartbeat read soon after it was sent tells what had arrived by now; one read late
  // (after a spawn paused receiving, or while the master catches up) is skipped.
  const int64_t lag = now.time_since_epoch().count() - sent_stamp_ns;
  slot.least_heartbeat_lag_ns = std::min(slot.least_heartbeat_lag_ns, lag);
  const int64_t interval_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(config_.heartbeat_interval).count();
  if (lag - slot.least_heartbeat_lag_ns > interval_ns / 2) return;
  // Messages sent before the previous fresh heartbeat was read had a heartbeat interval to
  // arrive before this one was sent (MPI keeps their order, so a count tells which).
  const uint64_t owed = slot.sent_at_last_beat > received ? slot.sent_at_last_beat - received : 0;
  slot.sent_at_last_beat = slot.messages_sent;
  if (owed == 0) {
    slot.owing_since.reset();
    return;
  }
  if (!slot.owing_since) slot.owing_since = now;
  if (now - *slot.owing_since <= config_.heartbeat_timeout) return;
  // Several workers lacking messages at once means the master's own sending is stuck (Open
  // MPI's shared-memory fragments used up, say): declaring them all dead would not help.
  const auto owing = std::count_if(slots_.begin(), slots_.end(), [&](const auto& entry) {
    return entry.second->state != Slot::State::kGone && entry.second->owing_since &&
           now - *entry.second->owing_since > config_.heartbeat_timeout;
  });
  const auto live = std::count_if(slots_.begin(), slots_.end(), [](const auto& entry) {
    return entry.second->state != Slot::State::kGone;
  });
  if (owing >= 2 && 2 * owing > live) {
    if (!sending_stuck_reported_) {
      sending_stuck_reported_ = true;
      std::fprintf(stderr,
                   "fibermpi: messages from the master to %ld of its %ld workers have not arrived "
                   "for over %.1f s: the master's MPI sends are stuck (Open MPI's shared-memory "
                   "transport may have run out of fragments after killed processes)\n",
                   static_cast<long>(owing), static_cast<long>(live),
                   std::chrono::duration<double>(config_.heartbeat_timeout).count());
    }
    return;
  }
  declare_unreachable(
      slot, "it still lacks " + std::to_string(owed) + " message(s) sent to it more than " +
                std::to_string(
                    std::chrono::duration_cast<std::chrono::milliseconds>(now - *slot.owing_since)
                        .count()) +
                " ms ago (" + std::to_string(received) + " of " +
                std::to_string(slot.messages_sent) +
                " arrived; Open MPI's transport lost or holds them)");
}

void Runtime::declare_unreachable(Slot& slot, const std::string& what) {
  const bool spawned = slot.link->spawned;
  std::fprintf(stderr,
               "fibermpi: worker pid %d on %s: %s; declaring the worker dead so that its work "
               "runs elsewhere%s\n",
               slot.pid, slot.host.c_str(), what.c_str(),
               spawned ? ""
                       : " (the process is left running: it belongs to the static world or to a "
                         "joined job, whose ranks fibermpi never kills)");
  // It cannot be told to stop (what it would be told may not arrive); a spawned worker of this
  // host is ended the way terminate() ends one.
  if (spawned && slot.local) ::kill(slot.pid, SIGKILL);
  declare_dead(slot);
}

void Runtime::check_spawn_watchdog() {
  std::lock_guard lock(mu_);
  if (!spawn_started_ || !spawn_stuck_.empty()) return;
  if (Clock::now() - *spawn_started_ < config_.spawn_timeout) return;
  spawn_stuck_ = "MPI_Comm_spawn of " + std::to_string(spawn_count_) +
                 " processes has not completed after " +
                 std::to_string(config_.spawn_timeout.count()) +
                 " s; Open MPI's runtime is stuck, so no more processes can be spawned in this run";
  std::fprintf(stderr, "fibermpi: %s\n", spawn_stuck_.c_str());
  slots_expected_ -= spawn_count_;
  fail_pending(pending_.size(), spawn_stuck_);
  // Traffic of the workers already running must go on even though the spawn never returns.
  spawn_in_progress_.store(false);
  outbox_.hold(false);
  for (auto& [id, pool] : pools_) pool->pause_over_locked();
}

void Runtime::spawner_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    spawn_cv_.wait(
        lock, [this] { return stopping_ || (spawn_stuck_.empty() && spawn_wanted_locked() > 0); });
    if (stopping_) return;
    const bridge::SpawnOptions options = config_.spawn;
    std::vector<int> finishing = std::move(finishing_pids_);
    finishing_pids_.clear();
    // After a kill, finalizing children can hang until their watchdog ends them.
    const auto finishing_limit =
        worker_lost_ ? kFinalizeWatchdog + std::chrono::seconds(1) : std::chrono::seconds(2);
    lock.unlock();
    // Open MPI 4.1's PMIx server sometimes never answers a new child's PMIx_Init when it
    // arrives while earlier children are still finalizing (a spawn started then was seen stuck
    // for good); let those leave first (bounded).
    const auto give_up = Clock::now() + finishing_limit;
    bool stop = false;
    while (!stop && std::any_of(finishing.begin(), finishing.end(), [](int pid) {
      return !pid_gone(pid);
    }) && Clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      lock.lock();
      stop = stopping_;
      lock.unlock();
    }
    lock.lock();
    // Meanwhile the runtime may have begun to shut down, or pending starts may have been
    // cancelled (a terminated pool) or served (a worker came back to the reserve): spawn only
    // what is still wanted, in one batch of at least min_spawn_batch (the extra ones wait in the
    // reserve: one spawn pauses traffic about as long whatever its size).
    if (stopping_) return;
    const int wanted = spawn_wanted_locked();
    if (wanted == 0) continue;
    const int count = std::clamp(std::max(wanted, config_.min_spawn_batch), 1,
                                 std::max(1, config_.max_spawn_batch));
    slots_expected_ += count;
    // Workers run their queued chunks while the master's traffic stops: queue enough to last.
    try {
      for (auto& [id, pool] : pools_) pool->cover_pause_locked(typical_spawn_);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fibermpi: queueing work before a spawn failed: %s\n", e.what());
    }
    spawn_started_ = Clock::now();
    spawn_count_ = count;
    lock.unlock();
    // The sends just posted leave before traffic stops.
    try {
      outbox_.progress();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fibermpi: progress error: %s\n", e.what());
    }
    auto link = std::make_unique<Link>();
    std::string error;
    outbox_.hold(true);
    spawn_in_progress_.store(true);
    // A poll that started before the flag was set must be done with MPI before the spawn starts.
    while (polls_running_.load() > 0) std::this_thread::yield();
    try {
      link->comm = bridge::spawn(options, count);
      link->executable = options.executable;
      link->expected_hellos = count;
      link->created = Clock::now();
    } catch (const std::exception& e) {
      error = e.what();
    }
    spawn_in_progress_.store(false);
    outbox_.hold(false);
    lock.lock();
    const auto took =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - *spawn_started_);
    const auto longest_counted =
        std::chrono::duration_cast<std::chrono::microseconds>(config_.spawn_timeout) / 10;
    typical_spawn_ = (3 * typical_spawn_ + std::min(took, longest_counted)) / 4;
    spawn_started_.reset();
    for (auto& [id, pool] : pools_) pool->pause_over_locked();
    const bool watchdog_fired = !spawn_stuck_.empty();
    if (watchdog_fired) {
      // It was slow, not stuck: the watchdog's bookkeeping is undone and spawning resumes.
      spawn_stuck_.clear();
      if (error.empty()) slots_expected_ += count;
    }
    if (!error.empty()) {
      if (!watchdog_fired) slots_expected_ -= count;
      try {
        fail_pending(static_cast<size_t>(count), error);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "fibermpi: %s\n", e.what());
      }
      continue;
    }
    link->spawned = true;
    link->live_slots = count;
    incoming_links_.push_back(std::move(link));
    has_incoming_links_.store(true);
  }
}

std::shared_ptr<ProcessState> Runtime::new_process_locked(TaskSpec task,
                                                          const std::string& name_prefix) {
  auto state = std::make_shared<ProcessState>();
  state->id = next_process_id_++;
  state->name = name_prefix + "-" + std::to_string(state->id);
  state->task = std::move(task);
  return state;
}

bool Runtime::wait_until(const std::function<bool()>& pred,
                         std::optional<Clock::time_point> deadline) {
  std::unique_lock lock(mu_);
  return await(lock, pred, deadline);
}

void Runtime::start_process(const std::shared_ptr<ProcessState>& process) {
  std::lock_guard lock(mu_);
  start_process_locked(process);
}

void Runtime::start_process_locked(const std::shared_ptr<ProcessState>& process) {
  if (!master_) throw UsageError("a Process can only be started from the master process");
  if (stopping_) throw UsageError("cannot start a Process: fibermpi is shutting down");
  if (process->status != ProcessStatus::kCreated)
    throw UsageError(process->name + ": processes can only be started once");
  process->status = ProcessStatus::kPending;
  for (const uint64_t queue : process->task.produces) {
    if (hub_.exists(queue)) hub_.add_producer(queue, process->id);
  }
  children_[process->id] = process;
  pending_.push_back(process);
  assign_idle_slots();
  if (!spawn_stuck_.empty()) fail_pending(pending_.size(), spawn_stuck_);
  spawn_cv_.notify_one();
}

bool Runtime::wait_ended(const std::shared_ptr<ProcessState>& process,
                         std::optional<Clock::time_point> deadline) {
  std::unique_lock lock(mu_);
  return await(
      lock, [&] { return process->status == ProcessStatus::kEnded; }, deadline);
}

int Runtime::wait_pid(const std::shared_ptr<ProcessState>& process) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return process->pid != 0 || process->status == ProcessStatus::kEnded; });
  return process->pid;
}

void Runtime::terminate(const std::shared_ptr<ProcessState>& process) {
  std::lock_guard lock(mu_);
  terminate_locked(process);
}

void Runtime::send_to_process_locked(const ProcessState& process, Kind kind, uint64_t id,
                                     uint64_t aux, std::span<const std::byte> payload,
                                     uint32_t flags) {
  const Slot* slot = process.slot;
  if (!slot || slot->state == Slot::State::kGone) return;
  send(slot->link->comm.get(), slot->rank, kind, id, aux, flags, payload);
}

bool Runtime::on_static_rank_locked(const ProcessState& process) const {
  return process.slot && !process.slot->link->spawned && !process.slot->link->connected;
}

bool Runtime::on_connected_job_locked(const ProcessState& process) const {
  return process.slot && process.slot->link->connected;
}

std::string Runtime::listen() {
  std::lock_guard lock(mu_);
  if (!master_) throw UsageError("only the master process can open a rendezvous");
  if (stopping_ || shut_down_)
    throw UsageError("cannot open a rendezvous: fibermpi is shutting down");
  if (!rendezvous_) {
    rendezvous_ = std::make_unique<bridge::Rendezvous>();
    acceptor_thread_ = std::thread([this] { acceptor_loop(); });
  }
  return rendezvous_->address();
}

void Runtime::acceptor_loop() {
  for (;;) {
    bridge::Communicator joined;
    try {
      joined = rendezvous_->accept();
    } catch (const std::exception& e) {
      if (acceptor_stopping_) return;
      std::fprintf(stderr, "fibermpi: accepting a joining job failed: %s\n", e.what());
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    if (acceptor_stopping_) return;  // the wake-up connection from stop_acceptor
    auto link = std::make_unique<Link>();
    const int workers = joined.remote_size();
    link->comm = std::move(joined);
    link->connected = true;
    link->live_slots = workers;
    link->expected_hellos = workers;
    link->created = Clock::now();
    std::lock_guard lock(mu_);
    incoming_links_.push_back(std::move(link));
    has_incoming_links_.store(true);
  }
}

void Runtime::stop_acceptor() {
  if (!acceptor_thread_.joinable()) return;
  acceptor_stopping_ = true;
  // MPI_Comm_accept cannot be cancelled, and connecting to our own port to make it return
  // deadlocks in Open MPI 4.1; the thread stays blocked and ends with the process (finalising
  // meanwhile was measured to work).
  acceptor_thread_.detach();
}

std::shared_ptr<PoolCore> Runtime::create_pool(PoolSettings settings) {
  std::lock_guard lock(mu_);
  if (!master_) throw UsageError("a Pool can only be created in the master process");
  if (stopping_ || shut_down_) throw UsageError("cannot create a Pool: fibermpi is shutting down");
  auto pool = std::make_shared<PoolCore>(*this, next_pool_id_++, std::move(settings));
  pools_[pool->id()] = pool;
  pool->start_workers_locked();
  return pool;
}

void Runtime::release_pool(uint64_t id) {
  std::lock_guard lock(mu_);
  pools_.erase(id);
}

void Runtime::terminate_locked(const std::shared_ptr<ProcessState>& process) {
  if (process->status == ProcessStatus::kEnded || process->status == ProcessStatus::kCreated)
    return;
  process->signal_sent = SIGTERM;
  if (process->status == ProcessStatus::kPending) {
    std::erase(pending_, process);
    end_process(process, -SIGTERM, describe(*process) + " was terminated before it started");
    return;
  }
  Slot* slot = process->slot;
  if (!slot) return;
  if (slot->local) {
    ::kill(slot->pid, SIGTERM);
  } else {
    send(slot->link->comm.get(), slot->rank, Kind::kTerminate, process->id, 0, 0, {});
  }
}

std::vector<std::shared_ptr<ProcessState>> Runtime::live_children() {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<ProcessState>> live;
  for (auto& [id, process] : children_) live.push_back(process);
  return live;
}

void Runtime::shutdown() {
  if (!master_) return;
  std::unique_lock lock(mu_);
  if (shut_down_) return;
  shut_down_ = true;
  // Pools still alive at exit stop now (like Python's pools at interpreter exit).
  for (auto& [id, pool] : std::unordered_map(pools_)) pool->terminate_locked();
  // Like Python: daemonic children are terminated, the others are waited for.
  for (auto& [id, process] : std::map(children_)) {
    if (!process->daemon) continue;
    lock.unlock();
    try {
      terminate(process);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fibermpi: could not terminate %s: %s\n", process->name.c_str(),
                   e.what());
    }
    lock.lock();
  }
  cv_.wait(lock, [this] { return children_.empty(); });
  stopping_ = true;
  spawn_cv_.notify_all();
  const bool spawn_stuck = !spawn_stuck_.empty() && spawn_started_.has_value();
  lock.unlock();
  if (spawn_stuck) {
    // The spawner is inside an MPI_Comm_spawn that will not return, and MPI_Finalize would wait
    // for it too: leave both to the process exit.
    spawner_thread_.detach();
    stop_progress_thread();
    g_running.store(false, std::memory_order_release);
    return;
  }
  if (spawner_thread_.joinable()) spawner_thread_.join();
  stop_acceptor();
  lock.lock();
  // Workers still starting up get their shutdown once they have said hello.
  cv_.wait_for(lock, std::chrono::seconds(10), [this] { return slots_expected_ <= 0; });
  if (static_rank_lost_at_) {
    // The ranks' MPI_Finalize (a fence over the whole static world) can wait forever for a rank
    // that was killed if it starts before mpirun has taken note of the death; give it time.
    const auto settle = *static_rank_lost_at_ + kStaticRankSettle;
    lock.unlock();
    std::this_thread::sleep_until(settle);
    lock.lock();
  }
  for (auto& [key, slot] : slots_) {
    if (slot->state == Slot::State::kIdle) shut_down_slot(*slot);
  }
  lock.unlock();
  drain_outbox(std::chrono::seconds(5));
  stop_progress_thread();
  g_running.store(false, std::memory_order_release);
  links_.clear();
  incoming_links_.clear();
  if (!signal_dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(signal_dir_, ignored);
  }
  if (worker_lost_ && g_exit_status.load() >= 0) exit_if_finalize_hangs(g_exit_status);
  bridge::Environment::finalize();
}

// ---------------------------------------------------------------------------------------------
// Queues

uint64_t Runtime::queue_create(bool pipe_channel) {
  if (master_) {
    std::lock_guard lock(mu_);
    return hub_.create(pipe_channel);
  }
  return call_master(Kind::kQueueCreate, pipe_channel ? 1 : 0, {}).envelope.aux;
}

void Runtime::queue_put(uint64_t queue, Bytes item) {
  if (master_) {
    std::lock_guard lock(mu_);
    hub_.put(queue, std::move(item));
    return;
  }
  send_master(Kind::kQueuePut, 0, queue, item);
}

QueueResult Runtime::queue_wait(uint64_t queue, bool take,
                                std::optional<std::chrono::microseconds> timeout) {
  if (!master_) {
    const int64_t timeout_us = timeout ? std::max<int64_t>(0, timeout->count()) : -1;
    bridge::Received reply =
        call_master(take ? Kind::kQueueGet : Kind::kQueuePoll, queue, serial::to_bytes(timeout_us));
    QueueResult result;
    result.outcome = static_cast<Outcome>(reply.envelope.flags);
    if (result.outcome == Outcome::kItem) {
      result.item = std::move(reply.payload);
    } else {
      result.reason.assign(reinterpret_cast<const char*>(reply.payload.data()),
                           reply.payload.size());
    }
    return result;
  }
  std::unique_lock lock(mu_);
  auto result = std::make_shared<std::optional<QueueResult>>();
  std::optional<Clock::time_point> deadline;
  if (timeout) deadline = Clock::now() + *timeout;
  auto done = [this, result](Outcome outcome, Bytes item, const std::string& reason) {
    *result = QueueResult{outcome, std::move(item), reason};
    notify_locked();
  };
  if (take) {
    hub_.get(queue, kMasterId, deadline, done);
  } else {
    hub_.poll(queue, kMasterId, deadline, done);
  }
  note_deadline(deadline);
  await(lock, [&] { return result->has_value(); });
  return std::move(**result);
}

size_t Runtime::queue_size(uint64_t queue) {
  if (master_) {
    std::lock_guard lock(mu_);
    return hub_.size(queue);
  }
  return call_master(Kind::kQueueSize, queue, {}).envelope.aux;
}

void Runtime::queue_close(uint64_t queue) {
  if (master_) {
    std::lock_guard lock(mu_);
    hub_.close_producer(queue, kMasterId, "the master closed its end");
    return;
  }
  send_master(Kind::kQueueClose, 0, queue, {});
}

// ---------------------------------------------------------------------------------------------
// Worker side

void Runtime::handle_worker(bridge::Received& message) {
  std::lock_guard lock(mu_);
  if (fault_drop_message_ != 0 && ++messages_seen_ == fault_drop_message_) {
    std::fprintf(stderr, "fibermpi worker %d: discarding message %llu (FIBER_FAULT_DROP_MESSAGE)\n",
                 static_cast<int>(::getpid()), static_cast<unsigned long long>(messages_seen_));
    return;
  }
  const bool from_master =
      master_pid_ == 0 || message.envelope.sender == static_cast<uint32_t>(master_pid_);
  if (!from_master || message.envelope.seq != static_cast<uint32_t>(messages_received_)) {
    // A message of the master's is missing, or MPI delivered one that is not the master's next:
    // this worker cannot know what it was asked to do. It leaves; its work runs elsewhere.
    std::fprintf(stderr,
                 "fibermpi worker %d: expected message %llu from the master (pid %d), got message "
                 "%u from pid %u (kind %u); leaving so that its work runs elsewhere\n",
                 static_cast<int>(::getpid()), static_cast<unsigned long long>(messages_received_),
                 master_pid_, message.envelope.seq, message.envelope.sender, message.envelope.kind);
    std::fflush(nullptr);
    std::_Exit(1);
  }
  ++messages_received_;
  switch (static_cast<Kind>(message.envelope.kind)) {
    case Kind::kWelcome: {
      serial::Reader reader(message.payload);
      master_pid_ = serial::read<int>(reader);
      master_local_ = serial::read<std::string>(reader) == host_;
      signal_dir_ = serial::read<std::string>(reader);
      heartbeat_interval_ = std::chrono::milliseconds(serial::read<int64_t>(reader));
      if (master_local_ && doorbell_.open(signal_dir_, static_cast<int>(::getpid())))
        master_bell_pid_.store(master_pid_, std::memory_order_release);
      handshake_ = Handshake::kAccepted;
      g_welcomed.store(true, std::memory_order_release);
      break;
    }
    case Kind::kRefuse:
      refusal_ = serial::from_bytes<std::string>(message.payload);
      handshake_ = Handshake::kRefused;
      break;
    case Kind::kRun:
    case Kind::kShutdown:
      mailbox_.push_back(std::move(message));
      break;
    case Kind::kPoolTask:
      // Several chunks per message: each becomes an inbox entry of its own.
      for (auto& chunk : split_task_message(message.payload)) {
        bridge::Received entry;
        entry.envelope = message.envelope;
        entry.envelope.id = chunk.task;
        entry.source = message.source;
        entry.payload = std::move(chunk.payload);
        pool_inbox_.push_back(std::move(entry));
      }
      break;
    case Kind::kPoolStop:
      pool_inbox_.push_back(std::move(message));
      break;
    case Kind::kTerminate:
      ::kill(::getpid(), SIGTERM);
      break;
    case Kind::kReply: {
      auto it = replies_.find(message.envelope.id);
      if (it == replies_.end())
        throw ProtocolError("reply to an unknown request " + std::to_string(message.envelope.id));
      it->second = std::move(message);
      break;
    }
    default:
      throw ProtocolError("unexpected message kind " + std::to_string(message.envelope.kind));
  }
  notify_locked();
}

bridge::Received Runtime::call_master(Kind kind, uint64_t aux, std::span<const std::byte> payload) {
  std::unique_lock lock(mu_);
  const uint64_t request = next_request_++;
  replies_.emplace(request, std::nullopt);
  send_master(kind, request, aux, payload);
  await(lock, [&] { return replies_[request].has_value(); });
  bridge::Received reply = std::move(*replies_[request]);
  replies_.erase(request);
  if (static_cast<Outcome>(reply.envelope.flags) == Outcome::kError) {
    throw Error(
        std::string(reinterpret_cast<const char*>(reply.payload.data()), reply.payload.size()));
  }
  return reply;
}

void Runtime::check_master_alive() {
  int pid = 0;
  {
    std::lock_guard lock(mu_);
    if (!master_local_) return;
    pid = master_pid_;
  }
  if (pid_gone(pid)) {
    // Nobody is left to report to; MPI cannot be finalised with a dead peer.
    std::fprintf(stderr, "fibermpi worker %d: the master (pid %d) is gone, exiting\n",
                 static_cast<int>(::getpid()), pid);
    std::_Exit(1);
  }
}

void Runtime::handshake() {
  serial::Writer hello;
  serial::save(hello, kProtocolVersion);
  serial::save(hello, bridge::ModuleTable::instance().main_module_id());
  serial::save(hello, static_cast<int>(::getpid()));
  serial::save(hello, host_);
  send_master(Kind::kHello, 0, 0, hello.buffer());
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return handshake_ != Handshake::kWaiting; });
  if (handshake_ == Handshake::kRefused) {
    std::fprintf(stderr, "fibermpi worker %d: refused by the master: %s\n",
                 static_cast<int>(::getpid()), refusal_.c_str());
    lock.unlock();
    // Exit status 0: Open MPI treats a non-zero one as a failure of the whole job.
    finish_worker(0);
  }
}

Assignment Runtime::next_assignment() {
  std::unique_lock lock(mu_);
  await(lock, [this] { return !mailbox_.empty(); });
  bridge::Received message = std::move(mailbox_.front());
  mailbox_.pop_front();
  Assignment assignment;
  if (static_cast<Kind>(message.envelope.kind) == Kind::kShutdown) {
    assignment.shutdown = true;
    return assignment;
  }
  assignment.process_id = message.envelope.id;
  assignment.stay_after = (message.envelope.flags & kStayAfterRun) != 0;
  serial::Reader reader(message.payload);
  assignment.name = serial::read<std::string>(reader);
  assignment.task = load_task(reader);
  return assignment;
}

void Runtime::send_to_master(Kind kind, uint64_t id, uint64_t aux, uint32_t flags,
                             std::span<const std::byte> payload) {
  send(master_link_->comm.get(), master_rank_, kind, id, aux, flags, payload);
}

bridge::Received Runtime::next_pool_message(uint64_t pool) {
  std::unique_lock lock(mu_);
  // Messages of a pool this process served before (it came back to the reserve or its rank
  // serves one pool after another) are no business of this one.
  auto current = [this, pool] {
    std::erase_if(pool_inbox_,
                  [pool](const bridge::Received& m) { return m.envelope.aux != pool; });
    return !pool_inbox_.empty();
  };
  await(lock, current);
  // A terminated pool's stop overtakes the tasks still queued here.
  for (auto it = pool_inbox_.begin(); it != pool_inbox_.end(); ++it) {
    if (static_cast<Kind>(it->envelope.kind) == Kind::kPoolStop &&
        it->envelope.flags == kDropQueuedTasks) {
      bridge::Received stop = std::move(*it);
      pool_inbox_.clear();
      return stop;
    }
  }
  bridge::Received message = std::move(pool_inbox_.front());
  pool_inbox_.pop_front();
  return message;
}

void Runtime::report_exit(uint64_t process_id, int code, const std::string& error,
                          bool worker_leaves) {
  serial::Writer report;
  serial::save(report, code);
  serial::save(report, error);
  serial::save(report, worker_leaves);
  send(master_link_->comm.get(), master_rank_, Kind::kExited, process_id, 0,
       worker_leaves ? kWorkerLeaves : 0, report.buffer());
}

void Runtime::say_goodbye() {
  send(master_link_->comm.get(), master_rank_, Kind::kGoodbye, 0, 0, 0, {});
}

void Runtime::drain_outbox(std::chrono::seconds limit) {
  const auto give_up = Clock::now() + limit;
  while (!outbox_.empty() && Clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
}

void Runtime::stop_progress_thread() {
  {
    std::lock_guard guard(mu_);
    stop_progress_.store(true);
  }
  progress_cv_.notify_all();
  if (progress_thread_.joinable() && progress_thread_.get_id() != std::this_thread::get_id()) {
    progress_thread_.join();
  }
  // A user thread blocked in a get may still be inside poll_once; wait for it, but not forever.
  std::unique_lock no_poller(progress_mu_, std::defer_lock);
  for (int i = 0; i < 1000 && !no_poller.try_lock(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void Runtime::finish_worker(int code) {
  drain_outbox(std::chrono::seconds(10));
  // Fault injection (tests): the process lingers after its last message, its progress thread
  // still running, the way a slow exit does.
  if (const char* linger = std::getenv("FIBER_FAULT_LINGER_MS"))
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(linger)));
  stop_progress_thread();
  g_running.store(false, std::memory_order_release);
  links_.clear();
  // A worker cannot know whether another process of the universe was killed; it must not hang
  // in a finalize that will never complete (mpirun would wait for it forever).
  exit_if_finalize_hangs(code);
  bridge::Environment::finalize();
  // Like a multiprocessing child: flush what the task printed, skip the program's destructors.
  std::fflush(nullptr);
  std::_Exit(code);
}

}  // namespace fiber::detail

namespace fiber {

void init(int& argc, char**& argv, Config config) {
  detail::Runtime::start(argc, argv, std::move(config));
}

bool is_initialized() { return detail::Runtime::exists(); }

std::string listen() { return detail::Runtime::instance().listen(); }

void shutdown() {
  if (detail::Runtime::exists()) detail::Runtime::instance().shutdown();
}

void set_executable(const std::string& path) { detail::Runtime::instance().set_executable(path); }

}  // namespace fiber
