// What Pool's templates, AsyncResult and ResultStream share with the runtime: one submission (a
// Job), where its chunks come from (a ChunkSource, read as the pool sends them) and where their
// results go (a ResultSink, which decodes them as they arrive). Support for the public headers,
// not for direct use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace fiber::detail {

using Bytes = std::vector<std::byte>;

/// What became of one chunk of a job: its items' encoded results, or why there are none.
struct ChunkOutcome {
  Bytes results;             ///< Encoded results of the chunk's items, in order...
  size_t offset = 0;         ///< ...starting here.
  std::exception_ptr error;  ///< RemoteError, WorkerLost, TerminatedError or SpawnError.
};

/// A job's inputs, encoded one chunk at a time when the pool has a worker for it: the backlog of
/// a large map costs no memory, and an unbounded range can be read.
class ChunkSource {
 public:
  virtual ~ChunkSource() = default;
  /// Encodes the next chunk into `out`; its item count, or 0 once every input has been read.
  /// Throws when an input cannot be encoded.
  virtual uint32_t next(Bytes& out) = 0;
  /// Chunks still to come, when known.
  virtual std::optional<size_t> chunks_left() const = 0;
  /// The inputs never end (a range whose end is unreachable).
  virtual bool unbounded() const { return false; }
};

/// Inputs already encoded: an apply's one chunk, or the chunks of a pool made inside a worker,
/// relayed by the master.
class EncodedChunks final : public ChunkSource {
 public:
  EncodedChunks(std::vector<Bytes> chunks, std::vector<uint32_t> items)
      : chunks_(std::move(chunks)), items_(std::move(items)) {}
  uint32_t next(Bytes& out) override {
    if (next_ >= chunks_.size() || next_ >= items_.size()) return 0;
    out = std::move(chunks_[next_]);
    return items_[next_++];
  }
  std::optional<size_t> chunks_left() const override { return chunks_.size() - next_; }

 private:
  std::vector<Bytes> chunks_;
  std::vector<uint32_t> items_;
  size_t next_ = 0;
};

/// Where a job's results go, as each chunk arrives (with the runtime's lock held).
class ResultSink {
 public:
  virtual ~ResultSink() = default;
  /// The `items` results of the chunk whose first input is `first_item`, encoded in `results`
  /// from `offset` (the sink may take the bytes). Throws when they do not decode.
  virtual void store(size_t chunk, uint64_t first_item, uint32_t items, Bytes& results,
                     size_t offset) = 0;
  /// The chunk failed: none of its `items` results will come (0 items: the inputs stopped there).
  virtual void fail(size_t chunk, uint64_t first_item, uint32_t items,
                    const std::exception_ptr& error) = 0;
};

/// One submission: an apply (one chunk of one item) or a map-family call (chunks of items).
/// Guarded by the runtime's lock.
struct Job {
  /// Until every input is read (or the job stopped): read by the pool under the lock.
  std::unique_ptr<ChunkSource> source;
  std::unique_ptr<ResultSink> sink;
  /// The first failed chunk fails the whole job and its remaining inputs are not read (apply,
  /// map); a stream (imap) goes on past a failed chunk.
  bool fails_as_whole = true;
  uint32_t chunksize = 1;  ///< Inputs per chunk (the last may hold fewer).
  /// A stream: the pool reads its inputs no further ahead of the caller than window_items.
  bool windowed = false;
  size_t chunks_made = 0;
  uint64_t items_made = 0;
  bool inputs_done = false;  ///< No chunk will be made any more.
  size_t completed = 0;      ///< Chunks whose outcome is in.
  std::exception_ptr first_error;
  /// Streams: most inputs read and not yet consumed by the caller (0: no limit), so results
  /// nobody takes yet cannot pile up without bound.
  uint64_t window_items = 0;
  uint64_t items_consumed = 0;
  /// Set by the pool while the window stops it: called (with the lock held) once the caller
  /// has consumed half of it.
  std::function<void()> resume;
  std::vector<std::function<void()>> on_ready;  ///< Run on the pool's callback thread.
  /// Set by the pool that runs the job: hands on_ready to that pool's callback thread (with the
  /// lock held); false once that thread has stopped, the callbacks left in on_ready.
  std::function<bool(Job&)> run_ready_callbacks;
  /// Called with the lock held as each chunk completes, with its item count (progress display).
  std::function<void(uint32_t items)> on_chunk;

  /// Every chunk is in, or one failed a job that fails as a whole.
  bool ready() const {
    return (fails_as_whole && first_error) || (inputs_done && completed == chunks_made);
  }
  /// The pool may read another chunk of inputs now.
  bool wants_chunk() const {
    return !inputs_done && !(fails_as_whole && first_error) &&
           (window_items == 0 || items_made - items_consumed < window_items);
  }

  /// A chunk read from the source.
  struct Made {
    size_t chunk = 0;
    uint64_t first_item = 0;
    uint32_t items = 0;
  };
  /// Encodes the next chunk into `out`. Nothing when the inputs are all read, or when one cannot
  /// be encoded: then a failed chunk of no items ends the job's inputs there. `became_ready`
  /// tells that the job became ready meanwhile.
  std::optional<Made> make_chunk(Bytes& out, bool& became_ready);
  /// No more chunks: drops the source. With `why`, a failed chunk of no items says where the
  /// inputs stopped (true when the job became ready with it).
  bool end_inputs(const std::exception_ptr& why);
  /// Stores a chunk's outcome through the sink (a result that does not decode fails the chunk).
  /// True when the job became ready with it.
  bool complete(const Made& chunk, ChunkOutcome outcome);
  /// The caller took `items` results of a stream; true when the pool should be resumed.
  bool consumed(uint64_t items);
};

}  // namespace fiber::detail
