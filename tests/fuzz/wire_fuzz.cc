// libFuzzer target: bytes from a peer, read as one runtime message: unframed as the transport
// does (an envelope, then the payload), then, for a known kind, through the one decode both
// sides use. The property: refused with a ProtocolError, or decoded into a message that encodes
// and decodes again the same way; no crash, sanitizer report, or allocation the input cannot
// justify.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <tuple>
#include <utility>

#include "fiber/errors.h"
#include "fiber/runtime/protocol.h"

namespace {

using fiber::ProtocolError;
using fiber::bridge::Received;
using fiber::internal::Outgoing;
using fiber::internal::wire::Messages;

/// A decoded message re-encoded must give a message that decodes to the same bytes again.
template <class M>
void check_round_trip(const M& decoded) {
  const Outgoing again = decoded.encode();
  const Received in = fiber::internal::as_received(again);
  const M decoded_again = M::decode(in);  // it lends its bytes to what it encodes
  const Outgoing twice = decoded_again.encode();
  const auto a = again.payload();
  const auto b = twice.payload();
  if (again.kind != twice.kind || again.flags != twice.flags || again.id != twice.id ||
      again.aux != twice.aux || a.size() != b.size() ||
      (a.size() != 0 && std::memcmp(a.data(), b.data(), a.size()) != 0)) {
    std::abort();  // the two sides would disagree on this message
  }
}

template <class M>
void decode_as(Received& in) {
  try {
    // Both paths: a const message (copied from) and one whose payload may be taken.
    const Received& kept = in;
    check_round_trip(M::decode(kept));
    Received taken = in;
    check_round_trip(M::decode(taken));
  } catch (const ProtocolError&) {
    // Refused, as documented.
  }
}

template <size_t... I>
void decode_kind(Received& in, std::index_sequence<I...>) {
  // Messages lists one message per kind, kind I + 1 at index I.
  ((in.envelope.kind == I + 1 ? decode_as<std::tuple_element_t<I, Messages>>(in) : void()), ...);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Received in;
  try {
    in = fiber::bridge::unframe({reinterpret_cast<const std::byte*>(data), size}, 1);
  } catch (const ProtocolError&) {
    return 0;  // shorter than an envelope
  }
  // Fold any kind onto the known ones, so that most inputs reach a decoder; kind 0 and kinds past
  // the last one stay unknown (kind_name and expect_kind name them).
  if (in.envelope.kind > fiber::internal::kKindCount + 1)
    in.envelope.kind = in.envelope.kind % (fiber::internal::kKindCount + 2);
  try {
    (void)fiber::internal::kind_name(in.envelope.kind);
  } catch (...) {
    std::abort();
  }
  decode_kind(in, std::make_index_sequence<std::tuple_size_v<Messages>>{});
  return 0;
}
