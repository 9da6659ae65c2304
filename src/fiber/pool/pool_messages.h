// The messages between a pool's master side and its workers: ready, tasks, results, stop.
// Internal.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fiber/detail/job.h"
#include "fiber/pool/task_message.h"
#include "fiber/wire/message_codec.h"

namespace fiber::internal::wire {

/// Worker -> master: the pool worker ran its initializer and takes tasks from now on, or the
/// initializer threw (`initializer_failed`, with the exception's type and message).
struct PoolReady {
  FIBER_WIRE_MESSAGE(PoolReady, Kind::kPoolReady)
  uint64_t pool = 0;
  bool initializer_failed = false;
  std::string error_type;
  std::string error_message;

  static void fields(auto& self, auto& f) {
    f.aux(self.pool);
    f.bits(self.initializer_failed);
    f.body(self.error_type);
    f.body(self.error_message);
  }
};

/// Master -> worker: chunks of `pool`'s tasks, several per message (task_message.h). Encoding
/// lends `message`.
struct PoolTasks {
  FIBER_WIRE_MESSAGE(PoolTasks, Kind::kPoolTask)
  uint64_t pool = 0;
  /// A TaskMessageBuilder's bytes; decoded, they point into the received message.
  std::span<const std::byte> message;

  static void fields(auto& self, auto& f) {
    f.aux(self.pool);
    f.rest(self.message);
  }
  /// Its chunks; throws ProtocolError on a malformed message, giving none.
  std::vector<TaskChunk> chunks() const { return split_task_message(message); }
};

/// Worker -> master: what became of one chunk.
struct PoolResult {
  FIBER_WIRE_MESSAGE(PoolResult, Kind::kPoolResult)
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

  static void fields(auto& self, auto& f) {
    f.id(self.task);
    f.aux(self.pool);
    f.flags(self.outcome);
    f.bits(self.next_started);
    f.rest(self.body);
  }
  void validate() const;

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
  FIBER_WIRE_MESSAGE(PoolStarted, Kind::kPoolStarted)
  uint64_t task = 0;
  uint64_t pool = 0;

  static void fields(auto& self, auto& f) {
    f.id(self.task);
    f.aux(self.pool);
  }
};

/// Master -> worker: leave `pool` once nothing is left to run, or (`drop_queued`) after the
/// current task, dropping the rest.
struct PoolStop {
  FIBER_WIRE_MESSAGE(PoolStop, Kind::kPoolStop)
  uint64_t pool = 0;
  bool drop_queued = false;

  static void fields(auto& self, auto& f) {
    f.aux(self.pool);
    f.bits(self.drop_queued);
  }
};

}  // namespace fiber::internal::wire
