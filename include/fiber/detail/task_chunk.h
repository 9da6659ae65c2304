// The encoding of one pool task chunk, written by Pool's templates (which know the types) and read
// by the worker that runs it: the invoker and function references, the item count, then each
// item's encoded argument tuple. Support for the public headers, not for direct use.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fiber/function_ref.h"
#include "fiber/serialization.h"

namespace fiber::detail {

/// The head of a chunk: what runs its items, and how many there are.
struct ChunkHead {
  FunctionRef invoker;
  FunctionRef fn;  ///< Zero for stateless callable classes.
  uint32_t count = 0;
};

/// Bytes of the head: four 64-bit words (the two references), then the 32-bit item count.
inline constexpr size_t kChunkHeadSize = 4 * sizeof(uint64_t) + sizeof(uint32_t);

/// Builds chunks of items that all run through the same invoker and function.
class ChunkEncoder {
 public:
  ChunkEncoder(FunctionRef invoker, FunctionRef fn) : invoker_(invoker), fn_(fn) {}

  /// Starts the next item of the current chunk: serialize its argument tuple into the returned
  /// writer.
  serial::Writer& add_item() {
    if (count_ == 0) {
      // One allocation per chunk: room for as much as the last chunk took.
      writer_.reserve(std::max(kChunkHeadSize + 32, last_size_));
      const uint64_t words[4] = {invoker_.module_id, invoker_.offset, fn_.module_id, fn_.offset};
      writer_.write_bytes(words, sizeof words);
      writer_.write_bytes(&count_, sizeof count_);  // filled in by take()
    }
    ++count_;
    return writer_;
  }
  /// Items in the current chunk.
  uint32_t items() const noexcept { return count_; }
  /// The finished chunk; the encoder starts a new one.
  std::vector<std::byte> take() {
    std::memcpy(writer_.buffer().data() + 4 * sizeof(uint64_t), &count_, sizeof count_);
    count_ = 0;
    last_size_ = writer_.size();
    return writer_.take();
  }

 private:
  FunctionRef invoker_;
  FunctionRef fn_;
  serial::Writer writer_;
  uint32_t count_ = 0;
  size_t last_size_ = 0;
};

/// Reads a chunk's head, leaving `reader` at its first item. Throws ProtocolError when the chunk
/// is too short.
inline ChunkHead read_chunk_head(serial::Reader& reader) {
  uint64_t words[4] = {};
  ChunkHead head;
  reader.read_bytes(words, sizeof words);
  reader.read_bytes(&head.count, sizeof head.count);
  head.invoker = FunctionRef{words[0], words[1]};
  head.fn = FunctionRef{words[2], words[3]};
  return head;
}

}  // namespace fiber::detail
