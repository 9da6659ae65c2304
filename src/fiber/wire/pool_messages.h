// The messages between a pool's master side and its workers: ready, tasks, results, stop.
// Internal.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fiber/detail/job.h"
#include "fiber/wire/outgoing.h"
#include "fiber/wire/task_message.h"

namespace fiber::internal::wire {

/// Worker -> master: the pool worker ran its initializer and takes tasks from now on, or the
/// initializer threw (`initializer_failed`, with the exception's type and message).
struct PoolReady {
  uint64_t pool = 0;
  bool initializer_failed = false;
  std::string error_type;
  std::string error_message;

  Outgoing encode() const;
  static PoolReady decode(const bridge::Received& in);
};

/// Master -> worker: chunks of `pool`'s tasks, several per message (task_message.h).
struct PoolTasks {
  uint64_t pool = 0;
  std::span<const std::byte> message;  ///< A TaskMessageBuilder's bytes (sending only).

  Outgoing encode() const;  ///< Borrows `message`.
  /// The pool and its chunks; throws ProtocolError on a malformed message, giving none.
  static std::pair<uint64_t, std::vector<TaskChunk>> decode(const bridge::Received& in);
};

/// Worker -> master: what became of one chunk.
struct PoolResult {
  uint64_t task = 0;
  uint64_t pool = 0;
  PoolOutcome outcome = PoolOutcome::kResults;
  /// The worker starts the chunk it holds next as this result leaves (it was queued there):
  /// with kPoolStarted, how the master knows which chunks a worker started (only those count
  /// against max_task_retries when the worker is lost).
  bool next_started = false;
  /// kResults: the compute time in ns (8 bytes), then the encoded results of every item;
  /// kRaised: the exception's type name and message.
  detail::Bytes body;

  Outgoing encode() const;                         ///< Borrows `body`.
  static PoolResult decode(bridge::Received& in);  ///< Takes the payload.

  /// Where the results start in a kResults body.
  static constexpr size_t kResultsOffset = sizeof(uint64_t);
  /// Starts a kResults body in `writer` (its compute time is filled in by finish_results).
  static void begin_results(serial::Writer& writer);
  static void finish_results(serial::Writer& writer, uint64_t compute_ns);
  /// Writes a kRaised body.
  static void write_raised(serial::Writer& writer, const std::string& type,
                           const std::string& message);
  /// The compute time of a kResults body.
  uint64_t compute_ns() const;
  /// The type name and message of a kRaised body.
  std::pair<std::string, std::string> raised() const;
};

/// Worker -> master: the worker started chunk `task`, which reached it while it was idle (a
/// chunk started right after another is announced by that one's result, next_started).
struct PoolStarted {
  uint64_t task = 0;
  uint64_t pool = 0;

  Outgoing encode() const;
  static PoolStarted decode(const bridge::Received& in);
};

/// Master -> worker: leave `pool` once nothing is left to run, or (`drop_queued`) after the
/// current task, dropping the rest.
struct PoolStop {
  uint64_t pool = 0;
  bool drop_queued = false;

  Outgoing encode() const;
  static PoolStop decode(const bridge::Received& in);
};

}  // namespace fiber::internal::wire
