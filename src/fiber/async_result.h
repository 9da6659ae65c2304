// Results of Pool submissions: fiber::AsyncResult<T> (apply_async, map_async, starmap_async), like
// multiprocessing's AsyncResult, and fiber::ResultStream<R> (imap, imap_unordered), which yields
// results while later tasks still run.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
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

/// Decodes the `count` results of one complete, successful chunk, appending them to `out`.
template <class R>
void decode_chunk(const ChunkOutcome& chunk, uint32_t count, std::vector<ValueOf<R>>& out) {
  serial::Reader reader(std::span<const std::byte>(chunk.results).subspan(chunk.offset));
  for (uint32_t i = 0; i < count; ++i) {
    if constexpr (std::is_void_v<R>) {
      out.emplace_back();
    } else {
      out.push_back(serial::read<R>(reader));
    }
  }
}

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
  /// Calls `callback` with the value once it has arrived (on the pool's callback thread, or at once
  /// in this thread when it already has). Like Python's callback=; keep it short.
  AsyncResult& on_success(SuccessCallback callback) {
    detail::when_ready(job_, [job = job_, decode = decode_, callback = std::move(callback)] {
      if (job->first_error) return;
      if constexpr (std::is_void_v<T>) {
        callback();
      } else {
        callback(decode(*job));
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
  using Decoder = std::function<detail::ValueOf<T>(const detail::Job&)>;
  AsyncResult(std::shared_ptr<detail::Job> job, Decoder decode)
      : job_(std::move(job)), decode_(std::move(decode)) {}

  // The job is ready: its chunks no longer change, so no lock is needed to read them.
  T value() const {
    if (job_->first_error) std::rethrow_exception(job_->first_error);
    if constexpr (std::is_void_v<T>) {
      return;
    } else {
      return decode_(*job_);
    }
  }

  std::shared_ptr<detail::Job> job_;
  Decoder decode_;
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
  /// Number of results this stream yields in all.
  size_t size() const { return total_; }

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
  ResultStream(std::shared_ptr<detail::Job> job, bool ordered, size_t total)
      : job_(std::move(job)), ordered_(ordered), total_(total) {}

  std::optional<value_type> next_until(std::optional<detail::SteadyClock::time_point> deadline,
                                       std::chrono::nanoseconds timeout = {}) {
    while (buffered_next_ == buffered_.size()) {
      if (chunks_taken_ == job_->chunks.size()) return std::nullopt;
      size_t chunk = 0;
      auto* job = job_.get();
      const size_t taken = chunks_taken_;
      const bool ordered = ordered_;
      const bool arrived = detail::wait_for_job(
          [job, taken, ordered, &chunk] {
            if (ordered) {
              chunk = taken;
              return job->chunks[taken].has_value();
            }
            if (job->arrivals.size() <= taken) return false;
            chunk = job->arrivals[taken];
            return true;
          },
          deadline);
      if (!arrived) detail::throw_timeout(timeout);
      ++chunks_taken_;
      buffered_.clear();
      buffered_next_ = 0;
      const auto& outcome = *job_->chunks[chunk];
      if (outcome.error) std::rethrow_exception(outcome.error);
      detail::decode_chunk<R>(outcome, job_->chunk_sizes[chunk], buffered_);
    }
    return std::move(buffered_[buffered_next_++]);
  }

  std::shared_ptr<detail::Job> job_;
  bool ordered_;
  size_t total_;
  size_t chunks_taken_ = 0;
  std::vector<value_type> buffered_;
  size_t buffered_next_ = 0;
  std::optional<value_type> current_;
};

}  // namespace fiber
