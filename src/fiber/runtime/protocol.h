// The whole runtime protocol: every message struct, one per kind, and the version their field
// lists make. Internal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

#include "fiber/group/group_messages.h"
#include "fiber/manager/manager_messages.h"
#include "fiber/nesting/nested_messages.h"
#include "fiber/pool/pool_messages.h"
#include "fiber/process/process_messages.h"
#include "fiber/queue/queue_messages.h"
#include "fiber/wire/link_messages.h"
#include "fiber/wire/reply.h"

namespace fiber::internal::wire {

/// Every message of the protocol, in the order of their kinds.
using Messages = std::tuple<Hello, Welcome, Refuse, Run, Terminate, Exited, Shutdown, QueueCreate,
                            QueuePut, QueueGet, QueuePoll, QueueSize, QueueClose, Reply, PoolReady,
                            PoolTasks, PoolResult, Heartbeat, Leave, PoolStop, Goodbye, GroupPlan,
                            GroupPorts, GroupStop, ProcessStart, ProcessTerminate, ProcessEvent,
                            PoolCreate, PoolCall, PoolSubmit, JobChunk, GroupCreate, GroupCall,
                            GroupEvent, PoolStarted, QueueCall, ObjectCreate, ObjectCall>;

namespace protocol_check {
template <size_t... I>
constexpr bool one_message_per_kind(std::index_sequence<I...>) {
  return ((std::tuple_element_t<I, Messages>::kKind == static_cast<Kind>(I + 1)) && ...);
}
}  // namespace protocol_check
static_assert(
    protocol_check::one_message_per_kind(std::make_index_sequence<std::tuple_size_v<Messages>>{}),
    "wire::Messages lists one message per Kind, in the order of their numbers");
static_assert(std::tuple_size_v<Messages> == kKindCount,
              "a Kind added to message_kind.h needs its message in wire::Messages");

/// What protocol_version() digests: each kind's number and its message's field list, a line
/// each.
std::string protocol_text();

}  // namespace fiber::internal::wire
