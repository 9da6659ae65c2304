#include "fiber/process/process_messages.h"

namespace fiber::internal::wire {

bool is_last_word(const Outgoing& out) {
  if (out.kind == Kind::kGoodbye) return true;
  return out.kind == Kind::kExited && Exited::decode(as_received(out)).worker_leaves;
}

}  // namespace fiber::internal::wire
