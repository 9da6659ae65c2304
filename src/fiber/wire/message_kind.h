// Message kinds of the runtime protocol between the master and its workers. Each kind has one
// struct, beside the feature it serves (wire/link_messages.h, wire/reply.h,
// process/process_messages.h, pool/pool_messages.h, group/group_messages.h,
// queue/queue_messages.h, manager/manager_messages.h, nesting/nested_messages.h; all of them in
// runtime/protocol.h), whose field list (message_codec.h) both sides encode and decode it with;
// the comments here only say who sends it. A new kind goes last, and kKindCount names it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fiber::internal {

/// The protocol's version, checked at the handshake: a digest of every message's kind and field
/// list (wire/protocol.cc), so that any change to a message changes it.
uint32_t protocol_version();

enum class Kind : uint32_t {
  kHello = 1,    ///< worker -> master: who it is
  kWelcome,      ///< master -> worker: accepted
  kRefuse,       ///< master -> worker: refused (another binary or protocol)
  kRun,          ///< master -> worker: run a process
  kTerminate,    ///< master -> worker: raise SIGTERM (for workers on other hosts)
  kExited,       ///< worker -> master: a process ended
  kShutdown,     ///< master -> worker: finalise and exit
  kQueueCreate,  ///< worker -> master: a new queue or pipe channel (a request)
  kQueuePut,     ///< any -> master: an item
  kQueueGet,     ///< worker -> master: take an item (a request)
  kQueuePoll,    ///< worker -> master: wait for an item without taking it (a request)
  kQueueSize,    ///< worker -> master: how many items wait (a request)
  kQueueClose,   ///< worker -> master: this process stops producing into a queue
  kReply,        ///< master -> worker: the answer to a request
  kPoolReady,    ///< worker -> master: a pool worker takes tasks from now on
  kPoolTask,     ///< master -> worker: chunks of pool tasks, several per message
  kPoolResult,   ///< worker -> master: the results of one chunk
  kHeartbeat,    ///< worker -> master: still alive (sent every Config::heartbeat_interval)
  kLeave,        ///< worker -> master: a joined worker asks to leave once its work is done
  kPoolStop,     ///< master -> worker: leave the pool
  kGoodbye,      ///< worker -> master: its last message, answering kShutdown
  kGroupPlan,    ///< master -> group member: who the members are, to build the communicator
  kGroupPorts,   ///< member -> master -> member: ports the group's islands connect through
  kGroupStop,    ///< master -> group member: the attempt failed or was terminated: end now
  // Nesting (nesting/nested_messages.h): a worker's code starts processes, pools and groups.
  kProcessStart,      ///< worker -> master: start a Process (a request)
  kProcessTerminate,  ///< worker -> master: terminate one (a request)
  kProcessEvent,      ///< master -> worker: one of its Processes was placed or ended
  kPoolCreate,        ///< worker -> master: make a Pool (a request)
  kPoolCall,          ///< worker -> master: an operation on one (a request)
  kPoolSubmit,        ///< worker -> master: a job for one (a request)
  kJobChunk,          ///< master -> worker: the outcome of one chunk of its job
  kGroupCreate,       ///< worker -> master: make a Group (a request)
  kGroupCall,         ///< worker -> master: start, terminate or release one (a request)
  kGroupEvent,        ///< master -> worker: the state of one of its Groups
  kPoolStarted,       ///< worker -> master: it started a chunk that reached it idle
  // Shared state (queue/queue_messages.h, manager/manager_messages.h).
  kQueueCall,     ///< worker -> master: a put that may wait, task_done or join (a request)
  kObjectCreate,  ///< worker -> master: a new shared object of a Manager (a request)
  kObjectCall,    ///< worker -> master: an operation on one (a request)
};

/// The number of kinds (they run from 1 to it).
inline constexpr size_t kKindCount = static_cast<size_t>(Kind::kObjectCall);

/// Why a request failed (wire::Reply::value of an Outcome::kError reply).
enum class Failure : uint64_t {
  kProtocol = 0,       ///< a malformed or unknown request
  kUsage = 1,          ///< the call is not allowed (an index out of range, a release not held)
  kBrokenBarrier = 2,  ///< the barrier is broken
  kRemote = 3,         ///< a user's member function threw: type name, '\0', message
};

/// A worker sends nothing after its last message (kGoodbye, or kExited when its process ends),
/// and the master frees a communicator only once every worker on it has said its last word or
/// died, and nothing has arrived on it for a while. A message arriving for a communicator that
/// was freed is kept by Open MPI and delivered, in place of the real one, to whichever
/// communicator later reuses its context id (a later spawn): a task result was lost that way.

/// How a pool task ended.
enum class PoolOutcome : uint32_t {
  kResults = 0,  ///< payload: compute time, then the encoded results of every item
  kRaised = 1,   ///< payload: the exception's type name and message
};

/// What a queue operation ended with.
enum class Outcome : uint32_t {
  kItem = 0,     ///< payload is the item (get) or nothing (poll: data ready)
  kTimeout = 1,  ///< the deadline passed with nothing to take
  kEof = 2,      ///< empty, and nobody who could still put into it is alive; payload = reason
  kValue = 3,    ///< a number answer (size, a new queue's id)
  kError = 4,    ///< the request was invalid; payload = reason
};

namespace wire {
/// What a kQueueCall asks of a fiber::Queue.
enum class QueueOp : uint32_t {
  kPut = 1,       ///< put the item into a bounded queue, waiting for room
  kTaskDone = 2,  ///< one item taken earlier is processed
  kJoin = 3,      ///< wait until every item put was task_done
};
}  // namespace wire

/// "kPoolTask", for messages about a kind.
const char* kind_name(uint32_t kind);

}  // namespace fiber::internal
