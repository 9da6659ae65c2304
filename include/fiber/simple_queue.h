// fiber::SimpleQueue<T>: a FIFO shared by any number of processes, like
// multiprocessing.SimpleQueue.
#pragma once

#include <chrono>
#include <optional>

#include "fiber/invoke.h"
#include "fiber/queue_ref.h"
#include "fiber/serialization.h"

namespace fiber {

/// Items put by any process are taken exactly once by some getter, in FIFO order. Copies and
/// copies passed to other processes (as Process arguments) refer to the same queue. The items live
/// in the master. A get() that can never be served (empty, and every child process that held the
/// queue has ended) throws fiber::EOFError instead of hanging.
template <class T>
class SimpleQueue {
 public:
  /// Creates a new, empty queue. Needs fiber::init.
  SimpleQueue() : ref_(detail::QueueRef::create(false)) { serial::require_serializable<T>(); }

  /// Appends an item; returns without waiting for a consumer.
  void put(const T& item) const { ref_.put(serial::to_bytes(item)); }

  /// Takes the oldest item, waiting as long as needed.
  T get() const { return serial::from_bytes<T>(ref_.get(std::nullopt, "SimpleQueue::get")); }

  /// Takes the oldest item; throws fiber::TimeoutError (fiber::Empty) if none arrives within
  /// `timeout`.
  template <class Rep, class Period>
  T get(std::chrono::duration<Rep, Period> timeout) const {
    return serial::from_bytes<T>(ref_.get(
        std::chrono::duration_cast<std::chrono::microseconds>(timeout), "SimpleQueue::get"));
  }

  /// True when no item is waiting (a snapshot: other processes may put at any time).
  bool empty() const { return ref_.size() == 0; }

  /// Wire form, used when the queue is an argument of a Process.
  void fiber_save(serial::Writer& writer) const {
    detail::HandleCollector::note_producer(ref_.id());
    serial::save(writer, ref_.id());
  }
  static SimpleQueue fiber_load(serial::Reader& reader) {
    return SimpleQueue(detail::QueueRef(serial::read<uint64_t>(reader)));
  }

 private:
  explicit SimpleQueue(detail::QueueRef ref) : ref_(ref) {}
  detail::QueueRef ref_;
};

}  // namespace fiber
