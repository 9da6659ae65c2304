// fiber::Pool: a pool of worker processes, like multiprocessing.Pool.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <ranges>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "fiber/async_result.h"
#include "fiber/detail/job.h"
#include "fiber/detail/task_chunk.h"
#include "fiber/errors.h"
#include "fiber/invoke.h"

namespace fiber {

namespace internal {
class PoolClient;
struct PoolSettings;
}  // namespace internal

namespace detail {

/// A range that never ends: its end cannot be reached (std::views::iota(0)), or it transforms or
/// filters one that never ends.
template <class R>
struct Unbounded
    : std::bool_constant<std::same_as<std::ranges::sentinel_t<R>, std::unreachable_sentinel_t>> {};
template <class V, class F>
struct Unbounded<std::ranges::transform_view<V, F>> : Unbounded<V> {};
template <class V, class P>
struct Unbounded<std::ranges::filter_view<V, P>> : Unbounded<V> {};
template <class R>
struct Unbounded<std::ranges::ref_view<R>> : Unbounded<std::remove_const_t<R>> {};
template <class R>
struct Unbounded<std::ranges::owning_view<R>> : Unbounded<R> {};
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
    /// hide the round trip. Long tasks, and tasks before the first result tells how long they
    /// run: one queued behind the running one while more wait than the pool has workers (the
    /// worker goes on without waiting a round trip), else one at a time, so that no task waits
    /// behind another while a worker is free or still starting. A worker
    /// queueing four or more is topped up once a quarter of its queue has room, with several
    /// chunks in one message.
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
    /// Each worker runs in a process that has run nothing before (a spawned one: never a rank
    /// of the static world, a joined pod or a process of the reserve that served already), and
    /// that process ends with it. With maxtasksperchild, every replacement then starts from a
    /// fresh process's state; each worker costs a spawn.
    bool fresh_processes = false;
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
  /// len / (4 * size), rounded up, like Python. The inputs are read in place as their tasks are
  /// sent (a backlog of encoded tasks would cost memory): keep them unchanged until map returns.
  template <class Fn, std::ranges::forward_range Inputs>
  auto map(Fn&& fn, const Inputs& inputs, size_t chunksize = 0) {
    using Spec = MapSpec<std::decay_t<Fn>, std::ranges::range_value_t<Inputs>, false>;
    return take_in_place(collect<Spec>(fn, std::ranges::ref_view(inputs), chunksize));
  }
  /// Like map, without waiting. The call keeps its own copy of an lvalue range (a temporary is
  /// moved in) and reads it as the tasks are sent; to have a range read in place instead, pass
  /// std::views::all(range) and keep the range alive and unchanged until the results are in.
  template <class Fn, class Inputs>
  requires std::ranges::forward_range<Inputs>
  auto map_async(Fn&& fn, Inputs&& inputs, size_t chunksize = 0) {
    using Spec = MapSpec<std::decay_t<Fn>, std::ranges::range_value_t<Inputs>, false>;
    return collect<Spec>(fn, std::remove_cvref_t<Inputs>(std::forward<Inputs>(inputs)), chunksize);
  }
  /// fn(args...) for every tuple of arguments, in order (Python's starmap).
  template <class Fn, std::ranges::forward_range Inputs>
  auto starmap(Fn&& fn, const Inputs& inputs, size_t chunksize = 0) {
    using Spec = MapSpec<std::decay_t<Fn>, std::ranges::range_value_t<Inputs>, true>;
    return take_in_place(collect<Spec>(fn, std::ranges::ref_view(inputs), chunksize));
  }
  /// Like starmap, without waiting; the inputs are kept as map_async keeps them.
  template <class Fn, class Inputs>
  requires std::ranges::forward_range<Inputs>
  auto starmap_async(Fn&& fn, Inputs&& inputs, size_t chunksize = 0) {
    using Spec = MapSpec<std::decay_t<Fn>, std::ranges::range_value_t<Inputs>, true>;
    return collect<Spec>(fn, std::remove_cvref_t<Inputs>(std::forward<Inputs>(inputs)), chunksize);
  }
  /// Results of fn(x) in input order, each available as soon as it and those before it are done.
  /// `chunksize` defaults to 1, like Python's. The inputs are kept as map_async keeps them, and
  /// read only so far ahead of the results taken (several thousand chunks, more for a large
  /// pool): an unbounded range (std::views::iota(0), or a transform or filter of one) works.
  /// Once the pool is closed, the rest of any other range is read to its end; an unbounded one
  /// stops there, and the stream throws UsageError after its last result.
  template <class Fn, class Inputs>
  requires std::ranges::forward_range<Inputs>
  auto imap(Fn&& fn, Inputs&& inputs, size_t chunksize = 1) {
    using Spec = MapSpec<std::decay_t<Fn>, std::ranges::range_value_t<Inputs>, false>;
    return stream<Spec>(fn, std::remove_cvref_t<Inputs>(std::forward<Inputs>(inputs)), chunksize,
                        true);
  }
  /// Results of fn(x) in the order they complete; the inputs are read as imap reads them.
  template <class Fn, class Inputs>
  requires std::ranges::forward_range<Inputs>
  auto imap_unordered(Fn&& fn, Inputs&& inputs, size_t chunksize = 1) {
    using Spec = MapSpec<std::decay_t<Fn>, std::ranges::range_value_t<Inputs>, false>;
    return stream<Spec>(fn, std::remove_cvref_t<Inputs>(std::forward<Inputs>(inputs)), chunksize,
                        false);
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
    auto sink = std::make_unique<detail::ApplySink<R>>();
    auto* value = sink.get();
    job->sink = std::move(sink);
    auto encoder = chunk_encoder<F, ArgsTuple>(fn);
    serial::save(encoder.add_item(), ArgsTuple(std::forward<Args>(args)...));
    std::vector<detail::Bytes> chunk;
    chunk.push_back(encoder.take());
    job->source =
        std::make_unique<detail::EncodedChunks>(std::move(chunk), std::vector<uint32_t>{1});
    submit_job(job, 1);
    return AsyncResult<R>(std::move(job), value);
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

  size_t default_chunksize(size_t count) const {
    const size_t per = 4 * static_cast<size_t>(std::max(1, size()));
    return std::max<size_t>(1, count / per + (count % per != 0 ? 1 : 0));
  }

  /// A map's inputs, encoded `chunksize` at a time as the pool sends them.
  template <class Spec, class Range>
  class InputChunks final : public detail::ChunkSource {
   public:
    InputChunks(Range range, detail::ChunkEncoder encoder, size_t chunksize,
                std::optional<size_t> total)
        : range_(std::move(range)), encoder_(std::move(encoder)), chunksize_(chunksize) {
      if (total) left_ = *total / chunksize + (*total % chunksize != 0 ? 1 : 0);
    }
    uint32_t next(detail::Bytes& out) override {
      // Begun at the first chunk, once the range has its final place here.
      if (!next_) next_.emplace(std::ranges::begin(range_));
      auto& input = *next_;
      const auto end = std::ranges::end(range_);
      while (encoder_.items() < chunksize_ && input != end) {
        serial::save(encoder_.add_item(), Spec::arguments(*input));
        ++input;
      }
      const uint32_t items = encoder_.items();
      if (items == 0) return 0;
      out = encoder_.take();
      if (left_ && *left_ > 0) --*left_;
      return items;
    }
    std::optional<size_t> chunks_left() const override { return left_; }
    bool unbounded() const override { return kUnbounded<Range>; }

   private:
    Range range_;
    detail::ChunkEncoder encoder_;
    const size_t chunksize_;
    std::optional<std::ranges::iterator_t<Range>> next_;
    std::optional<size_t> left_;
  };

  template <class Range>
  static constexpr bool kUnbounded = detail::Unbounded<Range>::value;

  /// A job that reads `range` as its chunks are sent.
  template <class Spec, class Range>
  static std::shared_ptr<detail::Job> make_job(const typename Spec::Function& fn, Range range,
                                               size_t chunksize, std::optional<size_t> total) {
    using ArgsTuple = typename Spec::ArgsTuple;
    check_result<typename Spec::Result>();
    serial::require_serializable<ArgsTuple>();
    if (chunksize == 0) chunksize = 1;
    if (chunksize > UINT32_MAX)
      throw UsageError("Pool: chunksize " + std::to_string(chunksize) + " is above the most, " +
                       std::to_string(UINT32_MAX));
    auto job = std::make_shared<detail::Job>();
    job->chunksize = static_cast<uint32_t>(chunksize);
    job->source = std::make_unique<InputChunks<Spec, Range>>(
        std::move(range), chunk_encoder<typename Spec::Function, ArgsTuple>(fn), chunksize, total);
    return job;
  }

  /// map_async and starmap_async: every result, decoded into its place as its chunk arrives.
  template <class Spec, class Range>
  AsyncResult<std::vector<detail::ValueOf<typename Spec::Result>>> collect(
      const typename Spec::Function& fn, Range range, size_t chunksize) {
    static_assert(!kUnbounded<Range>,
                  "fibermpi: map needs a range with an end; imap reads an unbounded one");
    using R = typename Spec::Result;
    const auto total = static_cast<size_t>(std::ranges::distance(range));
    if (chunksize == 0) chunksize = default_chunksize(total);
    auto sink = std::make_unique<detail::CollectSink<R>>(total);
    auto* values = sink.get();
    auto job = make_job<Spec>(fn, std::move(range), chunksize, total);
    job->sink = std::move(sink);
    submit_job(job, total);
    return AsyncResult<std::vector<detail::ValueOf<R>>>(std::move(job), values);
  }

  /// map and starmap: the call reads the caller's range in place, so it must not return while
  /// the pool might still read it.
  template <class T>
  static T take_in_place(AsyncResult<T> result) {
    try {
      return result.take();
    } catch (...) {
      stop_inputs(result.job_);
      throw;
    }
  }

  /// imap and imap_unordered.
  template <class Spec, class Range>
  ResultStream<typename Spec::Result> stream(const typename Spec::Function& fn, Range range,
                                             size_t chunksize, bool ordered) {
    using R = typename Spec::Result;
    std::optional<size_t> total;
    if constexpr (std::ranges::sized_range<Range>)
      total = static_cast<size_t>(std::ranges::size(range));
    auto sink = std::make_unique<detail::StreamSink<R>>(ordered);
    auto* results = sink.get();
    auto job = make_job<Spec>(fn, std::move(range), chunksize, total);
    job->sink = std::move(sink);
    job->fails_as_whole = false;
    job->windowed = true;
    submit_job(job, total);
    return ResultStream<R>(std::move(job), results, total);
  }

  /// What each worker asked for (Options::cpus_per_worker, ...), checked again on resize().
  struct Share {
    int cpus = 0;
    uint64_t memory = 0;
    int gpus = 0;
  };

  /// Throws UsageError when `processes` workers of this share cannot fit where the program runs.
  static void check_share(const Share& share, int processes);
  static internal::PoolSettings settings_from(Options options);
  /// Queues a job; `total` is its input count where known.
  void submit_job(const std::shared_ptr<detail::Job>& job, std::optional<size_t> total);
  /// Stops reading a job's inputs (its caller no longer waits for it).
  static void stop_inputs(const std::shared_ptr<detail::Job>& job);
  /// Options::progress: a display of `job` that its chunks' arrivals move on.
  void show_progress(const std::shared_ptr<detail::Job>& job, size_t total);
  void release();

  Share share_;
  bool progress_ = false;
  std::shared_ptr<internal::PoolClient> client_;
};

}  // namespace fiber
