#include "fiber/runtime/protocol.h"

namespace fiber::internal {
namespace wire {
namespace {

template <size_t... I>
std::string lines(std::index_sequence<I...>) {
  std::string text;
  ((text += std::to_string(static_cast<uint32_t>(std::tuple_element_t<I, Messages>::kKind)) + '=' +
            signature<std::tuple_element_t<I, Messages>>() + '\n'),
   ...);
  return text;
}

}  // namespace

std::string protocol_text() {
  return lines(std::make_index_sequence<std::tuple_size_v<Messages>>{});
}

}  // namespace wire

uint32_t protocol_version() {
  // FNV-1a over the text, folded to 32 bits: the same text gives the same number on every
  // build, and any change to a message gives another one.
  static const uint32_t version = [] {
    uint64_t hash = 14695981039346656037ull;
    for (const char c : wire::protocol_text()) {
      hash ^= static_cast<unsigned char>(c);
      hash *= 1099511628211ull;
    }
    return static_cast<uint32_t>(hash ^ (hash >> 32));
  }();
  return version;
}

}  // namespace fiber::internal
