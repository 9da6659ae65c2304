#include "fiber/wire/reply.h"

namespace fiber::internal::wire {

void Reply::validate() const {
  if (outcome > Outcome::kError)
    throw ProtocolError("a reply with an unknown outcome " +
                        std::to_string(static_cast<uint32_t>(outcome)));
}

}  // namespace fiber::internal::wire
