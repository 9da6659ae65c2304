#include "fiber/manager/manager_messages.h"

namespace fiber::internal::wire {

void ObjectCreate::validate() const {
  if (type < detail::ObjectType::kDict || type > detail::ObjectType::kCondition)
    throw ProtocolError("unknown shared object type " +
                        std::to_string(static_cast<uint32_t>(type)));
}

}  // namespace fiber::internal::wire
