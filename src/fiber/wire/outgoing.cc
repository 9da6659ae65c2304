#include "fiber/wire/outgoing.h"

#include <csignal>
#include <string>

#include "fiber/errors.h"

namespace fiber::internal {

const char* kind_name(uint32_t kind) {
  switch (static_cast<Kind>(kind)) {
    case Kind::kHello:
      return "kHello";
    case Kind::kWelcome:
      return "kWelcome";
    case Kind::kRefuse:
      return "kRefuse";
    case Kind::kRun:
      return "kRun";
    case Kind::kTerminate:
      return "kTerminate";
    case Kind::kExited:
      return "kExited";
    case Kind::kShutdown:
      return "kShutdown";
    case Kind::kQueueCreate:
      return "kQueueCreate";
    case Kind::kQueuePut:
      return "kQueuePut";
    case Kind::kQueueGet:
      return "kQueueGet";
    case Kind::kQueuePoll:
      return "kQueuePoll";
    case Kind::kQueueSize:
      return "kQueueSize";
    case Kind::kQueueClose:
      return "kQueueClose";
    case Kind::kReply:
      return "kReply";
    case Kind::kQueueCall:
      return "kQueueCall";
    case Kind::kObjectCreate:
      return "kObjectCreate";
    case Kind::kObjectCall:
      return "kObjectCall";
    case Kind::kPoolReady:
      return "kPoolReady";
    case Kind::kPoolTask:
      return "kPoolTask";
    case Kind::kPoolResult:
      return "kPoolResult";
    case Kind::kHeartbeat:
      return "kHeartbeat";
    case Kind::kLeave:
      return "kLeave";
    case Kind::kPoolStop:
      return "kPoolStop";
    case Kind::kGoodbye:
      return "kGoodbye";
    case Kind::kGroupPlan:
      return "kGroupPlan";
    case Kind::kGroupPorts:
      return "kGroupPorts";
    case Kind::kGroupStop:
      return "kGroupStop";
    case Kind::kProcessStart:
      return "kProcessStart";
    case Kind::kProcessTerminate:
      return "kProcessTerminate";
    case Kind::kProcessEvent:
      return "kProcessEvent";
    case Kind::kPoolCreate:
      return "kPoolCreate";
    case Kind::kPoolCall:
      return "kPoolCall";
    case Kind::kPoolSubmit:
      return "kPoolSubmit";
    case Kind::kJobChunk:
      return "kJobChunk";
    case Kind::kGroupCreate:
      return "kGroupCreate";
    case Kind::kGroupCall:
      return "kGroupCall";
    case Kind::kGroupEvent:
      return "kGroupEvent";
    case Kind::kPoolStarted:
      return "kPoolStarted";
  }
  return "an unknown kind";
}

bridge::Received as_received(const Outgoing& out, uint32_t sender, uint32_t seq) {
  bridge::Received in;
  in.envelope =
      bridge::Envelope{static_cast<uint32_t>(out.kind), out.flags, out.id, out.aux, sender, seq};
  const auto payload = out.payload();
  in.payload.assign(payload.begin(), payload.end());
  return in;
}

void expect_kind(const bridge::Received& in, Kind kind) {
  if (in.envelope.kind == static_cast<uint32_t>(kind)) return;
  throw ProtocolError(std::string("expected a ") + kind_name(static_cast<uint32_t>(kind)) +
                      " message, got " + kind_name(in.envelope.kind) + " (kind " +
                      std::to_string(in.envelope.kind) + ")");
}

std::string payload_text(const bridge::Received& in) {
  return std::string(reinterpret_cast<const char*>(in.payload.data()), in.payload.size());
}

int termination_signal(uint64_t value) {
  if (value != SIGTERM && value != SIGKILL) {
    throw ProtocolError("a terminate message names signal " + std::to_string(value) +
                        "; only SIGTERM and SIGKILL end a process");
  }
  return static_cast<int>(value);
}

}  // namespace fiber::internal
