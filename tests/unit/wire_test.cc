// Every message kind survives its own encode and decode (what one side sends is what the other
// reads), a message is never read as another kind, and a malformed payload is a ProtocolError,
// never a crash or a silent default.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <typeinfo>
#include <vector>

#include "fiber/errors.h"
#include "fiber/group/group_messages.h"
#include "fiber/manager/manager_messages.h"
#include "fiber/nesting/nested_messages.h"
#include "fiber/pool/pool_messages.h"
#include "fiber/process/process_messages.h"
#include "fiber/queue/queue_messages.h"
#include "fiber/runtime/protocol.h"
#include "fiber/wire/handler_table.h"
#include "fiber/wire/link_messages.h"

namespace fiber::internal {
namespace {

using namespace std::chrono_literals;

template <class Message>
Message round_trip(const Message& message) {
  bridge::Received in = as_received(message.encode());
  return Message::decode(in);
}

std::vector<std::byte> bytes_of(const std::string& text) {
  const auto* data = reinterpret_cast<const std::byte*>(text.data());
  return {data, data + text.size()};
}

TEST(Wire, HandshakeMessages) {
  const auto hello = round_trip(wire::Hello{protocol_version(), 77, 1234, "node-1", "pod-a/uid-9"});
  EXPECT_EQ(hello.protocol, protocol_version());
  EXPECT_EQ(hello.module, 77u);
  EXPECT_EQ(hello.pid, 1234);
  EXPECT_EQ(hello.host, "node-1");
  EXPECT_EQ(hello.pod, "pod-a/uid-9");

  const auto welcome = round_trip(wire::Welcome{42, "head", "/tmp/fibermpi-x", 250ms});
  EXPECT_EQ(welcome.master_pid, 42);
  EXPECT_EQ(welcome.master_host, "head");
  EXPECT_EQ(welcome.run_directory, "/tmp/fibermpi-x");
  EXPECT_EQ(welcome.heartbeat_interval, 250ms);

  EXPECT_EQ(round_trip(wire::Refuse{"another binary"}).reason, "another binary");

  const auto beat = round_trip(wire::Heartbeat{5, 9, -17});
  EXPECT_EQ(beat.sent_before, 5u);
  EXPECT_EQ(beat.received, 9u);
  EXPECT_EQ(beat.sent_at_ns, -17);
}

TEST(Wire, HelloOfAnotherProtocolIsReadAsFarAsItsProtocol) {
  Outgoing out(Kind::kHello);
  serial::save(out.body, protocol_version() - 1);
  serial::save(out.body, uint64_t{1});  // an older layout: nothing more need be readable
  bridge::Received in = as_received(out);
  const auto hello = wire::Hello::decode(in);
  EXPECT_EQ(hello.protocol, protocol_version() - 1);
  EXPECT_EQ(hello.pid, 0);
}

TEST(Wire, ProcessMessages) {
  detail::TaskSpec task;
  task.invoker = {11, 12};
  task.fn = {13, 14};
  task.args = bytes_of("args");
  const auto run = round_trip(wire::Run{8, true, "Process-8", task, "2,3"});
  EXPECT_EQ(run.process, 8u);
  EXPECT_TRUE(run.stay_after);
  EXPECT_EQ(run.name, "Process-8");
  EXPECT_EQ(run.task.invoker, task.invoker);
  EXPECT_EQ(run.task.fn, task.fn);
  EXPECT_EQ(run.task.args, task.args);
  EXPECT_EQ(run.visible_gpus, "2,3");
  EXPECT_EQ(round_trip(wire::Run{9, false, "PoolWorker-9", task, ""}).visible_gpus, "");

  EXPECT_EQ(round_trip(wire::Terminate{3}).process, 3u);

  const auto exited = round_trip(wire::Exited{8, 1, "uncaught std::runtime_error: boom", true});
  EXPECT_EQ(exited.process, 8u);
  EXPECT_EQ(exited.code, 1);
  EXPECT_EQ(exited.error, "uncaught std::runtime_error: boom");
  EXPECT_TRUE(exited.worker_leaves);
  EXPECT_FALSE(exited.without_finalize);
  EXPECT_TRUE(round_trip(wire::Exited{8, -15, "stopped", true, true}).without_finalize);
  EXPECT_TRUE(wire::is_last_word(wire::Exited{8, 0, "", true}.encode()));
  EXPECT_FALSE(wire::is_last_word(wire::Exited{8, 0, "", false}.encode()));
  EXPECT_TRUE(wire::is_last_word(wire::Goodbye{}.encode()));
  EXPECT_FALSE(wire::is_last_word(wire::Leave{}.encode()));
}

TEST(Wire, ManagerMessages) {
  const auto payload = bytes_of("args");
  bridge::Received create_in =
      as_received(wire::ObjectCreate{3, detail::ObjectType::kBarrier, payload}.encode());
  const auto create = wire::ObjectCreate::decode(create_in);
  EXPECT_EQ(create.request, 3u);
  EXPECT_EQ(create.type, detail::ObjectType::kBarrier);
  EXPECT_EQ(create.payload, payload);
  auto bad_type = wire::ObjectCreate{3, detail::ObjectType::kDict, {}}.encode();
  bad_type.flags = 0;
  bridge::Received bad_in = as_received(bad_type);
  EXPECT_THROW(wire::ObjectCreate::decode(bad_in), ProtocolError);

  bridge::Received call_in = as_received(
      wire::ObjectCall{4, 12, static_cast<uint32_t>(detail::ObjectOp::kLockAcquire), 900, payload}
          .encode());
  const auto call = wire::ObjectCall::decode(call_in);
  EXPECT_EQ(call.request, 4u);
  EXPECT_EQ(call.object, 12u);
  EXPECT_EQ(call.op, static_cast<uint32_t>(detail::ObjectOp::kLockAcquire));
  EXPECT_EQ(call.timeout_us, 900);
  EXPECT_EQ(call.payload, payload);
  bridge::Received short_in = as_received(wire::ObjectCall{4, 12, 1, -1, {}}.encode());
  short_in.payload.resize(3);
  EXPECT_THROW(wire::ObjectCall::decode(short_in), ProtocolError);
}

TEST(Wire, QueueMessages) {
  const auto create = round_trip(wire::QueueCreate{4, true});
  EXPECT_EQ(create.request, 4u);
  EXPECT_TRUE(create.pipe_channel);
  EXPECT_FALSE(create.joinable);
  const auto bounded = round_trip(wire::QueueCreate{5, false, true, 64});
  EXPECT_FALSE(bounded.pipe_channel);
  EXPECT_TRUE(bounded.joinable);
  EXPECT_EQ(bounded.maxsize, 64u);

  for (const auto op : {wire::QueueOp::kPut, wire::QueueOp::kTaskDone, wire::QueueOp::kJoin}) {
    bridge::Received in = as_received(wire::QueueCall{8, 6, op, 250, bytes_of("x")}.encode());
    const auto call = wire::QueueCall::decode(in);
    EXPECT_EQ(call.request, 8u);
    EXPECT_EQ(call.queue, 6u);
    EXPECT_EQ(call.op, op);
    EXPECT_EQ(call.timeout_us, 250);
    EXPECT_EQ(call.item, bytes_of("x"));
  }
  auto unknown_op = wire::QueueCall{8, 6, wire::QueueOp::kPut, -1, {}}.encode();
  unknown_op.flags = 99;
  bridge::Received unknown_in = as_received(unknown_op);
  EXPECT_THROW(wire::QueueCall::decode(unknown_in), ProtocolError);

  bridge::Received put_in = as_received(wire::QueuePut{6, bytes_of("item")}.encode());
  const auto put = wire::QueuePut::decode(put_in);
  EXPECT_EQ(put.queue, 6u);
  EXPECT_EQ(put.item, bytes_of("item"));

  const wire::QueueGet get{7, 6, 1500};
  EXPECT_EQ(get.encode().kind, Kind::kQueueGet);
  const auto got = round_trip(get);
  EXPECT_EQ(got.request, 7u);
  EXPECT_EQ(got.queue, 6u);
  EXPECT_EQ(got.timeout_us, 1500);
  const wire::QueuePoll poll{8, 5, -1};
  EXPECT_EQ(poll.encode().kind, Kind::kQueuePoll);
  const auto polled = round_trip(poll);
  EXPECT_EQ(polled.request, 8u);
  EXPECT_EQ(polled.queue, 5u);
  EXPECT_EQ(polled.timeout_us, -1);
  EXPECT_THROW(wire::QueueGet::decode(as_received(poll.encode())), ProtocolError);
  const auto size = round_trip(wire::QueueSize{9, 6});
  EXPECT_EQ(size.request, 9u);
  EXPECT_EQ(size.queue, 6u);
  EXPECT_EQ(round_trip(wire::QueueClose{6}).queue, 6u);

  const auto reply = round_trip(wire::Reply{9, Outcome::kEof, 3, bytes_of("nobody left")});
  EXPECT_EQ(reply.request, 9u);
  EXPECT_EQ(reply.outcome, Outcome::kEof);
  EXPECT_EQ(reply.value, 3u);
  EXPECT_EQ(reply.text(), "nobody left");
}

TEST(Wire, PoolMessages) {
  const auto ready = round_trip(wire::PoolReady{2, true, "std::logic_error", "bad init"});
  EXPECT_EQ(ready.pool, 2u);
  EXPECT_TRUE(ready.initializer_failed);
  EXPECT_EQ(ready.error_type, "std::logic_error");
  EXPECT_EQ(ready.error_message, "bad init");
  EXPECT_FALSE(round_trip(wire::PoolReady{2, false, "", ""}).initializer_failed);

  TaskMessageBuilder builder;
  builder.add(10, bytes_of("first"));
  builder.add(11, bytes_of(""));
  bridge::Received tasks_in = as_received(wire::PoolTasks{2, builder.bytes()}.encode());
  const auto tasks = wire::PoolTasks::decode(tasks_in);
  EXPECT_EQ(tasks.pool, 2u);
  const auto chunks = tasks.chunks();
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0].task, 10u);
  EXPECT_EQ(chunks[0].payload, bytes_of("first"));
  EXPECT_EQ(chunks[1].task, 11u);
  EXPECT_TRUE(chunks[1].payload.empty());

