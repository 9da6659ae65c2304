// The controller's Prometheus metrics, rendered in the text exposition format (version 0.0.4).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "k8s/client/api_client.h"

namespace fiber::k8s::controller {

/// How a reconcile pass ended.
enum class ReconcileResult {
  kOk,        ///< done (including passes skipped while expectations are pending)
  kError,     ///< an API call or the job failed; requeued with backoff
  kConflict,  ///< the status write met a newer resourceVersion; requeued
};

/// The values read at scrape time from the parts that own them.
struct MetricsSnapshot {
  std::size_t workqueue_depth = 0;
  RequestStats api_requests;
  bool leader = false;
};

/// Counts reconciles and their durations. Thread-safe.
class ControllerMetrics {
 public:
  /// Upper bounds (seconds) of the reconcile duration histogram's buckets (+Inf is implied).
  static constexpr std::array<double, 11> kBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                      0.5,   1,    2.5,   5,    10};

  /// Counts one reconcile that ended with `result` after `duration`.
  void observe_reconcile(ReconcileResult result, std::chrono::duration<double> duration);

  /// The exposition text: fiber_controller_reconciles_total{result}, the
  /// fiber_controller_reconcile_seconds histogram, fiber_controller_workqueue_depth,
  /// fiber_controller_api_requests_total{method,code} (code 0: no answer) and
  /// fiber_controller_leader.
  std::string render(const MetricsSnapshot& snapshot) const;

 private:
  mutable std::mutex mutex_;
  std::array<std::uint64_t, 3> reconciles_{};
  std::array<std::uint64_t, kBuckets.size()> bucket_counts_{};
  std::uint64_t duration_count_ = 0;
  double duration_sum_ = 0;
};

}  // namespace fiber::k8s::controller
