// Nesting: Processes, Pools and Groups that workers' code starts. The master runs them as its
// own, tells the worker that started each (its owner) what became of it, and ends what an owner
// leaves behind when it ends.
#include <algorithm>
#include <csignal>
#include <cstdio>

#include "fiber/base/log.h"
#include "fiber/errors.h"
#include "fiber/master/master.h"

namespace fiber::internal {

Slot* Master::slot_of_locked(uint64_t process) {
  auto child = table_.children().find(process);
  if (child == table_.children().end()) return nullptr;
  Slot* slot = child->second->slot;
  return slot && !slot->gone() ? slot : nullptr;
}

void Master::reply_locked(const Slot& slot, const wire::Reply& reply) {
  send_locked(slot.link->comm.get(), slot.rank, reply.encode());
}

void Master::reply_error_locked(const Slot& slot, uint64_t request,
                                const std::exception_ptr& error) {
  serial::Writer account;
  wire::ErrorAccount::of(error).save(account);
  reply_locked(slot, wire::Reply{request, Outcome::kError, 0, account.take()});
}

void Master::notify_owner_locked(uint64_t owner, const Outgoing& event) {
  if (Slot* slot = slot_of_locked(owner)) send_locked(slot->link->comm.get(), slot->rank, event);
}

PoolCore& Master::owned_pool_locked(uint64_t owner, uint64_t pool) {
  auto owned = pool_owners_.find(pool);
  auto found = pools_.find(pool);
  if (owned == pool_owners_.end() || owned->second != owner || found == pools_.end())
    throw UsageError("pool " + std::to_string(pool) + " is not one this process made");
  return *found->second;
}

GroupCore& Master::owned_group_locked(uint64_t owner, uint64_t group) {
  auto owned = group_owners_.find(group);
  auto found = groups_.find(group);
  if (owned == group_owners_.end() || owned->second != owner || found == groups_.end())
    throw UsageError("group " + std::to_string(group) + " is not one this process made");
  return *found->second;
}

void Master::serve_nested(Kind kind, NestedHandler handler) {
  handlers_.add(kind, [this, handler](Link&, Slot* slot, bridge::Received& message) {
    if (!slot) throw ProtocolError("a request to start work from an unknown worker");
    if (!slot->process)
      throw ProtocolError("worker pid " + std::to_string(slot->pid) +
                          " asked to start work while it runs nothing");
    try {
      (this->*handler)(*slot, slot->process->id, message);
    } catch (const ProtocolError&) {
      throw;
    } catch (...) {
      reply_error_locked(*slot, message.envelope.id, std::current_exception());
    }
    answer_nested_waits_locked();
  });
}

void Master::register_nested_handlers() {
  serve_nested(Kind::kProcessStart, &Master::on_process_start_request_locked);
  serve_nested(Kind::kProcessTerminate, &Master::on_process_terminate_request_locked);
  serve_nested(Kind::kPoolCreate, &Master::on_pool_create_request_locked);
  serve_nested(Kind::kPoolCall, &Master::on_pool_call_request_locked);
  serve_nested(Kind::kPoolSubmit, &Master::on_pool_submit_request_locked);
  serve_nested(Kind::kGroupCreate, &Master::on_group_create_request_locked);
  serve_nested(Kind::kGroupCall, &Master::on_group_call_request_locked);
}

void Master::on_process_start_request_locked(Slot& slot, uint64_t owner,
                                             bridge::Received& message) {
  const uint64_t request = message.envelope.id;
  auto start = wire::ProcessStart::decode(message);
  if (stopping_) throw UsageError("cannot start a Process: fibermpi is shutting down");
  auto process = table_.create(std::move(start.task), "Process");
  process->name = start.name;
  process->daemon = start.daemon;
  process->cores = start.cores;
  process->gpus = start.gpus;
  process->owner = owner;
  // The id first: the events about it come after.
  reply_locked(slot, wire::Reply{request, Outcome::kValue, process->id, {}});
  start_process_locked(process);
}

void Master::on_process_terminate_request_locked(Slot& slot, uint64_t owner,
                                                 bridge::Received& message) {
  const uint64_t request = message.envelope.id;
  const auto terminate = wire::ProcessTerminate::decode(message);
  auto child = table_.children().find(terminate.process);
  if (child != table_.children().end() && child->second->owner == owner)
    terminate_locked(child->second, terminate.signal);
  reply_locked(slot, wire::Reply{request, Outcome::kValue, 0, {}});
}

void Master::on_pool_create_request_locked(Slot& slot, uint64_t owner, bridge::Received& message) {
  const uint64_t request = message.envelope.id;
  auto pool = create_pool_locked(wire::PoolCreate::decode(message).settings);
  pool_owners_[pool->id()] = owner;
  reply_locked(slot, wire::Reply{request, Outcome::kValue, pool->id(), {}});
}

void Master::on_pool_call_request_locked(Slot& slot, uint64_t owner, bridge::Received& message) {
  on_pool_call_locked(slot, owner, wire::PoolCall::decode(message));
}

void Master::on_pool_submit_request_locked(Slot& slot, uint64_t owner, bridge::Received& message) {
  const uint64_t request = message.envelope.id;
  on_pool_submit_locked(owner, wire::PoolSubmit::decode(message));
  reply_locked(slot, wire::Reply{request, Outcome::kValue, 0, {}});
}

void Master::on_group_create_request_locked(Slot& slot, uint64_t owner, bridge::Received& message) {
  const uint64_t request = message.envelope.id;
  auto create = wire::GroupCreate::decode(message);
  if (create.size < 1 || create.max_restarts < 0)
    throw UsageError("a Group needs a size of at least 1 and no negative max_restarts");
  auto group =
      create_group_locked(GroupSettings{create.size, create.max_restarts, std::move(create.task)});
  const uint64_t id = group->id();
  group_owners_[id] = owner;
  group->set_observer([this, id, owner] {
    auto found = groups_.find(id);
    if (found == groups_.end()) return;
    const GroupCore& core = *found->second;
    notify_owner_locked(owner, wire::GroupEvent{id, core.restarts_locked(), core.ended_locked(),
                                                core.exitcodes_locked(),
                                                wire::ErrorAccount::of(core.start_error_locked()),
                                                core.member_pids_locked()}
                                   .encode());
  });
  reply_locked(slot, wire::Reply{request, Outcome::kValue, id, {}});
}

void Master::on_group_call_request_locked(Slot& slot, uint64_t owner, bridge::Received& message) {
  const uint64_t request = message.envelope.id;
  on_group_call_locked(owner, wire::GroupCall::decode(message));
  reply_locked(slot, wire::Reply{request, Outcome::kValue, 0, {}});
}

void Master::on_pool_call_locked(Slot& slot, uint64_t owner, const wire::PoolCall& call) {
  PoolCore& pool = owned_pool_locked(owner, call.pool);
  wire::Reply reply{call.request, Outcome::kValue, 0, {}};
  switch (call.op) {
    case wire::PoolCall::Op::kSize:
      reply.value = static_cast<uint64_t>(pool.size());
      break;
    case wire::PoolCall::Op::kResize:
      pool.resize_locked(static_cast<int>(call.argument));
      break;
    case wire::PoolCall::Op::kPids:
      reply.payload = serial::to_bytes(pool.pids_locked());
      break;
    case wire::PoolCall::Op::kWaitReady:
    case wire::PoolCall::Op::kJoin:
      if (call.op == wire::PoolCall::Op::kJoin && pool.running_locked())
        throw UsageError("Pool::join() needs close() or terminate() first");
      nested_waits_.push_back(NestedWait{owner, call.request, call.pool, call.op});
      return;  // answered by answer_nested_waits_locked
    case wire::PoolCall::Op::kClose:
      pool.close_locked();
      break;
    case wire::PoolCall::Op::kTerminate:
      pool.terminate_locked();
      break;
    case wire::PoolCall::Op::kRelease:
      // The worker's side ran the callbacks; this side never has any.
      pools_.erase(call.pool);
      pool_owners_.erase(call.pool);
      break;
  }
  reply_locked(slot, reply);
}

namespace {

// A job submitted by a worker's pool: every chunk's outcome goes back to that worker, whose copy
// of the job is the one its code waits on; nothing here reads the outcome again, so its bytes
// move on.
class RelaySink final : public detail::ResultSink {
 public:
  RelaySink(size_t chunks, std::function<void(wire::JobChunk)> relay)
      : chunks_(chunks), relay_(std::move(relay)) {}
  void store(size_t chunk, uint64_t, uint32_t, detail::Bytes& results, size_t offset) override {
    relay_(wire::JobChunk{0, 0, chunk, std::move(results), offset, {}});
  }
  void fail(size_t chunk, uint64_t, uint32_t items, const std::exception_ptr& error) override {
    // No items: the pool stopped reading the job here (terminated, broken), and each chunk not
    // read yet fails with the reason.
    const size_t last = items == 0 ? chunks_ : chunk + 1;
    for (size_t failed = chunk; failed < last; ++failed)
      relay_(wire::JobChunk{0, 0, failed, {}, 0, wire::ErrorAccount::of(error)});
  }

