#include "fiber/wire/link_messages.h"

namespace fiber::internal::wire {

Outgoing Hello::encode() const {
  Outgoing out(Kind::kHello);
  serial::save(out.body, protocol);
  serial::save(out.body, module);
  serial::save(out.body, pid);
  serial::save(out.body, host);
  serial::save(out.body, pod);
  return out;
}

Hello Hello::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kHello);
  serial::Reader reader(in.payload);
  Hello hello;
  hello.protocol = serial::read<uint32_t>(reader);
  if (hello.protocol != kProtocolVersion) return hello;
  hello.module = serial::read<uint64_t>(reader);
  hello.pid = serial::read<int>(reader);
  hello.host = serial::read<std::string>(reader);
  hello.pod = serial::read<std::string>(reader);
  return hello;
}

Outgoing Welcome::encode() const {
  Outgoing out(Kind::kWelcome);
  serial::save(out.body, master_pid);
  serial::save(out.body, master_host);
  serial::save(out.body, run_directory);
  serial::save(out.body, static_cast<int64_t>(heartbeat_interval.count()));
  return out;
}

Welcome Welcome::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kWelcome);
  serial::Reader reader(in.payload);
  Welcome welcome;
  welcome.master_pid = serial::read<int>(reader);
  welcome.master_host = serial::read<std::string>(reader);
  welcome.run_directory = serial::read<std::string>(reader);
  welcome.heartbeat_interval = std::chrono::milliseconds(serial::read<int64_t>(reader));
  return welcome;
}

Outgoing Refuse::encode() const {
  Outgoing out(Kind::kRefuse);
  serial::save(out.body, reason);
  return out;
}

Refuse Refuse::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kRefuse);
  return Refuse{serial::from_bytes<std::string>(in.payload)};
}

Outgoing Shutdown::encode() const {
  Outgoing out(Kind::kShutdown);
  out.flags = run_ends ? 1 : 0;
  return out;
}

Shutdown Shutdown::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kShutdown);
  return Shutdown{(in.envelope.flags & 1) != 0};
}

Outgoing Heartbeat::encode() const {
  Outgoing out(Kind::kHeartbeat);
  out.id = sent_before;
  out.aux = received;
  serial::save(out.body, sent_at_ns);
  return out;
}

Heartbeat Heartbeat::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kHeartbeat);
  return Heartbeat{in.envelope.id, in.envelope.aux, serial::from_bytes<int64_t>(in.payload)};
}

}  // namespace fiber::internal::wire
