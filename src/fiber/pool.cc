#include "fiber/pool.h"

#include <hwloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "fiber/base/launch_site.h"
#include "fiber/base/log.h"
#include "fiber/base/progress_display.h"
#include "fiber/base/worker_resources.h"
#include "fiber/errors.h"
#include "fiber/pool/pool_client.h"
#include "fiber/pool/pool_settings.h"
#include "fiber/runtime/runtime.h"

namespace fiber {
namespace detail {

bool wait_for_job(const std::function<bool()>& done,
                  std::optional<SteadyClock::time_point> deadline) {
  return internal::Runtime::instance().engine().wait_until(done, deadline);
}

void when_ready(const std::shared_ptr<Job>& job, std::function<void()> callback) {
  {
    auto lock = internal::Runtime::instance().lock();
    job->on_ready.push_back(std::move(callback));
    // Already ready: on the pool's callback thread all the same, never on the caller's (a Python
    // apply_async would otherwise wait for its own callback to return).
    if (!job->ready() || (job->run_ready_callbacks && job->run_ready_callbacks(*job))) return;
    callback = std::move(job->on_ready.back());
    job->on_ready.pop_back();
  }
  // The pool is gone and its callback thread with it: nowhere else to run it.
  callback();
}

void resume_stream(const std::shared_ptr<Job>& job) {
  auto& runtime = internal::Runtime::instance();
  auto lock = runtime.lock();
  if (!job->resume) return;
  // Taken out first: the pool may set it again while it reads more.
  auto resume = std::move(job->resume);
  job->resume = nullptr;
  resume();
  runtime.engine().notify_locked();
}

void throw_timeout(std::chrono::nanoseconds timeout) {
  throw TimeoutError("no result within " +
                     std::to_string(std::chrono::duration<double>(timeout).count()) + " s");
}

}  // namespace detail

int usable_physical_cores() {
  hwloc_topology_t topology = nullptr;
  int cores = 0;
  if (hwloc_topology_init(&topology) == 0) {
    // hwloc leaves out the CPUs this process's cgroup forbids (a container's, a Slurm job's);
    // the process's own binding is no limit for the workers it starts.
    if (hwloc_topology_load(topology) == 0) {
      cores = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_CORE);
    }
    hwloc_topology_destroy(topology);
  }
  if (cores <= 0) cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, cores);
}

void Pool::check_share(const Share& share, int processes) {
  if (share.cpus <= 0 && share.memory == 0 && share.gpus <= 0) return;
  // The machine is read only when the request concerns it.
  const internal::MachineFacts machine =
      share.memory > 0 || share.gpus > 0 ? internal::read_machine() : internal::MachineFacts{};
  internal::check_worker_request(
      {.processes = processes, .cpus = share.cpus, .memory = share.memory, .gpus = share.gpus},
      internal::process_environment(), machine);
}

int default_pool_size() {
  const internal::LaunchSite site = internal::detect_launch_site(internal::process_environment());
  if (site.slurm_job.empty()) return usable_physical_cores();
  // Ranks that mpirun or srun started inside a Slurm allocation: the allocation, not this node,
  // says how many processes may run (its tasks, spread over its nodes), less the master's own.
  if (site.world_size > 1 && site.slurm_tasks > 0) return std::max(1, site.slurm_tasks - 1);
  // The program itself, started without a launcher (sbatch -n 1 -c 32 ./prog): it spawns its
  // workers on this node, as many as the CPUs Slurm gave it here.
  const int cores = usable_physical_cores();
  return site.slurm_cpus_on_node > 0 ? std::max(1, std::min(cores, site.slurm_cpus_on_node))
                                     : cores;
}

internal::PoolSettings Pool::settings_from(Options options) {
  if (options.processes < 0)
    throw UsageError("Pool: processes must be at least 1 (or 0 for the default size), got " +
                     std::to_string(options.processes));
  if (options.tasks_in_flight_per_worker < 1)
    throw UsageError("Pool: tasks_in_flight_per_worker must be at least 1, got " +
                     std::to_string(options.tasks_in_flight_per_worker));
  if (options.max_task_retries < 0)
    throw UsageError("Pool: max_task_retries cannot be negative, got " +
                     std::to_string(options.max_task_retries));
  if (options.cpus_per_worker < 0 || options.gpus_per_worker < 0)
    throw UsageError("Pool: cpus_per_worker and gpus_per_worker cannot be negative, got " +
                     std::to_string(options.cpus_per_worker) + " and " +
                     std::to_string(options.gpus_per_worker));
  internal::PoolSettings settings;
  settings.processes = options.processes > 0 ? options.processes : default_pool_size();
  if (options.autoscale) {
    const auto& scale = *options.autoscale;
    if (scale.min < 0 || scale.max < 1 || scale.max < scale.min)
      throw UsageError("Pool: autoscale needs 0 <= min <= max and max >= 1, got min " +
                       std::to_string(scale.min) + ", max " + std::to_string(scale.max));
    if (scale.idle_timeout.count() <= 0)
      throw UsageError("Pool: autoscale idle_timeout must be positive");
    settings.min_processes = scale.min;
    settings.max_processes = scale.max;
    settings.idle_timeout = scale.idle_timeout;
    settings.processes = std::clamp(options.processes > 0 ? options.processes : scale.min,
                                    std::max(1, scale.min), scale.max);
  }
  if (options.initializer) settings.initializer = options.initializer->task_;
  settings.maxtasksperchild = options.maxtasksperchild;
  settings.tasks_in_flight_per_worker = options.tasks_in_flight_per_worker;
  settings.cover_spawn_pauses = options.cover_spawn_pauses;
  settings.max_task_retries = options.max_task_retries;
  settings.take_joined_workers = options.take_joined_workers;
  settings.fresh_processes = options.fresh_processes;
  settings.cpus_per_worker = options.cpus_per_worker;
  settings.memory_per_worker = options.memory_per_worker;
  settings.gpus_per_worker = options.gpus_per_worker;
  check_share({options.cpus_per_worker, options.memory_per_worker, options.gpus_per_worker},
              std::max(settings.processes, settings.max_processes));
  return settings;
}

