#include "fiber/nesting/nested_messages.h"

#include "fiber/errors.h"

namespace fiber::internal::wire {
// ---- ErrorAccount ----

ErrorAccount ErrorAccount::of(const std::exception_ptr& error) {
  ErrorAccount account;
  if (!error) return account;
  try {
    std::rethrow_exception(error);
  } catch (const RemoteError& e) {
    account = {Type::kRemote, e.type_name(), e.message()};
  } catch (const WorkerLost& e) {
    account = {Type::kWorkerLost, {}, e.what()};
  } catch (const TerminatedError& e) {
    account = {Type::kTerminated, {}, e.what()};
  } catch (const SpawnError& e) {
    account = {Type::kSpawn, {}, e.what()};
  } catch (const UsageError& e) {
    account = {Type::kUsage, {}, e.what()};
  } catch (const std::exception& e) {
    account = {Type::kOther, {}, e.what()};
  } catch (...) {
    account = {Type::kOther, {}, "an unknown exception"};
  }
  return account;
}

std::exception_ptr ErrorAccount::rethrowable() const {
  switch (type) {
    case Type::kNone:
      return nullptr;
    case Type::kRemote:
      return std::make_exception_ptr(RemoteError(remote_type, message));
    case Type::kWorkerLost:
      return std::make_exception_ptr(WorkerLost(message));
    case Type::kTerminated:
      return std::make_exception_ptr(TerminatedError(message));
    case Type::kSpawn:
      return std::make_exception_ptr(SpawnError(message));
    case Type::kUsage:
      return std::make_exception_ptr(UsageError(message));
    case Type::kOther:
      break;
  }
  return std::make_exception_ptr(Error(message));
}

void ErrorAccount::validate() const {
  if (type > Type::kOther)
    throw ProtocolError("unknown error type " + std::to_string(static_cast<uint32_t>(type)));
}

// ---- Requests ----

void ProcessStart::validate() const {
  if (cores < 1 || gpus < 0)
    throw ProtocolError("a Process asks for " + std::to_string(cores) + " cores and " +
                        std::to_string(gpus) + " GPUs");
}

void ProcessTerminate::validate() const { termination_signal(static_cast<uint64_t>(signal)); }

void PoolCall::validate() const {
  if (op > Op::kRelease)
    throw ProtocolError("unknown pool operation " + std::to_string(static_cast<uint32_t>(op)));
}

void PoolSubmit::validate() const {
  if (chunks.size() != chunk_sizes.size())
    throw ProtocolError("a job of " + std::to_string(chunks.size()) + " chunks gives " +
                        std::to_string(chunk_sizes.size()) + " chunk sizes");
}

void GroupCall::validate() const {
  if (op > Op::kRelease)
    throw ProtocolError("unknown group operation " + std::to_string(static_cast<uint32_t>(op)));
}

}  // namespace fiber::internal::wire
