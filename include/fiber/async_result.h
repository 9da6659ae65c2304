// Results of Pool submissions: fiber::AsyncResult<T> (apply_async, map_async, starmap_async), like
// multiprocessing's AsyncResult, and fiber::ResultStream<R> (imap, imap_unordered), which yields
// results while later tasks still run.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "fiber/detail/job.h"
#include "fiber/errors.h"
#include "fiber/serialization.h"

namespace fiber {

/// What the map family yields for a function returning void (Python's None).
using None = std::monostate;

namespace detail {

using SteadyClock = std::chrono::steady_clock;

/// Waits (polling MPI in this thread while traffic flows) until `done`, evaluated under the
/// runtime's lock, holds or the deadline passes; false on the deadline.
bool wait_for_job(const std::function<bool()>& done,
                  std::optional<SteadyClock::time_point> deadline);
/// Registers `callback` to run on the pool's callback thread once `job` is ready, or runs it now
/// in this thread when it already is.
void when_ready(const std::shared_ptr<Job>& job, std::function<void()> callback);
[[noreturn]] void throw_timeout(std::chrono::nanoseconds timeout);

template <class T>
struct SuccessCallbackOf {
  using type = std::function<void(const T&)>;
};
template <>
struct SuccessCallbackOf<void> {
  using type = std::function<void()>;
};

template <class R>
using ValueOf = std::conditional_t<std::is_void_v<R>, None, R>;

/// Reads one result of a task returning R.
template <class R>
ValueOf<R> read_result(serial::Reader& reader) {
  if constexpr (std::is_void_v<R>) {
    return None{};
  } else {
    return serial::read<R>(reader);
  }
}

/// Where an AsyncResult's value is decoded as its chunks arrive.
template <class T>
class ValueSink : public ResultSink {
 public:
  /// The value, once the job is ready and succeeded.
  virtual const ValueOf<T>& value() = 0;
  /// Moves the value out (for a caller that holds the only handle to it).
  virtual ValueOf<T> take() = 0;
};

/// apply_async: the one result.
template <class R>
class ApplySink final : public ValueSink<R> {
 public:
  void store(size_t, uint64_t, uint32_t items, Bytes& results, size_t offset) override {
    if (items != 1)
      throw ProtocolError("an apply's chunk holds " + std::to_string(items) + " items");
    serial::Reader reader(std::span<const std::byte>(results).subspan(offset));
    value_.emplace(read_result<R>(reader));
  }
  void fail(size_t, uint64_t, uint32_t, const std::exception_ptr&) override {}
  const ValueOf<R>& value() override { return *value_; }
  ValueOf<R> take() override { return std::move(*value_); }

 private:
  std::optional<ValueOf<R>> value_;
};

/// map_async, starmap_async: every result, in input order, decoded into its place as its chunk
/// arrives (no encoded results are kept).
template <class R>
class CollectSink final : public ValueSink<std::vector<ValueOf<R>>> {
 public:
  using Value = ValueOf<R>;
  using Values = std::vector<Value>;
  explicit CollectSink(size_t total) : slots_(total) {}

  void store(size_t, uint64_t first_item, uint32_t items, Bytes& results, size_t offset) override {
    if (first_item + items > slots_.size())
      throw ProtocolError("results for inputs " + std::to_string(first_item) + " to " +
                          std::to_string(first_item + items) + " of a map of " +
                          std::to_string(slots_.size()));
    serial::Reader reader(std::span<const std::byte>(results).subspan(offset));
    for (uint32_t i = 0; i < items; ++i) slots_[first_item + i] = read_result<R>(reader);
  }
  void fail(size_t, uint64_t, uint32_t, const std::exception_ptr&) override {}
  const Values& value() override {
    if constexpr (kInPlace) {
      return slots_;
    } else {
      std::call_once(gathered_once_, [this] {
        gathered_.reserve(slots_.size());
        for (auto& slot : slots_) gathered_.push_back(std::move(*slot));
        slots_ = {};
      });
      return gathered_;
    }
  }
  Values take() override {
    if constexpr (kInPlace) {
      return std::move(slots_);
    } else {
      value();
      return std::move(gathered_);
    }
  }

