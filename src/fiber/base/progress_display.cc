#include "fiber/base/progress_display.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "fiber/base/log.h"

namespace fiber::internal {

struct ProgressDisplay::State {
  size_t total = 0;
  std::function<int()> workers;
  int fd = STDERR_FILENO;
  std::chrono::milliseconds period{200};
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::atomic<size_t> done{0};
  std::mutex mutex;
  std::condition_variable wake;
  bool finished = false;
  bool stopped = false;   ///< The display itself is gone: draw nothing more.
  int workers_seen = -1;  ///< The last count `workers` gave.
};

namespace {

std::string grouped(size_t value) {
  std::string digits = std::to_string(value);
  for (int at = static_cast<int>(digits.size()) - 3; at > 0; at -= 3)
    digits.insert(static_cast<size_t>(at), ",");
  return digits;
}

std::string duration_text(double seconds) {
  char text[32];
  if (seconds < 60) {
    std::snprintf(text, sizeof text, "%.0f s", seconds);
  } else if (seconds < 3600) {
    std::snprintf(text, sizeof text, "%d min %02d s", static_cast<int>(seconds) / 60,
                  static_cast<int>(seconds) % 60);
  } else {
    std::snprintf(text, sizeof text, "%d h %02d min", static_cast<int>(seconds) / 3600,
                  static_cast<int>(seconds) % 3600 / 60);
  }
  return text;
}

// Draws the line; the caller holds the state's mutex, so that lines never interleave.
void draw_locked(ProgressDisplay::State& state, bool final, bool failed) {
  const auto elapsed = std::chrono::steady_clock::now() - state.started;
  // Back to the line's start, the line, and the rest of the old line cleared.
  const std::string text = "\r" +
                           ProgressDisplay::line(state.done.load(), state.total, elapsed,
                                                 state.workers_seen, final, failed) +
                           "\x1b[K" + (final ? "\n" : "");
  write_fully(state.fd, text.data(), text.size());
}

}  // namespace

std::string ProgressDisplay::line(size_t done, size_t total, std::chrono::duration<double> elapsed,
                                  int workers, bool final, bool failed) {
  const double seconds = elapsed.count();
  const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0;
  const int percent =
      total > 0 ? static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total))
                : 100;
  char rate_text[32];
  std::snprintf(rate_text, sizeof rate_text, rate >= 100 ? "%.0f" : "%.1f", rate);
  std::string text = "fibermpi pool: " + grouped(done) + "/" + grouped(total) + " tasks (" +
                     std::to_string(percent) + "%), " + rate_text + " tasks/s";
  if (final) {
    text += failed ? ", stopped at an error after " : ", done in ";
    text += duration_text(seconds);
  } else if (done > 0 && done < total) {
    text += ", " + duration_text(static_cast<double>(total - done) / rate) + " left";
  }
  if (workers >= 0)
    text += ", " + std::to_string(workers) + (workers == 1 ? " worker" : " workers");
  return text;
}

std::shared_ptr<ProgressDisplay> ProgressDisplay::start(size_t total, std::function<int()> workers,
                                                        int fd, std::chrono::milliseconds period) {
  if (!::isatty(fd)) return nullptr;
  auto state = std::make_shared<State>();
  state->total = total;
  state->workers = std::move(workers);
  state->fd = fd;
  state->period = period;
  // Detached, holding the state: the display may end under any lock (the runtime's, as a job's
  // last chunk arrives) without waiting for a thread that may itself wait for that lock. The
  // workers are counted outside the state's mutex, which finish() takes under the runtime's.
  std::thread([state] {
    for (;;) {
      int workers = -1;
      try {
        if (state->workers) workers = state->workers();
      } catch (...) {
        // The pool is gone or the runtime ends: the count is left out.
      }
      std::unique_lock lock(state->mutex);
      if (state->finished || state->stopped) return;
      state->workers_seen = workers;
      draw_locked(*state, false, false);
      state->wake.wait_for(lock, state->period, [&] { return state->finished || state->stopped; });
      if (state->finished || state->stopped) return;
    }
  }).detach();
  return std::shared_ptr<ProgressDisplay>(new ProgressDisplay(std::move(state)));
}

ProgressDisplay::ProgressDisplay(std::shared_ptr<State> state) : state_(std::move(state)) {}

ProgressDisplay::~ProgressDisplay() {
  std::lock_guard lock(state_->mutex);
  // A job dropped before it ended (its results no longer wanted) leaves the line as it is.
  if (!state_->finished) state_->stopped = true;
  state_->wake.notify_all();
}

void ProgressDisplay::add(size_t items) { state_->done.fetch_add(items); }

void ProgressDisplay::finish(bool failed) {
  std::lock_guard lock(state_->mutex);
  if (state_->finished || state_->stopped) return;
  state_->finished = true;
  // Drawn here, before the job's caller can go on and print or exit.
  draw_locked(*state_, true, failed);
  state_->wake.notify_all();
}

bool progress_asked_by_environment() {
  const char* value = std::getenv("FIBER_PROGRESS");
  if (!value) return false;
  return std::strcmp(value, "1") == 0 || std::strcmp(value, "true") == 0 ||
         std::strcmp(value, "on") == 0 || std::strcmp(value, "yes") == 0;
}

}  // namespace fiber::internal
