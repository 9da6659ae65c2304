// kPoolTask messages carry several chunks each (fewer messages cost less, and each message still
// in flight to a worker that dies holds one of Open MPI's shared-memory fragments for good):
// a chunk count, then per chunk its task id, its size and its bytes (detail/task_chunk.h).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "fiber/detail/job.h"

namespace fiber::internal {

/// One chunk of a task message.
struct TaskChunk {
  uint64_t task = 0;
  detail::Bytes payload;
};

/// Bytes a chunk adds to a message besides its own.
inline constexpr size_t kTaskChunkOverhead = sizeof(uint64_t) + sizeof(uint32_t);

/// Builds one task message.
class TaskMessageBuilder {
 public:
  TaskMessageBuilder() { clear(); }
  /// Starts an empty message.
  void clear();
  /// Appends the chunk of `task` (its size must fit in 32 bits).
  void add(uint64_t task, std::span<const std::byte> chunk);
  uint32_t chunks() const noexcept { return chunks_; }
  /// Size of the message so far.
  size_t size() const noexcept { return bytes_.size(); }
  /// The message, its chunk count filled in.
  std::span<const std::byte> bytes();

 private:
  detail::Bytes bytes_;
  uint32_t chunks_ = 0;
};

/// Splits a task message into its chunks; throws ProtocolError on a malformed one, giving none.
std::vector<TaskChunk> split_task_message(std::span<const std::byte> message);

}  // namespace fiber::internal
