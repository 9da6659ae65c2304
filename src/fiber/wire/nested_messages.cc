#include "fiber/wire/nested_messages.h"

#include "fiber/errors.h"

namespace fiber::internal::wire {
namespace {

void save_task_with_queues(serial::Writer& writer, const detail::TaskSpec& task) {
  detail::save_task(writer, task);
  serial::save(writer, task.produces);
}

detail::TaskSpec load_task_with_queues(serial::Reader& reader) {
  detail::TaskSpec task = detail::load_task(reader);
  serial::load(reader, task.produces);
  return task;
}

}  // namespace

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

void ErrorAccount::save(serial::Writer& writer) const {
  serial::save(writer, static_cast<uint32_t>(type));
  serial::save(writer, remote_type);
  serial::save(writer, message);
}

ErrorAccount ErrorAccount::load(serial::Reader& reader) {
  ErrorAccount account;
  const auto type = serial::read<uint32_t>(reader);
  if (type > static_cast<uint32_t>(Type::kOther))
    throw ProtocolError("unknown error type " + std::to_string(type));
  account.type = static_cast<Type>(type);
  account.remote_type = serial::read<std::string>(reader);
  account.message = serial::read<std::string>(reader);
  return account;
}

// ---- Processes ----

Outgoing ProcessStart::encode() const {
  Outgoing out(Kind::kProcessStart);
  out.id = request;
  out.flags = daemon ? 1 : 0;
  serial::save(out.body, name);
  serial::save(out.body, cores);
  serial::save(out.body, gpus);
  save_task_with_queues(out.body, task);
  return out;
}

ProcessStart ProcessStart::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kProcessStart);
  ProcessStart start;
  start.request = in.envelope.id;
  start.daemon = (in.envelope.flags & 1) != 0;
  serial::Reader reader(in.payload);
  start.name = serial::read<std::string>(reader);
  start.cores = serial::read<int32_t>(reader);
  start.gpus = serial::read<int32_t>(reader);
  if (start.cores < 1 || start.gpus < 0)
    throw ProtocolError("a Process asks for " + std::to_string(start.cores) + " cores and " +
                        std::to_string(start.gpus) + " GPUs");
  start.task = load_task_with_queues(reader);
  return start;
}

Outgoing ProcessTerminate::encode() const {
  Outgoing out(Kind::kProcessTerminate);
  out.id = request;
  out.aux = process;
  out.flags = static_cast<uint32_t>(signal);
  return out;
}

ProcessTerminate ProcessTerminate::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kProcessTerminate);
  return ProcessTerminate{in.envelope.id, in.envelope.aux, termination_signal(in.envelope.flags)};
}

Outgoing ProcessEvent::encode() const {
  Outgoing out(Kind::kProcessEvent);
  out.id = process;
  out.flags = ended ? 1 : 0;
  serial::save(out.body, pid);
  serial::save(out.body, host);
  serial::save(out.body, exitcode);
  serial::save(out.body, error);
  start_error.save(out.body);
  return out;
}

ProcessEvent ProcessEvent::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kProcessEvent);
  ProcessEvent event;
  event.process = in.envelope.id;
  event.ended = (in.envelope.flags & 1) != 0;
  serial::Reader reader(in.payload);
  event.pid = serial::read<int>(reader);
  event.host = serial::read<std::string>(reader);
  event.exitcode = serial::read<std::optional<int>>(reader);
  event.error = serial::read<std::string>(reader);
  event.start_error = ErrorAccount::load(reader);
  return event;
}

// ---- Pools ----

Outgoing PoolCreate::encode() const {
  Outgoing out(Kind::kPoolCreate);
  out.id = request;
  serial::save(out.body, settings.processes);
  serial::save(out.body, settings.initializer.has_value());
  if (settings.initializer) save_task_with_queues(out.body, *settings.initializer);
  serial::save(out.body, settings.maxtasksperchild);
  serial::save(out.body, settings.tasks_in_flight_per_worker);
  serial::save(out.body, settings.cover_spawn_pauses);
  serial::save(out.body, settings.max_task_retries);
  serial::save(out.body, settings.min_processes);
  serial::save(out.body, settings.max_processes);
  serial::save(out.body, static_cast<int64_t>(settings.idle_timeout.count()));
  serial::save(out.body, settings.take_joined_workers);
  serial::save(out.body, settings.fresh_processes);
  serial::save(out.body, settings.cpus_per_worker);
  serial::save(out.body, settings.memory_per_worker);
  serial::save(out.body, settings.gpus_per_worker);
  return out;
}