  serial::Writer body;
  wire::PoolResult::begin_results(body);
  serial::save(body, 99);
  wire::PoolResult::finish_results(body, 12345);
  wire::PoolResult sent;
  sent.task = 10;
  sent.pool = 2;
  sent.body = body.take();
  const auto result = round_trip(sent);
  EXPECT_EQ(result.task, 10u);
  EXPECT_EQ(result.pool, 2u);
  EXPECT_EQ(result.outcome, PoolOutcome::kResults);
  EXPECT_EQ(result.compute_ns(), 12345u);
  serial::Reader values(std::span(result.body).subspan(wire::PoolResult::kResultsOffset));
  EXPECT_EQ(serial::read<int>(values), 99);

  wire::PoolResult raised;
  raised.outcome = PoolOutcome::kRaised;
  serial::Writer account;
  wire::PoolResult::write_raised(account, "std::out_of_range", "index 7");
  raised.body = account.take();
  const auto [type, message] = round_trip(raised).raised();
  EXPECT_EQ(type, "std::out_of_range");
  EXPECT_EQ(message, "index 7");

  EXPECT_TRUE(round_trip(wire::PoolStop{2, true}).drop_queued);
  EXPECT_FALSE(round_trip(wire::PoolStop{2, false}).drop_queued);
}

