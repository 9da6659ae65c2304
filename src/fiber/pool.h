// fiber::Pool: a pool of worker processes, like multiprocessing.Pool.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <ranges>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "fiber/async_result.h"
#include "fiber/detail/job.h"
#include "fiber/detail/task_chunk.h"
#include "fiber/invoke.h"

namespace fiber {

namespace detail {
class PoolClient;
struct PoolSettings;
}  // namespace detail

/// A function and its arguments that every pool worker runs once when it starts (Python's
/// initializer + initargs). Make one with fiber::initializer(fn, args...).
class Initializer {
 public:
  template <class Fn, class... Args>
  explicit Initializer(Fn&& fn, Args&&... args)
      : task_(detail::make_task(std::forward<Fn>(fn), std::forward<Args>(args)...)) {}

 private:
  friend class Pool;
  detail::TaskSpec task_;
};

/// Builds the Initializer `fn(args...)`.
template <class Fn, class... Args>
Initializer initializer(Fn&& fn, Args&&... args) {
  return Initializer(std::forward<Fn>(fn), std::forward<Args>(args)...);
}

/// Usable physical cores of this machine (hwloc): those the process's cgroup allows (a
/// container's, a Slurm job's), whatever the process itself is bound to. The default Pool size.
int usable_physical_cores();

/// The size of a Pool asked for 0 processes: for ranks that mpirun or srun started inside a Slurm
/// allocation, its task count (SLURM_NTASKS) less one for the master, at least 1; for a program
/// started without a launcher inside an allocation, usable_physical_cores() but no more than the
/// CPUs Slurm gave it on this node (SLURM_CPUS_ON_NODE); elsewhere usable_physical_cores().
int default_pool_size();

/// A pool of worker processes that run functions on inputs, like Python's multiprocessing.Pool.
/// Under mpirun the idle ranks of the static world become its first workers, the rest are
/// spawned. Functions travel by reference (free functions, captureless lambdas, stateless
/// function objects); arguments and results are serialized.
///
/// Tasks go straight to the workers, several in flight per worker; a task that throws makes its
/// result throw fiber::RemoteError (type name and message) and the worker goes on. A worker that
/// dies has its tasks run again elsewhere (at most Options::max_task_retries times, then
/// fiber::WorkerLost) and is replaced. The destructor closes the pool and waits for every
/// submitted task (Python's close() + join()); call terminate() to stop at once instead.
class Pool {
 public:
  struct Options {
    /// Worker processes; 0 means default_pool_size().
    int processes = 0;
    /// Run once in every worker before its first task.
    std::optional<Initializer> initializer;
    /// A worker is replaced by a fresh process after this many tasks (chunks); 0 = never.
    uint64_t maxtasksperchild = 0;
    /// Most chunks a worker holds at once (the running one and those queued behind it). Within
    /// this cap the pool queues about 2 ms of measured work per worker: many tiny tasks in flight
    /// hide the round trip, while long tasks go one at a time so none waits behind another. A
    /// worker queueing four or more is topped up once a quarter of its queue has room, with
    /// several chunks in one message.
    int tasks_in_flight_per_worker = 16;
    /// Starting a process (replacing a lost worker, growing) and taking in a joining process (a
    /// worker pod's turn to connect, in a FiberJob) stop the master's traffic for a while: Open
    /// MPI 4.1's MPI_Comm_spawn and MPI_Comm_accept cannot run beside other MPI calls. Just
    /// before such a pause every worker is given enough queued work to stay busy through it (the
    /// measured length of earlier pauses of that kind, at most 1 s of work), beyond
    /// tasks_in_flight_per_worker.
    /// Off: the cap holds strictly, and workers idle during the pause.
    bool cover_spawn_pauses = true;
    /// A task whose worker dies is run again at most this many times, then fails with WorkerLost.
    int max_task_retries = 3;
    /// Optional autoscaling: the pool starts with `processes` workers (clamped into [min, max]),
    /// starts more while tasks wait for a worker, up to max, and retires workers that have been
    /// idle for idle_timeout, down to min.
    struct Autoscale {
      int min = 1;
      int max = 0;
      std::chrono::milliseconds idle_timeout{10000};
    };
    std::optional<Autoscale> autoscale;
    /// Grow by one worker for every worker of a job that joins through fiber::listen() (and
    /// shrink back when that job leaves or dies).
    bool take_joined_workers = true;
    /// What each worker needs, like Fiber's @meta(cpu, memory, gpu); 0 asks for nothing in
    /// particular. Where the program runs decides what they do:
    /// - in a Slurm allocation a worker must fit on one node, and all of them (every size the
    ///   pool may reach) in the allocation;
    /// - in a FiberJob each worker must fit its share of a worker pod: the worker template's
    ///   limits (else requests), divided among the pod's slotsPerWorker slots;
    /// - elsewhere memory and GPUs must fit one worker; CPUs are not limited: each spawned worker
    ///   on the master's host is bound to cpus_per_worker cores (Config::bind "core"), and runs
    ///   unbound once too few are free (oversubscription stays allowed).
    /// Each worker on the master's machine is given gpus_per_worker of the GPUs the master may
    /// use as its CUDA_VISIBLE_DEVICES (its own while enough are free, then the least shared),
    /// set before the pool's code runs in it.
    /// A request that cannot fit throws fiber::UsageError naming what was asked and what there
    /// is, before any worker starts.
    int cpus_per_worker = 0;
    uint64_t memory_per_worker = 0;  ///< Bytes.
    int gpus_per_worker = 0;
    /// A progress line on the terminal for each map of several tasks: tasks done of the total,
    /// the rate, the time left, the workers alive; redrawn in place and ended by a summary.
    /// FIBER_PROGRESS=1 turns it on for every pool. Shows nothing where stderr is no terminal
    /// (a file, a pipe, the ranks' output under mpirun, which forwards it through pipes): a
    /// warning says so once.
    bool progress = false;
  };

