// What Pool's templates and AsyncResult share with the runtime: one submission (a Job) and the
// outcome of each of its chunks. Support for the public headers, not for direct use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <optional>
#include <vector>

namespace fiber::detail {

using Bytes = std::vector<std::byte>;

/// What became of one chunk of a job: its items' encoded results, or why there are none.
struct ChunkOutcome {
  Bytes results;             ///< Encoded results of the chunk's items, in order...
  size_t offset = 0;         ///< ...starting here.
  std::exception_ptr error;  ///< RemoteError, WorkerLost, TerminatedError or SpawnError.
};

/// One submission: an apply (one chunk of one item) or a map-family call (chunks of items).
/// Guarded by the runtime's lock; complete chunks never change again.
struct Job {
  std::vector<uint32_t> chunk_sizes;  ///< Items per chunk.
  std::vector<std::optional<ChunkOutcome>> chunks;
  std::deque<size_t> arrivals;  ///< Chunk indices in the order they completed.
  size_t completed = 0;
  std::exception_ptr first_error;
  std::vector<std::function<void()>> on_ready;  ///< Run on the pool's callback thread.
  /// Called with the lock held as each chunk completes (a nested pool's master side relays
  /// every outcome to the worker that submitted the job).
  std::function<void(size_t chunk)> on_chunk;

  /// Every chunk is in, or one failed (a map fails as a whole, like Python's).
  bool ready() const { return first_error != nullptr || completed == chunks.size(); }

  /// Stores a chunk's outcome (a chunk completes once: a later outcome is dropped). True when
  /// the job became ready with it.
  bool complete(size_t chunk, ChunkOutcome outcome) {
    if (chunks[chunk]) return false;
    const bool was_ready = ready();
    if (outcome.error && !first_error) first_error = outcome.error;
    chunks[chunk] = std::move(outcome);
    ++completed;
    arrivals.push_back(chunk);
    if (on_chunk) on_chunk(chunk);
    return !was_ready && ready();
  }
};

}  // namespace fiber::detail