 private:
  // Results that can be default-made are decoded straight into the vector that is returned.
  static constexpr bool kInPlace = std::is_default_constructible_v<Value>;
  std::vector<std::conditional_t<kInPlace, Value, std::optional<Value>>> slots_;
  std::once_flag gathered_once_;
  Values gathered_;
};

/// imap (in input order) and imap_unordered (in completion order): results wait here, decoded,
/// until the caller takes them. Guarded by the runtime's lock.
template <class R>
class StreamSink final : public ResultSink {
 public:
  using Value = ValueOf<R>;
  explicit StreamSink(bool ordered) : ordered_(ordered) {}

  void store(size_t, uint64_t first_item, uint32_t items, Bytes& results, size_t offset) override {
    // Decoded in full first: a chunk that does not decode fails as a whole.
    scratch_.clear();
    serial::Reader reader(std::span<const std::byte>(results).subspan(offset));
    for (uint32_t i = 0; i < items; ++i) scratch_.push_back(read_result<R>(reader));
    if (!ordered_) {
      for (auto& value : scratch_) arrived_.emplace_back(std::move(value));
      return;
    }
    for (uint32_t i = 0; i < items; ++i) slot(first_item + i) = std::move(scratch_[i]);
  }
  void fail(size_t, uint64_t first_item, uint32_t items, const std::exception_ptr& error) override {
    if (!ordered_) {
      arrived_.emplace_back(Failure{error, items});
      return;
    }
    // The error takes the place of the chunk's first result; the others are skipped.
    slot(first_item) = Failure{error, items};
    for (uint32_t i = 1; i < items; ++i) slot(first_item + i) = Skip{};
  }

  /// What take_locked took: inputs accounted for, and the error that comes next, if any.
  struct Taken {
    uint64_t items = 0;
    std::exception_ptr error;
  };
  /// Moves up to `most` results that are next into `out`; where a failed chunk is next (and
  /// `out` is empty), takes its error instead.
  Taken take_locked(std::vector<Value>& out, size_t most) {
    Taken taken;
    if (!ordered_) {
      while (!arrived_.empty() && out.size() < most) {
        auto& next = arrived_.front();
        if (auto* failure = std::get_if<Failure>(&next)) {
          if (!out.empty()) break;
          taken.error = failure->error;
          taken.items += failure->items;
          arrived_.pop_front();
          break;
        }
        out.push_back(std::move(std::get<Value>(next)));
        ++taken.items;
        arrived_.pop_front();
      }
      return taken;
    }
    while (!slots_.empty()) {
      auto& next = slots_.front();
      if (std::holds_alternative<Pending>(next)) break;
      if (auto* failure = std::get_if<Failure>(&next)) {
        if (!out.empty() || taken.error) break;
        taken.error = failure->error;
        taken.items += failure->items > 0 ? 1 : 0;
        pop();
        continue;  // the skipped results of its chunk go too
      }
      if (std::holds_alternative<Skip>(next)) {
        ++taken.items;
        pop();
        continue;
      }
      if (taken.error || out.size() >= most) break;
      out.push_back(std::move(std::get<Value>(next)));
      ++taken.items;
      pop();
    }
    return taken;
  }
  /// Nothing is waiting to be taken.
  bool drained_locked() const { return ordered_ ? slots_.empty() : arrived_.empty(); }

 private:
  struct Pending {};
  struct Skip {};
  struct Failure {
    std::exception_ptr error;
    uint32_t items = 0;
  };
  using Slot = std::variant<Pending, Value, Failure, Skip>;