  /// `processes` workers (0: default_pool_size()).
  explicit Pool(int processes = 0);
  Pool(int processes, Initializer init, uint64_t maxtasksperchild = 0);
  explicit Pool(Options options);
  Pool(Pool&&) noexcept = default;
  Pool& operator=(Pool&& other) noexcept;
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool();

  /// Number of worker processes.
  int size() const;
  /// Waits until every worker is ready to take tasks (started and initialised). Where no more
  /// processes can start (a spawn stuck in the MPI runtime, logged as an error), it returns once
  /// no worker is still starting, and the pool runs with the ready workers it has; throws Error
  /// when it has none.
  void wait_ready();
  /// Grows or shrinks the running pool to `processes` workers. Growing starts workers (static
  /// ranks first); shrinking retires workers still starting, then idle ones, then the least
  /// loaded, each after it has finished what it holds (exit code 0). Nothing is lost.
  void resize(int processes);
  /// OS pids of the workers that are ready and count towards the size.
  std::vector<int> worker_pids() const;

  /// fn(x) for every x, in order (Python's map). `chunksize` inputs travel per task; 0 picks
  /// len / (4 * size), rounded up, like Python.
  template <class Fn, std::ranges::forward_range Inputs>
  auto map(Fn&& fn, const Inputs& inputs, size_t chunksize = 0) {
    return map_async(std::forward<Fn>(fn), inputs, chunksize).get();
  }
  template <class Fn, std::ranges::forward_range Inputs>
  auto map_async(Fn&& fn, const Inputs& inputs, size_t chunksize = 0) {
    using Spec = MapSpec<std::decay_t<Fn>, std::ranges::range_value_t<Inputs>, false>;
    return collect<Spec>(submit<Spec>(fn, inputs, default_chunksize(inputs, chunksize)));
  }
  /// fn(args...) for every tuple of arguments, in order (Python's starmap).
  template <class Fn, std::ranges::forward_range Inputs>
  auto starmap(Fn&& fn, const Inputs& inputs, size_t chunksize = 0) {
    return starmap_async(std::forward<Fn>(fn), inputs, chunksize).get();
  }
  template <class Fn, std::ranges::forward_range Inputs>
  auto starmap_async(Fn&& fn, const Inputs& inputs, size_t chunksize = 0) {
    using Spec = MapSpec<std::decay_t<Fn>, std::ranges::range_value_t<Inputs>, true>;
    return collect<Spec>(submit<Spec>(fn, inputs, default_chunksize(inputs, chunksize)));
  }
  /// Results of fn(x) in input order, each available as soon as it and those before it are done.
  /// `chunksize` defaults to 1, like Python's.
  template <class Fn, std::ranges::forward_range Inputs>
  auto imap(Fn&& fn, const Inputs& inputs, size_t chunksize = 1) {
    using Spec = MapSpec<std::decay_t<Fn>, std::ranges::range_value_t<Inputs>, false>;
    return stream<Spec>(submit<Spec>(fn, inputs, chunksize), true);
  }
  /// Results of fn(x) in the order they complete.
  template <class Fn, std::ranges::forward_range Inputs>
  auto imap_unordered(Fn&& fn, const Inputs& inputs, size_t chunksize = 1) {
    using Spec = MapSpec<std::decay_t<Fn>, std::ranges::range_value_t<Inputs>, false>;
    return stream<Spec>(submit<Spec>(fn, inputs, chunksize), false);
  }
  /// fn(args...) in a worker; waits for the result (Python's apply).
  template <class Fn, class... Args>
  auto apply(Fn&& fn, Args&&... args) {
    return apply_async(std::forward<Fn>(fn), std::forward<Args>(args)...).get();
  }
  /// fn(args...) in a worker; returns at once.
  template <class Fn, class... Args>
  auto apply_async(Fn&& fn, Args&&... args) {
    using F = std::decay_t<Fn>;
    using ArgsTuple = typename detail::ArgumentsOf<F, Args...>::type;
    static_assert(std::tuple_size_v<ArgsTuple> == sizeof...(Args),
                  "fibermpi: wrong number of arguments for this function");
    static_assert(std::is_constructible_v<ArgsTuple, Args&&...>,
                  "fibermpi: the arguments do not convert to the function's parameter types");
    using R = typename detail::ResultOf<Invocable<F>, ArgsTuple>::type;
    check_result<R>();
    serial::require_serializable<ArgsTuple>();
    auto job = std::make_shared<detail::Job>();
    job->chunk_sizes = {1};
    auto encoder = chunk_encoder<F, ArgsTuple>(fn);
    serial::save(encoder.add_item(), ArgsTuple(std::forward<Args>(args)...));
    std::vector<detail::Bytes> chunks;
    chunks.push_back(encoder.take());
    submit_job(job, std::move(chunks));
    return AsyncResult<R>(job, [](const detail::Job& done) {
      std::vector<detail::ValueOf<R>> values;
      detail::decode_chunk<R>(*done.chunks[0], 1, values);
      return std::move(values[0]);
    });
  }

