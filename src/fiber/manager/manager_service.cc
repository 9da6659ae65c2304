#include "fiber/manager/manager_service.h"

#include <cstdio>

#include "fiber/base/log.h"
#include "fiber/errors.h"
#include "fiber/function_ref.h"
#include "fiber/invoke.h"
#include "fiber/manager/manager_messages.h"
#include "fiber/process/process_state.h"

namespace fiber::internal {

namespace {

template <class Fn>
Fn resolve(serial::Reader& reader) {
  detail::FunctionRef ref;
  ref.module_id = serial::read<uint64_t>(reader);
  ref.offset = serial::read<uint64_t>(reader);
  return reinterpret_cast<Fn>(detail::ModuleTable::instance().decode(ref));
}

/// A user's exception as a kRemote failure: its type name, '\0', its message.
ObjectResult remote_failure() {
  std::string text = detail::current_exception_type_name();
  text.push_back('\0');
  try {
    throw;
  } catch (const std::exception& e) {
    text += e.what();
  } catch (...) {
    text += "(not a std::exception)";
  }
  return ObjectResult::error(Failure::kRemote, std::move(text));
}

}  // namespace

ManagerService::ManagerService(ProgressEngine& engine, Reply reply)
    : engine_(engine),
      reply_(std::move(reply)),
      hub_([](const std::string& line) { FIBER_LOG_WARNING("%s", line.c_str()); }) {}

ManagerService::~ManagerService() { stop(); }

void ManagerService::construct(Hosted& hosted, std::span<const std::byte> payload) {
  serial::Reader reader(payload);
  const auto factory = resolve<HostedFactory>(reader);
  hosted.destroy = resolve<HostedDestroyer>(reader);
  hosted.object = factory(reader);
}

ObjectResult ManagerService::run_hosted(Hosted& hosted, std::span<const std::byte> args) {
  std::lock_guard run(hosted.run_mu);
  if (!hosted.object)
    return ObjectResult::error(Failure::kRemote, hosted.failed.empty()
                                                     ? std::string("the object is gone")
                                                     : hosted.failed);
  try {
    serial::Reader reader(args);
    const auto invoker = resolve<HostedInvoker>(reader);
    serial::Writer result;
    invoker(hosted.object, reader, result);
    return ObjectResult::item(result.take());
  } catch (const ProtocolError& e) {
    return ObjectResult::error(Failure::kProtocol, e.what());
  } catch (...) {
    return remote_failure();
  }
}

std::shared_ptr<ManagerService::Hosted> ManagerService::start_hosted_locked(uint64_t id) {
  auto hosted = std::make_shared<Hosted>();
  Hosted* raw = hosted.get();
  hosted->thread = std::thread([raw] {
    std::unique_lock jobs(raw->jobs_mu);
    for (;;) {
      raw->jobs_cv.wait(jobs, [raw] { return raw->stopping || !raw->jobs.empty(); });
      if (raw->stopping) return;
      auto job = std::move(raw->jobs.front());
      raw->jobs.pop_front();
      jobs.unlock();
      job();
      jobs.lock();
    }
  });
  hosted_.emplace(id, hosted);
  return hosted;
}

void ManagerService::post_job(Hosted& hosted, std::function<void()> job) {
  {
    std::lock_guard jobs(hosted.jobs_mu);
    if (hosted.stopping) return;
    hosted.jobs.push_back(std::move(job));
  }
  hosted.jobs_cv.notify_one();
}

ObjectResult ManagerService::object_create(detail::ObjectType type,
                                           std::vector<std::byte> payload) {
  auto lock = engine_.lock();
  if (type != detail::ObjectType::kHosted) {
    try {
      return ObjectResult::number(hub_.create(type, payload));
    } catch (const UsageError& e) {
      return ObjectResult::error(Failure::kUsage, e.what());
    } catch (const std::exception& e) {
      return ObjectResult::error(Failure::kProtocol, e.what());
    }
  }
  // The master's own: constructed here, in the calling thread.
  const uint64_t id = hub_.reserve_id();
  auto hosted = start_hosted_locked(id);
  lock.unlock();
  std::lock_guard run(hosted->run_mu);
  try {
    construct(*hosted, payload);
  } catch (...) {
    ObjectResult failed = remote_failure();
    hosted->failed = "its construction failed: " + failed.reason;
    return failed;
  }
  return ObjectResult::number(id);
}

ObjectResult ManagerService::object_call(uint64_t object, detail::ObjectOp op,
                                         std::vector<std::byte> args,
                                         std::optional<std::chrono::microseconds> timeout) {
  auto lock = engine_.lock();
  if (op == detail::ObjectOp::kHostedCall) {
    auto found = hosted_.find(object);
    if (found == hosted_.end())
      return ObjectResult::error(Failure::kProtocol,
                                 "unknown shared object id " + std::to_string(object));
    auto hosted = found->second;
    lock.unlock();
    return run_hosted(*hosted, args);
  }
  std::optional<Clock::time_point> deadline;
  if (timeout) deadline = Clock::now() + *timeout;
  auto result = std::make_shared<std::optional<ObjectResult>>();
  try {
    hub_.call(object, op, kMasterId, "the master", args, deadline,
              [this, result](ObjectResult outcome) {
                *result = std::move(outcome);
                engine_.notify_locked();
              });
  } catch (const ProtocolError& e) {
    return ObjectResult::error(Failure::kProtocol, e.what());
  }
  if (!result->has_value()) {
    next_deadline_.note(deadline);
    engine_.await(lock, [&] { return result->has_value(); });
  }
  return std::move(**result);
}

void ManagerService::answer_locked(MPI_Comm comm, int source, uint64_t request,
                                   const ObjectResult& result) {
  wire::Reply reply{request, result.outcome, result.value, {}};
  if (result.outcome == Outcome::kError) {
    reply.value = static_cast<uint64_t>(result.failure);
    const auto* text = reinterpret_cast<const std::byte*>(result.reason.data());
    reply.payload.assign(text, text + result.reason.size());
  } else {
    reply.payload = result.bytes;
  }
  // An answer is sent from inside hub bookkeeping, which must not be cut short by a throw.
  try {
    reply_(comm, source, reply);
  } catch (const std::exception& e) {
    FIBER_LOG_ERROR("could not answer rank %d: %s", source, e.what());
  }
}

void ManagerService::serve(wire::HandlerTable<const wire::Requester&>& handlers) {
  handlers.add(Kind::kObjectCreate, [this](const wire::Requester& from, bridge::Received& message) {
    answering_failures_locked(from, message, &ManagerService::on_create_locked);
  });
  handlers.add(Kind::kObjectCall, [this](const wire::Requester& from, bridge::Received& message) {
    answering_failures_locked(from, message, &ManagerService::on_call_locked);
  });
}

void ManagerService::answering_failures_locked(
    const wire::Requester& from, bridge::Received& message,
    void (ManagerService::*handler)(const wire::Requester&, bridge::Received&)) {
  try {
    (this->*handler)(from, message);
  } catch (const UsageError& e) {
    answer_locked(from.comm, from.source, message.envelope.id,
                  ObjectResult::error(Failure::kUsage, e.what()));
  } catch (const std::exception& e) {
    answer_locked(from.comm, from.source, message.envelope.id,
                  ObjectResult::error(Failure::kProtocol,
                                      std::string("malformed manager request: ") + e.what()));
  }
}

void ManagerService::on_create_locked(const wire::Requester& from, bridge::Received& message) {
  const uint64_t request = message.envelope.id;
  const MPI_Comm comm = from.comm;
  const int source = from.source;
  auto create = wire::ObjectCreate::decode(message);
  if (create.type != detail::ObjectType::kHosted) {
    answer_locked(comm, source, request,
                  ObjectResult::number(hub_.create(create.type, create.payload)));
    return;
  }
  // Constructed by the object's own thread, which answers once it is made.
  const uint64_t id = hub_.reserve_id();
  auto hosted = start_hosted_locked(id);
  post_job(*hosted, [this, hosted, id, comm, source, request, payload = std::move(create.payload)] {
    ObjectResult result = ObjectResult::number(id);
    {
      std::lock_guard run(hosted->run_mu);
      try {
        construct(*hosted, payload);
      } catch (...) {
        result = remote_failure();
        hosted->failed = "its construction failed: " + result.reason;
      }
    }
    auto lock = engine_.lock();
    answer_locked(comm, source, request, result);
  });
}

void ManagerService::on_call_locked(const wire::Requester& from, bridge::Received& message) {
  const uint64_t request = message.envelope.id;
  const MPI_Comm comm = from.comm;
  const int source = from.source;
  auto call = wire::ObjectCall::decode(message);
  if (static_cast<detail::ObjectOp>(call.op) == detail::ObjectOp::kHostedCall) {
    auto found = hosted_.find(call.object);
    if (found == hosted_.end()) {
      answer_locked(comm, source, request,
                    ObjectResult::error(Failure::kProtocol,
                                        "unknown shared object id " + std::to_string(call.object)));
      return;
    }
    auto hosted = found->second;
    post_job(*hosted, [this, hosted, comm, source, request, args = std::move(call.payload)] {
      ObjectResult result = run_hosted(*hosted, args);
      auto lock = engine_.lock();
      answer_locked(comm, source, request, result);
    });
    return;
  }
  std::optional<Clock::time_point> deadline;
  if (call.timeout_us >= 0) deadline = Clock::now() + std::chrono::microseconds(call.timeout_us);
  hub_.call(call.object, static_cast<detail::ObjectOp>(call.op), from.process, from.who,
            call.payload, deadline, [this, comm, source, request](ObjectResult result) {
              answer_locked(comm, source, request, result);
            });
  next_deadline_.note(deadline);
}

void ManagerService::process_ended_locked(uint64_t process, const std::string& how) {
  hub_.process_ended(process, how);
}

void ManagerService::expire(Clock::time_point now) {
  if (!next_deadline_.due(now)) return;
  auto lock = engine_.lock();
  const auto next = hub_.expire(now);
  next_deadline_.reset(next);
  engine_.notify_locked();
}

void ManagerService::stop() {
  std::unordered_map<uint64_t, std::shared_ptr<Hosted>> hosted;
  {
    auto lock = engine_.lock();
    hosted.swap(hosted_);
  }
  for (auto& [id, object] : hosted) {
    {
      std::lock_guard jobs(object->jobs_mu);
      object->stopping = true;
    }
    object->jobs_cv.notify_all();
  }
  for (auto& [id, object] : hosted) {
    if (object->thread.joinable()) object->thread.join();
    object->jobs.clear();  // their callers are gone; the jobs hold the object
    std::lock_guard run(object->run_mu);
    if (object->object && object->destroy) {
      try {
        object->destroy(object->object);
      } catch (...) {
        FIBER_LOG_ERROR("the destructor of a Manager's object threw");
      }
    }
    object->object = nullptr;
  }
}

}  // namespace fiber::internal