 private:
  const size_t chunks_;
  std::function<void(wire::JobChunk)> relay_;
};

}  // namespace

void Master::on_pool_submit_locked(uint64_t owner, wire::PoolSubmit submit) {
  PoolCore& pool = owned_pool_locked(owner, submit.pool);
  auto job = std::make_shared<detail::Job>();
  // The worker's side decides what a failed chunk means; here every chunk runs.
  job->fails_as_whole = false;
  const size_t chunks = submit.chunks.size();
  job->source = std::make_unique<detail::EncodedChunks>(std::move(submit.chunks),
                                                        std::move(submit.chunk_sizes));
  job->sink = std::make_unique<RelaySink>(
      chunks, [this, owner, pool_id = submit.pool, job_id = submit.job](wire::JobChunk event) {
        event.pool = pool_id;
        event.job = job_id;
        notify_owner_locked(owner, event.encode());
      });
  pool.submit_locked(job);
}

void Master::on_group_call_locked(uint64_t owner, const wire::GroupCall& call) {
  GroupCore& group = owned_group_locked(owner, call.group);
  switch (call.op) {
    case wire::GroupCall::Op::kStart:
      group.start_locked();
      break;
    case wire::GroupCall::Op::kTerminate:
      group.terminate_locked();
      break;
    case wire::GroupCall::Op::kRelease:
      group_owners_.erase(call.group);
      if (group.ended_locked() || !group.started_locked()) {
        groups_.erase(call.group);
      } else {
        orphan_groups_.push_back(call.group);
      }
      break;
  }
}

void Master::answer_nested_waits_locked() {
  for (auto it = nested_waits_.begin(); it != nested_waits_.end();) {
    auto pool = pools_.find(it->pool);
    Slot* slot = slot_of_locked(it->owner);
    if (pool == pools_.end() || !slot) {
      it = nested_waits_.erase(it);
      continue;
    }
    const PoolCore& core = *pool->second;
    std::exception_ptr error;
    bool done = false;
    if (it->op == wire::PoolCall::Op::kJoin) {
      done = core.finished_locked();
    } else if (!core.broken_locked().empty()) {
      done = true;
      error = std::make_exception_ptr(Error("the Pool cannot run tasks: " + core.broken_locked()));
    } else if (!core.running_locked()) {
      done = true;
      error = std::make_exception_ptr(UsageError("wait_ready() on a closed or terminated Pool"));
    } else {
      done = core.ready_workers_locked() >= core.size() || core.short_for_good_locked();
    }
    if (!done) {
      ++it;
      continue;
    }
    if (error) {
      reply_error_locked(*slot, it->request, error);
    } else {
      reply_locked(*slot, wire::Reply{it->request, Outcome::kValue, 0, {}});
    }
    it = nested_waits_.erase(it);
  }
  std::erase_if(orphan_groups_, [this](uint64_t id) {
    auto group = groups_.find(id);
    if (group == groups_.end()) return true;
    if (!group->second->ended_locked()) return false;
    groups_.erase(group);
    return true;
  });
}

void Master::nested_process_placed_locked(const ProcessState& process) {
  if (process.owner == kMasterId) return;
  wire::ProcessEvent event;
  event.process = process.id;
  event.pid = process.pid;
  event.host = process.host;
  notify_owner_locked(process.owner, event.encode());
}

void Master::nested_process_ended_locked(const ProcessState& process) {
  if (process.owner != kMasterId) {
    wire::ProcessEvent event;
    event.process = process.id;
    event.ended = true;
    event.pid = process.pid;
    event.host = process.host;
    event.exitcode = process.exitcode;
    event.error = process.error;
    event.start_error = wire::ErrorAccount::of(process.start_error);
    notify_owner_locked(process.owner, event.encode());
  }
  // What it started ends with it: nobody is left to use or join it.
  const uint64_t owner = process.id;
  std::vector<uint64_t> pools;
  for (const auto& [pool, pool_owner] : pool_owners_)
    if (pool_owner == owner) pools.push_back(pool);
  for (const uint64_t pool : pools) {
    if (auto found = pools_.find(pool); found != pools_.end()) {
      auto core = found->second;
      pools_.erase(found);
      core->terminate_locked();
    }
    pool_owners_.erase(pool);
  }
  std::vector<uint64_t> groups;
  for (const auto& [group, group_owner] : group_owners_)
    if (group_owner == owner) groups.push_back(group);
  for (const uint64_t group : groups) {
    group_owners_.erase(group);
    if (auto found = groups_.find(group); found != groups_.end()) {
      found->second->set_observer(nullptr);
      found->second->terminate_locked();
      orphan_groups_.push_back(group);
    }
  }
  std::vector<std::shared_ptr<ProcessState>> children;
  for (const auto& [id, child] : table_.children())
    if (child->owner == owner) children.push_back(child);
  for (auto& child : children) {
    FIBER_LOG_WARNING("%s ended; terminating %s, which it started", describe(process).c_str(),
                      describe(*child).c_str());
    terminate_locked(child, SIGTERM);
  }
}

}  // namespace fiber::internal
