#include "fiber/wire/group_messages.h"

#include "fiber/errors.h"

namespace fiber::internal::wire {

int GroupPlan::size() const {
  size_t members = 0;
  for (const auto& island_ranks : islands) members += island_ranks.size();
  return static_cast<int>(members);
}

Outgoing GroupPlan::encode() const {
  Outgoing out(Kind::kGroupPlan);
  out.id = group;
  out.aux = attempt;
  serial::save(out.body, restarts);
  serial::save(out.body, rank);
  serial::save(out.body, island);
  serial::save(out.body, islands);
  return out;
}

GroupPlan GroupPlan::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kGroupPlan);
  GroupPlan plan;
  plan.group = in.envelope.id;
  plan.attempt = static_cast<uint32_t>(in.envelope.aux);
  serial::Reader reader(in.payload);
  plan.restarts = serial::read<int>(reader);
  plan.rank = serial::read<int>(reader);
  plan.island = serial::read<int>(reader);
  plan.islands = serial::read<std::vector<std::vector<int>>>(reader);
  if (plan.island < 0 || static_cast<size_t>(plan.island) >= plan.islands.size() || plan.rank < 0 ||
      plan.rank >= plan.size())
    throw ProtocolError("a group plan names island " + std::to_string(plan.island) + " of " +
                        std::to_string(plan.islands.size()) + " and rank " +
                        std::to_string(plan.rank) + " of " + std::to_string(plan.size()));
  return plan;
}

Outgoing GroupPorts::encode() const {
  Outgoing out(Kind::kGroupPorts);
  out.id = group;
  out.aux = attempt;
  serial::save(out.body, ports);
  return out;
}

GroupPorts GroupPorts::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kGroupPorts);
  return GroupPorts{in.envelope.id, static_cast<uint32_t>(in.envelope.aux),
                    serial::from_bytes<std::vector<std::string>>(in.payload)};
}

Outgoing GroupStop::encode() const {
  Outgoing out(Kind::kGroupStop);
  out.id = group;
  out.aux = attempt;
  serial::save(out.body, reason);
  return out;
}

GroupStop GroupStop::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kGroupStop);
  return GroupStop{in.envelope.id, static_cast<uint32_t>(in.envelope.aux),
                   serial::from_bytes<std::string>(in.payload)};
}

}  // namespace fiber::internal::wire
