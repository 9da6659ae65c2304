#include "fiber/runtime/runtime.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>

#include "fiber/base/exit_status_report.h"
#include "fiber/base/fault_injection.h"
#include "fiber/base/launch_site.h"
#include "fiber/base/log.h"
#include "fiber/base/process_presence.h"
#include "fiber/base/spawned_environment.h"
#include "fiber/errors.h"
#include "fiber/function_ref.h"
#include "fiber/group/group_inbox.h"
#include "fiber/kubernetes/join_service.h"
#include "fiber/kubernetes/join_token.h"
#include "fiber/kubernetes/join_turns.h"
#include "fiber/kubernetes/kubernetes_pod.h"
#include "fiber/kubernetes/pod_join.h"
#include "fiber/manager/manager_stub.h"
#include "fiber/master/local_group.h"
#include "fiber/master/local_pool.h"
#include "fiber/master/master.h"
#include "fiber/nesting/nested_client.h"
#include "fiber/pool/pool_inbox.h"
#include "fiber/queue/queue_hub.h"
#include "fiber/queue/queue_stub.h"
#include "fiber/runtime/worker_loop.h"
#include "fiber/worker/master_link.h"
#include "fiber/worker/start_up_watchdog.h"
#include "mpi_bridge/environment.h"
#include "mpi_bridge/launch_environment.h"
#include "mpi_bridge/rendezvous.h"

