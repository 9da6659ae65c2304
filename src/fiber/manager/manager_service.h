// The master's manager service: the hub of shared objects (Dict, List, Value, Lock, Event,
// Barrier), the objects of users' classes a Manager makes (each with a thread of its own, so a
// slow member function holds up nothing else), the master's own calls on them, the requests
// workers send, and the deadlines of waiting calls. Internal.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include "fiber/engine/next_deadline.h"
#include "fiber/engine/progress_engine.h"
#include "fiber/manager/manager_access.h"
#include "fiber/manager/manager_hub.h"
#include "fiber/wire/handler_table.h"
#include "fiber/wire/reply.h"

namespace fiber::internal {

/// Makes an object of a user's class in the master from its encoded constructor arguments.
using HostedFactory = void* (*)(serial::Reader& args);
/// Destroys what a HostedFactory made.
using HostedDestroyer = void (*)(void* object);
/// Runs a member function on such an object: reads which one and its arguments, writes the
/// result.
using HostedInvoker = void (*)(void* object, serial::Reader& args, serial::Writer& result);

class ManagerService final : public ManagerAccess {
 public:
  /// Sends a reply to a worker (numbered and counted by the master); with the lock held.
  using Reply = std::function<void(MPI_Comm comm, int rank, const wire::Reply& reply)>;

  ManagerService(ProgressEngine& engine, Reply reply);
  ~ManagerService() override;

  // The master's own operations (they take the lock).
  ObjectResult object_create(detail::ObjectType type, std::vector<std::byte> payload) override;
  ObjectResult object_call(uint64_t object, detail::ObjectOp op, std::vector<std::byte> args,
                           std::optional<std::chrono::microseconds> timeout) override;

  /// Registers the handlers of the requests workers send (kObjectCreate, kObjectCall); they
  /// run with the lock held.
  void serve(wire::HandlerTable<const wire::Requester&>& handlers);
  /// `process` ended: its locks are released, barriers it waited at break. With the lock held.
  void process_ended_locked(uint64_t process, const std::string& how);
  /// Completes waiting calls whose deadline passed. Takes the lock when one is due.
  void expire(Clock::time_point now);
  /// Ends the threads of users' objects and destroys those objects (at the program's end,
  /// without the lock). Calls still queued are dropped: their callers are gone.
  void stop();

 private:
  void on_create_locked(const wire::Requester& from, bridge::Received& message);
  void on_call_locked(const wire::Requester& from, bridge::Received& message);
  /// Runs `handler`, answering the request with the failure it throws.
  void answering_failures_locked(const wire::Requester& from, bridge::Received& message,
                                 void (ManagerService::*handler)(const wire::Requester&,
                                                                 bridge::Received&));
  /// An object of a user's class, with the thread that runs calls of workers on it.
  struct Hosted {
    void* object = nullptr;
    HostedDestroyer destroy = nullptr;
    std::string failed;  ///< Why its construction failed, if it did.
    std::mutex run_mu;   ///< One member function at a time.
    std::mutex jobs_mu;
    std::condition_variable jobs_cv;
    std::deque<std::function<void()>> jobs;
    bool stopping = false;
    std::thread thread;
  };
  /// Runs a call on a hosted object: the invoker's result, or the exception it threw.
  static ObjectResult run_hosted(Hosted& hosted, std::span<const std::byte> args);
  /// Makes a hosted object from a kHosted payload (factory, destroyer, arguments).
  static void construct(Hosted& hosted, std::span<const std::byte> payload);
  std::shared_ptr<Hosted> start_hosted_locked(uint64_t id);
  void post_job(Hosted& hosted, std::function<void()> job);
  void answer_locked(MPI_Comm comm, int source, uint64_t request, const ObjectResult& result);

  ProgressEngine& engine_;
  Reply reply_;
  ManagerHub hub_;
  std::unordered_map<uint64_t, std::shared_ptr<Hosted>> hosted_;  ///< Guarded by the lock.
  NextDeadline next_deadline_;
};

}  // namespace fiber::internal
