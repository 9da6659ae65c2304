#include "fiber/engine/progress_engine.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "fiber/base/log.h"
#include "mpi_bridge/failure_notice.h"

namespace fiber::internal {
namespace {

// Sleeps of a few microseconds are otherwise stretched by the default 50 us timer slack.
void precise_sleeps() {
  static thread_local bool done = false;
  if (!done) {
    ::prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    done = true;
  }
}

int64_t now_ns() { return Clock::now().time_since_epoch().count(); }

Clock::time_point time_point_of(int64_t ns) { return Clock::time_point(Clock::duration(ns)); }

// Most messages taken from one link in one pass, so that one busy link cannot starve the others.
constexpr int kMessagesPerLinkAndPass = 64;

// A waiting thread that spins yields its core once in this many idle polls.
constexpr unsigned kPollsPerYield = 8;

}  // namespace

ProgressEngine::ProgressEngine(const Settings& settings, std::chrono::milliseconds tick_interval,
                               std::chrono::microseconds deep_sleep)
    : settings_(settings), tick_interval_(tick_interval), deep_sleep_(deep_sleep) {}

ProgressEngine::~ProgressEngine() {
  if (progress_thread_.joinable()) progress_thread_.detach();
}

void ProgressEngine::start(MessageSink& sink) {
  sink_ = &sink;
  progress_thread_ = std::thread([this] { progress_loop(); });
}

bridge::Backoff::Policy ProgressEngine::idle_policy(bool waiter) const {
  bridge::Backoff::Policy policy;
  if (waiter) policy.spin = std::chrono::microseconds(300);
  if (!doorbell_.is_open() || !sink_ || !sink_->rung_by_peers()) return policy;
  // Peers ring after sending, so sleeping long costs no latency; the periodic checks still need
  // a pass every deep_sleep. Deep after 10 ms of quiet: each message (a heartbeat every 500 ms)
  // starts the doubling sleeps again, and the wake-ups until deep sleep were most of what an
  // idle worker cost (hundreds of them share a machine in a large pool). A send still in flight
  // keeps the sleeps short (sleep_while_sending).
  policy.max_sleep = std::chrono::microseconds(2000);
  policy.deep_after = std::chrono::milliseconds(10);
  policy.deep_sleep = deep_sleep_;
  return policy;
}

std::chrono::microseconds ProgressEngine::sleep_while_sending(std::chrono::microseconds sleep) {
  // A send MPI has not finished may need this process's progress (a large message's data goes
  // once the receiver answers, and nobody rings for that).
  constexpr auto kSendingSleep = std::chrono::microseconds(2000);
  return sleep > kSendingSleep && !outbox_.empty() ? kSendingSleep : sleep;
}

void ProgressEngine::notify_locked() {
  cv_.notify_all();
  doorbell_.ring_self();
}

void ProgressEngine::ring(int pid) { doorbell_.ring(doorbell_directory_, pid); }

bool ProgressEngine::open_doorbell(const std::string& directory, int pid) {
  doorbell_directory_ = directory;
  return doorbell_.open(directory, pid);
}

void ProgressEngine::post(MPI_Comm comm, int dest, const bridge::Envelope& envelope,
                          std::span<const std::byte> payload) {
  outbox_.post(comm, dest, bridge::frame(envelope, payload));
}

void ProgressEngine::add_link(std::unique_ptr<Link> link) {
  std::lock_guard lock(mu_);
  add_link_locked(std::move(link));
}

void ProgressEngine::add_link_locked(std::unique_ptr<Link> link) {
  incoming_links_.push_back(std::move(link));
  has_incoming_links_.store(true);
}

void ProgressEngine::erase_links(const std::function<bool(const Link&)>& done) {
  std::erase_if(links_, [&done](const std::unique_ptr<Link>& link) { return done(*link); });
}

void ProgressEngine::for_each_link(const std::function<void(Link&)>& visit) {
  for (auto& link : links_) visit(*link);
}

Link* ProgressEngine::first_link() {
  if (links_.empty()) {
    std::lock_guard lock(mu_);
    if (!incoming_links_.empty()) return incoming_links_.front().get();
    return nullptr;
  }
  return links_.front().get();
}

void ProgressEngine::progress_loop() {
  precise_sleeps();
  bool rung_policy = false;
  bridge::Backoff backoff(idle_policy(false));
  const int64_t take_over_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(settings_.progress_take_over).count();
  while (!stop_progress_.load(std::memory_order_acquire)) {
    if (const bool rung = doorbell_.is_open() && sink_->rung_by_peers(); rung != rung_policy) {
      rung_policy = rung;
      backoff = bridge::Backoff(idle_policy(false));
    }
    const int64_t since_waiter = now_ns() - last_waiter_left_ns_.load();
    const bool waiting = active_waiters_.load(std::memory_order_acquire) > 0;
    if (waiting || since_waiter < take_over_ns) {
      // A thread waiting for a result polls MPI itself; this thread stands aside. A thread that
      // just stopped waiting usually waits again soon (a get per task, a worker between tasks),
      // so polling resumes here only once nobody has waited for a while: taking over at once
      // would make the two threads trade the MPI lock on every message.
      std::unique_lock lock(mu_);
      const auto pause = waiting ? std::chrono::nanoseconds(10 * take_over_ns)
                                 : std::chrono::nanoseconds(take_over_ns - since_waiter);
      progress_cv_.wait_for(lock, pause, [this] { return stop_progress_.load(); });
      backoff = bridge::Backoff(idle_policy(false), time_point_of(last_active_ns_.load()));
      continue;
    }
    // A round that will sleep if it finds nothing announces the sleep before it polls, so that
    // a peer sending meanwhile rings (doorbell.h).
    const auto sleep = sleep_while_sending(backoff.next_sleep());
    const bool may_sleep = sleep.count() > 0;
    if (may_sleep) doorbell_.prepare_sleep();
    bool active = false;
    try {
      std::lock_guard progress(progress_mu_);
      if (!stop_progress_.load()) active = poll_once();
    } catch (const std::exception& e) {
      FIBER_LOG_ERROR("progress error: %s", e.what());
    }
    if (active || stop_progress_.load()) {
      if (may_sleep) doorbell_.cancel_sleep();
      backoff.reset();
    } else if (may_sleep) {
      if (doorbell_.sleep(sleep)) backoff.reset();
    }
  }
}

bool ProgressEngine::poll_once() {
  // Announce this poll before looking at the flag; hold_traffic() sets the flag before waiting
  // for polls to end. One of the two always sees the other (sequentially consistent atomics).
  struct PollGuard {
    std::atomic<int>& running;
    explicit PollGuard(std::atomic<int>& r) : running(r) { running.fetch_add(1); }
    ~PollGuard() { running.fetch_sub(1); }
  } poll_guard(polls_running_);
  if (traffic_held_.load()) {
    const int64_t until = hold_until_ns_.load();
    if (until == 0 || now_ns() < until) {
      sink_->while_held(Clock::now());
      return false;
    }
    release_traffic();
  }
  bool active = outbox_.progress() > 0;
  const auto pass = Clock::now();
  if (pass - last_receive_pass_ > settings_.heartbeat_interval) receiving_since_ = pass;
  last_receive_pass_ = pass;
  if (has_incoming_links_.exchange(false)) {
    std::lock_guard lock(mu_);
    for (auto& link : incoming_links_) links_.push_back(std::move(link));
    incoming_links_.clear();
  }
  for (auto& link : links_) {
    if (!link->comm.valid()) continue;
    if (link->by_rank) {
      active = poll_by_rank(*link) || active;
      continue;
    }
    for (int i = 0; i < kMessagesPerLinkAndPass; ++i) {
      bridge::Received message;
      try {
        if (!bridge::try_receive(link->comm.get(), message)) break;
      } catch (const bridge::PeersFailed& failed) {
        if (failed.ranks().empty()) {
          // Nothing left to acknowledge, yet receiving from any source still fails.
          start_polling_by_rank(*link);
          break;
        }
        // Acknowledged: receiving from the others works again.
        sink_->on_peers_failed(*link, failed.ranks());
        continue;
      } catch (const std::exception& e) {
        FIBER_LOG_ERROR("receive failed: %s", e.what());
        break;
      }
      active = true;
      // The pass's start stands for when each of its messages arrived (a clock read per
      // message was a measurable part of the master's CPU per task).
      link->last_heard = pass;
      sink_->on_message(*link, message);
    }
  }
  const auto now = Clock::now();
  if (active) last_active_ns_.store(now.time_since_epoch().count());
  const bool tick = now >= next_tick_;
  if (tick) next_tick_ = now + tick_interval_;
  sink_->after_receiving(now, tick);
  return active;
}

void ProgressEngine::start_polling_by_rank(Link& link) {
  try {
    link.failed_ranks.assign(static_cast<size_t>(bridge::peer_count(link.comm.get())), false);
    link.by_rank = true;
  } catch (const std::exception& e) {
    FIBER_LOG_ERROR("receive failed: %s", e.what());
  }
}

bool ProgressEngine::poll_by_rank(Link& link) {
  bool active = false;
  int budget = kMessagesPerLinkAndPass;
  const int ranks = static_cast<int>(link.failed_ranks.size());
  // Each pass starts one rank further, so that busy ranks cannot starve the last ones.
  const int first = ranks > 0 ? link.next_rank++ % ranks : 0;
  for (int step = 0; step < ranks && budget > 0; ++step) {
    const int rank = (first + step) % ranks;
    if (link.failed_ranks[static_cast<size_t>(rank)]) continue;
    while (budget > 0) {
      bridge::Received message;
      try {
        if (!bridge::try_receive_from(link.comm.get(), rank, message)) break;
      } catch (const bridge::PeersFailed&) {
        // Not polled again. Its end is the liveness checks' business, as it was while receives
        // from any source failed: a process that said goodbye also shows as failed here.
        link.failed_ranks[static_cast<size_t>(rank)] = true;
        break;
      } catch (const std::exception& e) {
        FIBER_LOG_ERROR("receive failed: %s", e.what());
        break;
      }
      --budget;
      active = true;
      link.last_heard = Clock::now();
      sink_->on_message(link, message);
    }
  }
  return active;
}

bool ProgressEngine::await(std::unique_lock<std::mutex>& lock, const std::function<bool()>& pred,
                           std::optional<Clock::time_point> deadline) {
  // The waiting thread becomes this process's poller (the progress thread stands aside while
  // anyone waits), so a reply is picked up by the thread that wants it: no hand-off, and never
  // more than one thread per process spinning on a machine with few cores.
  // A check (ready(), a zero timeout) is no waiter: counting it as one would make the progress
  // thread stand aside after each, so a caller checking in a loop that sleeps between rounds
  // kept every message waiting (300 callbacks took about a minute).
  if (deadline && Clock::now() >= *deadline) return check_once(lock, pred);
  precise_sleeps();
  struct WaiterGuard {
    ProgressEngine& engine;
    explicit WaiterGuard(ProgressEngine& e) : engine(e) { engine.active_waiters_.fetch_add(1); }
    ~WaiterGuard() {
      engine.last_waiter_left_ns_.store(now_ns());
      engine.active_waiters_.fetch_sub(1);
    }
  } guard(*this);
  // A wait resumed (a Python wait comes back every 50 ms to run the signal handlers) or one that
  // begins long after the last message does not spin first: it goes on where the quiet spell is.
  // Restarting the spin and the doubling sleeps on each slice cost a waiting Python master about
  // 20 ms of CPU per second. A wait that sends a request still polls before it sleeps, and the
  // send's activity starts the spin.
  bridge::Backoff backoff(idle_policy(true), time_point_of(last_active_ns_.load()));
  int missed_polls = 0;
  unsigned idle_polls = 0;
  bool satisfied = pred();
  while (!satisfied) {
    if (deadline && Clock::now() >= *deadline) break;
    // A round that will sleep if nothing happens announces the sleep before its last look (the
    // poll and `pred`), so that a peer's message or a local change meanwhile rings (doorbell.h).
    auto sleep = sleep_while_sending(backoff.next_sleep());
    if (deadline && sleep.count() > 0) {
      sleep = std::min(
          sleep, std::chrono::duration_cast<std::chrono::microseconds>(*deadline - Clock::now()) +
                     std::chrono::microseconds(1));
    }
    const bool may_sleep = sleep.count() > 0;
    if (may_sleep) doorbell_.prepare_sleep();
    lock.unlock();
    const std::optional<bool> outcome = poll_unless_busy();
    const bool polled = outcome.has_value();
    const bool active = outcome.value_or(false);
    lock.lock();
    satisfied = pred();
    if (satisfied || !polled || active || !may_sleep) {
      if (may_sleep) doorbell_.cancel_sleep();
    }
    if (satisfied) break;
    if (!polled) {
      // Another thread is polling: the progress thread stands aside after its current round,
      // a user thread notifies when it is done. Spinning on the lock here would starve either.
      if (++missed_polls < 16) {
        lock.unlock();
        std::this_thread::yield();
        lock.lock();
        satisfied = pred();
      } else {
        satisfied = cv_.wait_for(lock, std::chrono::microseconds(50), pred);
      }
      continue;
    }
    missed_polls = 0;
    if (active) {
      backoff.reset();
      continue;
    }
    if (!may_sleep) {
      // Spinning: now and then let the other processes sharing these cores run. A yield is a
      // system call (about a microsecond here, when nothing else runs) and a message arriving
      // meanwhile waits for it, so not after every poll.
      if (++idle_polls % kPollsPerYield == 0) {
        lock.unlock();
        std::this_thread::yield();
        lock.lock();
        satisfied = pred();
      }
      continue;
    }
    // Peers ring this process's doorbell after sending to it, and local threads after changing
    // what `pred` looks at, so this sleep ends as soon as there is something to see.
    lock.unlock();
    const bool rung = doorbell_.sleep(sleep);
    lock.lock();
    if (rung) backoff.reset();
    satisfied = pred();
  }
  return satisfied;
}

bool ProgressEngine::check_once(std::unique_lock<std::mutex>& lock,
                                const std::function<bool()>& pred) {
  if (pred()) return true;
  lock.unlock();
  poll_unless_busy();
  lock.lock();
  return pred();
}

std::optional<bool> ProgressEngine::poll_unless_busy() {
  std::unique_lock progress(progress_mu_, std::try_to_lock);
  if (!progress.owns_lock() || stop_progress_.load()) return std::nullopt;
  try {
    return poll_once();
  } catch (const std::exception& e) {
    FIBER_LOG_ERROR("progress error: %s", e.what());
    return false;
  }
}

bool ProgressEngine::wait_until(const std::function<bool()>& pred,
                                std::optional<Clock::time_point> deadline) {
  auto held = lock();
  return await(held, pred, deadline);
}

void ProgressEngine::hold_traffic() {
  outbox_.hold(true);
  traffic_held_.store(true);
  // A poll that started before the flag was set must be done with MPI first.
  while (polls_running_.load() > 0) std::this_thread::yield();
}

void ProgressEngine::hold_traffic_until(Clock::time_point until) {
  hold_until_ns_.store(until.time_since_epoch().count());
  hold_traffic();
}

void ProgressEngine::release_traffic() {
  hold_until_ns_.store(0);
  traffic_held_.store(false);
  outbox_.hold(false);
}

void ProgressEngine::drain(std::chrono::seconds limit) {
  const auto give_up = Clock::now() + limit;
  while (!outbox_.empty() && Clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
}

bool ProgressEngine::stop(std::chrono::seconds limit) {
  {
    std::lock_guard guard(mu_);
    stop_progress_.store(true);
  }
  progress_cv_.notify_all();
  if (progress_thread_.joinable() && progress_thread_.get_id() != std::this_thread::get_id())
    progress_thread_.join();
  // A user thread blocked in a wait may still be inside poll_once: once it leaves, no poll can
  // start again (stop_progress_ is checked under progress_mu_).
  const auto give_up = Clock::now() + limit;
  while (!progress_mu_.try_lock()) {
    if (Clock::now() >= give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  progress_mu_.unlock();
  return true;
}

void ProgressEngine::clear_links() {
  links_.clear();
  std::lock_guard lock(mu_);
  incoming_links_.clear();
}

}  // namespace fiber::internal
