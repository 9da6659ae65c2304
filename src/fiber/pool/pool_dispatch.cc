// How a pool hands tasks to its workers: the least loaded worker first, about 2 ms of measured
// work queued per worker, deeper queues to cover a pause of the master's traffic, and several
// chunks per message.
#include <algorithm>
#include <optional>
#include <utility>

#include "fiber/errors.h"
#include "fiber/pool/pool_core.h"
#include "fiber/pool/pool_messages.h"
#include "fiber/pool/task_message.h"
#include "fiber/wire/message_kind.h"

namespace fiber::internal {
namespace {

// Work queued per worker beyond the running chunk, in expected run time.
constexpr double kQueuedWorkUs = 2000;

// Most work queued per worker to cover a pause of the master's traffic, and most chunks.
constexpr double kMaxCoverUs = 1'000'000;
constexpr int kMaxCoverChunks = 4096;
constexpr size_t kMaxCoverBytes = 8 << 20;

// Most bytes of chunks in one task message (below Open MPI's eager limits: 4 kB is the
// shared-memory one, but larger messages there are pulled by the receiver without the sender).
constexpr size_t kMessageBytes = 32 * 1024;
// One chunk travels in one MPI message, whose count is an int.
constexpr size_t kMaxChunkBytes = INT32_MAX - 1024;

// An input range of unknown length counts as this many waiting chunks (autoscaling, covering a
// pause).
constexpr size_t kUnknownChunks = 1 << 20;

}  // namespace

bool PoolCore::next_task_locked(Task& task) {
  if (!backlog_.empty()) {
    task = std::move(backlog_.front());
    backlog_.pop_front();
    return true;
  }
  for (auto it = sources_.begin(); it != sources_.end();) {
    detail::Job& job = **it;
    if (job.inputs_done) {
      it = sources_.erase(it);
      continue;
    }
    if (!job.wants_chunk()) {
      // A stream whose caller has not taken enough of its results: its next take resumes it.
      if (!job.resume) job.resume = [this] { dispatch_locked(); };
      ++it;
      continue;
    }
    bool became_ready = false;
    detail::Bytes payload;
    const auto made = job.make_chunk(payload, became_ready);
    if (became_ready) schedule_callbacks_locked(job);
    if (!made) continue;  // its inputs ended: dropped on the next turn
    task.id = next_task_++;
    task.job = *it;
    task.chunk = *made;
    task.payload = std::move(payload);
    task.attempts = 0;
    task.worker = 0;
    task.sent = 0;
    return true;
  }
  return false;
}

bool PoolCore::work_waiting_locked() const {
  if (!backlog_.empty()) return true;
  for (const auto& job : sources_)
    if (job->wants_chunk()) return true;
  return false;
}

size_t PoolCore::chunks_waiting_locked() const {
  size_t waiting = backlog_.size();
  for (const auto& job : sources_) {
    if (!job->wants_chunk()) continue;
    const auto left = job->source ? job->source->chunks_left() : std::optional<size_t>(0);
    waiting += left ? std::min(*left, kUnknownChunks) : kUnknownChunks;
  }
  return waiting;
}

bool PoolCore::inputs_pending_locked() {
  std::erase_if(sources_, [](const std::shared_ptr<detail::Job>& job) { return job->inputs_done; });
  return !backlog_.empty() || !sources_.empty();
}

int PoolCore::tasks_in_flight_limit() const {
  const int limit = std::max(1, settings_.tasks_in_flight_per_worker);
  // Until the first results tell how long a chunk runs, stay shallow; then queue about
  // kQueuedWorkUs of work per worker: deep for tiny tasks (hides the round trip), at most one
  // behind the running chunk for long ones.
  if (compute_samples_ > 0) {
    const double fit = kQueuedWorkUs / std::max(1.0, mean_compute_us_);
    if (fit >= 2) return std::min(static_cast<int>(fit), limit);
  }
  // Long chunks, or chunks of unknown length: one queued behind the running one while more wait
  // than the workers can take, so a worker starts its next chunk without waiting a round trip
  // for it (on a machine shared by hundreds of processes that wait was most of a 10 ms task's
  // overhead). When fewer wait, one at a time: no chunk waits behind another that a free worker
  // could run. Before the first result this also keeps the first worker to be ready from taking
  // the chunks meant for those still starting: two long tasks to a pool of two ran one after
  // the other on one worker while the other idled.
  const bool backlog =
      chunks_waiting_locked() > static_cast<size_t>(std::max(1, settings_.processes));
  return std::min(limit, backlog ? 2 : 1);
}

bool PoolCore::can_take(const Worker& worker) const {
  if (!worker.ready || worker.leaving) return false;
  const int usual = tasks_in_flight_limit();
  if (worker.in_flight < usual) {
    // A worker with a deep queue is refilled once a quarter of it has room, and then to the
    // full depth in one message (it still holds three quarters of its queued work meanwhile):
    // each message to a worker over TCP costs the master a system call of several
    // microseconds, and one per task was most of its CPU per task.
    return worker.in_flight + std::max(1, usual / 4) <= usual || !worker.unsent.empty();
  }
  // Covering a pause: deeper, but never more than kMaxCoverBytes of arguments per worker.
  return worker.in_flight < pause_depth_ && worker.bytes_in_flight < kMaxCoverBytes;
}

void PoolCore::cover_pause_locked(std::chrono::microseconds pause) {
  if (!settings_.cover_spawn_pauses || compute_samples_ == 0 || !work_waiting_locked() ||
      state_ == State::kTerminated)
    return;
  const int ready =
      static_cast<int>(std::count_if(workers_.begin(), workers_.end(), [](const auto& entry) {
        return entry.second.ready && !entry.second.leaving;
      }));
  if (ready == 0) return;
  // Enough measured work to last through the pause, but no more than an even share of what waits:
  // one worker must not sit on chunks the others could run once traffic flows again.
  const double cover_us = std::min(kMaxCoverUs, 1.5 * static_cast<double>(pause.count()));
  const int per_worker = static_cast<int>(cover_us / std::max(1.0, mean_compute_us_)) + 1;
  const size_t waiting = chunks_waiting_locked();
  const int share = static_cast<int>(std::min<size_t>(
      (waiting + static_cast<size_t>(ready) - 1) / static_cast<size_t>(ready), kMaxCoverChunks));
  int most_held = 0;
  for (const auto& [id, worker] : workers_)
    if (worker.ready && !worker.leaving) most_held = std::max(most_held, worker.in_flight);
  pause_depth_ = std::min(kMaxCoverChunks, std::min(per_worker, most_held + share));
  dispatch_locked();
}

void PoolCore::pause_over_locked() { pause_depth_ = 0; }

void PoolCore::grow_for_backlog_locked() {
  // Stopped replacements (starts keep failing) stop growth too: a start refused at once would
  // otherwise come back here through dispatch_locked and start another, without end.
  if (!autoscaling() || state_ == State::kTerminated || !broken_.empty() || replacements_stopped_)
    return;
  // Workers still starting will take the first waiting chunks; start more only beyond that.
  const int waiting =
      static_cast<int>(std::min<size_t>(chunks_waiting_locked(), static_cast<size_t>(INT32_MAX))) -
      starting_workers_locked();
  const int room = settings_.max_processes - members_locked();
  for (int i = 0; i < std::min(waiting, room); ++i) launch_worker_locked();
  settings_.processes = std::max(settings_.processes, members_locked());
}

bool PoolCore::adopt_joined_worker_locked() {
  // A pool of fresh processes could not run a worker on the joined job's process anyway.
  if (state_ != State::kRunning || !settings_.take_joined_workers || !broken_.empty() ||
      settings_.fresh_processes)
    return false;
  ++settings_.processes;
  if (autoscaling()) ++settings_.max_processes;
  launch_worker_locked();
  return true;
}

void PoolCore::release_worker_locked(uint64_t process_id) {
  auto it = workers_.find(process_id);
  if (it == workers_.end() || it->second.retired) return;
  Worker& worker = it->second;
  worker.retired = true;
  worker.leaving = true;
  settings_.processes = std::max(1, settings_.processes - 1);
  if (autoscaling()) settings_.max_processes = std::max(1, settings_.max_processes - 1);
  if (worker.ready) host_.send_to_process_locked(*worker.process, wire::PoolStop{id_}.encode());
}

void PoolCore::tick_locked(std::chrono::steady_clock::time_point now) {
  if (!autoscaling() || state_ != State::kRunning) return;
  for (auto& [id, worker] : workers_) {
    if (members_locked() <= settings_.min_processes) break;
    if (!worker.ready || worker.retired || worker.leaving || worker.in_flight > 0) continue;
    if (now - worker.idle_since < settings_.idle_timeout) continue;
    worker.retired = true;
    worker.leaving = true;
    host_.send_to_process_locked(*worker.process, wire::PoolStop{id_}.encode());
  }
  settings_.processes = std::max(settings_.min_processes, members_locked());
}

void PoolCore::dispatch_locked() {
  while (state_ != State::kTerminated && work_waiting_locked()) {
    // The least loaded worker, so a round of N tasks on N idle workers gives each one.
    Worker* target = nullptr;
    for (auto& [id, worker] : workers_) {
      if (!can_take(worker)) continue;
      if (!target || worker.in_flight < target->in_flight) target = &worker;
      if (target->in_flight == 0) break;
    }
    if (!target) break;
    Task task;
    if (!next_task_locked(task)) break;
    assign_task(*target, std::move(task));
  }
  flush_sends_locked();
  if (work_waiting_locked()) grow_for_backlog_locked();
  if (state_ == State::kClosed && !inputs_pending_locked()) release_idle_workers_locked();
}

void PoolCore::assign_task(Worker& worker, Task task) {
  task.worker = worker.process->id;
  task.sent = ++sends_;
  ++worker.in_flight;
  ++worker.assigned;
  // A worker leaves by itself after its last task under maxtasksperchild.
  if (settings_.maxtasksperchild > 0 && worker.assigned >= settings_.maxtasksperchild) {
    worker.leaving = true;
    // Its replacement must be a fresh process: this one does not go back to the reserve.
    worker.process->retire_worker_after = true;
  }
  worker.bytes_in_flight += task.payload.size();
  if (worker.unsent.empty()) workers_to_flush_.push_back(task.worker);
  worker.unsent.push_back(task.id);
  in_flight_.emplace(task.id, std::move(task));
}

void PoolCore::flush_sends_locked() {
  // Several chunks per message: fewer messages cost less, and every message still in flight to
  // a worker that dies holds one of Open MPI's shared-memory fragments for good (a few hundred
  // lost ones stall every later shared-memory send of the master). Messages stay below the
  // eager limits so they travel without the master's help (it may be busy spawning).
  // The scratch space keeps its capacity from one flush to the next (no allocation per flush),
  // unless a failure handler below flushes again meanwhile.
  std::optional<FlushScratch> own;
  const bool nested = flushing_;
  FlushScratch& scratch = nested ? own.emplace() : flush_scratch_;
  struct Flushing {
    bool& flag;
    bool nested;
    ~Flushing() {
      if (!nested) flag = false;
    }
  } flushing{flushing_, nested};
  flushing_ = true;
  TaskMessageBuilder& message = scratch.message;
  std::vector<uint64_t>& batch = scratch.batch;
  std::vector<uint64_t>& unsent = scratch.unsent;
  std::vector<uint64_t>& workers = scratch.workers;
  workers.clear();
  workers.swap(workers_to_flush_);
  for (const uint64_t worker_id : workers) {
    auto found = workers_.find(worker_id);
    if (found == workers_.end()) continue;
    Worker& worker = found->second;
    unsent.swap(worker.unsent);
    worker.unsent.clear();
    size_t next = 0;
    while (next < unsent.size()) {
      message.clear();
      batch.clear();
      for (; next < unsent.size(); ++next) {
        auto task = in_flight_.find(unsent[next]);
        if (task == in_flight_.end()) continue;  // failed meanwhile
        const detail::Bytes& payload = task->second.payload;
        if (!batch.empty() && message.size() + kTaskChunkOverhead + payload.size() > kMessageBytes)
          break;
        if (payload.size() > kMaxChunkBytes) {
          fail_unsent_locked(worker, {task->first},
                             "a chunk of " + std::to_string(payload.size()) +
                                 " bytes exceeds the 2 GiB limit of one MPI message; use a "
                                 "smaller chunksize");
          continue;
        }
        message.add(task->first, payload);
        batch.push_back(task->first);
      }
      if (batch.empty()) continue;
      try {
        host_.send_to_process_locked(*worker.process,
                                     wire::PoolTasks{id_, message.bytes()}.encode());
      } catch (const std::exception& e) {
        fail_unsent_locked(worker, batch,
                           std::string("could not send tasks to the worker: ") + e.what());
      }
    }
    unsent.clear();
  }
  workers.clear();
}

void PoolCore::fail_unsent_locked(Worker& worker, const std::vector<uint64_t>& tasks,
                                  const std::string& why) {
  for (const uint64_t id : tasks) {
    auto found = in_flight_.find(id);
    if (found == in_flight_.end()) continue;
    Task task = std::move(found->second);
    in_flight_.erase(found);
    --worker.in_flight;
    worker.bytes_in_flight -= task.payload.size();
    detail::ChunkOutcome outcome;
    outcome.error = std::make_exception_ptr(Error(why));
    complete_chunk(*task.job, task.chunk, std::move(outcome));
  }
}

}  // namespace fiber::internal