  Slot& slot(uint64_t item) {
    if (item < base_) throw ProtocolError("a result for an input already taken");
    const uint64_t index = item - base_;
    if (index >= slots_.size()) slots_.resize(index + 1);
    return slots_[index];
  }
  void pop() {
    slots_.pop_front();
    ++base_;
  }

  const bool ordered_;
  std::deque<Slot> slots_;  ///< Ordered: from input base_ on.
  uint64_t base_ = 0;
  std::deque<std::variant<Value, Failure>> arrived_;  ///< Unordered.
  std::vector<Value> scratch_;
};

/// The caller of a stream made room in its window: the pool reads more of its inputs.
void resume_stream(const std::shared_ptr<Job>& job);

}  // namespace detail

/// The result of an asynchronous Pool call. Copies share the same result.
template <class T>
class AsyncResult {
 public:
  using SuccessCallback = typename detail::SuccessCallbackOf<T>::type;
  using ErrorCallback = std::function<void(const Error&)>;

  /// Waits for the result and returns it; rethrows a task's exception as fiber::RemoteError,
  /// fiber::WorkerLost when its workers kept dying, fiber::TerminatedError after terminate().
  T get() const {
    wait();
    return value();
  }
  /// Like get(), but throws fiber::TimeoutError when it is not ready within `timeout`.
  template <class Rep, class Period>
  T get(std::chrono::duration<Rep, Period> timeout) const {
    if (!wait(timeout))
      detail::throw_timeout(std::chrono::duration_cast<std::chrono::nanoseconds>(timeout));
    return value();
  }
  /// Waits until the result is ready.
  void wait() const {
    detail::wait_for_job([job = job_.get()] { return job->ready(); }, {});
  }
  /// Waits at most `timeout`; true when the result is ready.
  template <class Rep, class Period>
  bool wait(std::chrono::duration<Rep, Period> timeout) const {
    const auto deadline = detail::SteadyClock::now() +
                          std::chrono::duration_cast<detail::SteadyClock::duration>(timeout);
    return detail::wait_for_job([job = job_.get()] { return job->ready(); }, deadline);
  }
  /// The result has arrived (or the call has failed).
  bool ready() const {
    return detail::wait_for_job([job = job_.get()] { return job->ready(); },
                                detail::SteadyClock::time_point::min());
  }
  /// True when the call completed without error; throws fiber::UsageError if not yet ready.
  bool successful() const {
    if (!ready()) throw UsageError("AsyncResult::successful() called before the result is ready");
    return job_->first_error == nullptr;
  }
  /// Calls `callback` with the value once it has arrived, on the pool's callback thread (also when
  /// it has already arrived; in this thread only when the pool is gone). Like Python's callback=;
  /// keep it short.
  AsyncResult& on_success(SuccessCallback callback) {
    detail::when_ready(job_, [job = job_, sink = sink_, callback = std::move(callback)] {
      if (job->first_error) return;
      if constexpr (std::is_void_v<T>) {
        callback();
      } else {
        callback(sink->value());
      }
    });
    return *this;
  }
  /// Calls `callback` with the error if the call fails (Python's error_callback=).
  AsyncResult& on_error(ErrorCallback callback) {
    detail::when_ready(job_, [job = job_, callback = std::move(callback)] {
      if (!job->first_error) return;
      try {
        std::rethrow_exception(job->first_error);
      } catch (const Error& e) {
        callback(e);
      }
    });
    return *this;
  }

 private:
  friend class Pool;
  AsyncResult(std::shared_ptr<detail::Job> job, detail::ValueSink<T>* sink)
      : job_(std::move(job)), sink_(sink) {}

  // The job is ready: its results no longer change, so no lock is needed to read them.
  T value() const {
    if (job_->first_error) std::rethrow_exception(job_->first_error);
    if constexpr (!std::is_void_v<T>) return sink_->value();
  }
  // Waits, then moves the value out: for the blocking calls, whose handle nobody else holds.
  T take() {
    wait();
    if (job_->first_error) std::rethrow_exception(job_->first_error);
    if constexpr (!std::is_void_v<T>) return sink_->take();
  }

