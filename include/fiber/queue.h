// fiber::Queue<T>: a joinable, optionally bounded FIFO shared by any number of processes, like
// multiprocessing.JoinableQueue.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "fiber/invoke.h"
#include "fiber/queue_ref.h"
#include "fiber/serialization.h"

namespace fiber {

/// Each item put is taken exactly once by some getter, in FIFO order per producer. A queue made
/// with a `maxsize` holds at most that many items: put() waits for room (back-pressure). Every
/// item put counts as unfinished until some process calls task_done() for it; join() waits
/// until none is. Copies, and copies passed to other processes (as arguments of a Process, a
/// pool task, a Group member), refer to the same queue; the items live in the master.
///
/// Nothing waits forever on a dead peer: a get() that can never be served (empty, and every
/// process that could put has ended) throws fiber::EOFError, and a join() whose unfinished items
/// were taken by processes that ended without task_done() throws fiber::EOFError naming one.
template <class T>
class Queue {
 public:
  /// An unbounded queue. Needs fiber::init.
  Queue() : Queue(0) {}
  /// A queue of at most `maxsize` items (0: no limit).
  explicit Queue(size_t maxsize)
      : ref_(detail::QueueRef::create(false, true, maxsize)), maxsize_(maxsize) {
    serial::require_serializable<T>();
  }

  /// Appends an item, waiting while the queue is full.
  void put(const T& item) const {
    if (maxsize_ == 0) return ref_.put(serial::to_bytes(item));
    ref_.put_waiting(serial::to_bytes(item), std::nullopt, "Queue::put");
  }
  /// Appends an item; throws fiber::Full if the queue is still full after `timeout`.
  template <class Rep, class Period>
  void put(const T& item, std::chrono::duration<Rep, Period> timeout) const {
    if (maxsize_ == 0) return ref_.put(serial::to_bytes(item));
    ref_.put_waiting(serial::to_bytes(item),
                     std::chrono::duration_cast<std::chrono::microseconds>(timeout), "Queue::put");
  }
  /// Appends an item if there is room now; throws fiber::Full otherwise.
  void put_nowait(const T& item) const { put(item, std::chrono::microseconds(0)); }

  /// Takes the oldest item, waiting as long as needed (fiber::EOFError when none can come).
  T get() const { return serial::from_bytes<T>(ref_.get(std::nullopt, "Queue::get")); }
  /// Takes the oldest item; throws fiber::Empty if none arrives within `timeout`.
  template <class Rep, class Period>
  T get(std::chrono::duration<Rep, Period> timeout) const {
    return serial::from_bytes<T>(
        ref_.get(std::chrono::duration_cast<std::chrono::microseconds>(timeout), "Queue::get"));
  }
  /// Takes the oldest item if there is one now; throws fiber::Empty otherwise.
  T get_nowait() const {
    try {
      return serial::from_bytes<T>(ref_.get(std::chrono::microseconds(0), "Queue::get_nowait"));
    } catch (const EOFError& e) {
      throw Empty(e.what());
    }
  }

  /// One item taken earlier is processed. fiber::UsageError when called more often than items
  /// were put.
  void task_done() const { ref_.task_done(); }
  /// Waits until every item put has been task_done().
  void join() const { ref_.join(std::nullopt); }
  /// join() for at most `timeout`: false when items are still unfinished then.
  template <class Rep, class Period>
  bool join(std::chrono::duration<Rep, Period> timeout) const {
    return ref_.join(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  }

  /// Items waiting now (a snapshot: other processes put and get at any time).
  size_t qsize() const { return ref_.size(); }
  bool empty() const { return qsize() == 0; }
  /// True when a bounded queue holds maxsize items now.
  bool full() const { return maxsize_ > 0 && qsize() >= maxsize_; }
  /// The bound given at construction (0: none).
  size_t maxsize() const noexcept { return maxsize_; }

  /// Wire form, used when the queue is an argument of a Process or a task.
  void fiber_save(serial::Writer& writer) const {
    detail::HandleCollector::note_producer(ref_.id());
    serial::save(writer, ref_.id());
    serial::save(writer, static_cast<uint64_t>(maxsize_));
  }
  static Queue fiber_load(serial::Reader& reader) {
    const auto id = serial::read<uint64_t>(reader);
    const auto maxsize = serial::read<uint64_t>(reader);
    return Queue(detail::QueueRef(id), static_cast<size_t>(maxsize));
  }

 private:
  Queue(detail::QueueRef ref, size_t maxsize) : ref_(ref), maxsize_(maxsize) {}
  detail::QueueRef ref_;
  size_t maxsize_ = 0;
};

}  // namespace fiber