TEST(Wire, GroupMessages) {
  wire::GroupPlan plan{3, 2, 1, 4, 1, {{1, 2, 3}, {0, 4}}};
  const auto read = round_trip(plan);
  EXPECT_EQ(read.group, 3u);
  EXPECT_EQ(read.attempt, 2u);
  EXPECT_EQ(read.restarts, 1);
  EXPECT_EQ(read.rank, 4);
  EXPECT_EQ(read.island, 1);
  EXPECT_EQ(read.islands, plan.islands);
  EXPECT_EQ(read.size(), 5);
  plan.rank = 5;  // beyond the members
  bridge::Received beyond = as_received(plan.encode());
  EXPECT_THROW(wire::GroupPlan::decode(beyond), ProtocolError);

  const auto ports = round_trip(wire::GroupPorts{3, 2, {"port-a", "port-b"}});
  EXPECT_EQ(ports.ports, (std::vector<std::string>{"port-a", "port-b"}));
  const auto stop = round_trip(wire::GroupStop{3, 2, "a member died"});
  EXPECT_EQ(stop.attempt, 2u);
  EXPECT_EQ(stop.reason, "a member died");
}

TEST(Wire, NestingMessagesKeepErrorTypes) {
  PoolSettings settings;
  settings.processes = 3;
  settings.max_processes = 6;
  settings.idle_timeout = 1500ms;
  settings.take_joined_workers = false;
  settings.fresh_processes = true;
  settings.cpus_per_worker = 2;
  settings.memory_per_worker = uint64_t{3} << 30;
  settings.gpus_per_worker = 1;
  settings.initializer = detail::TaskSpec{{1, 2}, {3, 4}, bytes_of("init"), {7}};
  const auto create = round_trip(wire::PoolCreate{9, settings});
  EXPECT_EQ(create.settings.processes, 3);
  EXPECT_EQ(create.settings.max_processes, 6);
  EXPECT_EQ(create.settings.idle_timeout, 1500ms);
  EXPECT_FALSE(create.settings.take_joined_workers);
  EXPECT_TRUE(create.settings.fresh_processes);
  EXPECT_EQ(create.settings.cpus_per_worker, 2);
  EXPECT_EQ(create.settings.memory_per_worker, uint64_t{3} << 30);
  EXPECT_EQ(create.settings.gpus_per_worker, 1);
  ASSERT_TRUE(create.settings.initializer.has_value());
  EXPECT_EQ(create.settings.initializer->args, bytes_of("init"));
  EXPECT_EQ(create.settings.initializer->produces, (std::vector<uint64_t>{7}));

  wire::JobChunk chunk{2, 5,
                       1, bytes_of("results"),
                       8, wire::ErrorAccount::of(std::make_exception_ptr(RemoteError("E", "m")))};
  bridge::Received in = as_received(chunk.encode());
  const auto read = wire::JobChunk::decode(in);
  EXPECT_EQ(read.results, bytes_of("results"));
  EXPECT_EQ(read.offset, 8u);
  try {
    std::rethrow_exception(read.error.rethrowable());
  } catch (const RemoteError& e) {
    EXPECT_EQ(e.type_name(), "E");
    EXPECT_EQ(e.message(), "m");
  }
  for (auto error : {std::make_exception_ptr(WorkerLost("lost")),
                     std::make_exception_ptr(TerminatedError("terminated")),
                     std::make_exception_ptr(SpawnError("spawn")),
                     std::make_exception_ptr(UsageError("usage"))}) {
    serial::Writer writer;
    wire::ErrorAccount::of(error).save(writer);
    serial::Reader reader(writer.buffer());
    const auto again = wire::ErrorAccount::load(reader).rethrowable();
    auto type_of = [](const std::exception_ptr& e) -> std::string {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        return typeid(x).name() + std::string(":") + x.what();
      }
    };
    EXPECT_EQ(type_of(again), type_of(error));
  }
  EXPECT_EQ(wire::ErrorAccount::of(nullptr).rethrowable(), nullptr);

  const auto event = round_trip(wire::GroupEvent{
      4, 1, false, {0, std::nullopt}, wire::ErrorAccount::of(nullptr), {4242, 4250}});
  EXPECT_EQ(event.group, 4u);
  EXPECT_EQ(event.restarts, 1);
  EXPECT_FALSE(event.ended);
  EXPECT_EQ(event.exitcodes, (std::vector<std::optional<int>>{0, std::nullopt}));
  EXPECT_EQ(event.member_pids, (std::vector<int>{4242, 4250}));
}

