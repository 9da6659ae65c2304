#include "fiber/group/group_messages.h"

#include "fiber/errors.h"

namespace fiber::internal::wire {

int GroupPlan::size() const {
  size_t members = 0;
  for (const auto& island_ranks : islands) members += island_ranks.size();
  return static_cast<int>(members);
}

void GroupPlan::validate() const {
  if (island < 0 || static_cast<size_t>(island) >= islands.size() || rank < 0 || rank >= size())
    throw ProtocolError("a group plan names island " + std::to_string(island) + " of " +
                        std::to_string(islands.size()) + " and rank " + std::to_string(rank) +
                        " of " + std::to_string(size()));
}

}  // namespace fiber::internal::wire