namespace {
Pool::Options options_of(int processes, std::optional<Initializer> init,
                         uint64_t maxtasksperchild) {
  Pool::Options options;
  options.processes = processes;
  options.initializer = std::move(init);
  options.maxtasksperchild = maxtasksperchild;
  return options;
}
}  // namespace

Pool::Pool(int processes) : Pool(options_of(processes, std::nullopt, 0)) {}

Pool::Pool(int processes, Initializer init, uint64_t maxtasksperchild)
    : Pool(options_of(processes, std::move(init), maxtasksperchild)) {}

Pool::Pool(Options options)
    : share_{options.cpus_per_worker, options.memory_per_worker, options.gpus_per_worker},
      progress_(options.progress || internal::progress_asked_by_environment()),
      client_(internal::Runtime::instance().make_pool(settings_from(std::move(options)))) {}

Pool& Pool::operator=(Pool&& other) noexcept {
  if (this != &other) {
    release();
    share_ = other.share_;
    progress_ = other.progress_;
    client_ = std::move(other.client_);
  }
  return *this;
}

Pool::~Pool() { release(); }

void Pool::release() {
  if (!client_) return;
  try {
    close();
    join();
  } catch (const std::exception& e) {
    FIBER_LOG_WARNING("ending a Pool: %s", e.what());
  }
  try {
    if (internal::Runtime::exists()) client_->release();
  } catch (const std::exception& e) {
    FIBER_LOG_WARNING("ending a Pool: %s", e.what());
  }
  client_.reset();
}

namespace {
internal::PoolClient& require(const std::shared_ptr<internal::PoolClient>& client) {
  if (!client) throw UsageError("this Pool was moved from");
  return *client;
}
}  // namespace

int Pool::size() const {
  if (!client_) return 0;
  return client_->size();
}

void Pool::wait_ready() { require(client_).wait_ready(); }

void Pool::resize(int processes) {
  if (processes > 0) check_share(share_, processes);
  require(client_).resize(processes);
}

std::vector<int> Pool::worker_pids() const { return require(client_).worker_pids(); }

void Pool::submit_job(const std::shared_ptr<detail::Job>& job, std::optional<size_t> total) {
  internal::PoolClient& client = require(client_);
  if (progress_ && total && *total >= 2) show_progress(job, *total);
  client.submit(job);
}

void Pool::stop_inputs(const std::shared_ptr<detail::Job>& job) {
  if (!internal::Runtime::exists()) return;
  auto lock = internal::Runtime::instance().lock();
  job->end_inputs(nullptr);
}

void Pool::show_progress(const std::shared_ptr<detail::Job>& job, size_t total) {
  const std::weak_ptr<internal::PoolClient> pool = client_;
  auto display = internal::ProgressDisplay::start(
      total,
      [pool] {
        const auto client = pool.lock();
        return client ? static_cast<int>(client->worker_pids().size()) : -1;
      },
      STDERR_FILENO);
  if (!display) {
    static std::once_flag said;
    std::call_once(said, [] {
      FIBER_LOG_WARNING(
          "no progress display: stderr is not a terminal (under mpirun the ranks' output is "
          "forwarded through pipes; run the program without a launcher, or read the log)");
    });
    return;
  }
  // Counted as each chunk arrives (under the runtime's lock: an atomic add), ended with the job.
  detail::Job* const counted = job.get();
  job->on_chunk = [counted, display, previous = std::move(job->on_chunk)](uint32_t items) {
    if (previous) previous(items);
    display->add(items);
    if (counted->ready()) display->finish(counted->first_error != nullptr);
  };
}

void Pool::close() { require(client_).close(); }

void Pool::terminate() { require(client_).terminate(); }

void Pool::join() { require(client_).join(); }

}  // namespace fiber
