#include "fiber/wire/manager_messages.h"

namespace fiber::internal::wire {

Outgoing ObjectCreate::encode() const {
  Outgoing out(Kind::kObjectCreate);
  out.id = request;
  out.flags = static_cast<uint32_t>(type);
  out.borrowed = payload;
  out.uses_borrowed = true;
  return out;
}

ObjectCreate ObjectCreate::decode(bridge::Received& in) {
  expect_kind(in, Kind::kObjectCreate);
  const auto type = static_cast<detail::ObjectType>(in.envelope.flags);
  if (in.envelope.flags < static_cast<uint32_t>(detail::ObjectType::kDict) ||
      in.envelope.flags > static_cast<uint32_t>(detail::ObjectType::kCondition))
    throw ProtocolError("unknown shared object type " + std::to_string(in.envelope.flags));
  return ObjectCreate{in.envelope.id, type, std::move(in.payload)};
}

Outgoing ObjectCall::encode() const {
  Outgoing out(Kind::kObjectCall);
  out.id = request;
  out.aux = object;
  out.flags = op;
  out.body.reserve(sizeof timeout_us + payload.size());
  serial::save(out.body, timeout_us);
  out.body.write_bytes(payload.data(), payload.size());
  return out;
}

ObjectCall ObjectCall::decode(bridge::Received& in) {
  expect_kind(in, Kind::kObjectCall);
  ObjectCall call;
  call.request = in.envelope.id;
  call.object = in.envelope.aux;
  call.op = in.envelope.flags;
  serial::Reader reader(in.payload);
  call.timeout_us = serial::read<int64_t>(reader);
  const auto rest = reader.read_span(reader.remaining());
  call.payload.assign(rest.begin(), rest.end());
  return call;
}

}  // namespace fiber::internal::wire
