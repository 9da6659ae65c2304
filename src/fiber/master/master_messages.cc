// The master's messages: every one is checked against its sender's numbering, then routed to
// the process table, a pool or the queue service.
#include <unistd.h>

#include <cstdio>

#include "fiber/base/log.h"
#include "fiber/errors.h"
#include "fiber/function_ref.h"
#include "fiber/master/master.h"
#include "fiber/serialization.h"
#include "mpi_bridge/launch_environment.h"

namespace fiber::internal {

void Master::send_locked(MPI_Comm comm, int dest, const Outgoing& message) {
  bridge::Envelope envelope{
      static_cast<uint32_t>(message.kind), message.flags, message.id, message.aux, own_pid_, 0};
  Slot* slot = table_.find(comm, dest);
  if (slot) envelope.seq = static_cast<uint32_t>(slot->messages_sent++);
  engine_.post(comm, dest, envelope, message.payload());
  if (slot && slot->local && !slot->gone()) engine_.ring(slot->pid);
}

void Master::on_message(Link& link, bridge::Received& message) {
  auto held = engine_.lock();
  try {
    route_locked(link, message);
  } catch (const std::exception& e) {
    FIBER_LOG_ERROR("ignored a bad message (kind %u) from rank %d: %s", message.envelope.kind,
                    message.source, e.what());
  }
  engine_.notify_locked();
}

bool Master::check_sequence_locked(Slot& slot, const bridge::Received& message) {
  if (message.envelope.sender == static_cast<uint32_t>(slot.pid) &&
      message.envelope.seq == static_cast<uint32_t>(slot.messages_received))
    return true;
  // Not the message expected next from this worker: one was lost, or MPI delivered a stale
  // message of another process in its place. What it carried cannot be trusted and something it
  // sent is missing: its work runs elsewhere.
  declare_unreachable_locked(slot, "a message arrived in place of its message " +
                                       std::to_string(slot.messages_received) + " (sent by pid " +
                                       std::to_string(message.envelope.sender) +
                                       " as its message " + std::to_string(message.envelope.seq) +
                                       ", kind " + std::to_string(message.envelope.kind) + ")");
  return false;
}

void Master::route_locked(Link& link, bridge::Received& message) {
  const auto kind = static_cast<Kind>(message.envelope.kind);
  const MPI_Comm comm = link.comm.get();
  const int source = message.source;
  Slot* slot = table_.find(comm, source);
  if (kind != Kind::kHello && (!slot || slot->gone())) {
    // A worker given up on (declared dead, or one that never said hello): what it still sends
    // must not count (a queue item twice, a request nobody may answer). Its work runs elsewhere.
    return;
  }
  if (slot) {
    if (!check_sequence_locked(*slot, message)) return;
    // When the progress engine received it; a heartbeat's own time is read now, for its delay.
    slot->last_heard = kind == Kind::kHeartbeat ? Clock::now() : link.last_heard;
    if (kind == Kind::kHeartbeat) {
      const auto beat = wire::Heartbeat::decode(message);
      if (auto verdict =
              liveness_.on_heartbeat(*slot, beat.sent_before, beat.received, beat.sent_at_ns,
                                     slot->last_heard, live_slots_locked()))
        act_on_locked(*verdict);
    }
    ++slot->messages_received;
  }
  if (handlers_.dispatch(link, slot, message)) return;
  if (services_.serves(message.envelope.kind)) {
    services_.dispatch(
        wire::Requester{comm, source, requester_of(slot),
                        slot && slot->process ? describe(*slot->process) : "a worker"},
        message);
    return;
  }
  throw ProtocolError(std::string("unexpected message ") + kind_name(message.envelope.kind));
}

void Master::register_handlers() {
  handlers_.add(Kind::kHello, [this](Link& link, Slot*, bridge::Received& message) {
    on_hello_locked(link, message.source, wire::Hello::decode(message));
  });
  // route_locked reads a heartbeat before any handler, for the liveness monitor.
  handlers_.add(Kind::kHeartbeat, [](Link&, Slot*, bridge::Received&) {});
  handlers_.add(Kind::kGoodbye, [this](Link&, Slot* slot, bridge::Received&) {
    if (slot) retire_locked(*slot);
  });
  handlers_.add(Kind::kLeave, [this](Link&, Slot* slot, bridge::Received&) {
    if (slot) on_leave_locked(*slot);
  });
  handlers_.add(Kind::kExited, [this](Link&, Slot* slot, bridge::Received& message) {
    if (!slot) throw ProtocolError("exit report from an unknown worker");
    on_exited_locked(*slot, wire::Exited::decode(message));
  });
  handlers_.add(Kind::kPoolReady, [this](Link&, Slot* slot, bridge::Received& message) {
    if (PoolCore* pool = pool_of_locked(slot, message))
      pool->on_worker_ready(*slot->process, wire::PoolReady::decode(message));
  });
  handlers_.add(Kind::kPoolStarted, [this](Link&, Slot* slot, bridge::Received& message) {
    if (PoolCore* pool = pool_of_locked(slot, message))
      pool->on_started(*slot->process, wire::PoolStarted::decode(message));
  });
  handlers_.add(Kind::kPoolResult, [this](Link&, Slot* slot, bridge::Received& message) {
    if (PoolCore* pool = pool_of_locked(slot, message))
      pool->on_result(*slot->process, wire::PoolResult::decode(message));
  });
  handlers_.add(Kind::kGroupPorts, [this](Link&, Slot* slot, bridge::Received& message) {
    if (!slot || !slot->process) return;
    const auto ports = wire::GroupPorts::decode(message);
    if (GroupCore* group = group_of_locked(*slot->process))
      group->on_ports_locked(*slot->process, ports);
  });
  register_nested_handlers();
  queues_.serve(services_);
  manager_.serve(services_);
}

PoolCore* Master::pool_of_locked(const Slot* slot, const bridge::Received& message) {
  if (!slot || !slot->process) return nullptr;
  auto pool = pools_.find(message.envelope.aux);
  return pool == pools_.end() ? nullptr : pool->second.get();
}

void Master::on_hello_locked(Link& link, int rank, const wire::Hello& hello) {
  if (slots_expected_ > 0) --slots_expected_;
  ++link.hellos;
  std::string refusal;
  if (hello.protocol != protocol_version()) {
    refusal = "worker speaks fibermpi protocol " + std::to_string(hello.protocol) +
              ", the master " + std::to_string(protocol_version());
  } else if (hello.module != detail::ModuleTable::instance().engine_module_id()) {
    refusal = "worker pid " + std::to_string(hello.pid) + " on " + hello.host +
              " runs a different binary than the master (build-id hash " +
              std::to_string(hello.module) + " vs " +
              std::to_string(detail::ModuleTable::instance().engine_module_id()) +
              "): rebuild or redeploy so every process runs the same executable";
  }
  if (!refusal.empty()) {
    send_locked(link.comm.get(), rank, wire::Refuse{refusal}.encode());
    --link.live_slots;
    FIBER_LOG_WARNING("refused a worker: %s", refusal.c_str());
    // The processes waiting now want the executable set now: a worker of an earlier one
    // (set_executable since; a spawn batch's extra workers come late) fails none of them, and
    // the spawner starts what they want.
    if (link.spawned && link.executable == settings_.spawn.executable)
      fail_pending_locked(1, refusal);
    else
      spawner_.wake_locked();  // the slot it stood for is not coming: spawn what is wanted
    return;
  }
  auto created = std::make_unique<Slot>();
  created->link = &link;
  created->rank = rank;
  created->pid = hello.pid;
  created->host = hello.host;
  created->pod = link.connected ? hello.pod : std::string();
  created->local = hello.host == host_;
  if (!created->local && !link.connected && !spans_hosts_) note_other_host_locked(hello.host);
  // A static rank or joined worker here that its launcher bound keeps a core to itself.
  if (created->local && !link.spawned) binder_.hold_launcher_cores(hello.pid);
  if (created->local && link.spawned && bridge::built_against_mpi() == MpiFamily::kMpich)
    remember_spawned_pid_locked(hello.pid);
  created->last_heard = Clock::now();
  created->idle_since = created->last_heard;
  created->messages_received = 1;  // its hello
  table_.add(std::move(created));
  send_locked(
      link.comm.get(), rank,
      wire::Welcome{static_cast<int>(::getpid()), host_, signal_dir_, settings_.heartbeat_interval}
          .encode());
  if (link.connected && table_.pending().empty()) {
    // A worker of a job that joined, and no process waits for one: the first pool that takes
    // such workers grows onto it.
    for (auto& [id, pool] : std::map(pools_.begin(), pools_.end()))
      if (pool->adopt_joined_worker_locked()) break;
  }
  assign_idle_slots_locked();
}

void Master::on_exited_locked(Slot& slot, const wire::Exited& exited) {
  if (!slot.process || slot.process->id != exited.process) {
    throw ProtocolError("worker pid " + std::to_string(slot.pid) + " reported the end of process " +
                        std::to_string(exited.process) + ", which it was not running");
  }
  const int code = exited.code;
  const bool worker_leaves = exited.worker_leaves;
  auto process = slot.process;
  slot.process.reset();
  unbind_locked(slot, !worker_leaves);
  process->error = exited.error;
  if (exited.without_finalize) {
    // Like a death for what follows: the finalize of its MPI job may never complete.
    worker_lost_ = true;
    if (slot.static_rank()) static_rank_lost_at_ = Clock::now();
  }
  // The slot's fate is settled before the process ends, so that a replacement the pool starts
  // as it learns of the end can take this very slot (a static rank stays in use).
  if (worker_leaves) {
    // Its last message: the worker process ends.
    if (slot.spawned() && slot.local) exiting_pids_.push_back(slot.pid);
    retire_locked(slot);
  } else if (slot.leaving ||
             (slot.spawned() && (process->retire_worker_after || settings_.reserve_max_idle == 0 ||
                                 !ProcessTable::runs(slot, settings_.spawn.executable)))) {
    shut_down_slot_locked(slot);
  } else {
    // Idle again: a static rank or joined worker waits for the next process, a spawned pool
    // worker waits in the reserve.
    slot.state = Slot::State::kIdle;
    slot.idle_since = Clock::now();
  }
  end_process_locked(process, code, describe_exit(*process, code));
  assign_idle_slots_locked();
}

void Master::on_leave_locked(Slot& slot) {
  slot.leaving = true;
  if (!slot.process) {
    if (slot.state == Slot::State::kIdle) shut_down_slot_locked(slot);
    return;
  }
  // Whatever it runs finishes first: a pool worker drains, a Process runs to its end.
  if (slot.process->pool != 0) {
    if (auto pool = pools_.find(slot.process->pool); pool != pools_.end())
      pool->second->release_worker_locked(slot.process->id);
  }
}

void Master::on_peers_failed(Link& link, const std::vector<int>& ranks) {
  auto held = engine_.lock();
  for (const int rank : ranks) {
    Slot* slot = table_.find(link.comm.get(), rank);
    if (!slot || slot->gone()) continue;
    FIBER_LOG_WARNING("MPI reports that worker pid %d on %s died", slot->pid, slot->host.c_str());
    declare_dead_locked(*slot);
  }
  engine_.notify_locked();
}

}  // namespace fiber::internal
