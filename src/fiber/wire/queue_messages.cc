#include "fiber/wire/queue_messages.h"

namespace fiber::detail::wire {

Outgoing QueueCreate::encode() const {
  Outgoing out(Kind::kQueueCreate);
  out.id = request;
  out.aux = pipe_channel ? 1 : 0;
  return out;
}

QueueCreate QueueCreate::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kQueueCreate);
  return QueueCreate{in.envelope.id, in.envelope.aux == 1};
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

}  // namespace fiber::detail::wire
