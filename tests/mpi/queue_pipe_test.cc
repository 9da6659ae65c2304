// SimpleQueue and Pipe across real processes: exactly-once delivery, many producers and
// consumers, child-to-child traffic, timeouts, and what a waiter sees when its peer dies
// (suites SimpleQueueFault and PipeFault: the peer is killed, each test a program run of its own).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "fiber/fiber.h"
#include "test_support.h"

using namespace std::chrono_literals;
using fiber::testing::seconds_since;

constexpr int kProducers = 4;
constexpr int kItemsPerProducer = 500;
constexpr int kConsumers = 2;
constexpr int kStop = -1;

void produce_range(int producer, fiber::SimpleQueue<int> items) {
  for (int i = 0; i < kItemsPerProducer; ++i) items.put(producer * kItemsPerProducer + i);
}

void consume_until_stop(fiber::SimpleQueue<int> items,
                        fiber::SimpleQueue<std::vector<int>> results) {
  std::vector<int> taken;
  for (int item = items.get(); item != kStop; item = items.get()) taken.push_back(item);
  results.put(taken);
}

TEST(SimpleQueue, FourProducersTwoConsumersEveryItemExactlyOnce) {
  fiber::SimpleQueue<int> items;
  fiber::SimpleQueue<std::vector<int>> results;
  std::vector<fiber::Process> producers;
  std::vector<fiber::Process> consumers;
  for (int p = 0; p < kProducers; ++p) producers.emplace_back(produce_range, p, items);
  for (int c = 0; c < kConsumers; ++c) consumers.emplace_back(consume_until_stop, items, results);
  for (auto& p : producers) p.start();
  for (auto& c : consumers) c.start();
  for (auto& p : producers) {
    p.join();
    EXPECT_EQ(p.exitcode(), 0);
  }
  for (int c = 0; c < kConsumers; ++c) items.put(kStop);
  std::vector<int> all;
  for (int c = 0; c < kConsumers; ++c) {
    auto taken = results.get(60s);
    // Each producer's items reach a consumer in the order they were put.
    std::map<int, int> last_by_producer;
    for (int item : taken) {
      const int producer = item / kItemsPerProducer;
      auto it = last_by_producer.find(producer);
      if (it != last_by_producer.end()) {
        EXPECT_LT(it->second, item);
      }
      last_by_producer[producer] = item;
    }
    all.insert(all.end(), taken.begin(), taken.end());
  }
  for (auto& c : consumers) c.join();
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), static_cast<size_t>(kProducers * kItemsPerProducer));
  for (int i = 0; i < kProducers * kItemsPerProducer; ++i)
    ASSERT_EQ(all[static_cast<size_t>(i)], i);
  EXPECT_TRUE(items.empty());
}

void forward_squares(fiber::SimpleQueue<int> in, fiber::SimpleQueue<int> out, int count) {
  for (int i = 0; i < count; ++i) {
    const int x = in.get();
    out.put(x * x);
  }
}

void send_numbers(fiber::SimpleQueue<int> out, int count) {
  for (int i = 1; i <= count; ++i) out.put(i);
}

TEST(SimpleQueue, ChildToChild) {
  fiber::SimpleQueue<int> middle;
  fiber::SimpleQueue<int> results;
  fiber::Process source(send_numbers, middle, 50);
  fiber::Process relay(forward_squares, middle, results, 50);
  relay.start();
  source.start();
  long sum = 0;
  for (int i = 0; i < 50; ++i) sum += results.get(60s);
  EXPECT_EQ(sum, 50L * 51 * 101 / 6);
  source.join();
  relay.join();
  EXPECT_EQ(relay.exitcode(), 0);
}

TEST(SimpleQueue, GetWithTimeoutAndEmpty) {
  fiber::SimpleQueue<std::string> q;
  EXPECT_TRUE(q.empty());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(q.get(150ms), fiber::TimeoutError);
  EXPECT_GE(seconds_since(start), 0.14);
  q.put("x");
  EXPECT_FALSE(q.empty());
  EXPECT_EQ(q.get(0ms), "x");
}

void get_with_timeout_in_child(fiber::SimpleQueue<int> never,
                               fiber::SimpleQueue<std::string> report) {
  try {
    never.get(100ms);
    report.put("no timeout");
  } catch (const fiber::TimeoutError&) {
    report.put("timeout");
  }
}

TEST(SimpleQueue, TimeoutInAChild) {
  fiber::SimpleQueue<int> never;
  fiber::SimpleQueue<std::string> report;
  fiber::Process p(get_with_timeout_in_child, never, report);
  p.start();
  EXPECT_EQ(report.get(60s), "timeout");
  p.join();
}

void die_before_put(fiber::SimpleQueue<int>) { ::raise(SIGKILL); }
void throw_before_put(fiber::SimpleQueue<int>) { throw std::logic_error("no result"); }