  /// No more submissions; the workers leave once every submitted task is done.
  void close();
  /// Waits until every worker has left; call close() or terminate() first.
  void join();
  /// Stops now: outstanding results fail with fiber::TerminatedError, workers running a task are
  /// killed (SIGTERM), idle ones leave.
  void terminate();

 private:
  template <class F>
  using Invocable = std::conditional_t<detail::FunctionPointer<F>, F, F&>;

  /// The argument tuple, result type and conversion of one input for map (Star = false: the
  /// input is the single argument) or starmap (Star = true: the input is a tuple of arguments).
  template <class F, class Item, bool Star>
  struct MapSpec;
  template <class F, class Item>
  struct MapSpec<F, Item, false> {
    using Function = F;
    using ArgsTuple = typename detail::ArgumentsOf<F, Item>::type;
    static_assert(std::tuple_size_v<ArgsTuple> == 1,
                  "fibermpi: map/imap call a function of exactly one argument; use starmap for "
                  "functions of several");
    static_assert(std::is_constructible_v<ArgsTuple, const Item&>,
                  "fibermpi: the inputs do not convert to the function's parameter type");
    using Result = typename detail::ResultOf<Invocable<F>, ArgsTuple>::type;
    static ArgsTuple arguments(const Item& item) { return ArgsTuple(item); }
  };
  template <class F, class Item>
  struct MapSpec<F, Item, true> {
    using Function = F;
    template <class... E>
    static typename detail::ArgumentsOf<F, E...>::type arguments_of(std::tuple<E...>*);
    template <class A, class B>
    static typename detail::ArgumentsOf<F, A, B>::type arguments_of(std::pair<A, B>*);
    using ArgsTuple = decltype(arguments_of(static_cast<Item*>(nullptr)));
    static_assert(std::tuple_size_v<ArgsTuple> == std::tuple_size_v<Item>,
                  "fibermpi: starmap: each input tuple must hold exactly as many values as the "
                  "function has parameters");
    using Result = typename detail::ResultOf<Invocable<F>, ArgsTuple>::type;
    static ArgsTuple arguments(const Item& item) {
      return std::apply([](const auto&... values) { return ArgsTuple(values...); }, item);
    }
  };

