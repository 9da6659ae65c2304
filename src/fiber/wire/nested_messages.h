// The messages that let a worker's code create Processes, Pools and Groups (nesting): requests
// to the master, which owns every process of the run and starts them on the worker's behalf,
// and the events it sends back about what the worker started. Each request is answered by a
// Reply (queue_messages.h). Internal.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "fiber/detail/job.h"
#include "fiber/invoke.h"
#include "fiber/pool/pool_settings.h"
#include "fiber/wire/outgoing.h"

namespace fiber::internal::wire {

/// An exception as it travels: which fibermpi error it is, and its text.
struct ErrorAccount {
  enum class Type : uint32_t { kNone, kRemote, kWorkerLost, kTerminated, kSpawn, kUsage, kOther };
  Type type = Type::kNone;
  std::string remote_type;  ///< kRemote: the task's exception type.
  std::string message;

  static ErrorAccount of(const std::exception_ptr& error);
  /// The exception again (null for kNone).
  std::exception_ptr rethrowable() const;
  void save(serial::Writer& writer) const;
  static ErrorAccount load(serial::Reader& reader);
};

/// Worker -> master: start a Process (its name and daemon flag as set before start()).
struct ProcessStart {
  uint64_t request = 0;
  std::string name;
  bool daemon = false;
  int32_t cores = 1;      ///< Process::set_resources: cores to bind it to (at least 1)
  int32_t gpus = 0;       ///< and GPUs to give it.
  detail::TaskSpec task;  ///< With the queues it may put into.

  Outgoing encode() const;
  static ProcessStart decode(const bridge::Received& in);
};

/// Worker -> master: end a Process it started with `signal` (SIGTERM or SIGKILL).
struct ProcessTerminate {
  uint64_t request = 0;
  uint64_t process = 0;
  int signal = 15;  ///< SIGTERM

  Outgoing encode() const;
  static ProcessTerminate decode(const bridge::Received& in);
};

/// Master -> worker: a Process it started was placed (`pid`) or ended.
struct ProcessEvent {
  uint64_t process = 0;
  bool ended = false;
  int pid = 0;
  std::string host;
  std::optional<int> exitcode;
  std::string error;         ///< How it ended, as its worker reported it.
  ErrorAccount start_error;  ///< Why it never ran.

  Outgoing encode() const;
  static ProcessEvent decode(const bridge::Received& in);
};

/// Worker -> master: make a Pool; answered with its id.
struct PoolCreate {
  uint64_t request = 0;
  PoolSettings settings;

  Outgoing encode() const;
  static PoolCreate decode(const bridge::Received& in);
};

/// Worker -> master: an operation on a Pool it made. Answered once done (kWaitReady and kJoin
/// when the pool is ready or finished), with the size (kSize) or pids (kPids) where asked.
struct PoolCall {
  enum class Op : uint32_t {
    kSize,
    kResize,
    kPids,
    kWaitReady,
    kClose,
    kTerminate,
    kJoin,
    kRelease
  };
  uint64_t request = 0;
  uint64_t pool = 0;
  Op op = Op::kSize;
  int64_t argument = 0;  ///< kResize: the new size.

  Outgoing encode() const;
  static PoolCall decode(const bridge::Received& in);
};

/// Worker -> master: a job's encoded chunks for a Pool it made; answered once queued (or with
/// the reason it cannot be). Its chunks' outcomes come back as JobChunk events.
struct PoolSubmit {
  uint64_t request = 0;
  uint64_t pool = 0;
  uint64_t job = 0;
  std::vector<uint32_t> chunk_sizes;
  std::vector<detail::Bytes> chunks;

  Outgoing encode() const;
  static PoolSubmit decode(bridge::Received& in);
};

/// Master -> worker: what became of one chunk of a job it submitted.
struct JobChunk {
  uint64_t pool = 0;
  uint64_t job = 0;
  uint64_t chunk = 0;
  detail::Bytes results;  ///< Encoded results...
  uint64_t offset = 0;    ///< ...starting here...
  ErrorAccount error;     ///< ...or why there are none.

  Outgoing encode() const;
  static JobChunk decode(bridge::Received& in);
};

/// Worker -> master: make a Group; answered with its id.
struct GroupCreate {
  uint64_t request = 0;
  int size = 1;
  int max_restarts = 0;
  detail::TaskSpec task;

  Outgoing encode() const;
  static GroupCreate decode(const bridge::Received& in);
};

/// Worker -> master: start, terminate or release a Group it made.
struct GroupCall {
  enum class Op : uint32_t { kStart, kTerminate, kRelease };
  uint64_t request = 0;
  uint64_t group = 0;
  Op op = Op::kStart;

  Outgoing encode() const;
  static GroupCall decode(const bridge::Received& in);
};

/// Master -> worker: the state of a Group it made, whenever a member ends, it restarts or ends.
struct GroupEvent {
  uint64_t group = 0;
  int restarts = 0;
  bool ended = false;
  std::vector<std::optional<int>> exitcodes;
  ErrorAccount start_error;
  /// The current attempt's members that are placed and running: their pids, on their hosts.
  std::vector<int> member_pids;

  Outgoing encode() const;
  static GroupEvent decode(const bridge::Received& in);
};

}  // namespace fiber::internal::wire