  std::shared_ptr<detail::Job> job_;
  detail::ValueSink<T>* sink_;  ///< Owned by the job.
};

/// Results of imap (in input order) or imap_unordered (in completion order), available while
/// later tasks still run. Iterate it with range-for, or call next(). A chunk whose task raised
/// rethrows the error once, where its results would have been; iteration goes on after it.
template <class R>
class ResultStream {
 public:
  using value_type = detail::ValueOf<R>;

  /// The next result, or nothing after the last; waits for it.
  std::optional<value_type> next() { return next_until({}); }
  /// Like next(), but throws fiber::TimeoutError when nothing arrives within `timeout`.
  template <class Rep, class Period>
  std::optional<value_type> next(std::chrono::duration<Rep, Period> timeout) {
    const auto deadline = detail::SteadyClock::now() +
                          std::chrono::duration_cast<detail::SteadyClock::duration>(timeout);
    return next_until(deadline, std::chrono::duration_cast<std::chrono::nanoseconds>(timeout));
  }
  /// Number of results this stream yields in all; throws fiber::UsageError when the inputs' length
  /// was not known up front (an unsized or unbounded range).
  size_t size() const {
    if (!total_)
      throw UsageError("this stream's inputs have no known length (an unsized or unbounded range)");
    return *total_;
  }

  class iterator {
   public:
    using value_type = ResultStream::value_type;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    value_type& operator*() const { return *stream_->current_; }
    value_type* operator->() const { return &*stream_->current_; }
    iterator& operator++() {
      stream_->current_ = stream_->next();
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const iterator& it, std::default_sentinel_t) { return it.at_end(); }

   private:
    friend class ResultStream;
    explicit iterator(ResultStream* stream) : stream_(stream) {}
    bool at_end() const { return !stream_->current_.has_value(); }
    ResultStream* stream_ = nullptr;
  };
  /// Starts the iteration (waits for the first result).
  iterator begin() {
    current_ = next();
    return iterator(this);
  }
  std::default_sentinel_t end() const { return {}; }

 private:
  friend class Pool;
  // Results are taken from the sink in batches, under one lock each.
  static constexpr size_t kBatch = 256;

  ResultStream(std::shared_ptr<detail::Job> job, detail::StreamSink<R>* sink,
               std::optional<size_t> total)
      : job_(std::move(job)), sink_(sink), total_(total) {}

  std::optional<value_type> next_until(std::optional<detail::SteadyClock::time_point> deadline,
                                       std::chrono::nanoseconds timeout = {}) {
    if (buffered_next_ < buffered_.size()) return std::move(buffered_[buffered_next_++]);
    buffered_.clear();
    buffered_next_ = 0;
    std::exception_ptr error;
    bool resume = false;
    bool end = false;
    auto* job = job_.get();
    auto* sink = sink_;
    auto& buffered = buffered_;
    const bool arrived = detail::wait_for_job(
        [job, sink, &buffered, &error, &resume, &end] {
          const auto taken = sink->take_locked(buffered, kBatch);
          if (taken.items > 0 && job->consumed(taken.items)) resume = true;
          error = taken.error;
          if (!buffered.empty() || error) return true;
          end = job->inputs_done && job->completed == job->chunks_made && sink->drained_locked();
          return end;
        },
        deadline);
    if (resume) detail::resume_stream(job_);
    if (!arrived) detail::throw_timeout(timeout);
    if (error) std::rethrow_exception(error);
    if (end) return std::nullopt;
    return std::move(buffered_[buffered_next_++]);
  }

  std::shared_ptr<detail::Job> job_;
  detail::StreamSink<R>* sink_;  ///< Owned by the job.
  std::optional<size_t> total_;
  std::vector<value_type> buffered_;
  size_t buffered_next_ = 0;
  std::optional<value_type> current_;
};

}  // namespace fiber