TEST(Wire, ProcessStartCarriesItsResourcesAndRefusesImpossibleOnes) {
  wire::ProcessStart start;
  start.request = 4;
  start.name = "Process-2";
  start.daemon = true;
  start.cores = 3;
  start.gpus = 2;
  start.task = detail::TaskSpec{{1, 2}, {3, 4}, bytes_of("args"), {5}};
  const auto read = round_trip(start);
  EXPECT_EQ(read.name, "Process-2");
  EXPECT_TRUE(read.daemon);
  EXPECT_EQ(read.cores, 3);
  EXPECT_EQ(read.gpus, 2);
  EXPECT_EQ(read.task.args, bytes_of("args"));
  EXPECT_EQ(read.task.produces, (std::vector<uint64_t>{5}));
  start.cores = 0;
  bridge::Received no_cores = as_received(start.encode());
  EXPECT_THROW(wire::ProcessStart::decode(no_cores), ProtocolError);
  start.cores = 1;
  start.gpus = -1;
  bridge::Received negative_gpus = as_received(start.encode());
  EXPECT_THROW(wire::ProcessStart::decode(negative_gpus), ProtocolError);
}

TEST(Wire, AMessageIsNeverReadAsAnotherKind) {
  bridge::Received in = as_received(wire::Terminate{3}.encode());
  try {
    wire::Exited::decode(in);
    FAIL() << "expected ProtocolError";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("expected a kExited message, got kTerminate"),
              std::string::npos)
        << e.what();
  }
}