namespace fiber::internal {
namespace {

// Never destroyed: the exit handler, a detached spawner stuck in MPI and late signal handlers may
// all still reach it while static destructors run.
Runtime* g_runtime = nullptr;
std::atomic<bool> g_running{false};

// The status the program is exiting with, once exit() has been called.
std::atomic<int> g_exit_status{-1};

// A program run by `fibermpi run` or by a FiberJob's launcher pod reports its exit status even
// when it ends before fiber::init (its --help, a bad argument): its master registers the report
// as the program loads. Only the first report is written.
[[maybe_unused]] const bool g_reports_from_the_start = [] {
  const char* file = std::getenv(kExitStatusFileVariable);
  if (!file || !*file || !is_program_master(process_environment())) return false;
  ::on_exit([](int status, void*) { report_exit_status(status); }, nullptr);
  return true;
}();

void shutdown_at_exit(int status, void*) {
  g_exit_status.store(status);
  // A FiberJob's launcher pod or `fibermpi run`: the exit status they give is this one (Open
  // MPI 4.1's mpirun with recovery on would say 0).
  report_exit_status(status);
  if (g_runtime) g_runtime->shutdown();
}

// A program that initialised MPI itself finalises it at the end of main(), before the exit
// handlers: fibermpi ends first (its threads stop calling MPI), from inside MPI_Finalize.
void shutdown_at_program_finalize() {
  if (g_runtime) g_runtime->shutdown();
}

// Open MPI's MPI_Finalize is a fence over the whole job, and after a process of it was killed
// that fence sometimes never completes (4.1 with the static world; 5.0 too, ompi#11404). When a
// process was lost, the exit is made not to depend on it: after a grace period the process
// leaves with the status it was exiting with.
void exit_if_finalize_hangs(std::chrono::seconds limit, int status, bool worker_lost,
                            int hold_while) {
  std::thread([limit, status, worker_lost, hold_while] {
    while (process_present(hold_while)) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::this_thread::sleep_for(limit);
    FIBER_LOG_WARNING("MPI_Finalize has not returned after %d s (%s); exiting without it",
                      static_cast<int>(limit.count()),
                      worker_lost ? "a process of this run was killed earlier"
                                  : "its fence waits for a process that will not join it");
    std::fflush(nullptr);
    std::_Exit(status);
  }).detach();
}

// Where this MPI needs a launcher even for one process (launch_environment.h says why): runs
// the program again under it, passes on its exit status, and never returns.
[[noreturn]] void run_under_own_launcher(const std::vector<std::string>& launcher, int argc,
                                         char** argv) {
  std::vector<std::string> words = launcher;
  words.push_back(detail::ModuleTable::program_path());
  for (int i = 1; i < argc; ++i) words.emplace_back(argv[i]);
  // Its own report, where `fibermpi run` or a launcher pod waits for one, is the program's.
  const char* outer = std::getenv(kExitStatusFileVariable);
  const std::string outer_report = outer ? outer : "";
  ::setenv("FIBER_UNDER_OWN_LAUNCHER", "1", 1);
  const int status = run_reporting_exit_status(words, bridge::temporary_directory(), "the program");
  if (!outer_report.empty()) {
    ::setenv(kExitStatusFileVariable, outer_report.c_str(), 1);
    report_exit_status(status);
  }
  std::fflush(nullptr);
  std::_Exit(status);
}

// A job started to join a running master: --fiber-connect <address> works like FIBER_CONNECT.
void take_connect_option(int& argc, char**& argv) {
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
    return;
  }
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

void Runtime::start(int& argc, char**& argv, const Config& config) {
  if (g_runtime) throw UsageError("fiber::init was called twice");
  // A child of a spawner whose MPI cannot pass it an environment (MPICH) finds it on its command
  // line; the settings below read it.
  take_environment_arguments(argc, argv);
  auto* runtime = new Runtime();
  try {
    runtime->settings_ = Settings::from(config);
    LogLevel level = LogLevel::kWarning;
    parse_log_level(runtime->settings_.log_level, &level);
    configure_log(level, runtime->settings_.log_dir);
  } catch (...) {
    delete runtime;
    throw;
  }
  g_runtime = runtime;
  g_runtime->begin(argc, argv, config);
}

void Runtime::begin(int& argc, char**& argv, const Config&) {
  if (const std::string hooks = active_fault_hooks(); !hooks.empty())
    FIBER_LOG_WARNING("fault injection is on (for tests): %s", hooks.c_str());
  take_connect_option(argc, argv);
  // Read before anything starts, so that a bad token file is the first error.
  join_token_ = JoinToken::from_environment();
  const auto pod = KubernetesPod::from_environment();
  if (!pod && !bridge::Environment::connect_address().empty()) {
    if (const std::string why = bridge::Environment::joining_limitation(); !why.empty())
      throw UsageError("FIBER_CONNECT: " + why);
  }
  if (pod) prepare_pod_process(*pod, argc, argv);
  // Open MPI's TCP transport writes to sockets of peers that may have died; the default SIGPIPE
  // would kill this process with them. Ignored unless the program installed its own handler.
  struct sigaction pipe_action {};
  if (::sigaction(SIGPIPE, nullptr, &pipe_action) == 0 && pipe_action.sa_handler == SIG_DFL)
    ::signal(SIGPIPE, SIG_IGN);
  // MPICH's process manager tells every process of a job that one of them ended without
  // MPI_Finalize (a killed worker) with SIGUSR1. MPICH takes it with a handler of its own while
  // MPI runs, and puts back the one it found when MPI_Finalize begins: not the default, which
  // would end a process that is finalising.
  struct sigaction usr1_action {};
  if (bridge::built_against_mpi() == MpiFamily::kMpich &&
      ::sigaction(SIGUSR1, nullptr, &usr1_action) == 0 && usr1_action.sa_handler == SIG_DFL)
    ::signal(SIGUSR1, SIG_IGN);
  if (std::getenv("FIBER_WORKER")) leave_if_start_up_stalls();
  if (const auto launcher = bridge::own_launcher_command();
      !launcher.empty() && !pod && !started_by_launcher() &&
      !bridge::Environment::is_initialized() && !std::getenv("FIBER_UNDER_OWN_LAUNCHER")) {
    run_under_own_launcher(launcher, argc, argv);
  }
  bridge::Environment::initialize(&argc, &argv);
  if (pod && pod->role == KubernetesPod::Role::kWorker)
    find_launcher(*pod, settings_.pod_start_timeout);
  if (settings_.spawn.executable.empty())
    settings_.spawn.executable = detail::ModuleTable::program_path();
  settings_.spawn.env.emplace_back("FIBER_WORKER", "1");
  for (int i = 1; i < argc; ++i) settings_.spawn.args.emplace_back(argv[i]);

  LaunchPart part = choose_part(pod ? &*pod : nullptr);
  if (part.master)
    start_master(std::move(part.link), pod ? &*pod : nullptr);
  else
    start_worker(std::move(part.link), part.spawned, part.joined);
}

Runtime::LaunchPart Runtime::choose_part(const KubernetesPod* pod) {
  LaunchPart part;
  part.link = std::make_unique<Link>();
  Link& link = *part.link;
  switch (bridge::Environment::launch_mode()) {
    case bridge::LaunchMode::kSpawned:
      part.master = false;
      part.spawned = true;
      // The parent intercommunicator is MPI's own handle: used, never freed.
      link.comm = bridge::Communicator::borrow(bridge::Environment::parent());
      return part;
    case bridge::LaunchMode::kConnected:
      // Every rank of this job is a worker of the master it joins.
      part.master = false;
      part.joined = true;
      link.comm = pod ? connect_to_launcher(*pod, settings_.pod_start_timeout, join_token_)
                      : join_master(bridge::Environment::connect_address(), join_token_,
                                    settings_.pod_start_timeout);
      link.connected = true;
      return part;
    case bridge::LaunchMode::kStaticWorld:
      if (bridge::Environment::world_size() == 1) break;
      link.comm = bridge::Communicator::duplicate(MPI_COMM_WORLD);
      part.master = bridge::Environment::world_rank() == 0;
      if (part.master) {
        link.live_slots = bridge::Environment::world_size() - 1;
        link.expected_hellos = link.live_slots;
        link.created = Clock::now();
        link.last_heard = link.created;
      }
      return part;
    default:
      break;
  }
  // A master alone: no link until it spawns or is joined.
  part.link.reset();
  return part;
}

void Runtime::start_master(std::unique_ptr<Link> link, const KubernetesPod* pod) {
  set_log_role("master");
  FIBER_LOG_DEBUG("master started (%s)", link ? "with a static world of ranks" : "alone");
  // Processes spawned on this host write where the master does. Only in a singleton, whose
  // spawned processes' output Open MPI 5 loses: under a launcher, mpirun forwards it, and a
  // child holding rank 0's pipe would outlive what mpirun watches (a FiberJob's launcher spawns
  // none).
  if (!pod && bridge::Environment::launch_mode() == bridge::LaunchMode::kSingleton) {
    try {
      shared_output_ = std::make_unique<SharedOutput>();
      settings_.spawn.env.emplace_back(kSharedOutputVariable, shared_output_->address());
    } catch (const std::exception& e) {
      FIBER_LOG_DEBUG("spawned processes' output goes through MPI's runtime: %s", e.what());
    }
  }
  engine_ = std::make_unique<ProgressEngine>(settings_, settings_.liveness_interval,
                                             settings_.liveness_interval);
  master_ = std::make_unique<Master>(settings_, *engine_, std::move(link));
  if (bridge::Environment::recovery_disabled_under_launcher() && !std::getenv("FIBER_QUIET")) {
    if (std::getenv("SLURM_STEP_ID") && !std::getenv("OMPI_COMM_WORLD_SIZE")) {
      // Slurm's srun started the ranks itself: no Open MPI runtime runs beside them.
      FIBER_LOG_WARNING(
          "started by srun, which gives MPI neither recovery nor "
          "MPI_Comm_spawn: pools run on the step's ranks alone and a rank that dies "
          "ends the step (`fibermpi run PROGRAM` inside the allocation has both; "
          "FIBER_QUIET=1 hides this)");
    } else {
      const char* option = bridge::recovery_option();
      FIBER_LOG_WARNING(
          "started by mpirun without %s: a child process that is killed will "
          "abort the whole job (add %s, or set FIBER_QUIET=1 to hide this)",
          option, option);
    }
  }
  master_->start();
  g_running.store(true, std::memory_order_release);
  engine_->start(*master_);
  // The launcher of a FiberJob: worker pods join through the rendezvous it publishes, and its
  // pools ask the job for them.
  if (pod) join_turns_ = serve_worker_pods(*pod, *master_, join_token_);
  ::on_exit(shutdown_at_exit, nullptr);
  if (!bridge::Environment::owns_mpi())
    bridge::Environment::call_at_finalize(shutdown_at_program_finalize);
}

void Runtime::start_worker(std::unique_ptr<Link> link, bool spawned, bool joined) {
  // Before anything is written: the master's stdout and stderr, where it shares them.
  if (const char* output = std::getenv(kSharedOutputVariable); spawned && output)
    adopt_shared_output(output);
  set_log_role(spawned || joined ? "worker"
                                 : "rank" + std::to_string(bridge::Environment::world_rank()));
  FIBER_LOG_DEBUG("worker started (%s)", spawned  ? "spawned by the master"
                                         : joined ? "joined the master's rendezvous"
                                                  : "a rank of the static world");
  self_name_ = "Worker";
  engine_ = std::make_unique<ProgressEngine>(settings_, settings_.master_check_interval,
                                             std::chrono::milliseconds(100));
  Link& to_master = *link;
  engine_->add_link(std::move(link));
  worker_ = std::make_unique<MasterLink>(settings_, *engine_, to_master, 0, spawned, joined);
  nested_ = std::make_unique<NestedClient>(*engine_, *worker_);
  queue_stub_ = std::make_unique<QueueStub>(*worker_);
  manager_stub_ = std::make_unique<ManagerStub>(*worker_);
  pool_inbox_ = std::make_unique<PoolInbox>(*worker_);
  group_inbox_ = std::make_unique<GroupInbox>(*worker_);
  g_running.store(true, std::memory_order_release);
  engine_->start(*worker_);
  run_worker(*this);
}

std::string Runtime::listen() {
  Master& master = this->master("only the master process can open a rendezvous (fiber::listen)");
  if (const std::string why = bridge::Environment::joining_limitation(); !why.empty())
    throw UsageError("fiber::listen: " + why);
  if (!join_token_) {
    const std::string port = master.listen();
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) warn_join_without_token("this master", port);
    return port;
  }
  std::lock_guard held(listen_mutex_);
  if (published_join_address_.empty()) {
    // Guarded turns on every address of this machine, named by its host name; a FiberJob's
    // launcher has them already, on its pod's address.
    if (!join_turns_) join_turns_ = serve_join_turns(master, "", join_token_);
    const std::string host = split_join_turn_address(join_turns_->address()).first;
    const bool everywhere = host == "::" || host == "0.0.0.0";
    published_join_address_ = join_uri(
        everywhere ? join_turn_address(bridge::Environment::hostname(), join_turns_->port())
                   : join_turns_->address());
  }
  return published_join_address_;
}

Master& Runtime::master(const char* misuse) {
  if (!master_) throw UsageError(misuse);
  return *master_;
}

MasterLink& Runtime::worker() {
  if (!worker_) throw UsageError("this process is the master, not a worker");
  return *worker_;
}

QueueAccess& Runtime::queues() {
  if (master_) return master_->queues();
  return *queue_stub_;
}

ManagerAccess& Runtime::manager() {
  if (master_) return master_->manager();
  return *manager_stub_;
}

ProcessControl& Runtime::processes() {
  if (master_) return *master_;
  return *nested_;
}

std::shared_ptr<PoolClient> Runtime::make_pool(PoolSettings settings) {
  if (master_) {
    return std::make_shared<LocalPool>(*master_, *engine_,
                                       master_->create_pool(std::move(settings)));
  }
  return nested_->make_pool(std::move(settings));
}

void Runtime::end_children() {
  if (!nested_) return;
  try {
    nested_->end_children();
  } catch (const std::exception& e) {
    FIBER_LOG_WARNING("ending the children of %s: %s", self_name().c_str(), e.what());
  }
}

std::shared_ptr<GroupClient> Runtime::make_group(GroupSettings settings) {
  if (master_) {
    return std::make_shared<LocalGroup>(*master_, *engine_,
                                        master_->create_group(std::move(settings)));
  }
  return nested_->make_group(std::move(settings));
}

uint64_t Runtime::self_id() {
  auto held = lock();
  return self_id_;
}

std::string Runtime::self_name() {
  auto held = lock();
  return self_name_;
}

void Runtime::set_current(uint64_t id, const std::string& name) {
  auto held = lock();
  self_id_ = id;
  if (!name.empty()) self_name_ = name;
}

void Runtime::shutdown() {
  if (!master_) return;
  bool first = false;
  {
    auto held = lock();
    // A second call finalises only what shutdown_before_exit() left for the exit.
    if (shut_down_ && !finalize_pending_) return;
    first = !shut_down_;
    shut_down_ = true;
    finalize_pending_ = false;
  }
  if (first) {
    const bool master_quiet = master_->shutdown();
    pending_quiet_ = engine_->stop(settings_.worker_drain_limit) && master_quiet;
    g_running.store(false, std::memory_order_release);
  }
  finalize(pending_quiet_, master_->worker_lost(), g_exit_status.load());
}

void Runtime::shutdown_before_exit() {
  if (!master_) return;
  {
    auto held = lock();
    if (shut_down_) return;
    shut_down_ = true;
    finalize_pending_ = true;
  }
  const bool master_quiet = master_->shutdown();
  pending_quiet_ = engine_->stop(settings_.worker_drain_limit) && master_quiet;
  g_running.store(false, std::memory_order_release);
}

void Runtime::finish_worker(int code, bool with_the_job) {
  engine_->drain(settings_.worker_drain_limit);
  // Fault injection (tests): the process lingers after its last message, its progress thread
  // still running, the way a slow exit does.
  if (const auto linger = linger_after_last_message(); linger.count() > 0)
    std::this_thread::sleep_for(linger);
  const bool quiet = engine_->stop(settings_.worker_drain_limit);
  g_running.store(false, std::memory_order_release);
  // A worker leaving alone would wait in Open MPI 5's finalize (with fault tolerance, an agreement
  // over every live process of its MPI job) until its siblings in the reserve leave too, or
  // until the watchdog below: it leaves without it, as it would after the watchdog.
  const bool alone = !with_the_job && worker_->spawned() && bridge::finalize_waits_for_the_job();
  // A worker cannot know whether another process of the universe was killed; it must not hang
  // in a finalize that will never complete (mpirun would wait for it forever).
  // The finalize of a spawned worker that leaves before the run ends is a fence over its spawn
  // batch: it waits for the siblings still serving (in the reserve, or running a process), which
  // leave when their master tells them, at the latest when the run ends. Until the master is
  // gone, a long wait is no sign of a hang; leaving without finalising made mpirun (without
  // recovery) fail the whole run ("exiting improperly"), once the program ran on for 10 s.
  const int hold_while = with_the_job || !worker_->spawned() ? 0 : worker_->local_master_pid();
  if (!alone) finalize(quiet, true, code, hold_while);
  // Like a multiprocessing child: flush what the task printed, skip the program's destructors.
  std::fflush(nullptr);
  bridge::Environment::leave(code);
}

void Runtime::finalize(bool mpi_quiet, bool worker_lost, int status, int hold_while) {
  if (!mpi_quiet) {
    // A thread is still inside MPI (a spawn that never returned, an accept that cannot be
    // cancelled, a poll stuck in MPI): finalising now could crash or hang; the process exit
    // ends MPI instead.
    return;
  }
  engine_->clear_links();
  // A lost worker can leave the finalize fence waiting for good; so, rarely and under load, can
  // an Open MPI 5 master whose static ranks all left (process_test.mpirun4 hung there, all its
  // tests passed): the master's program has ended, it must not hang its launcher.
  if (status >= 0 && (worker_lost || master_)) {
    exit_if_finalize_hangs(settings_.finalize_watchdog, status, worker_lost, hold_while);
  }
  // A worker's program never gets past fiber::init: it finalises MPI whoever initialised it.
  bridge::Environment::finalize(/*always=*/worker_ != nullptr);
}

}  // namespace fiber::internal

namespace fiber {

void init(int& argc, char**& argv, Config config) { internal::Runtime::start(argc, argv, config); }

bool is_initialized() { return internal::Runtime::exists(); }

std::string listen() { return internal::Runtime::instance().listen(); }

void shutdown() {
  if (internal::Runtime::exists()) internal::Runtime::instance().shutdown();
}

void set_executable(const std::string& path) {
  internal::Runtime::instance()
      .master("fiber::set_executable can only be called in the master process")
      .set_executable(path);
}

}  // namespace fiber
