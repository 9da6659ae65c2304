// The exceptions of the public API. All derive from fiber::Error.
#pragma once

#include <stdexcept>
#include <string>

namespace fiber {

/// Root of every exception fibermpi throws.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// An MPI routine returned an error code: carries the routine, the code and MPI's own text for
/// it (fiber/mpi.h checks codes for programs that call MPI themselves).
class MpiError : public Error {
 public:
  MpiError(std::string routine, int code, const std::string& mpi_text);
  const std::string& routine() const noexcept { return routine_; }
  int code() const noexcept { return code_; }

 private:
  std::string routine_;
  int code_;
};

/// A process could not be started: missing executable, a refused handshake, MPI_Comm_spawn
/// failing or stuck.
class SpawnError : public Error {
 public:
  explicit SpawnError(const std::string& what) : Error(what) {}
};

/// A message that does not decode: wrong size, unknown function, corrupt payload.
class ProtocolError : public Error {
 public:
  explicit ProtocolError(const std::string& what) : Error(what) {}
};

/// A wait with a timeout (get(timeout), join-style waits on results) ran out of time.
class TimeoutError : public Error {
 public:
  explicit TimeoutError(const std::string& what) : Error(what) {}
};

/// A put into a bounded fiber::Queue found it full: at once (put_nowait) or after its timeout.
class Full : public TimeoutError {
 public:
  explicit Full(const std::string& what) : TimeoutError(what) {}
};

/// A get from a fiber::Queue found nothing to take: at once (get_nowait) or after its timeout.
class Empty : public TimeoutError {
 public:
  explicit Empty(const std::string& what) : TimeoutError(what) {}
};

/// A fiber::Barrier is broken: a party timed out or ended while waiting, or it was aborted or
/// reset while others waited. Waits fail with this until the barrier is reset.
class BrokenBarrierError : public Error {
 public:
  explicit BrokenBarrierError(const std::string& what) : Error(what) {}
};

/// Nothing more can arrive: a pipe or queue is empty and every process that could still write to
/// it has ended or closed its end.
class EOFError : public Error {
 public:
  explicit EOFError(const std::string& what) : Error(what) {}
};

/// A task raised an exception in another process; carries the original type name and message.
class RemoteError : public Error {
 public:
  RemoteError(std::string type_name, std::string message);
  const std::string& type_name() const noexcept { return type_name_; }
  const std::string& message() const noexcept { return message_; }

 private:
  std::string type_name_;
  std::string message_;
};

/// The process running a task died before it finished.
class WorkerLost : public Error {
 public:
  explicit WorkerLost(const std::string& what) : Error(what) {}
};

/// The pool was terminated before the task finished.
class TerminatedError : public Error {
 public:
  explicit TerminatedError(const std::string& what) : Error(what) {}
};

/// The API was used before fiber::init, or in a process where it is not allowed.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& what) : Error(what) {}
};

/// The runtime's configuration cannot be used: the configuration file (fiber.yaml, or the one
/// FIBER_CONFIG names) is missing, not valid YAML, or has an unknown key or a value of the wrong
/// type or out of range; or a FIBER_* variable or a fiber::Config field has a bad value. Thrown
/// by fiber::init; the message names the source, the key and what is wrong.
class ConfigError : public UsageError {
 public:
  /// `source`: the file's path, the FIBER_* variable or "fiber::Config"; `key`: the key's path
  /// (e.g. "spawn.env"), empty when the problem is the source as a whole.
  ConfigError(const std::string& what, std::string source, std::string key);
  const std::string& source() const noexcept { return source_; }
  const std::string& key() const noexcept { return key_; }

 private:
  std::string source_;
  std::string key_;
};

}  // namespace fiber
