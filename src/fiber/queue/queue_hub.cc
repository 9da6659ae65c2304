#include "fiber/queue/queue_hub.h"

#include <algorithm>

#include "fiber/errors.h"

namespace fiber::internal {

uint64_t QueueHub::create(bool pipe_channel, bool joinable, uint64_t maxsize) {
  const uint64_t id = next_id_++;
  Queue& queue = queues_[id];
  queue.pipe_channel = pipe_channel;
  queue.joinable = joinable;
  queue.maxsize = maxsize;
  return id;
}

QueueHub::Queue& QueueHub::find(uint64_t queue) {
  auto it = queues_.find(queue);
  if (it == queues_.end()) throw ProtocolError("unknown queue id " + std::to_string(queue));
  return it->second;
}

const QueueHub::Queue& QueueHub::find(uint64_t queue) const {
  auto it = queues_.find(queue);
  if (it == queues_.end()) throw ProtocolError("unknown queue id " + std::to_string(queue));
  return it->second;
}

bool QueueHub::exhausted_for(const Queue& queue, uint64_t requester) const {
  if (!queue.items.empty()) return false;
  if (queue.master_produces && requester != kMasterId) return false;
  const size_t own = queue.producers.count(requester);
  if (queue.producers.size() > own) return false;
  return queue.had_child_producer || (queue.pipe_channel && !queue.master_produces);
}

std::string QueueHub::eof_reason(uint64_t id, const Queue& queue) const {
  std::string reason = std::string(queue.pipe_channel ? "pipe" : "queue") + " " +
                       std::to_string(id) +
                       " is empty and no process that could write to it is alive";
  if (!queue.last_ended.empty()) reason += " (" + queue.last_ended + ")";
  return reason;
}

void QueueHub::serve(uint64_t id, Queue& queue) {
  // Gets make room for waiting puts, whose items may serve further gets.
  for (;;) {
    while (!queue.put_waiters.empty() &&
           (queue.maxsize == 0 || queue.items.size() < queue.maxsize)) {
      PutWaiter put = std::move(queue.put_waiters.front());
      queue.put_waiters.pop_front();
      queue.items.push_back(std::move(put.item));
      if (queue.joinable) ++queue.unfinished;
      put.done(Outcome::kItem, {}, {});
    }
    if (!serve_gets(id, queue) || queue.put_waiters.empty()) break;
  }
}

bool QueueHub::serve_gets(uint64_t id, Queue& queue) {
  bool took = false;
  // Waiters are served in arrival order; polls are answered without consuming.
  for (auto it = queue.waiters.begin(); it != queue.waiters.end();) {
    if (!queue.items.empty()) {
      Waiter waiter = std::move(*it);
      it = queue.waiters.erase(it);
      if (waiter.take) {
        Bytes item = std::move(queue.items.front());
        queue.items.pop_front();
        if (queue.joinable) ++queue.taken[waiter.requester];
        took = true;
        waiter.done(Outcome::kItem, std::move(item), {});
      } else {
        waiter.done(Outcome::kItem, {}, {});
      }
    } else if (exhausted_for(queue, it->requester)) {
      Waiter waiter = std::move(*it);
      it = queue.waiters.erase(it);
      waiter.done(Outcome::kEof, {}, eof_reason(id, queue));
    } else {
      ++it;
    }
  }
  return took;
}

void QueueHub::put(uint64_t queue_id, Bytes item) {
  Queue& queue = find(queue_id);
  queue.items.push_back(std::move(item));
  if (queue.joinable) ++queue.unfinished;
  serve(queue_id, queue);
}

void QueueHub::put_wait(uint64_t queue_id, uint64_t requester, Bytes item,
                        std::optional<Clock::time_point> deadline, Completion done) {
  Queue& queue = find(queue_id);
  if (queue.put_waiters.empty() && (queue.maxsize == 0 || queue.items.size() < queue.maxsize)) {
    queue.items.push_back(std::move(item));
    if (queue.joinable) ++queue.unfinished;
    done(Outcome::kItem, {}, {});
    serve(queue_id, queue);
    return;
  }
  if (deadline && *deadline <= Clock::now()) return done(Outcome::kTimeout, {}, {});
  queue.put_waiters.push_back(PutWaiter{requester, std::move(item), deadline, std::move(done)});
}

std::optional<std::string> QueueHub::task_done(uint64_t queue_id, uint64_t requester) {
  Queue& queue = find(queue_id);
  if (queue.unfinished == 0)
    return "Queue::task_done: called more times than items were put into queue " +
           std::to_string(queue_id);
  --queue.unfinished;
  // Charged to the caller's own items first; an item handed on to another process is done by
  // that one, so the count moves off some other taker, and last off those that ended.
  auto own = queue.taken.find(requester);
  if (own == queue.taken.end() || own->second == 0) {
    own = std::find_if(queue.taken.begin(), queue.taken.end(),
                       [](const auto& entry) { return entry.second > 0; });
  }
  if (own != queue.taken.end()) {
    if (--own->second == 0) queue.taken.erase(own);
  } else if (queue.orphaned > 0) {
    --queue.orphaned;
  }
  serve_joins(queue_id, queue);
  return std::nullopt;
}

void QueueHub::join(uint64_t queue_id, uint64_t requester,
                    std::optional<Clock::time_point> deadline, Completion done) {
  Queue& queue = find(queue_id);
  queue.join_waiters.push_back(Waiter{requester, false, deadline, std::move(done)});
  serve_joins(queue_id, queue);
  if (!queue.join_waiters.empty() && queue.join_waiters.back().deadline &&
      *queue.join_waiters.back().deadline <= Clock::now()) {
    Waiter expired = std::move(queue.join_waiters.back());
    queue.join_waiters.pop_back();
    expired.done(Outcome::kTimeout, {}, {});
  }
}

void QueueHub::serve_joins(uint64_t id, Queue& queue) {
  if (queue.join_waiters.empty()) return;
  if (queue.unfinished == 0) {
    for (auto& waiter : std::exchange(queue.join_waiters, {})) waiter.done(Outcome::kItem, {}, {});
  } else if (queue.orphaned >= queue.unfinished) {
    const std::string reason =
        "queue " + std::to_string(id) +
        " can never be joined: " + std::to_string(queue.unfinished) + " unfinished item" +
        (queue.unfinished == 1 ? " was" : "s were") +
        " taken by processes that ended without task_done (the last: " + queue.orphaned_by + ")";
    for (auto& waiter : std::exchange(queue.join_waiters, {}))
      waiter.done(Outcome::kEof, {}, reason);
  }
}

void QueueHub::wait(uint64_t queue_id, Waiter waiter) {
  Queue& queue = find(queue_id);
  queue.waiters.push_back(std::move(waiter));
  serve(queue_id, queue);
  if (!queue.waiters.empty() && queue.waiters.back().deadline &&
      *queue.waiters.back().deadline <= Clock::now()) {
    Waiter expired = std::move(queue.waiters.back());
    queue.waiters.pop_back();
    expired.done(Outcome::kTimeout, {}, {});
  }
}

void QueueHub::get(uint64_t queue, uint64_t requester, std::optional<Clock::time_point> deadline,
                   Completion done) {
  wait(queue, Waiter{requester, true, deadline, std::move(done)});
}

void QueueHub::poll(uint64_t queue, uint64_t requester, std::optional<Clock::time_point> deadline,
                    Completion done) {
  wait(queue, Waiter{requester, false, deadline, std::move(done)});
}

size_t QueueHub::size(uint64_t queue) const { return find(queue).items.size(); }

void QueueHub::add_producer(uint64_t queue_id, uint64_t process) {
  Queue& queue = find(queue_id);
  if (process == kMasterId) {
    queue.master_produces = true;
    return;
  }
  queue.producers.insert(process);
  queue.had_child_producer = true;
}

void QueueHub::close_producer(uint64_t queue_id, uint64_t process, const std::string& how) {
  Queue& queue = find(queue_id);
  if (process == kMasterId) {
    queue.master_produces = false;
  } else if (auto it = queue.producers.find(process); it != queue.producers.end()) {
    queue.producers.erase(it);
  }
  queue.last_ended = how;
  serve(queue_id, queue);
}

void QueueHub::process_ended(uint64_t process, const std::string& how) {
  auto own = [process](const auto& waiter) { return waiter.requester == process; };
  for (auto& [id, queue] : queues_) {
    std::erase_if(queue.waiters, own);
    std::erase_if(queue.put_waiters, own);
    std::erase_if(queue.join_waiters, own);
    if (auto taken = queue.taken.find(process); taken != queue.taken.end()) {
      queue.orphaned += taken->second;
      queue.orphaned_by = how;
      queue.taken.erase(taken);
      serve_joins(id, queue);
    }
    if (queue.producers.erase(process) == 0) continue;
    queue.last_ended = how;
    serve(id, queue);
  }
}

std::optional<QueueHub::Clock::time_point> QueueHub::expire(Clock::time_point now) {
  std::optional<Clock::time_point> next;
  auto time_out = [&](auto& waiters) {
    for (auto it = waiters.begin(); it != waiters.end();) {
      if (it->deadline && *it->deadline <= now) {
        auto waiter = std::move(*it);
        it = waiters.erase(it);
        waiter.done(Outcome::kTimeout, {}, {});
        continue;
      }
      if (it->deadline && (!next || *it->deadline < *next)) next = it->deadline;
      ++it;
    }
  };
  for (auto& [id, queue] : queues_) {
    time_out(queue.waiters);
    time_out(queue.put_waiters);
    time_out(queue.join_waiters);
  }
  return next;
}

}  // namespace fiber::internal
