#include "fiber/nesting/nested_client.h"

#include <algorithm>
#include <csignal>

#include "fiber/errors.h"
#include "fiber/pool/callback_runner.h"
#include "fiber/worker/fatal_signal.h"
#include "fiber/worker/master_link.h"

namespace fiber::internal {

/// A Pool made by this worker's code: run by the master, its jobs' outcomes relayed here.
class RemotePool final : public PoolClient {
 public:
  RemotePool(NestedClient& client, uint64_t id)
      : client_(client),
        id_(id),
        callbacks_(std::make_shared<CallbackRunner>([&client] { return client.engine().lock(); })) {
    auto lock = client_.engine().lock();
    client_.add_pool_locked(id_, this);
  }
  ~RemotePool() override {
    auto lock = client_.engine().lock();
    client_.remove_pool_locked(id_);
  }

  int size() override { return static_cast<int>(call(wire::PoolCall::Op::kSize).value); }
  void wait_ready() override { call(wire::PoolCall::Op::kWaitReady); }
  void resize(int processes) override { call(wire::PoolCall::Op::kResize, processes); }
  std::vector<int> worker_pids() override {
    return serial::from_bytes<std::vector<int>>(call(wire::PoolCall::Op::kPids).payload);
  }
  void submit(const std::shared_ptr<detail::Job>& job) override {
    // The master runs this pool: every input is encoded here and sent in one request.
    if (job->source && job->source->unbounded())
      throw UsageError(
          "imap of an unbounded range in a Pool made inside a worker: such a pool is run by the "
          "master, which is sent every input at once; give it a bounded range");
    wire::PoolSubmit submit;
    submit.pool = id_;
    Submitted submitted{job, {}};
    if (job->source) {
      detail::Bytes chunk;
      uint64_t items = 0;
      while (const uint32_t count = job->source->next(chunk)) {
        submitted.first_items.push_back(items);
        items += count;
        submit.chunk_sizes.push_back(count);
        submit.chunks.push_back(std::move(chunk));
        chunk = {};
      }
      job->source.reset();
    }
    {
      // Registered first: outcomes may come before the reply does.
      auto lock = client_.engine().lock();
      submit.job = next_job_++;
      job->chunks_made = submit.chunks.size();
      job->items_made = 0;
      for (const uint32_t count : submit.chunk_sizes) job->items_made += count;
      job->inputs_done = true;
      CallbackRunner::attach(callbacks_, *job);
      jobs_[submit.job] = std::move(submitted);
    }
    try {
      client_.request(submit.encode());
    } catch (...) {
      auto lock = client_.engine().lock();
      jobs_.erase(submit.job);
      throw;
    }
  }
  void close() override { call(wire::PoolCall::Op::kClose); }
  void terminate() override { call(wire::PoolCall::Op::kTerminate); }
  void join() override { call(wire::PoolCall::Op::kJoin); }
  void release() override {
    callbacks_->stop();
    call(wire::PoolCall::Op::kRelease);
  }

  /// A chunk's outcome arrived; with the lock held.
  void on_chunk_locked(wire::JobChunk chunk) {
    auto found = jobs_.find(chunk.job);
    if (found == jobs_.end() || chunk.chunk >= found->second.first_items.size()) return;
    detail::Job& job = *found->second.job;
    const auto index = static_cast<size_t>(chunk.chunk);
    const uint64_t first = found->second.first_items[index];
    const uint64_t next = index + 1 < found->second.first_items.size()
                              ? found->second.first_items[index + 1]
                              : job.items_made;
    detail::ChunkOutcome outcome;
    outcome.results = std::move(chunk.results);
    outcome.offset = static_cast<size_t>(chunk.offset);
    outcome.error = chunk.error.rethrowable();
    if (job.complete({index, first, static_cast<uint32_t>(next - first)}, std::move(outcome)))
      callbacks_->schedule_locked(job);
    if (job.completed >= job.chunks_made) jobs_.erase(found);
    client_.engine().notify_locked();
  }

 private:
  wire::Reply call(wire::PoolCall::Op op, int64_t argument = 0) {
    return client_.request(wire::PoolCall{0, id_, op, argument}.encode());
  }

