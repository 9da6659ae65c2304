// A message on its way out, as the message structs of wire/ fill it in, and the checks their
// decoders share. Internal.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "fiber/serialization.h"
#include "fiber/wire/message_kind.h"
#include "mpi_bridge/framing.h"

namespace fiber::internal {

/// The envelope fields a message uses and its payload. Each message struct has one encode()
/// that makes an Outgoing and one decode() that reads the struct back from what arrived, used
/// by both sides, so the two can never disagree on a field. The sender adds who it is and the
/// message's number (bridge::Envelope's sender and seq).
struct Outgoing {
  explicit Outgoing(Kind message_kind) : kind(message_kind) {}

  Kind kind;
  uint32_t flags = 0;
  uint64_t id = 0;
  uint64_t aux = 0;
  serial::Writer body;
  /// Bytes the payload is, instead of `body`: a task message or chunk result the sender already
  /// holds goes out without another copy. They must outlive the send.
  std::span<const std::byte> borrowed;
  bool uses_borrowed = false;

  std::span<const std::byte> payload() const {
    if (uses_borrowed) return borrowed;
    return body.buffer();
  }
};

/// What the receiving side gets for `out` (a loopback: the unit tests decode what would be
/// sent).
bridge::Received as_received(const Outgoing& out, uint32_t sender = 0, uint32_t seq = 0);

/// Throws ProtocolError unless `in` is a message of `kind`.
void expect_kind(const bridge::Received& in, Kind kind);

/// The signal a terminate message carries: SIGTERM (Process::terminate) or SIGKILL
/// (Process::kill); throws ProtocolError naming any other value.
int termination_signal(uint64_t value);

/// The payload as text (refusal reasons, errors).
std::string payload_text(const bridge::Received& in);

}  // namespace fiber::internal
