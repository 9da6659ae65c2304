#include "mpi_bridge/framing.h"

#include <cstring>
#include <string>

#include "fiber/errors.h"

namespace fiber::bridge {

std::vector<std::byte> frame(const Envelope& envelope, std::span<const std::byte> payload) {
  std::vector<std::byte> bytes(sizeof(Envelope) + payload.size());
  std::memcpy(bytes.data(), &envelope, sizeof(Envelope));
  if (!payload.empty())
    std::memcpy(bytes.data() + sizeof(Envelope), payload.data(), payload.size());
  return bytes;
}

Received unframe(std::span<const std::byte> bytes, int source) {
  if (bytes.size() < sizeof(Envelope)) {
    throw ProtocolError("runtime message of " + std::to_string(bytes.size()) + " bytes from rank " +
                        std::to_string(source) + " is shorter than its envelope");
  }
  Received out;
  out.source = source;
  std::memcpy(&out.envelope, bytes.data(), sizeof(Envelope));
  out.payload.assign(bytes.begin() + sizeof(Envelope), bytes.end());
  return out;
}

}  // namespace fiber::bridge
