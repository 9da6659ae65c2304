#include "fiber/queue/queue_messages.h"

namespace fiber::internal::wire {

void QueueCall::validate() const {
  if (op != QueueOp::kPut && op != QueueOp::kTaskDone && op != QueueOp::kJoin)
    throw ProtocolError("unknown queue operation " + std::to_string(static_cast<uint32_t>(op)));
}

}  // namespace fiber::internal::wire
