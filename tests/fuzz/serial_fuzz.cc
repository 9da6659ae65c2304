// libFuzzer target: fiber::serial's decoding of the common types a task's arguments and results
// are made of. The first byte picks the type; the rest is what arrived. The property: a value is
// decoded, or ProtocolError refuses the bytes; nothing crashes, trips a sanitizer, or allocates
// more than the input can justify.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <tuple>

#include "fiber/errors.h"
#include "fiber/serialization.h"
#include "serial_types.h"

namespace {

using fiber::fuzz::Types;

template <class T>
void decode_as(std::span<const std::byte> bytes) {
  try {
    const T value = fiber::serial::from_bytes<T>(bytes);
    // What decoded encodes again to bytes that decode.
    (void)fiber::serial::from_bytes<T>(fiber::serial::to_bytes(value));
  } catch (const fiber::ProtocolError&) {
  }
}

template <size_t... I>
void decode_type(size_t which, std::span<const std::byte> bytes, std::index_sequence<I...>) {
  ((which == I ? decode_as<std::tuple_element_t<I, Types>>(bytes) : void()), ...);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t which = data[0] % std::tuple_size_v<Types>;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data + 1), size - 1);
  decode_type(which, bytes, std::make_index_sequence<std::tuple_size_v<Types>>{});
  return 0;
}
