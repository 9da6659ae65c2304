// The master's periodic work: liveness verdicts and what follows from them, workers that never
// reported, the reserve's trimming, and freeing communicators nobody can send on any more.
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "fiber/base/log.h"
#include "fiber/master/master.h"

namespace fiber::internal {
namespace {

// A communicator whose workers are all gone is freed once nothing has arrived on it for this
// long: messages of a worker that died may still be on the way (see kGoodbye in
// wire/message_kind.h).
constexpr std::chrono::seconds kLinkQuietPeriod{1};

// The signal a worker reported before dying of it (worker/fatal_signal.cc), or 0.
int read_signal_file(const std::string& dir, int pid) {
  if (dir.empty()) return 0;
  const std::string path = dir + "/" + std::to_string(pid);
  std::ifstream file(path);
  int signal = 0;
  if (file >> signal) {
    file.close();
    std::filesystem::remove(path);
    return signal;
  }
  return 0;
}

}  // namespace

void Master::after_receiving(Clock::time_point now, bool tick) {
  if (tick) {
    {
      auto held = engine_.lock();
      periodic_checks_locked(now);
    }
    // Free communicators whose workers are all gone, once the last messages to them (a
    // shutdown) have left and nothing more can arrive; only the polling thread touches links.
    engine_.erase_links([this, now](const Link& link) {
      return (link.spawned || link.connected) && link.live_slots <= 0 &&
             !engine_.outbox().has_sends(link.comm.get()) &&
             now - link.last_heard > kLinkQuietPeriod;
    });
  }
  queues_.expire(now);
  manager_.expire(now);
}

void Master::while_held(Clock::time_point now) {
  spawner_.check_watchdog(now);
  queues_.expire(now);
  manager_.expire(now);
}

std::vector<Slot*> Master::live_slots_locked() const {
  std::vector<Slot*> live;
  for (const auto& [key, slot] : table_.slots())
    if (!slot->gone()) live.push_back(slot.get());
  return live;
}

void Master::begin_join_turn() {
  {
    auto held = engine_.lock();
    for (auto& [id, pool] : pools_) pool->cover_pause_locked(join_pause_);
    join_turn_began_ = Clock::now();
  }
  // The chunks just queued leave before traffic stops.
  try {
    engine_.outbox().progress();
  } catch (const std::exception& e) {
    FIBER_LOG_ERROR("progress error: %s", e.what());
  }
  acceptor_.begin_turn();
}

void Master::end_join_turn() {
  acceptor_.end_turn();
  auto held = engine_.lock();
  if (join_turn_began_) {
    // A turn that ran out (its pod vanished) says nothing about the next: counted up to 2 s.
    const auto took = std::min(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - *join_turn_began_),
        std::chrono::microseconds(2'000'000));
    join_pause_ = (3 * join_pause_ + took) / 4;
    join_turn_began_.reset();
  }
  traffic_resumed_locked();
}

void Master::pod_connection_closed(const std::string& pod, int pid) {
  auto lock = engine_.lock();
  pods_gone_.push_back(GoneWorker{pod, pid, Clock::now()});
}

void Master::check_gone_pods_locked(Clock::time_point now) {
  // Long enough for a goodbye sent just before the end to be read; short beside a heartbeat.
  constexpr auto kGrace = std::chrono::milliseconds(200);
  std::erase_if(pods_gone_, [&](const GoneWorker& gone) {
    if (now - gone.closed_at < kGrace) return false;
    for (Slot* slot : live_slots_locked()) {
      // The identity carries the pod's uid: a replacement of the same name is another pod. A
      // worker told to shut down has no work and ends on its own. One that asked to leave (its
      // pod got SIGTERM) still runs what it had: killed before it finished (the grace period
      // ran out, mpirun ended it), it is as dead as any other, and waiting for its heartbeat
      // would hold its task for heartbeat_timeout.
      if (slot->pod != gone.pod || slot->pid != gone.pid || slot->state == Slot::State::kClosing) {
        continue;
      }
      // At shutdown nothing runs elsewhere: pods ending then are no news.
      if (!shut_down_) {
        FIBER_LOG_WARNING(
            "worker pid %d of pod %s: its connection to the launcher closed "
            "(the process or its pod is gone); declaring the worker dead so that its "
            "work runs elsewhere",
            slot->pid, gone.pod.c_str());
      }
      declare_dead_locked(*slot);
    }
    return true;
  });
}

