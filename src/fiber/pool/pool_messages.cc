#include "fiber/pool/pool_messages.h"

#include <cstring>

namespace fiber::internal::wire {

void PoolResult::validate() const {
  if (outcome > PoolOutcome::kRaised)
    throw ProtocolError("a pool result with an unknown outcome " +
                        std::to_string(static_cast<uint32_t>(outcome)));
}

void PoolResult::begin_results(serial::Writer& writer) {
  const uint64_t compute_ns_slot = 0;
  writer.write_bytes(&compute_ns_slot, sizeof compute_ns_slot);
}

void PoolResult::finish_results(serial::Writer& writer, uint64_t compute_ns) {
  std::memcpy(writer.buffer().data(), &compute_ns, sizeof compute_ns);
}

void PoolResult::write_raised(serial::Writer& writer, const std::string& type,
                              const std::string& message) {
  serial::save(writer, type);
  serial::save(writer, message);
}

uint64_t PoolResult::compute_ns() const {
  serial::Reader reader(body);
  return serial::read<uint64_t>(reader);
}

std::pair<std::string, std::string> PoolResult::raised() const {
  serial::Reader reader(body);
  auto type = serial::read<std::string>(reader);
  auto message = serial::read<std::string>(reader);
  return {std::move(type), std::move(message)};
}

}  // namespace fiber::internal::wire
