#include "fiber/wire/queue_messages.h"

namespace fiber::internal::wire {

Outgoing QueueCreate::encode() const {
  Outgoing out(Kind::kQueueCreate);
  out.id = request;
  out.aux = (pipe_channel ? 1u : 0u) | (joinable ? 2u : 0u);
  serial::save(out.body, maxsize);
  return out;
}

QueueCreate QueueCreate::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kQueueCreate);
  return QueueCreate{in.envelope.id, (in.envelope.aux & 1u) != 0, (in.envelope.aux & 2u) != 0,
                     serial::from_bytes<uint64_t>(in.payload)};
}

Outgoing QueueCall::encode() const {
  Outgoing out(Kind::kQueueCall);
  out.id = request;
  out.aux = queue;
  out.flags = static_cast<uint32_t>(op);
  out.body.reserve(sizeof timeout_us + item.size());
  serial::save(out.body, timeout_us);
  out.body.write_bytes(item.data(), item.size());
  return out;
}

QueueCall QueueCall::decode(bridge::Received& in) {
  expect_kind(in, Kind::kQueueCall);
  QueueCall call;
  call.request = in.envelope.id;
  call.queue = in.envelope.aux;
  call.op = static_cast<QueueOp>(in.envelope.flags);
  if (call.op != QueueOp::kPut && call.op != QueueOp::kTaskDone && call.op != QueueOp::kJoin)
    throw ProtocolError("unknown queue operation " + std::to_string(in.envelope.flags));
  serial::Reader reader(in.payload);
  call.timeout_us = serial::read<int64_t>(reader);
  const auto rest = reader.read_span(reader.remaining());
  call.item.assign(rest.begin(), rest.end());
  return call;
}

Outgoing QueuePut::encode() const {
  Outgoing out(Kind::kQueuePut);
  out.aux = queue;
  out.borrowed = item;
  out.uses_borrowed = true;
  return out;
}

QueuePut QueuePut::decode(bridge::Received& in) {
  expect_kind(in, Kind::kQueuePut);
  return QueuePut{in.envelope.aux, std::move(in.payload)};
}

Outgoing QueueWait::encode() const {
  Outgoing out(take ? Kind::kQueueGet : Kind::kQueuePoll);
  out.id = request;
  out.aux = queue;
  out.body.reserve(sizeof timeout_us);
  serial::save(out.body, timeout_us);
  return out;
}

QueueWait QueueWait::decode(const bridge::Received& in) {
  const bool take = in.envelope.kind == static_cast<uint32_t>(Kind::kQueueGet);
  if (!take) expect_kind(in, Kind::kQueuePoll);
  return QueueWait{in.envelope.id, in.envelope.aux, take, serial::from_bytes<int64_t>(in.payload)};
}

Outgoing QueueSize::encode() const {
  Outgoing out(Kind::kQueueSize);
  out.id = request;
  out.aux = queue;
  return out;
}

QueueSize QueueSize::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kQueueSize);
  return QueueSize{in.envelope.id, in.envelope.aux};
}

Outgoing QueueClose::encode() const {
  Outgoing out(Kind::kQueueClose);
  out.aux = queue;
  return out;
}

QueueClose QueueClose::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kQueueClose);
  return QueueClose{in.envelope.aux};
}

Outgoing Reply::encode() const {
  Outgoing out(Kind::kReply);
  out.id = request;
  out.flags = static_cast<uint32_t>(outcome);
  out.aux = value;
  out.borrowed = payload;
  out.uses_borrowed = true;
  return out;
}

Reply Reply::decode(bridge::Received& in) {
  expect_kind(in, Kind::kReply);
  return Reply{in.envelope.id, static_cast<Outcome>(in.envelope.flags), in.envelope.aux,
               std::move(in.payload)};
}

}  // namespace fiber::internal::wire
