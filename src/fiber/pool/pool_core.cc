#include "fiber/pool/pool_core.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <utility>

#include "fiber/base/log.h"
#include "fiber/errors.h"
#include "fiber/pool/pool_messages.h"
#include "fiber/pool/pool_worker.h"

namespace fiber::internal {
namespace {

// Ending before ever becoming ready this many times in a row per worker slot means starting
// workers does not work (spawn failures, a crashing initializer): the pool gives up.
constexpr int kStartFailuresPerWorker = 3;

// A stream's inputs are read at most this many chunks ahead of the results its caller took (more
// for a large pool): enough to keep the workers busy, while results nobody takes stay bounded.
constexpr uint64_t kStreamWindowChunks = 4096;

std::string describe_worker(const ProcessState& process) {
  return process.name + " (pid " + std::to_string(process.pid) + ")";
}

std::string describe_end(const ProcessState& process) {
  if (!process.exitcode) return "could not start";
  if (*process.exitcode < 0) return "was killed by signal " + std::to_string(-*process.exitcode);
  return "exited with code " + std::to_string(*process.exitcode);
}

}  // namespace

PoolCore::PoolCore(PoolHost& host, uint64_t id, PoolSettings settings)
    : host_(host),
      id_(id),
      settings_(std::move(settings)),
      callbacks_(std::make_shared<CallbackRunner>([this] { return host_.lock(); })) {
  if (settings_.initializer) {
    serial::Writer writer;
    detail::save_task(writer, *settings_.initializer);
    initializer_bytes_ = writer.take();
  }
}

void PoolCore::start_workers_locked() {
  for (int i = 0; i < settings_.processes; ++i) launch_worker_locked();
}

void PoolCore::launch_worker_locked() {
  auto process = host_.new_process_locked(
      detail::make_task(pool_worker_main, id_, initializer_bytes_, settings_.maxtasksperchild),
      "PoolWorker");
  process->pool = id_;
  process->cores = std::max(1, settings_.cpus_per_worker);
  process->gpus = settings_.gpus_per_worker;
  // Its process leaves with it, so that no later worker or Process inherits its state.
  process->needs_fresh_process = settings_.fresh_processes;
  process->retire_worker_after = settings_.fresh_processes;
  // Daemonic: a pool left alive at exit is terminated rather than waited for forever.
  process->daemon = true;
  workers_[process->id].process = process;
  host_.start_process_locked(process);
}

int PoolCore::members_locked() const {
  return static_cast<int>(std::count_if(workers_.begin(), workers_.end(),
                                        [](const auto& entry) { return !entry.second.retired; }));
}

void PoolCore::resize_locked(int processes) {
  if (processes < 1)
    throw UsageError("Pool::resize: a pool needs at least 1 worker, got " +
                     std::to_string(processes));
  if (state_ != State::kRunning) throw UsageError("Pool::resize on a closed or terminated pool");
  settings_.processes = processes;
  // A new size is a new attempt to reach it.
  failed_starts_ = 0;
  replacements_stopped_ = false;
  int surplus = members_locked() - processes;
  for (int i = members_locked(); i < processes; ++i) launch_worker_locked();
  if (surplus <= 0) return;
  // Retire the cheapest first: workers still starting, then idle ones, then the least loaded.
  // A retired worker runs what it already holds and then leaves (exit code 0).
  std::vector<Worker*> candidates;
  for (auto& [id, worker] : workers_)
    if (!worker.retired) candidates.push_back(&worker);
  std::stable_sort(candidates.begin(), candidates.end(), [](const Worker* a, const Worker* b) {
    if (a->ready != b->ready) return !a->ready;
    return a->in_flight < b->in_flight;
  });
  std::vector<std::shared_ptr<ProcessState>> not_started;
  for (Worker* worker : candidates) {
    if (surplus-- <= 0) break;
    worker->retired = true;
    worker->leaving = true;
    if (worker->ready) {
      host_.send_to_process_locked(*worker->process, wire::PoolStop{id_}.encode());
    } else if (!host_.on_static_rank_locked(*worker->process) &&
               !host_.on_joined_job_locked(*worker->process)) {
      not_started.push_back(worker->process);
    }
    // Starting on a rank of the static world or a joined pod: a terminate would kill that rank
    // (and the pod with it, counted lost by the controller). It is told to stop once ready.
  }
  for (auto& process : not_started) host_.terminate_locked(process, SIGTERM);
}

std::vector<int> PoolCore::pids_locked() const {
  std::vector<int> pids;
  for (const auto& [id, worker] : workers_)
    if (worker.ready && !worker.retired && worker.process->pid > 0)
      pids.push_back(worker.process->pid);
  return pids;
}

int PoolCore::starting_workers_locked() const {
  return static_cast<int>(std::count_if(workers_.begin(), workers_.end(), [](const auto& entry) {
    const Worker& worker = entry.second;
    return !worker.ready && !worker.retired &&
           (worker.process->status == ProcessStatus::kRunning ||
            worker.process->status == ProcessStatus::kPending);
  }));
}

bool PoolCore::work_may_come_locked() const {
  return state_ == State::kRunning || !backlog_.empty() || !in_flight_.empty() ||
         std::any_of(sources_.begin(), sources_.end(),
                     [](const std::shared_ptr<detail::Job>& job) { return !job->inputs_done; });
}

bool PoolCore::short_for_good_locked() const {
  return replacements_stopped_ && starting_workers_locked() == 0 && ready_workers_locked() > 0;
}

int PoolCore::ready_workers_locked() const {
  return static_cast<int>(std::count_if(workers_.begin(), workers_.end(), [](const auto& entry) {
    return entry.second.ready && !entry.second.leaving;
  }));
}

void PoolCore::submit_locked(const std::shared_ptr<detail::Job>& job) {
  if (state_ == State::kTerminated)
    throw UsageError("the Pool was terminated: no new tasks can be submitted");
  if (state_ == State::kClosed)
    throw UsageError("the Pool is closed: no new tasks can be submitted");
  if (!broken_.empty()) throw Error("the Pool cannot run tasks: " + broken_);
  if (job->windowed) {
    // Far enough ahead to keep every worker's queue full, whatever the pool grows to.
    const uint64_t workers =
        static_cast<uint64_t>(std::max({1, settings_.processes, settings_.max_processes}));
    const uint64_t chunks = std::max<uint64_t>(
        kStreamWindowChunks,
        4 * workers * static_cast<uint64_t>(std::max(1, settings_.tasks_in_flight_per_worker)));
    job->window_items = chunks * job->chunksize;
  }
  CallbackRunner::attach(callbacks_, *job);
  sources_.push_back(job);
  dispatch_locked();
}

void PoolCore::release_idle_workers_locked() {
  for (auto& [id, worker] : workers_) {
    if (!worker.ready || worker.leaving || worker.in_flight > 0) continue;
    worker.leaving = true;
    worker.retired = true;
    host_.send_to_process_locked(*worker.process, wire::PoolStop{id_}.encode());
  }
}

void PoolCore::on_worker_ready(const ProcessState& process, const wire::PoolReady& ready) {
  auto it = workers_.find(process.id);
  if (it == workers_.end()) return;
  if (ready.initializer_failed) {
    broken_ = "the initializer raised " + ready.error_type + " in " + describe_worker(process) +
              ": " + ready.error_message;
    FIBER_LOG_ERROR("%s", broken_.c_str());
    fail_all_locked(std::make_exception_ptr(
        RemoteError(ready.error_type, "in the pool's initializer: " + ready.error_message)));
    return;
  }
  it->second.ready = true;
  it->second.joined = host_.on_joined_job_locked(process);
  it->second.idle_since = host_.now();
  failed_starts_ = 0;
  const bool replacements_were_stopped = replacements_stopped_;
  replacements_stopped_ = false;
  if (state_ == State::kTerminated) {
    it->second.leaving = true;
    host_.send_to_process_locked(process, wire::PoolStop{id_}.encode());
    return;
  }
  if (it->second.retired) {
    // Retired by a resize while it was starting.
    it->second.leaving = true;
    host_.send_to_process_locked(process, wire::PoolStop{id_}.encode());
    return;
  }
  // A worker that started shows that starting may work again: the pool tries once more to reach
  // its size. Starts refused at once stop the replacements again after a bounded number.
  if (replacements_were_stopped && work_may_come_locked() && broken_.empty()) {
    while (!replacements_stopped_ && broken_.empty() && members_locked() < settings_.processes)
      launch_worker_locked();
  }
  dispatch_locked();
}

void PoolCore::on_result(const ProcessState& process, wire::PoolResult result_message) {
  auto found = in_flight_.find(result_message.task);
  // A result for a task no longer held by this worker: it was declared lost and resubmitted, and
  // the resubmitted copy is the one that counts (each result reaches the caller exactly once).
  if (found == in_flight_.end() || found->second.worker != process.id) return;
  Task task = std::move(found->second);
  in_flight_.erase(found);
  auto worker = workers_.find(process.id);
  if (worker != workers_.end()) {
    worker->second.front_started = result_message.next_started;
    worker->second.bytes_in_flight -= task.payload.size();
    if (--worker->second.in_flight == 0) worker->second.idle_since = host_.now();
  }

  detail::ChunkOutcome result;
  if (result_message.outcome == PoolOutcome::kResults) {
    const double compute_us = static_cast<double>(result_message.compute_ns()) / 1000.0;
    mean_compute_us_ =
        compute_samples_++ == 0 ? compute_us : 0.9 * mean_compute_us_ + 0.1 * compute_us;
    result.offset = wire::PoolResult::kResultsOffset;
    result.results = std::move(result_message.body);
  } else {
    auto [type, message] = result_message.raised();
    result.error = std::make_exception_ptr(RemoteError(std::move(type), std::move(message)));
  }
  complete_chunk(*task.job, task.chunk, std::move(result));

  // The worker that just finished is the one with room: refill it first (in one message).
  Task next;
  while (worker != workers_.end() && can_take(worker->second) && next_task_locked(next))
    assign_task(worker->second, std::move(next));
  flush_sends_locked();
  if (state_ == State::kClosed || work_waiting_locked()) dispatch_locked();
}

void PoolCore::on_started(const ProcessState& process, const wire::PoolStarted& started) {
  // Chunks run in the order sent, and the results of those before it came first: a chunk still
  // held by this worker is the first it holds.
  auto found = in_flight_.find(started.task);
  if (found == in_flight_.end() || found->second.worker != process.id) return;
  auto worker = workers_.find(process.id);
  if (worker != workers_.end()) worker->second.front_started = true;
}

void PoolCore::complete_chunk(detail::Job& job, const detail::Job::Made& chunk,
                              detail::ChunkOutcome outcome) {
  if (job.complete(chunk, std::move(outcome))) schedule_callbacks_locked(job);
}

void PoolCore::schedule_callbacks_locked(detail::Job& job) { callbacks_->schedule_locked(job); }

void PoolCore::stop_callbacks() { callbacks_->stop(); }

void PoolCore::on_worker_ended(const std::shared_ptr<ProcessState>& process) {
  auto it = workers_.find(process->id);
  if (it == workers_.end()) return;
  Worker worker = it->second;
  workers_.erase(it);

  // Whatever it held is lost with it and runs again elsewhere. Only the chunk it was running
  // (the first sent of those it held, once the worker said it started) counts as an attempt:
  // the ones queued behind it, or still on their way, never started, and must not pay for a
  // poison task they happened to wait behind or for a pod killed under them.
  std::vector<std::pair<uint64_t, uint64_t>> lost;  // (send order, task id)
  for (auto& [id, task] : in_flight_)
    if (task.worker == process->id) lost.emplace_back(task.sent, id);
  std::sort(lost.begin(), lost.end());
  const uint64_t running = lost.empty() || !worker.front_started ? 0 : lost.front().second;
  std::reverse(lost.begin(), lost.end());
  for (const auto& [sent, id] : lost) {
    Task task = std::move(in_flight_.at(id));
    in_flight_.erase(id);
    if (state_ == State::kTerminated) continue;
    if (id == running && ++task.attempts > settings_.max_task_retries) {
      detail::ChunkOutcome outcome;
      outcome.error = std::make_exception_ptr(WorkerLost(
          "a task was lost " + std::to_string(task.attempts) +
          " times with the worker running it (last: " + describe_worker(*process) + " " +
          describe_end(*process) +
          "); giving up after max_task_retries = " + std::to_string(settings_.max_task_retries)));
      complete_chunk(*task.job, task.chunk, std::move(outcome));
    } else {
      backlog_.push_front(std::move(task));
    }
  }

  // A worker the pool retired before it was ready (a resize down while it started) was ended by
  // the pool: no failed start. Counting those stopped every replacement after a quick grow and
  // shrink (pods released before they joined).
  if (!worker.ready && !worker.retired) ++failed_starts_;
  if (worker.joined && !worker.retired) {
    // Its job left or was killed: the pool shrinks back instead of spawning a stand-in.
    settings_.processes = std::max(1, settings_.processes - 1);
    if (autoscaling()) settings_.max_processes = std::max(1, settings_.max_processes - 1);
    worker.retired = true;
  }
  if (state_ == State::kTerminated || !broken_.empty()) return;
  const bool needed = work_may_come_locked();
  // Once replacements stopped, the last worker's end breaks the pool whatever the count (the size
  // may have grown since, by adopting a joined worker).
  if (failed_starts_ >= kStartFailuresPerWorker * std::max(1, settings_.processes) ||
      replacements_stopped_) {
    if (!replacements_stopped_) {
      replacements_stopped_why_ =
          "workers keep ending before they are ready (last: " + describe_worker(*process) + " " +
          describe_end(*process) + ")";
      if (process->start_error) {
        try {
          std::rethrow_exception(process->start_error);
        } catch (const std::exception& e) {
          replacements_stopped_why_ += ": " + std::string(e.what());
        }
      }
    }
    if (ready_workers_locked() > 0 || starting_workers_locked() > 0) {
      // The workers still alive carry on, and those placed and starting (a static rank saying
      // hello) may yet: the pool only stops trying to replace the lost ones. Starts refused at
      // once (a spawner that is stuck) pile up faster than a placed worker can say it is ready.
      if (!replacements_stopped_)
        FIBER_LOG_WARNING("no more replacement workers for this Pool: %s",
                          replacements_stopped_why_.c_str());
      replacements_stopped_ = true;
      dispatch_locked();
      return;
    }
    // A closed pool whose work is done lost nothing: its last worker left as asked.
    if (!needed) return;
    broken_ = replacements_stopped_
                  ? "no worker is left (the last, " + describe_worker(*process) + ", " +
                        describe_end(*process) +
                        ") and none could replace it: " + replacements_stopped_why_
                  : replacements_stopped_why_;
    FIBER_LOG_ERROR("%s", broken_.c_str());
    fail_all_locked(std::make_exception_ptr(Error("the Pool cannot run tasks: " + broken_)));
    return;
  }
  // A worker the pool retired (close, resize) left as asked; any other end (maxtasksperchild, a
  // crash, a kill) is replaced while there is or may be work and the pool is below its size.
  if (needed && !worker.retired && !replacements_stopped_ && members_locked() < settings_.processes)
    launch_worker_locked();
  dispatch_locked();
}

void PoolCore::fail_all_locked(const std::exception_ptr& error) {
  for (auto& task : backlog_) {
    detail::ChunkOutcome outcome;
    outcome.error = error;
    complete_chunk(*task.job, task.chunk, std::move(outcome));
  }
  backlog_.clear();
  // Inputs not read yet are not read at all: the error ends each job's inputs.
  for (auto& job : sources_)
    if (job->end_inputs(error)) schedule_callbacks_locked(*job);
  sources_.clear();
  for (auto& [id, task] : in_flight_) {
    detail::ChunkOutcome outcome;
    outcome.error = error;
    complete_chunk(*task.job, task.chunk, std::move(outcome));
  }
  // Late results of these are ignored: their ids are no longer in flight.
  in_flight_.clear();
  for (auto& [id, worker] : workers_) {
    worker.in_flight = 0;
    worker.bytes_in_flight = 0;
  }
}

void PoolCore::close_locked() {
  if (state_ != State::kRunning) return;
  state_ = State::kClosed;
  // No caller can be relied on to take a stream's results any more before the pool is joined:
  // a bounded range is read to its end; an unbounded one stops here, saying so after its last
  // result.
  for (auto& job : sources_) {
    if (!job->windowed || job->inputs_done) continue;
    if (job->source && job->source->unbounded()) {
      const auto why = std::make_exception_ptr(
          UsageError("the Pool was closed while imap read an unbounded range: it stopped after " +
                     std::to_string(job->items_made) + " inputs"));
      if (job->end_inputs(why)) schedule_callbacks_locked(*job);
    } else {
      job->window_items = 0;
      job->resume = nullptr;
    }
  }
  dispatch_locked();
}

void PoolCore::terminate_locked() {
  if (state_ == State::kTerminated) return;
  state_ = State::kTerminated;
  std::vector<std::shared_ptr<ProcessState>> to_kill;
  std::vector<uint64_t> detached;
  for (auto& [id, worker] : workers_) {
    if (worker.ready && worker.in_flight == 0) {
      // Between tasks: it leaves by itself.
      if (!worker.leaving)
        host_.send_to_process_locked(*worker.process, wire::PoolStop{id_}.encode());
    } else if (worker.ready && (host_.on_static_rank_locked(*worker.process) ||
                                host_.on_joined_job_locked(*worker.process))) {
      // Killing a rank of the static world would cost the job that rank for good (and Open MPI
      // copes badly with it): it drops what is queued, leaves after its current task, and is
      // no longer waited for.
      host_.send_to_process_locked(*worker.process, wire::PoolStop{id_, true}.encode());
      detached.push_back(id);
    } else {
      // Running user code in a spawned process, or still starting: killed, like Python's.
      to_kill.push_back(worker.process);
    }
    worker.leaving = true;
  }
  for (const uint64_t id : detached) workers_.erase(id);
  fail_all_locked(std::make_exception_ptr(
      TerminatedError("the Pool was terminated before this task finished")));
  for (auto& process : to_kill) host_.terminate_locked(process, SIGTERM);
}

}  // namespace fiber::internal