  NestedClient& client_;
  const uint64_t id_;
  std::shared_ptr<CallbackRunner> callbacks_;
  uint64_t next_job_ = 1;
  /// A job sent to the master, and where each of its chunks starts among its inputs.
  struct Submitted {
    std::shared_ptr<detail::Job> job;
    std::vector<uint64_t> first_items;
  };
  std::map<uint64_t, Submitted> jobs_;  ///< Guarded by the lock; until all chunks are in.
};

/// A Group made by this worker's code: run by the master, its state mirrored here.
class RemoteGroup final : public GroupClient {
 public:
  RemoteGroup(NestedClient& client, uint64_t id, int size) : client_(client), id_(id), size_(size) {
    auto lock = client_.engine().lock();
    client_.add_group_locked(id_, this);
  }
  ~RemoteGroup() override {
    auto lock = client_.engine().lock();
    client_.remove_group_locked(id_);
  }

  std::string name() const override { return "Group-" + std::to_string(id_); }
  int size() const override { return size_; }
  void start() override {
    call(wire::GroupCall::Op::kStart);
    auto lock = client_.engine().lock();
    started_ = true;
  }
  void terminate() override { call(wire::GroupCall::Op::kTerminate); }
  bool started() override {
    auto lock = client_.engine().lock();
    return started_;
  }
  bool wait_ended(std::optional<Clock::time_point> deadline) override {
    return client_.engine().wait_until([this] { return state_.ended; }, deadline);
  }
  int restarts() override {
    auto lock = client_.engine().lock();
    return state_.restarts;
  }
  std::vector<std::optional<int>> exitcodes() override {
    auto lock = client_.engine().lock();
    return state_.exitcodes;
  }
  std::vector<int> member_pids() override {
    auto lock = client_.engine().lock();
    return state_.ended ? std::vector<int>{} : state_.member_pids;
  }
  std::exception_ptr start_error() override {
    auto lock = client_.engine().lock();
    return state_.start_error.rethrowable();
  }
  void release() override {
    if (started()) wait_ended(std::nullopt);
    call(wire::GroupCall::Op::kRelease);
  }

  void on_event_locked(wire::GroupEvent event) {
    state_ = std::move(event);
    client_.engine().notify_locked();
  }

 private:
  void call(wire::GroupCall::Op op) { client_.request(wire::GroupCall{0, id_, op}.encode()); }

