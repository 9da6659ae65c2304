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
#include "fiber/wire/message_codec.h"

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

  static void fields(auto& self, auto& f) {
    f.body(self.type);
    f.body(self.remote_type);
    f.body(self.message);
  }
  void validate() const;
  /// Its fields alone (a Reply's payload).
  void save(serial::Writer& writer) const { codec::save_body(writer, *this); }
  static ErrorAccount load(serial::Reader& reader) {
    ErrorAccount account;
    codec::load_body(reader, account);
    return account;
  }
};

/// Worker -> master: start a Process (its name and daemon flag as set before start()).
struct ProcessStart {
  FIBER_WIRE_MESSAGE(ProcessStart, Kind::kProcessStart)
  uint64_t request = 0;
  std::string name;
  bool daemon = false;
  int32_t cores = 1;      ///< Process::set_resources: cores to bind it to (at least 1)
  int32_t gpus = 0;       ///< and GPUs to give it.
  detail::TaskSpec task;  ///< With the queues it may put into.

  static void fields(auto& self, auto& f) {
    f.id(self.request);
    f.bits(self.daemon);
    f.body(self.name);
    f.body(self.cores);
    f.body(self.gpus);
    f.body(self.task);
  }
  void validate() const;
};

/// Worker -> master: end a Process it started with `signal` (SIGTERM or SIGKILL).
struct ProcessTerminate {
  FIBER_WIRE_MESSAGE(ProcessTerminate, Kind::kProcessTerminate)
  uint64_t request = 0;
  uint64_t process = 0;
  int signal = 15;  ///< SIGTERM

  static void fields(auto& self, auto& f) {
    f.id(self.request);
    f.aux(self.process);
    f.flags(self.signal);
  }
  void validate() const;
};

/// Master -> worker: a Process it started was placed (`pid`) or ended.
struct ProcessEvent {
  FIBER_WIRE_MESSAGE(ProcessEvent, Kind::kProcessEvent)
  uint64_t process = 0;
  bool ended = false;
  int pid = 0;
  std::string host;
  std::optional<int> exitcode;
  std::string error;         ///< How it ended, as its worker reported it.
  ErrorAccount start_error;  ///< Why it never ran.

  static void fields(auto& self, auto& f) {
    f.id(self.process);
    f.bits(self.ended);
    f.body(self.pid);
    f.body(self.host);
    f.body(self.exitcode);
    f.body(self.error);
    f.body(self.start_error);
  }
};

/// Worker -> master: make a Pool; answered with its id.
struct PoolCreate {
  FIBER_WIRE_MESSAGE(PoolCreate, Kind::kPoolCreate)
  uint64_t request = 0;
  PoolSettings settings;

  static void fields(auto& self, auto& f) {
    f.id(self.request);
    f.body(self.settings.processes);
    f.body(self.settings.initializer);
    f.body(self.settings.maxtasksperchild);
    f.body(self.settings.tasks_in_flight_per_worker);
    f.body(self.settings.cover_spawn_pauses);
    f.body(self.settings.max_task_retries);
    f.body(self.settings.min_processes);
    f.body(self.settings.max_processes);
    f.body(self.settings.idle_timeout);
    f.body(self.settings.take_joined_workers);
    f.body(self.settings.fresh_processes);
    f.body(self.settings.cpus_per_worker);
    f.body(self.settings.memory_per_worker);
    f.body(self.settings.gpus_per_worker);
  }
};

/// Worker -> master: an operation on a Pool it made. Answered once done (kWaitReady and kJoin
/// when the pool is ready or finished), with the size (kSize) or pids (kPids) where asked.
struct PoolCall {
  FIBER_WIRE_MESSAGE(PoolCall, Kind::kPoolCall)
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

  static void fields(auto& self, auto& f) {
    f.id(self.request);
    f.aux(self.pool);
    f.flags(self.op);
    f.body(self.argument);
  }
  void validate() const;
};

/// Worker -> master: a job's encoded chunks for a Pool it made; answered once queued (or with
/// the reason it cannot be). Its chunks' outcomes come back as JobChunk events.
struct PoolSubmit {
  FIBER_WIRE_MESSAGE(PoolSubmit, Kind::kPoolSubmit)
  uint64_t request = 0;
  uint64_t pool = 0;
  uint64_t job = 0;
  std::vector<uint32_t> chunk_sizes;
  std::vector<detail::Bytes> chunks;

  static void fields(auto& self, auto& f) {
    f.id(self.request);
    f.aux(self.pool);
    f.body(self.job);
    f.body(self.chunk_sizes);
    f.body(self.chunks);
  }
  void validate() const;
};

/// Master -> worker: what became of one chunk of a job it submitted.
struct JobChunk {
  FIBER_WIRE_MESSAGE(JobChunk, Kind::kJobChunk)
  uint64_t pool = 0;
  uint64_t job = 0;
  uint64_t chunk = 0;
  detail::Bytes results;  ///< Encoded results...
  uint64_t offset = 0;    ///< ...starting here...
  ErrorAccount error;     ///< ...or why there are none.

  static void fields(auto& self, auto& f) {
    f.id(self.job);
    f.aux(self.pool);
    f.body(self.chunk);
    f.body(self.offset);
    f.body(self.error);
    f.body(self.results);
  }
};

/// Worker -> master: make a Group; answered with its id.
struct GroupCreate {
  FIBER_WIRE_MESSAGE(GroupCreate, Kind::kGroupCreate)
  uint64_t request = 0;
  int size = 1;
  int max_restarts = 0;
  detail::TaskSpec task;

  static void fields(auto& self, auto& f) {
    f.id(self.request);
    f.body(self.size);
    f.body(self.max_restarts);
    f.body(self.task);
  }
};

/// Worker -> master: start, terminate or release a Group it made.
struct GroupCall {
  FIBER_WIRE_MESSAGE(GroupCall, Kind::kGroupCall)
  enum class Op : uint32_t { kStart, kTerminate, kRelease };
  uint64_t request = 0;
  uint64_t group = 0;
  Op op = Op::kStart;

  static void fields(auto& self, auto& f) {
    f.id(self.request);
    f.aux(self.group);
    f.flags(self.op);
  }
  void validate() const;
};

/// Master -> worker: the state of a Group it made, whenever a member ends, it restarts or ends.
struct GroupEvent {
  FIBER_WIRE_MESSAGE(GroupEvent, Kind::kGroupEvent)
  uint64_t group = 0;
  int restarts = 0;
  bool ended = false;
  std::vector<std::optional<int>> exitcodes;
  ErrorAccount start_error;
  /// The current attempt's members that are placed and running: their pids, on their hosts.
  std::vector<int> member_pids;

  static void fields(auto& self, auto& f) {
    f.id(self.group);
    f.bits(self.ended);
    f.body(self.restarts);
    f.body(self.exitcodes);
    f.body(self.start_error);
    f.body(self.member_pids);
  }
};

}  // namespace fiber::internal::wire
