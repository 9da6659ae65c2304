#include "fiber/worker/master_link.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "fiber/base/fault_injection.h"
#include "fiber/base/launch_site.h"
#include "fiber/base/log.h"
#include "fiber/base/process_presence.h"
#include "fiber/errors.h"
#include "fiber/function_ref.h"
#include "fiber/process/process_messages.h"
#include "fiber/serialization.h"
#include "fiber/wire/link_messages.h"
#include "fiber/worker/fatal_signal.h"
#include "fiber/worker/start_up_watchdog.h"
#include "mpi_bridge/environment.h"

namespace fiber::internal {

namespace {
// This worker process's link; set while it lives.
std::atomic<MasterLink*> g_current_link{nullptr};
}  // namespace

MasterLink::MasterLink(const Settings& settings, ProgressEngine& engine, Link& link,
                       int master_rank, bool spawned, bool joined)
    : settings_(settings),
      engine_(engine),
      link_(link),
      master_rank_(master_rank),
      spawned_(spawned),
      joined_(joined),
      host_(bridge::Environment::hostname()) {
  fault_drop_message_ = claim_message_to_drop();
  register_handlers();
  g_current_link = this;
}

MasterLink::~MasterLink() {
  if (g_current_link == this) g_current_link = nullptr;
}

MasterLink& MasterLink::current() {
  MasterLink* link = g_current_link;
  if (!link) throw UsageError("this process is not a worker: it has no link to a master");
  return *link;
}

void MasterLink::send(const Outgoing& message) {
  bridge::Envelope envelope{
      static_cast<uint32_t>(message.kind), message.flags, message.id, message.aux, own_pid_, 0};
  {
    // Numbered and posted in one step, so the numbers follow the order MPI delivers them in (a
    // heartbeat also tells how many went before it: wire::Heartbeat::sent_before).
    std::lock_guard order(send_order_mu_);
    if (last_word_sent_) return;
    if (wire::is_last_word(message)) last_word_sent_ = true;
    if (message.kind == Kind::kHeartbeat) envelope.id = messages_sent_;
    envelope.seq = static_cast<uint32_t>(messages_sent_++);
    engine_.post(link_.comm.get(), master_rank_, envelope, message.payload());
  }
  // A heartbeat wakes nobody: the master reads it at its next pass (one every liveness interval
  // at the latest), well within the heartbeat timeout. Ringing for each cost a master of many
  // idle workers two wake-ups per worker and second.
  if (message.kind == Kind::kHeartbeat) return;
  if (const int master = master_bell_pid_.load(std::memory_order_acquire); master != 0)
    engine_.ring(master);
}

void MasterLink::report_exit(uint64_t process_id, int code, const std::string& error,
                             bool worker_leaves) {
  send(wire::Exited{process_id, code, error, worker_leaves}.encode());
}

void MasterLink::say_goodbye() { send(wire::Goodbye{}.encode()); }

void MasterLink::end_process_now(uint64_t process, int code, const std::string& error) {
  std::fflush(nullptr);
  send(wire::Exited{process, code, error, true, true}.encode());
  // The report must leave before the process does; nothing else is waited for (another thread
  // may be stuck in a collective with a dead peer, so MPI is not finalised).
  const auto give_up = Clock::now() + std::chrono::seconds(2);
  while (!engine_.outbox().empty() && Clock::now() < give_up) {
    try {
      engine_.outbox().progress();
    } catch (const std::exception&) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  std::_Exit(0);
}

void MasterLink::handshake() {
  wire::Hello hello;
  hello.protocol = protocol_version();
  hello.module = detail::ModuleTable::instance().engine_module_id();
  hello.pid = static_cast<int>(::getpid());
  hello.host = host_;
  // Its pod: the name, and the uid that tells a replacement of the same name apart.
  hello.pod = fiberjob_pod_identity();
  send(hello.encode());
  auto held = engine_.lock();
  engine_.changes().wait(held, [this] { return handshake_ != Handshake::kWaiting; });
  if (handshake_ == Handshake::kRefused) {
    FIBER_LOG_ERROR("refused by the master: %s", refusal_.c_str());
    // Exit status 0: Open MPI treats a non-zero one as a failure of the whole job.
    throw SpawnError("refused by the master: " + refusal_);
  }
}

void MasterLink::on_message(Link&, bridge::Received& message) {
  auto held = engine_.lock();
  try {
    handle_locked(message);
  } catch (const std::exception& e) {
    FIBER_LOG_ERROR("ignored a bad %s message: %s", kind_name(message.envelope.kind), e.what());
  }
  engine_.notify_locked();
}

void MasterLink::handle_locked(bridge::Received& message) {
  if (fault_drop_message_ != 0 && ++messages_seen_ == fault_drop_message_) {
    FIBER_LOG_WARNING("discarding message %llu (FIBER_FAULT_DROP_MESSAGE)",
                      static_cast<unsigned long long>(messages_seen_));
    return;
  }
  const bool from_master =
      master_pid_ == 0 || message.envelope.sender == static_cast<uint32_t>(master_pid_);
  if (!from_master || message.envelope.seq != static_cast<uint32_t>(messages_received_)) {
    // A message of the master's is missing, or MPI delivered one that is not the master's next:
    // this worker cannot know what it was asked to do. It leaves; its work runs elsewhere.
    FIBER_LOG_WARNING(
        "expected message %llu from the master (pid %d), got message "
        "%u from pid %u (kind %u); leaving so that its work runs elsewhere",
        static_cast<unsigned long long>(messages_received_), master_pid_, message.envelope.seq,
        message.envelope.sender, message.envelope.kind);
    std::fflush(nullptr);
    std::_Exit(1);
  }
  ++messages_received_;
  if (!handlers_.dispatch(message))
    throw ProtocolError(std::string("unexpected message ") + kind_name(message.envelope.kind));
}

void MasterLink::register_handlers() {
  handlers_.add(Kind::kWelcome, [this](bridge::Received& message) {
    const auto welcome = wire::Welcome::decode(message);
    master_pid_ = welcome.master_pid;
    master_local_ = welcome.master_host == host_;
    run_directory_ = welcome.run_directory;
    heartbeat_interval_ = welcome.heartbeat_interval;
    if (master_local_ && engine_.open_doorbell(run_directory_, static_cast<int>(::getpid())))
      master_bell_pid_.store(master_pid_, std::memory_order_release);
    handshake_ = Handshake::kAccepted;
    g_welcomed.store(true, std::memory_order_release);
  });
  handlers_.add(Kind::kRefuse, [this](bridge::Received& message) {
    refusal_ = wire::Refuse::decode(message).reason;
    handshake_ = Handshake::kRefused;
  });
  handlers_.add(Kind::kRun, [this](bridge::Received& message) {
    assigned_process_ = message.envelope.id;
    mailbox_.push_back(std::move(message));
  });
  handlers_.add(Kind::kShutdown, [this](bridge::Received& message) {
    shutdown_received_ = true;
    mailbox_.push_back(std::move(message));
  });
  handlers_.add(Kind::kTerminate, [this](bridge::Received& message) {
    // Only the process it was told to run: a terminate that raced with that process's end is
    // no business of the next one. Marked running, so the signal ends it even before its
    // function starts.
    const auto terminate = wire::Terminate::decode(message);
    if (terminate.process == assigned_process_) {
      set_running_process(assigned_process_);
      ::kill(::getpid(), terminate.signal);
    }
  });
  handlers_.add(Kind::kReply, [this](bridge::Received& message) {
    auto reply = wire::Reply::decode(message);
    auto it = replies_.find(reply.request);
    if (it == replies_.end())
      throw ProtocolError("reply to an unknown request " + std::to_string(reply.request));
    it->second = std::move(reply);
  });
}

void MasterLink::on_peers_failed(Link&, const std::vector<int>& ranks) {
  // In the static world the link is shared with the other workers, whose deaths do not matter.
  if (std::find(ranks.begin(), ranks.end(), master_rank_) == ranks.end()) return;
  FIBER_LOG_ERROR("MPI reports that the master died, exiting");
  std::_Exit(1);
}

void MasterLink::after_receiving(Clock::time_point now, bool tick) {
  if (tick) check_master_alive();
  std::chrono::milliseconds interval{0};
  {
    auto held = engine_.lock();
    interval = heartbeat_interval_;
  }
  if (interval.count() == 0) return;  // not welcomed yet
  if (joined_ && !leave_sent_ && g_leave_requested.load()) {
    leave_sent_ = true;
    send(wire::Leave{}.encode());
  }
  if (now < next_heartbeat_) return;
  next_heartbeat_ = now + interval;
  uint64_t received = 0;
  {
    auto held = engine_.lock();
    received = messages_received_;
  }
  // How many messages arrived, for the master's delivery check.
  send(wire::Heartbeat{0, received, static_cast<int64_t>(now.time_since_epoch().count())}.encode());
}

int MasterLink::local_master_pid() {
  auto held = engine_.lock();
  return master_local_ ? master_pid_ : 0;
}

void MasterLink::check_master_alive() {
  int pid = 0;
  {
    auto held = engine_.lock();
    if (!master_local_) return;
    pid = master_pid_;
  }
  if (process_gone(pid)) {
    {
      // A master that ended well told this worker to leave just before: the message may have
      // arrived after this pass looked (so one more pass first), or wait in the mailbox for
      // the main thread, which then leaves with status 0. Leaving with 1 instead made mpirun
      // fail a run that had succeeded.
      auto held = engine_.lock();
      if (shutdown_received_) return;
      if (!master_gone_seen_) {
        master_gone_seen_ = true;
        return;
      }
    }
    // Nobody is left to report to; MPI cannot be finalised with a dead peer.
    FIBER_LOG_WARNING("the master (pid %d) is gone, exiting", pid);
    std::_Exit(1);
  }
}

Assignment MasterLink::next_assignment() {
  auto held = engine_.lock();
  engine_.await(held, [this] { return !mailbox_.empty(); });
  bridge::Received message = std::move(mailbox_.front());
  mailbox_.pop_front();
  Assignment assignment;
  if (static_cast<Kind>(message.envelope.kind) == Kind::kShutdown) {
    assignment.shutdown = true;
    assignment.run_ends = wire::Shutdown::decode(message).run_ends;
    return assignment;
  }
  auto run = wire::Run::decode(message);
  assignment.process_id = run.process;
  assignment.stay_after = run.stay_after;
  assignment.name = std::move(run.name);
  assignment.task = std::move(run.task);
  assignment.visible_gpus = std::move(run.visible_gpus);
  return assignment;
}

wire::Reply MasterLink::request(Outgoing message) {
  {
    auto held = engine_.lock();
    message.id = next_request_++;
    replies_.emplace(message.id, std::nullopt);
  }
  send(message);
  auto held = engine_.lock();
  engine_.await(held, [&] { return replies_[message.id].has_value(); });
  wire::Reply reply = std::move(*replies_[message.id]);
  replies_.erase(message.id);
  return reply;
}

}  // namespace fiber::internal