TEST(Wire, MalformedPayloadsAreProtocolErrors) {
  bridge::Received exited =
      as_received(wire::Exited{8, 1, "long account of the end", false}.encode());
  exited.payload.resize(exited.payload.size() - 5);
  EXPECT_THROW(wire::Exited::decode(exited), ProtocolError);

  bridge::Received welcome = as_received(wire::Welcome{1, "h", "/d", 1ms}.encode());
  welcome.payload.resize(3);
  EXPECT_THROW(wire::Welcome::decode(welcome), ProtocolError);

  bridge::Received tasks = as_received(Outgoing(Kind::kPoolTask));
  tasks.payload = bytes_of("\x05");
  EXPECT_THROW(wire::PoolTasks::decode(tasks).chunks(), ProtocolError);
}

// Regression (fuzzing, UBSan "load of value 2, which is not a valid value for type 'bool'" in
// PoolCreate::decode): each bool of a pool's settings is refused unless it is 0 or 1.
TEST(Wire, ABoolOfAPoolsSettingsIsZeroOrOne) {
  PoolSettings settings;
  settings.processes = 2;
  const bridge::Received good = as_received(wire::PoolCreate{4, settings}.encode());
  ASSERT_EQ(wire::PoolCreate::decode(good).settings.processes, 2);
  // The flags' offsets: processes (4 bytes), has an initializer (1), maxtasksperchild (8),
  // tasks in flight (4), cover spawn pauses (1), ..., take joined workers, fresh processes.
  const size_t has_initializer = 4;
  const size_t cover_spawn_pauses = 4 + 1 + 8 + 4;
  const size_t take_joined_workers = cover_spawn_pauses + 1 + 4 + 4 + 4 + 8;
  const size_t fresh_processes = take_joined_workers + 1;
  for (const size_t at :
       {has_initializer, cover_spawn_pauses, take_joined_workers, fresh_processes}) {
    ASSERT_LE(good.payload.at(at), std::byte{1}) << "byte " << at << " is not a flag";
    bridge::Received bad = good;
    bad.payload.at(at) = std::byte{2};
    try {
      wire::PoolCreate::decode(bad);
      ADD_FAILURE() << "a flag of 2 at byte " << at << " was taken";
    } catch (const ProtocolError& error) {
      EXPECT_NE(std::string(error.what()).find("bool"), std::string::npos) << error.what();
    }
  }
}

}  // namespace