PoolCreate PoolCreate::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kPoolCreate);
  PoolCreate create;
  create.request = in.envelope.id;
  PoolSettings& settings = create.settings;
  serial::Reader reader(in.payload);
  settings.processes = serial::read<int>(reader);
  if (serial::read<bool>(reader)) settings.initializer = load_task_with_queues(reader);
  settings.maxtasksperchild = serial::read<uint64_t>(reader);
  settings.tasks_in_flight_per_worker = serial::read<int>(reader);
  settings.cover_spawn_pauses = serial::read<bool>(reader);
  settings.max_task_retries = serial::read<int>(reader);
  settings.min_processes = serial::read<int>(reader);
  settings.max_processes = serial::read<int>(reader);
  settings.idle_timeout = std::chrono::milliseconds(serial::read<int64_t>(reader));
  settings.take_joined_workers = serial::read<bool>(reader);
  settings.fresh_processes = serial::read<bool>(reader);
  settings.cpus_per_worker = serial::read<int>(reader);
  settings.memory_per_worker = serial::read<uint64_t>(reader);
  settings.gpus_per_worker = serial::read<int>(reader);
  return create;
}

Outgoing PoolCall::encode() const {
  Outgoing out(Kind::kPoolCall);
  out.id = request;
  out.aux = pool;
  out.flags = static_cast<uint32_t>(op);
  serial::save(out.body, argument);
  return out;
}

PoolCall PoolCall::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kPoolCall);
  if (in.envelope.flags > static_cast<uint32_t>(Op::kRelease))
    throw ProtocolError("unknown pool operation " + std::to_string(in.envelope.flags));
  return PoolCall{in.envelope.id, in.envelope.aux, static_cast<Op>(in.envelope.flags),
                  serial::from_bytes<int64_t>(in.payload)};
}

Outgoing PoolSubmit::encode() const {
  Outgoing out(Kind::kPoolSubmit);
  out.id = request;
  out.aux = pool;
  serial::save(out.body, job);
  serial::save(out.body, chunk_sizes);
  serial::save(out.body, chunks);
  return out;
}

PoolSubmit PoolSubmit::decode(bridge::Received& in) {
  expect_kind(in, Kind::kPoolSubmit);
  PoolSubmit submit;
  submit.request = in.envelope.id;
  submit.pool = in.envelope.aux;
  serial::Reader reader(in.payload);
  submit.job = serial::read<uint64_t>(reader);
  submit.chunk_sizes = serial::read<std::vector<uint32_t>>(reader);
  submit.chunks = serial::read<std::vector<detail::Bytes>>(reader);
  if (submit.chunks.size() != submit.chunk_sizes.size())
    throw ProtocolError("a job of " + std::to_string(submit.chunks.size()) + " chunks gives " +
                        std::to_string(submit.chunk_sizes.size()) + " chunk sizes");
  return submit;
}

Outgoing JobChunk::encode() const {
  Outgoing out(Kind::kJobChunk);
  out.id = job;
  out.aux = pool;
  serial::save(out.body, chunk);
  serial::save(out.body, offset);
  error.save(out.body);
  serial::save(out.body, results);
  return out;
}

JobChunk JobChunk::decode(bridge::Received& in) {
  expect_kind(in, Kind::kJobChunk);
  JobChunk chunk;
  chunk.job = in.envelope.id;
  chunk.pool = in.envelope.aux;
  serial::Reader reader(in.payload);
  chunk.chunk = serial::read<uint64_t>(reader);
  chunk.offset = serial::read<uint64_t>(reader);
  chunk.error = ErrorAccount::load(reader);
  chunk.results = serial::read<detail::Bytes>(reader);
  return chunk;
}

// ---- Groups ----

Outgoing GroupCreate::encode() const {
  Outgoing out(Kind::kGroupCreate);
  out.id = request;
  serial::save(out.body, size);
  serial::save(out.body, max_restarts);
  save_task_with_queues(out.body, task);
  return out;
}

GroupCreate GroupCreate::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kGroupCreate);
  GroupCreate create;
  create.request = in.envelope.id;
  serial::Reader reader(in.payload);
  create.size = serial::read<int>(reader);
  create.max_restarts = serial::read<int>(reader);
  create.task = load_task_with_queues(reader);
  return create;
}

Outgoing GroupCall::encode() const {
  Outgoing out(Kind::kGroupCall);
  out.id = request;
  out.aux = group;
  out.flags = static_cast<uint32_t>(op);
  return out;
}

GroupCall GroupCall::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kGroupCall);
  if (in.envelope.flags > static_cast<uint32_t>(Op::kRelease))
    throw ProtocolError("unknown group operation " + std::to_string(in.envelope.flags));
  return GroupCall{in.envelope.id, in.envelope.aux, static_cast<Op>(in.envelope.flags)};
}

Outgoing GroupEvent::encode() const {
  Outgoing out(Kind::kGroupEvent);
  out.id = group;
  out.flags = ended ? 1 : 0;
  serial::save(out.body, restarts);
  serial::save(out.body, exitcodes);
  start_error.save(out.body);
  serial::save(out.body, member_pids);
  return out;
}

GroupEvent GroupEvent::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kGroupEvent);
  GroupEvent event;
  event.group = in.envelope.id;
  event.ended = (in.envelope.flags & 1) != 0;
  serial::Reader reader(in.payload);
  event.restarts = serial::read<int>(reader);
  event.exitcodes = serial::read<std::vector<std::optional<int>>>(reader);
  event.start_error = ErrorAccount::load(reader);
  event.member_pids = serial::read<std::vector<int>>(reader);
  return event;
}

}  // namespace fiber::internal::wire
