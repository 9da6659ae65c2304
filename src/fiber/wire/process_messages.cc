#include "fiber/wire/process_messages.h"

namespace fiber::internal::wire {
namespace {

constexpr uint32_t kStayAfterRun = 1;
constexpr uint32_t kWorkerLeaves = 1;
constexpr uint32_t kWithoutFinalize = 2;

}  // namespace

Outgoing Run::encode() const {
  Outgoing out(Kind::kRun);
  out.id = process;
  out.flags = stay_after ? kStayAfterRun : 0;
  serial::save(out.body, name);
  detail::save_task(out.body, task);
  serial::save(out.body, visible_gpus);
  return out;
}

Run Run::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kRun);
  Run run;
  run.process = in.envelope.id;
  run.stay_after = (in.envelope.flags & kStayAfterRun) != 0;
  serial::Reader reader(in.payload);
  run.name = serial::read<std::string>(reader);
  run.task = detail::load_task(reader);
  run.visible_gpus = serial::read<std::string>(reader);
  return run;
}

Outgoing Terminate::encode() const {
  Outgoing out(Kind::kTerminate);
  out.id = process;
  out.aux = static_cast<uint64_t>(signal);
  return out;
}

Terminate Terminate::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kTerminate);
  return Terminate{in.envelope.id, termination_signal(in.envelope.aux)};
}

Outgoing Exited::encode() const {
  Outgoing out(Kind::kExited);
  out.id = process;
  out.flags = (worker_leaves ? kWorkerLeaves : 0) | (without_finalize ? kWithoutFinalize : 0);
  serial::save(out.body, code);
  serial::save(out.body, error);
  return out;
}

Exited Exited::decode(const bridge::Received& in) {
  expect_kind(in, Kind::kExited);
  Exited exited;
  exited.process = in.envelope.id;
  exited.worker_leaves = (in.envelope.flags & kWorkerLeaves) != 0;
  exited.without_finalize = (in.envelope.flags & kWithoutFinalize) != 0;
  serial::Reader reader(in.payload);
  exited.code = serial::read<int>(reader);
  exited.error = serial::read<std::string>(reader);
  return exited;
}

}  // namespace fiber::internal::wire

namespace fiber::internal::wire {

bool is_last_word(const Outgoing& out) {
  return out.kind == Kind::kGoodbye || (out.kind == Kind::kExited && (out.flags & kWorkerLeaves));
}

}  // namespace fiber::internal::wire
