// One worker process as the master sees it: where it is, what it runs, and what the liveness and
// delivery checks know of it. Internal.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "fiber/engine/link.h"
#include "fiber/process/process_state.h"

namespace fiber::internal {

/// Guarded by the runtime's lock.
struct Slot {
  Link* link = nullptr;
  int rank = 0;
  int pid = 0;
  std::string host;
  /// The Kubernetes pod it runs in (a worker pod of the master's FiberJob), or empty.
  std::string pod;
  /// Its pod is being released: it takes no new work and is told to leave.
  bool releasing = false;
  bool local = false;  ///< Same host as the master: its pid can be checked.
  /// kClosing: told to shut down, its last word (kGoodbye) not read yet; it may still send.
  enum class State { kIdle, kBusy, kClosing, kGone } state = State::kIdle;
  std::shared_ptr<ProcessState> process;
  bool leaving = false;  ///< A joined worker that asked to leave: retired once its process ends.
  bool used = false;     ///< Has run a process (a Process needs one that has run nothing).
  Clock::time_point idle_since;  ///< When it last became idle (the reserve's idle timeout).

  // ---- Liveness ----
  std::optional<Clock::time_point> missing_since;  ///< When its pid was first seen gone.
  Clock::time_point last_heard;                    ///< Its last message (heartbeats included).
  /// Every message to it is numbered; its heartbeats say how many arrived. Messages sent before
  /// its previous fresh heartbeat that have still not arrived are owed.
  uint64_t messages_sent = 0;
  uint64_t sent_at_last_beat = 0;
  std::optional<Clock::time_point> owing_since;
  /// Smallest (master's read time - worker's send stamp) of its heartbeats: clock offset plus
  /// the quickest delivery. A heartbeat read much later than that is stale (the master was
  /// behind reading) and says nothing about messages sent meanwhile.
  int64_t least_heartbeat_lag_ns = INT64_MAX;
  /// Messages that came from it, in order (each carries its number, checked on arrival).
  uint64_t messages_received = 0;

  bool gone() const noexcept { return state == State::kGone; }
  bool spawned() const noexcept { return link->spawned; }
  bool joined() const noexcept { return link->connected; }
  /// A rank of the static world (mpirun -n N).
  bool static_rank() const noexcept { return !link->spawned && !link->connected; }
};

}  // namespace fiber::internal
