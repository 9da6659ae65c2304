#include "fiber/master/queue_hub.h"

#include <algorithm>

#include "fiber/errors.h"

namespace fiber::detail {

uint64_t QueueHub::create(bool pipe_channel) {
  const uint64_t id = next_id_++;
  queues_[id].pipe_channel = pipe_channel;
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
  // Waiters are served in arrival order; polls are answered without consuming.
  for (auto it = queue.waiters.begin(); it != queue.waiters.end();) {
    if (!queue.items.empty()) {
      Waiter waiter = std::move(*it);
      it = queue.waiters.erase(it);
      if (waiter.take) {
        Bytes item = std::move(queue.items.front());
        queue.items.pop_front();
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
}

void QueueHub::put(uint64_t queue_id, Bytes item) {
  Queue& queue = find(queue_id);
  queue.items.push_back(std::move(item));
  serve(queue_id, queue);
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
  for (auto& [id, queue] : queues_) {
    std::erase_if(queue.waiters,
                  [process](const Waiter& waiter) { return waiter.requester == process; });
    if (queue.producers.erase(process) == 0) continue;
    queue.last_ended = how;
    serve(id, queue);
  }
}

std::optional<QueueHub::Clock::time_point> QueueHub::expire(Clock::time_point now) {
  std::optional<Clock::time_point> next;
  for (auto& [id, queue] : queues_) {
    for (auto it = queue.waiters.begin(); it != queue.waiters.end();) {
      if (it->deadline && *it->deadline <= now) {
        Waiter waiter = std::move(*it);
        it = queue.waiters.erase(it);
        waiter.done(Outcome::kTimeout, {}, {});
        continue;
      }
      if (it->deadline && (!next || *it->deadline < *next)) next = it->deadline;
      ++it;
    }
  }
  return next;
}

}  // namespace fiber::detail
