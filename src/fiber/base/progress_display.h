// A one-line progress display for a long map on a terminal: items done of the total, the rate,
// the time left, the workers alive, redrawn in place a few times a second and ended by a summary
// line. Opt-in (Pool::Options::progress, FIBER_PROGRESS=1); where its output is no terminal (a
// file, a pipe, mpirun's forwarding of the ranks' output) it shows nothing. Free of MPI.
// Internal.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace fiber::internal {

class ProgressDisplay {
 public:
  /// Starts showing a job of `total` items on `fd`, asking `workers` (from the display's own
  /// thread; it may return -1 for "unknown") how many workers are alive. Returns nullptr, and
  /// shows nothing, when `fd` is not a terminal.
  static std::shared_ptr<ProgressDisplay> start(
      size_t total, std::function<int()> workers, int fd,
      std::chrono::milliseconds period = std::chrono::milliseconds(200));
  ~ProgressDisplay();
  ProgressDisplay(const ProgressDisplay&) = delete;
  ProgressDisplay& operator=(const ProgressDisplay&) = delete;

  /// `items` more are done (cheap: an atomic add; callable under any lock).
  void add(size_t items);
  /// The job ended (`failed`: it stopped at an error): the summary line is drawn and the
  /// display stops. Later calls do nothing.
  void finish(bool failed);

  /// The line drawn for `done` of `total` items after `elapsed`, without the redraw codes.
  static std::string line(size_t done, size_t total, std::chrono::duration<double> elapsed,
                          int workers, bool final, bool failed);

  struct State;  ///< Shared with the display's thread; defined in the .cc.

 private:
  explicit ProgressDisplay(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

/// True when FIBER_PROGRESS asks every pool for a progress display ("1", "true", "on").
bool progress_asked_by_environment();

}  // namespace fiber::internal
