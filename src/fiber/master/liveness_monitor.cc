#include "fiber/master/liveness_monitor.h"
#include "fiber/base/log.h"

#include <algorithm>
#include <cstdio>

namespace fiber::internal {
namespace {

int64_t milliseconds(Clock::duration duration) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(duration).count();
}

}  // namespace

std::vector<LivenessMonitor::Verdict> LivenessMonitor::check(const std::vector<Slot*>& slots,
                                                             Clock::time_point now,
                                                             Clock::time_point receiving_since) {
  std::vector<Verdict> verdicts;
  for (Slot* slot : slots) {
    if (slot->gone()) continue;
    const auto silent = now - std::max(slot->last_heard, receiving_since);
    if (!slot->local || !settings_.pid_checks) {
      // No pid to look at: silence is the only sign.
      if (silent > settings_.heartbeat_timeout) {
        verdicts.push_back({slot, true,
                            "it sent nothing for " + std::to_string(milliseconds(silent)) +
                                " ms (heartbeat timeout)"});
      }
      continue;
    }
    if (!pid_gone_(slot->pid)) {
      slot->missing_since.reset();
      // Alive, yet silent: it is stopped or hung, or its messages no longer reach the master (a
      // transport connection that broke one way). Its work must not wait for it.
      if (silent > settings_.heartbeat_timeout) {
        verdicts.push_back({slot, false,
                            "its process is alive but nothing from it arrived for " +
                                std::to_string(milliseconds(silent)) +
                                " ms, not even a heartbeat"});
      }
      continue;
    }
    // Messages it sent just before dying may still be in transit: give them two rounds.
    if (!slot->missing_since) {
      slot->missing_since = now;
    } else if (now - *slot->missing_since >= 2 * settings_.liveness_interval) {
      verdicts.push_back({slot, true, ""});
    }
  }
  return verdicts;
}

std::optional<LivenessMonitor::Verdict> LivenessMonitor::on_heartbeat(
    Slot& slot, uint64_t sent_before, uint64_t received, int64_t stamp_ns, Clock::time_point now,
    const std::vector<Slot*>& slots) {
  if (slot.gone()) return std::nullopt;
  // MPI keeps the order of its messages: fewer of them here than it had sent means some were
  // lost on the way.
  if (slot.messages_received < sent_before) {
    return Verdict{&slot, false,
                   std::to_string(sent_before - slot.messages_received) + " of its " +
                       std::to_string(sent_before) +
                       " messages to the master never arrived (lost by Open MPI's transport)"};
  }
  // Only a heartbeat read soon after it was sent tells what had arrived by now; one read late
  // (after a spawn paused receiving, or while the master catches up) is skipped.
  const int64_t lag = now.time_since_epoch().count() - stamp_ns;
  slot.least_heartbeat_lag_ns = std::min(slot.least_heartbeat_lag_ns, lag);
  const int64_t interval_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(settings_.heartbeat_interval).count();
  if (lag - slot.least_heartbeat_lag_ns > interval_ns / 2) return std::nullopt;
  // Messages sent before the previous fresh heartbeat was read had a heartbeat interval to
  // arrive before this one was sent (MPI keeps their order, so a count tells which).
  const uint64_t owed = slot.sent_at_last_beat > received ? slot.sent_at_last_beat - received : 0;
  slot.sent_at_last_beat = slot.messages_sent;
  if (owed == 0) {
    slot.owing_since.reset();
    return std::nullopt;
  }
  if (!slot.owing_since) slot.owing_since = now;
  if (now - *slot.owing_since <= settings_.heartbeat_timeout) return std::nullopt;
  // Several workers lacking messages at once means the master's own sending is stuck (Open
  // MPI's shared-memory fragments used up, say): declaring them all dead would not help.
  const auto long_owing = [&](const Slot* s) {
    return !s->gone() && s->owing_since && now - *s->owing_since > settings_.heartbeat_timeout;
  };
  const auto owing = std::count_if(slots.begin(), slots.end(), long_owing);
  const auto live =
      std::count_if(slots.begin(), slots.end(), [](const Slot* s) { return !s->gone(); });
  if (owing >= 2 && 2 * owing > live) {
    if (!sending_stuck_) {
      sending_stuck_ = true;
      FIBER_LOG_WARNING(
          "messages from the master to %ld of its %ld workers have not arrived "
          "for over %.1f s: the master's MPI sends are stuck (Open MPI's shared-memory "
          "transport may have run out of fragments after killed processes)",
          static_cast<long>(owing), static_cast<long>(live),
          std::chrono::duration<double>(settings_.heartbeat_timeout).count());
    }
    return std::nullopt;
  }
  return Verdict{&slot, false,
                 "it still lacks " + std::to_string(owed) + " message(s) sent to it more than " +
                     std::to_string(milliseconds(now - *slot.owing_since)) + " ms ago (" +
                     std::to_string(received) + " of " + std::to_string(slot.messages_sent) +
                     " arrived; Open MPI's transport lost or holds them)"};
}

}  // namespace fiber::internal
