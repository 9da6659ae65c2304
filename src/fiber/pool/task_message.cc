#include "fiber/pool/task_message.h"

#include <cstring>

#include "fiber/serialization.h"

namespace fiber::internal {

void TaskMessageBuilder::clear() {
  bytes_.assign(sizeof(uint32_t), std::byte{0});
  chunks_ = 0;
}

void TaskMessageBuilder::add(uint64_t task, std::span<const std::byte> chunk) {
  const auto size = static_cast<uint32_t>(chunk.size());
  const size_t at = bytes_.size();
  bytes_.resize(at + kTaskChunkOverhead + chunk.size());
  std::memcpy(bytes_.data() + at, &task, sizeof task);
  std::memcpy(bytes_.data() + at + sizeof task, &size, sizeof size);
  if (!chunk.empty()) std::memcpy(bytes_.data() + at + kTaskChunkOverhead, chunk.data(), size);
  ++chunks_;
}

std::span<const std::byte> TaskMessageBuilder::bytes() {
  std::memcpy(bytes_.data(), &chunks_, sizeof chunks_);
  return bytes_;
}

std::vector<TaskChunk> split_task_message(std::span<const std::byte> message) {
  serial::Reader reader(message);
  uint32_t count = 0;
  reader.read_bytes(&count, sizeof count);
  std::vector<TaskChunk> chunks;
  for (uint32_t i = 0; i < count; ++i) {
    TaskChunk chunk;
    uint32_t size = 0;
    reader.read_bytes(&chunk.task, sizeof chunk.task);
    reader.read_bytes(&size, sizeof size);
    const auto bytes = reader.read_span(size);
    chunk.payload.assign(bytes.begin(), bytes.end());
    chunks.push_back(std::move(chunk));
  }
  return chunks;
}

}  // namespace fiber::internal
