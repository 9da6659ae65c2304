// Message kinds of the runtime protocol between the master and its workers.
#pragma once

#include <cstdint>

namespace fiber::detail {

/// Bumped whenever a message layout changes; checked at handshake.
inline constexpr uint32_t kProtocolVersion = 6;

enum class Kind : uint32_t {
  kHello = 1,    ///< worker -> master: {protocol, main module id, pid, host, pod}
  kWelcome,      ///< master -> worker: {master pid, master host, signal directory,
                 ///< heartbeat interval in ms}
  kRefuse,       ///< master -> worker: {reason}
  kRun,          ///< master -> worker: id = process id; flags = kStayAfterRun when the
                 ///< worker serves on after it (the reserve); {name, invoker, fn, args}
  kTerminate,    ///< master -> worker: raise SIGTERM (for workers on other hosts)
  kExited,       ///< worker -> master: id = process id; {exit code, error text}
  kShutdown,     ///< master -> worker: finalise and exit
  kQueueCreate,  ///< worker -> master: id = request; aux = 1 for a pipe channel
  kQueuePut,     ///< any -> master: aux = queue; payload = item
  kQueueGet,     ///< worker -> master: id = request; aux = queue; {timeout us, -1 = none}
  kQueuePoll,    ///< worker -> master: like kQueueGet but leaves the item
  kQueueSize,    ///< worker -> master: id = request; aux = queue
  kQueueClose,   ///< worker -> master: aux = queue; this process stops producing into it
  kReply,        ///< master -> worker: id = request; flags = Outcome; payload = item or text
  kPoolReady,    ///< worker -> master: aux = pool; flags = 1 when the initializer threw
                 ///< ({type, message}); the pool worker takes tasks from now on
  kPoolTask,     ///< master -> worker: aux = pool; {chunks, then per chunk: task id, size,
                 ///< {invoker, fn, count, args...}}: several chunks per message
  kPoolResult,   ///< worker -> master: id = task; aux = pool; flags = PoolOutcome;
                 ///< {compute ns, results...} or {type, message}
  kHeartbeat,    ///< worker -> master: still alive (sent every Config::heartbeat_interval)
  kLeave,        ///< worker -> master: a joined worker asks to leave once its work is done
  kPoolStop,     ///< master -> worker: aux = pool; leave the pool once nothing is left to run;
                 ///< flags = kDropQueuedTasks: leave after the current task, dropping the rest
  kGoodbye,      ///< worker -> master: its last message, answering kShutdown
};

/// A worker sends nothing after its last message (kGoodbye, or kExited when its process ends),
/// and the master frees a communicator only once every worker on it has said its last word or
/// died, and nothing has arrived on it for a while. A message arriving for a communicator that
/// was freed is kept by Open MPI and delivered, in place of the real one, to whichever
/// communicator later reuses its context id (a later spawn): a task result was lost that way.

inline constexpr uint32_t kDropQueuedTasks = 1;
/// kRun flag: a spawned worker stays (waiting in the reserve) after the process ends.
inline constexpr uint32_t kStayAfterRun = 1;
/// kExited flag: the worker process ends too; this is its last message.
inline constexpr uint32_t kWorkerLeaves = 1;

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
  kValue = 3,    ///< a number answer (size): aux holds it
  kError = 4,    ///< the request was invalid; payload = reason
};

}  // namespace fiber::detail
