#include "fiber/wire/pool_messages.h"

#include <cstring>

namespace fiber::internal::wire {
namespace {

constexpr uint32_t kInitializerFailed = 1;
constexpr uint32_t kDropQueuedTasks = 1;
// A result's flags: the outcome in the low byte, then this bit.
constexpr uint32_t kOutcomeMask = 0xff;
constexpr uint32_t kNextStarted = 1u << 8;

}  // namespace

Outgoing PoolReady::encode() const {
  Outgoing out(Kind::kPoolReady);
  out.aux = pool;
  out.flags = initializer_failed ? kInitializerFailed : 0;
  if (initializer_failed) {
    serial::save(out.body, error_type);
    serial::save(out.body, error_message);
  }
  return out;
}

PoolReady PoolReady::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kPoolReady);
  PoolReady ready;
  ready.pool = in.envelope.aux;
  ready.initializer_failed = (in.envelope.flags & kInitializerFailed) != 0;
  if (ready.initializer_failed) {
    serial::Reader reader(in.payload);
    ready.error_type = serial::read<std::string>(reader);
    ready.error_message = serial::read<std::string>(reader);
  }
  return ready;
}

Outgoing PoolTasks::encode() const {
  Outgoing out(Kind::kPoolTask);
  out.aux = pool;
  out.borrowed = message;
  out.uses_borrowed = true;
  return out;
}

std::pair<uint64_t, std::vector<TaskChunk>> PoolTasks::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kPoolTask);
  return {in.envelope.aux, split_task_message(in.payload)};
}

Outgoing PoolResult::encode() const {
  Outgoing out(Kind::kPoolResult);
  out.id = task;
  out.aux = pool;
  out.flags = static_cast<uint32_t>(outcome) | (next_started ? kNextStarted : 0);
  out.borrowed = body;
  out.uses_borrowed = true;
  return out;
}

PoolResult PoolResult::decode(bridge::Received& in) {
  expect_kind(in, Kind::kPoolResult);
  const uint32_t outcome = in.envelope.flags & kOutcomeMask;
  if (outcome > static_cast<uint32_t>(PoolOutcome::kRaised))
    throw ProtocolError("a pool result with an unknown outcome " + std::to_string(outcome));
  PoolResult result;
  result.task = in.envelope.id;
  result.pool = in.envelope.aux;
  result.outcome = static_cast<PoolOutcome>(outcome);
  result.next_started = (in.envelope.flags & kNextStarted) != 0;
  result.body = std::move(in.payload);
  return result;
}

Outgoing PoolStarted::encode() const {
  Outgoing out(Kind::kPoolStarted);
  out.id = task;
  out.aux = pool;
  return out;
}

PoolStarted PoolStarted::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kPoolStarted);
  return PoolStarted{in.envelope.id, in.envelope.aux};
}

void PoolResult::begin_results(serial::Writer& writer) {
  const uint64_t compute_ns_slot = 0;
  writer.write_bytes(&compute_ns_slot, sizeof compute_ns_slot);
}

void PoolResult::finish_results(serial::Writer& writer, uint64_t compute_ns) {
  std::memcpy(writer.buffer().data(), &compute_ns, sizeof compute_ns);
}

void PoolResult::write_raised(serial::Writer& writer, const std::string& type,
                              const std::string& message) {
  serial::save(writer, type);
  serial::save(writer, message);
}

uint64_t PoolResult::compute_ns() const {
  serial::Reader reader(body);
  return serial::read<uint64_t>(reader);
}

std::pair<std::string, std::string> PoolResult::raised() const {
  serial::Reader reader(body);
  auto type = serial::read<std::string>(reader);
  auto message = serial::read<std::string>(reader);
  return {std::move(type), std::move(message)};
}

Outgoing PoolStop::encode() const {
  Outgoing out(Kind::kPoolStop);
  out.aux = pool;
  out.flags = drop_queued ? kDropQueuedTasks : 0;
  return out;
}

PoolStop PoolStop::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kPoolStop);
  return PoolStop{in.envelope.aux, (in.envelope.flags & kDropQueuedTasks) != 0};
}

}  // namespace fiber::internal::wire