  template <class R>
  static constexpr void check_result() {
    if constexpr (!std::is_void_v<R>) {
      static_assert(!std::is_reference_v<R>,
                    "fibermpi: a pool task cannot return a reference; return a value");
      serial::require_serializable<R>();
    }
  }

  template <class F, class ArgsTuple>
  static detail::ChunkEncoder chunk_encoder(const F& fn) {
    const auto [invoker, function] = detail::encode_callable<F, ArgsTuple>(fn);
    return detail::ChunkEncoder(invoker, function);
  }

  template <class Inputs>
  size_t default_chunksize(const Inputs& inputs, size_t chunksize) const {
    if (chunksize > 0) return chunksize;
    const auto count = static_cast<size_t>(std::ranges::distance(inputs));
    const size_t per = 4 * static_cast<size_t>(std::max(1, size()));
    return std::max<size_t>(1, count / per + (count % per != 0 ? 1 : 0));
  }

  /// Encodes the inputs into chunks of `chunksize` and queues them.
  template <class Spec, class Inputs>
  std::shared_ptr<detail::Job> submit(const typename Spec::Function& fn, const Inputs& inputs,
                                      size_t chunksize) {
    using ArgsTuple = typename Spec::ArgsTuple;
    check_result<typename Spec::Result>();
    serial::require_serializable<ArgsTuple>();
    if (chunksize == 0) chunksize = 1;
    auto encoder = chunk_encoder<typename Spec::Function, ArgsTuple>(fn);
    auto job = std::make_shared<detail::Job>();
    std::vector<detail::Bytes> chunks;
    auto finish_chunk = [&] {
      job->chunk_sizes.push_back(encoder.items());
      chunks.push_back(encoder.take());
    };
    for (const auto& item : inputs) {
      serial::save(encoder.add_item(), Spec::arguments(item));
      if (encoder.items() == chunksize) finish_chunk();
    }
    if (encoder.items() > 0) finish_chunk();
    submit_job(job, std::move(chunks));
    return job;
  }

  template <class Spec>
  static AsyncResult<std::vector<detail::ValueOf<typename Spec::Result>>> collect(
      std::shared_ptr<detail::Job> job) {
    using R = typename Spec::Result;
    using Values = std::vector<detail::ValueOf<R>>;
    return AsyncResult<Values>(std::move(job), [](const detail::Job& done) {
      Values values;
      size_t total = 0;
      for (const uint32_t size : done.chunk_sizes) total += size;
      values.reserve(total);
      for (size_t i = 0; i < done.chunks.size(); ++i)
        detail::decode_chunk<R>(*done.chunks[i], done.chunk_sizes[i], values);
      return values;
    });
  }

  template <class Spec>
  static ResultStream<typename Spec::Result> stream(std::shared_ptr<detail::Job> job,
                                                    bool ordered) {
    size_t total = 0;
    for (const uint32_t size : job->chunk_sizes) total += size;
    return ResultStream<typename Spec::Result>(std::move(job), ordered, total);
  }

  /// What each worker asked for (Options::cpus_per_worker, ...), checked again on resize().
  struct Share {
    int cpus = 0;
    uint64_t memory = 0;
    int gpus = 0;
  };

  /// Throws UsageError when `processes` workers of this share cannot fit where the program runs.
  static void check_share(const Share& share, int processes);
  static detail::PoolSettings settings_from(Options options);
  void submit_job(const std::shared_ptr<detail::Job>& job, std::vector<detail::Bytes> chunks);
  /// Options::progress: a display of `job` that its chunks' arrivals move on.
  void show_progress(const std::shared_ptr<detail::Job>& job, size_t total);
  void release();

  Share share_;
  bool progress_ = false;
  std::shared_ptr<detail::PoolClient> client_;
};

}  // namespace fiber