void Master::periodic_checks_locked(Clock::time_point now) {
  check_hellos_locked(now);
  check_gone_pods_locked(now);
  process_watch_.begin_round();
  const auto verdicts = liveness_.check(live_slots_locked(), now, engine_.receiving_since());
  process_watch_.end_round();
  for (const auto& verdict : verdicts) act_on_locked(verdict);
  for (auto& [id, pool] : pools_) pool->tick_locked(now);
  for (auto& [id, group] : std::unordered_map(groups_)) group->tick_locked(now);
  answer_nested_waits_locked();
  trim_reserve_locked(now);
  table_.erase_gone();
}

void Master::check_hellos_locked(Clock::time_point now) {
  // Children have finished MPI_Init when the spawn returns, so a hello is due within moments;
  // one that has not come after hello_timeout is stuck (Open MPI's TCP transport sometimes
  // refuses a new child's connection: "received unexpected process identifier").
  const auto hello_timeout =
      std::min<Clock::duration>(settings_.spawn_timeout, settings_.hello_timeout);
  engine_.for_each_link([&](Link& link) {
    const int missing = link.expected_hellos - link.hellos;
    if (missing <= 0 || now - link.created < hello_timeout) return;
    // Workers that died before saying hello have no slot to watch; stop waiting for them so
    // replacements get spawned.
    FIBER_LOG_WARNING("%d worker(s) never reported after starting; giving up on them", missing);
    link.hellos = link.expected_hellos;
    link.live_slots -= missing;
    slots_expected_ = std::max(0, slots_expected_ - missing);
    spawner_.wake_locked();
  });
}

void Master::act_on_locked(const LivenessMonitor::Verdict& verdict) {
  Slot& slot = *verdict.slot;
  if (slot.gone()) return;
  if (!verdict.dead) {
    declare_unreachable_locked(slot, verdict.why);
    return;
  }
  if (!verdict.why.empty()) {
    FIBER_LOG_WARNING("worker pid %d on %s: %s; declaring it dead", slot.pid, slot.host.c_str(),
                      verdict.why.c_str());
  }
  declare_dead_locked(slot);
}

void Master::declare_dead_locked(Slot& slot) {
  engine_.outbox().abandon(slot.link->comm.get(), slot.rank);
  if (slot.static_rank()) static_rank_lost_at_ = Clock::now();
  worker_lost_ = true;
  if (auto process = slot.process) {
    int signal = read_signal_file(signal_dir_, slot.pid);
    if (signal == 0) signal = process->signal_sent != 0 ? process->signal_sent : SIGKILL;
    slot.process.reset();
    unbind_locked(slot, false);
    end_process_locked(process, -signal, describe_exit(*process, -signal));
  }
  retire_locked(slot);
}

void Master::declare_unreachable_locked(Slot& slot, const std::string& what) {
  const bool spawned = slot.spawned();
  FIBER_LOG_WARNING(
      "worker pid %d on %s: %s; declaring the worker dead so that its work "
      "runs elsewhere%s",
      slot.pid, slot.host.c_str(), what.c_str(),
      spawned ? ""
              : " (the process is left running: it belongs to the static world or to a "
                "joined job, whose ranks fibermpi never kills)");
  // It cannot be told to stop (what it would be told may not arrive); a spawned worker of this
  // host is ended the way terminate() ends one.
  if (spawned && slot.local) ::kill(slot.pid, SIGKILL);
  declare_dead_locked(slot);
}

void Master::trim_reserve_locked(Clock::time_point now) {
  bool fresh_expired = false;
  for (Slot* slot : table_.reserve_to_trim(now, settings_.spawn.executable, &fresh_expired))
    shut_down_slot_locked(*slot);
  // Nobody wanted a never-used worker for a whole idle timeout: stop keeping some started ahead
  // until the next Process has to be spawned.
  if (fresh_expired) processes_started_ = false;
}

}  // namespace fiber::internal