// ---- The codec the field lists drive ----

// Two versions of one message, as a change to its struct would make them.
struct SizeRequestBefore {
  FIBER_WIRE_MESSAGE(SizeRequestBefore, Kind::kQueueSize)
  uint64_t request = 0;
  uint64_t queue = 0;
  static void fields(auto& self, auto& f) {
    f.id(self.request);
    f.aux(self.queue);
  }
};
struct SizeRequestAfter {
  FIBER_WIRE_MESSAGE(SizeRequestAfter, Kind::kQueueSize)
  uint64_t request = 0;
  uint64_t queue = 0;
  int32_t priority = 0;  // the field a later release adds
  static void fields(auto& self, auto& f) {
    f.id(self.request);
    f.aux(self.queue);
    f.body(self.priority);
  }
};
struct SizeRequestRetyped {
  FIBER_WIRE_MESSAGE(SizeRequestRetyped, Kind::kQueueSize)
  uint64_t request = 0;
  uint32_t queue = 0;
  static void fields(auto& self, auto& f) {
    f.id(self.request);
    f.aux(self.queue);
  }
};

TEST(WireCodec, TheProtocolVersionIsADigestOfEveryMessagesFields) {
  const std::string text = wire::protocol_text();
  // One line per kind, naming where each field travels and its type.
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), static_cast<long>(Kind::kObjectCall));
  EXPECT_NE(text.find("\n12=id:unsigned long;aux:unsigned long;\n"), std::string::npos) << text;
  EXPECT_NE(text.find("body:fiber::internal::wire::ErrorAccount;{body:"), std::string::npos)
      << text;
  EXPECT_EQ(protocol_version(), protocol_version());

  // A field added, retyped or moved gives another field list, so another version.
  EXPECT_EQ(wire::signature<SizeRequestBefore>(), wire::signature<wire::QueueSize>());
  EXPECT_NE(wire::signature<SizeRequestBefore>(), wire::signature<SizeRequestAfter>());
  EXPECT_NE(wire::signature<SizeRequestBefore>(), wire::signature<SizeRequestRetyped>());
  EXPECT_NE(wire::signature<wire::QueuePut>(), wire::signature<wire::QueueClose>());
}

TEST(WireCodec, AnOlderSendersMessageIsRefusedNotMisread) {
  // The older layout's bytes read with the newer one: the field it lacks is a short read...
  const auto older = as_received(SizeRequestBefore{4, 5}.encode());
  EXPECT_THROW(SizeRequestAfter::decode(older), ProtocolError);
  // ...and the newer one's read with the older: bytes left over.
  const auto newer = as_received(SizeRequestAfter{4, 5, 9}.encode());
  try {
    SizeRequestBefore::decode(newer);
    ADD_FAILURE() << "4 bytes left over were taken";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("kQueueSize message has 4 bytes left over"),
              std::string::npos)
        << e.what();
  }
}

TEST(WireCodec, AHeaderWordItsFieldCannotHoldIsRefused) {
  auto plan = as_received(wire::GroupPlan{3, 1, 0, 0, 0, {{0}}}.encode());
  plan.envelope.aux = uint64_t{1} << 33;  // the attempt is 32 bits
  try {
    wire::GroupPlan::decode(plan);
    ADD_FAILURE() << "an attempt of 2^33 was taken";
  } catch (const ProtocolError& e) {
    EXPECT_NE(
        std::string(e.what()).find("kGroupPlan message's aux word 8589934592 is out of range"),
        std::string::npos)
        << e.what();
  }
  // A negative field comes back negative from the 24 bits of the flags word.
  const auto terminate = round_trip(wire::ProcessTerminate{1, 2, 9});
  EXPECT_EQ(terminate.signal, 9);
  auto negative = as_received(wire::ProcessTerminate{1, 2, 9}.encode());
  negative.envelope.flags = (1u << 24) - 9;                               // -9 in 24 bits
  EXPECT_THROW(wire::ProcessTerminate::decode(negative), ProtocolError);  // no signal -9
}

