// The frame of every runtime message: a fixed envelope, then the payload, sent as one MPI
// message. Free of MPI: what arrives is read here before any layer above sees it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace fiber::bridge {

/// Fixed header at the front of every runtime message. The meaning of `kind`, `id` and `aux`
/// belongs to the layer above.
struct Envelope {
  uint32_t kind = 0;
  uint32_t flags = 0;
  uint64_t id = 0;
  uint64_t aux = 0;
  /// Who sent it (the sender's pid) and its number among the sender's messages on this link:
  /// the receiver checks both, so a message that is not the one expected next (lost, or a stale
  /// one MPI delivered in its place) is noticed instead of silently taken.
  uint32_t sender = 0;
  uint32_t seq = 0;
};

/// One received message.
struct Received {
  Envelope envelope;
  std::vector<std::byte> payload;
  int source = 0;  ///< Rank of the sender in the communicator it came on.
};

/// Builds the wire form: the envelope followed by the payload.
std::vector<std::byte> frame(const Envelope& envelope, std::span<const std::byte> payload);

/// Reads a message's wire form as it arrived from rank `source`. Throws ProtocolError when it is
/// too short to hold an envelope.
Received unframe(std::span<const std::byte> bytes, int source);

}  // namespace fiber::bridge