TEST(SimpleQueueFault, ParentWaitingOnADeadChildGetsEOF) {
  fiber::SimpleQueue<int> q;
  fiber::Process p(die_before_put, q);
  p.start();
  try {
    q.get();
    FAIL() << "expected EOFError";
  } catch (const fiber::EOFError& e) {
    EXPECT_NE(std::string(e.what()).find("killed by signal 9"), std::string::npos) << e.what();
  }
  p.join();
  EXPECT_EQ(p.exitcode(), -SIGKILL);
}

TEST(SimpleQueue, ParentWaitingOnAThrowingChildGetsEOF) {
  fiber::SimpleQueue<int> q;
  fiber::Process p(throw_before_put, q);
  p.start();
  EXPECT_THROW(q.get(), fiber::EOFError);
  p.join();
  EXPECT_EQ(p.exitcode(), 1);
}

void echo_twice(fiber::Connection<std::string> conn) {
  for (int i = 0; i < 2; ++i) conn.send("echo:" + conn.recv());
}

TEST(Pipe, DuplexRoundTrips) {
  auto [here, there] = fiber::Pipe<std::string>();
  fiber::Process p(echo_twice, there);
  p.start();
  here.send("a");
  EXPECT_EQ(here.recv(60s), "echo:a");
  here.send("b");
  EXPECT_EQ(here.recv(60s), "echo:b");
  p.join();
  EXPECT_EQ(p.exitcode(), 0);
}

void write_numbers(fiber::Connection<int> writer, int count) {
  for (int i = 0; i < count; ++i) writer.send(i);
  writer.close();
}

TEST(Pipe, SimplexInOrderThenEOF) {
  auto [reader, writer] = fiber::Pipe<int>(false);
  EXPECT_TRUE(reader.readable());
  EXPECT_FALSE(reader.writable());
  EXPECT_FALSE(writer.readable());
  EXPECT_THROW(reader.send(1), fiber::Error);
  EXPECT_THROW(writer.recv(), fiber::Error);
  fiber::Process p(write_numbers, writer, 200);
  p.start();
  writer.close();
  for (int i = 0; i < 200; ++i) ASSERT_EQ(reader.recv(60s), i);
  EXPECT_THROW(reader.recv(), fiber::EOFError);
  p.join();
}

TEST(Pipe, PollAndTimeout) {
  auto [a, b] = fiber::Pipe<int>();
  EXPECT_FALSE(a.poll());
  EXPECT_FALSE(a.poll(50ms));
  b.send(7);
  EXPECT_TRUE(a.poll(1s));
  EXPECT_EQ(a.recv(), 7);
  EXPECT_THROW(a.recv(100ms), fiber::TimeoutError);
}

TEST(Pipe, ClosedEndRefusesUse) {
  auto [a, b] = fiber::Pipe<int>();
  a.close();
  EXPECT_TRUE(a.closed());
  EXPECT_THROW(a.send(1), fiber::Error);
  EXPECT_THROW(a.recv(), fiber::Error);
  b.close();
  fiber::Connection<int> never_opened;
  EXPECT_THROW(never_opened.recv(), fiber::Error);
}

void crash_instead_of_answering(fiber::Connection<int> conn) {
  conn.recv();
  ::raise(SIGKILL);
}

TEST(PipeFault, ParentReceivingFromADeadChildGetsEOF) {
  auto [here, there] = fiber::Pipe<int>();
  fiber::Process p(crash_instead_of_answering, there);
  p.start();
  here.send(1);
  EXPECT_THROW(here.recv(), fiber::EOFError);
  p.join();
  EXPECT_EQ(p.exitcode(), -SIGKILL);
}

void send_big(fiber::Connection<std::vector<double>> conn) {
  std::vector<double> big(1 << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<double>(i);
  conn.send(big);
}

TEST(Pipe, EightMegabytePayload) {
  auto [here, there] = fiber::Pipe<std::vector<double>>();
  fiber::Process p(send_big, there);
  p.start();
  const auto big = here.recv(60s);
  ASSERT_EQ(big.size(), 1u << 20);
  EXPECT_EQ(big[12345], 12345.0);
  EXPECT_EQ(big.back(), static_cast<double>((1 << 20) - 1));
  p.join();
}

struct Trajectory {
  std::vector<float> rewards;
  std::string policy;
  int seed = 0;
  template <class Archive>
  void serialize(Archive& archive, unsigned) {
    archive& rewards& policy& seed;
  }
};

void rollout(int seed, fiber::SimpleQueue<Trajectory> out) {
  Trajectory t;
  t.seed = seed;
  t.policy = "pi-" + std::to_string(seed);
  for (int i = 0; i < 10; ++i) t.rewards.push_back(static_cast<float>(seed * i));
  out.put(t);
}

TEST(SimpleQueue, BoostSerializableItems) {
  fiber::SimpleQueue<Trajectory> out;
  fiber::Process p(rollout, 3, out);
  p.start();
  const Trajectory t = out.get(60s);
  EXPECT_EQ(t.seed, 3);
  EXPECT_EQ(t.policy, "pi-3");
  ASSERT_EQ(t.rewards.size(), 10u);
  EXPECT_EQ(t.rewards[9], 27.0f);
  p.join();
}