  NestedClient& client_;
  const uint64_t id_;
  const int size_;
  bool started_ = false;
  wire::GroupEvent state_;  ///< The master's last word on it; guarded by the lock.
};

NestedClient::NestedClient(ProgressEngine& engine, MasterLink& link)
    : engine_(engine), link_(link) {
  // The master's events about the work this worker's code started.
  link.serve(Kind::kProcessEvent, [this](bridge::Received& message) {
    on_process_event_locked(wire::ProcessEvent::decode(message));
    engine_.notify_locked();
  });
  link.serve(Kind::kJobChunk, [this](bridge::Received& message) {
    auto chunk = wire::JobChunk::decode(message);
    if (auto pool = pools_.find(chunk.pool); pool != pools_.end())
      pool->second->on_chunk_locked(std::move(chunk));
    engine_.notify_locked();
  });
  link.serve(Kind::kGroupEvent, [this](bridge::Received& message) {
    auto event = wire::GroupEvent::decode(message);
    if (auto group = groups_.find(event.group); group != groups_.end())
      group->second->on_event_locked(std::move(event));
    engine_.notify_locked();
  });
}

wire::Reply NestedClient::request(Outgoing message) {
  wire::Reply reply = link_.request(std::move(message));
  if (reply.outcome == Outcome::kError) {
    serial::Reader reader(reply.payload);
    std::rethrow_exception(wire::ErrorAccount::load(reader).rethrowable());
  }
  return reply;
}

// ---- Processes ----

std::shared_ptr<ProcessState> NestedClient::new_process(detail::TaskSpec task) {
  const uint64_t parent = running_process();
  auto held = engine_.lock();
  auto state = std::make_shared<ProcessState>();
  state->id = next_local_id_++;
  state->task = std::move(task);
  // Python names a child of Process-3 "Process-3:1".
  state->name = "Process-" + std::to_string(parent) + ":" + std::to_string(next_name_++);
  return state;
}

void NestedClient::start_process(const std::shared_ptr<ProcessState>& process) {
  wire::ProcessStart start;
  {
    auto held = engine_.lock();
    if (process->status != ProcessStatus::kCreated)
      throw UsageError(process->name + ": processes can only be started once");
    process->status = ProcessStatus::kPending;
    start.name = process->name;
    start.daemon = process->daemon;
    start.cores = process->cores;
    start.gpus = process->gpus;
    start.task = process->task;
  }
  wire::Reply reply;
  try {
    reply = request(start.encode());
  } catch (...) {
    auto held = engine_.lock();
    process->status = ProcessStatus::kCreated;
    throw;
  }
  auto held = engine_.lock();
  process->id = reply.value;
  children_[process->id] = process;
  if (auto early = early_events_.find(process->id); early != early_events_.end()) {
    for (const auto& event : early->second) apply_locked(*process, event);
    early_events_.erase(early);
  }
  engine_.notify_locked();
}

void NestedClient::terminate(const std::shared_ptr<ProcessState>& process, int signal) {
  uint64_t id = 0;
  {
    auto held = engine_.lock();
    if (process->status != ProcessStatus::kPending && process->status != ProcessStatus::kRunning)
      return;
    id = process->id;
  }
  request(wire::ProcessTerminate{0, id, signal}.encode());
}

bool NestedClient::wait_ended(const std::shared_ptr<ProcessState>& process,
                              std::optional<Clock::time_point> deadline) {
  return engine_.wait_until([&] { return process->status == ProcessStatus::kEnded; }, deadline);
}

int NestedClient::wait_pid(const std::shared_ptr<ProcessState>& process) {
  engine_.wait_until([&] { return process->pid != 0 || process->status == ProcessStatus::kEnded; });
  auto held = engine_.lock();
  return process->pid;
}

std::vector<std::shared_ptr<ProcessState>> NestedClient::live_children() {
  auto held = engine_.lock();
  std::vector<std::shared_ptr<ProcessState>> live;
  for (auto& [id, process] : children_) live.push_back(process);
  return live;
}

void NestedClient::end_children() {
  for (auto& child : live_children()) {
    bool daemon = false;
    {
      auto held = engine_.lock();
      daemon = child->daemon;
    }
    if (daemon) terminate(child, SIGTERM);
  }
  for (auto& child : live_children()) wait_ended(child, std::nullopt);
}

void NestedClient::apply_locked(ProcessState& process, const wire::ProcessEvent& event) {
  if (event.ended) {
    process.status = ProcessStatus::kEnded;
    process.exitcode = event.exitcode;
    process.error = event.error;
    process.start_error = event.start_error.rethrowable();
    children_.erase(process.id);
  } else {
    process.status = ProcessStatus::kRunning;
  }
  if (event.pid != 0) process.pid = event.pid;
  if (!event.host.empty()) process.host = event.host;
}

void NestedClient::on_process_event_locked(const wire::ProcessEvent& event) {
  auto found = children_.find(event.process);
  if (found == children_.end()) {
    early_events_[event.process].push_back(event);
    return;
  }
  apply_locked(*found->second, event);
}

// ---- Pools and groups ----

std::shared_ptr<PoolClient> NestedClient::make_pool(PoolSettings settings) {
  const wire::Reply reply = request(wire::PoolCreate{0, std::move(settings)}.encode());
  return std::make_shared<RemotePool>(*this, reply.value);
}

std::shared_ptr<GroupClient> NestedClient::make_group(GroupSettings settings) {
  wire::GroupCreate create;
  create.size = settings.size;
  create.max_restarts = settings.max_restarts;
  create.task = std::move(settings.task);
  const wire::Reply reply = request(create.encode());
  return std::make_shared<RemoteGroup>(*this, reply.value, settings.size);
}

}  // namespace fiber::internal