TEST(WireCodec, FlagBitsAMessageDoesNotHaveAreRefused) {
  auto stop = as_received(wire::PoolStop{4, true}.encode());
  EXPECT_TRUE(wire::PoolStop::decode(stop).drop_queued);
  stop.envelope.flags |= 1u << 25;
  EXPECT_THROW(wire::PoolStop::decode(stop), ProtocolError);
  auto size = as_received(wire::QueueSize{1, 2}.encode());
  size.envelope.flags = 1u << 24;
  EXPECT_THROW(wire::QueueSize::decode(size), ProtocolError);

  // Two bools and an enum share the word without touching each other.
  const auto result = round_trip(wire::PoolResult{7, 2, PoolOutcome::kRaised, true, {}});
  EXPECT_EQ(result.outcome, PoolOutcome::kRaised);
  EXPECT_TRUE(result.next_started);
  const auto created = round_trip(wire::QueueCreate{1, false, true, 12});
  EXPECT_FALSE(created.pipe_channel);
  EXPECT_TRUE(created.joinable);
  EXPECT_EQ(created.maxsize, 12u);
}

TEST(WireCodec, AMessageWithNoBodyLendsItsBytesAndADecoderTakesThem) {
  const auto item = bytes_of("an item of some size");
  const wire::QueuePut put{6, item};
  const Outgoing out = put.encode();
  EXPECT_TRUE(out.uses_borrowed);
  EXPECT_EQ(out.payload().data(), put.item.data());  // lent, not copied

  bridge::Received in = as_received(out);
  const std::byte* const arrived = in.payload.data();
  const auto taken = wire::QueuePut::decode(in);
  EXPECT_EQ(taken.item.data(), arrived);  // taken, not copied
  EXPECT_TRUE(in.payload.empty());

  const bridge::Received kept = as_received(out);
  EXPECT_EQ(wire::QueuePut::decode(kept).item, item);  // a const message is copied from
  EXPECT_EQ(kept.payload, item);
}

TEST(WireCodec, AHandlerTableRunsTheHandlerOfTheKindAndRefusesASecondOne) {
  wire::HandlerTable<int&> handlers;
  std::vector<std::string> seen;
  handlers.add(Kind::kQueueSize, [&](int& calls, bridge::Received& message) {
    ++calls;
    seen.push_back("size " + std::to_string(wire::QueueSize::decode(message).queue));
  });
  handlers.add(Kind::kQueueClose, [&](int& calls, bridge::Received& message) {
    ++calls;
    seen.push_back("close " + std::to_string(wire::QueueClose::decode(message).queue));
  });
  int calls = 0;
  auto size = as_received(wire::QueueSize{1, 7}.encode());
  auto close = as_received(wire::QueueClose{9}.encode());
  auto put = as_received(wire::QueuePut{3, {}}.encode());
  EXPECT_TRUE(handlers.dispatch(calls, size));
  EXPECT_TRUE(handlers.dispatch(calls, close));
  EXPECT_FALSE(handlers.dispatch(calls, put));  // nobody serves it: the caller says so
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(seen, (std::vector<std::string>{"size 7", "close 9"}));
  EXPECT_FALSE(handlers.serves(0));
  EXPECT_FALSE(handlers.serves(static_cast<uint32_t>(kKindCount) + 1));
  auto unknown = size;
  unknown.envelope.kind = 4000;
  EXPECT_FALSE(handlers.dispatch(calls, unknown));
  try {
    handlers.add(Kind::kQueueSize, [](int&, bridge::Received&) {});
    ADD_FAILURE() << "a second handler for kQueueSize was taken";
  } catch (const std::logic_error& e) {
    EXPECT_STREQ(e.what(), "two handlers for kQueueSize");
  }
}

}  // namespace fiber::internal
