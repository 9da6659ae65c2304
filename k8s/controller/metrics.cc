#include "k8s/controller/metrics.h"

#include <map>
#include <sstream>

namespace fiber::k8s::controller {

void ControllerMetrics::observe_reconcile(ReconcileResult result,
                                          std::chrono::duration<double> duration) {
  std::lock_guard lock(mutex_);
  ++reconciles_[static_cast<std::size_t>(result)];
  const double seconds = duration.count();
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++bucket_counts_[i];
  }
  ++duration_count_;
  duration_sum_ += seconds;
}

std::string ControllerMetrics::render(const MetricsSnapshot& snapshot) const {
  std::ostringstream out;
  std::lock_guard lock(mutex_);
  out << "# HELP fiber_controller_reconciles_total FiberJob reconcile passes by result.\n"
      << "# TYPE fiber_controller_reconciles_total counter\n";
  const char* results[] = {"ok", "error", "conflict"};
  for (std::size_t i = 0; i < reconciles_.size(); ++i) {
    out << "fiber_controller_reconciles_total{result=\"" << results[i] << "\"} " << reconciles_[i]
        << "\n";
  }
  out << "# HELP fiber_controller_reconcile_seconds Time one reconcile pass took.\n"
      << "# TYPE fiber_controller_reconcile_seconds histogram\n";
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    out << "fiber_controller_reconcile_seconds_bucket{le=\"" << kBuckets[i] << "\"} "
        << bucket_counts_[i] << "\n";
  }
  out << "fiber_controller_reconcile_seconds_bucket{le=\"+Inf\"} " << duration_count_ << "\n"
      << "fiber_controller_reconcile_seconds_sum " << duration_sum_ << "\n"
      << "fiber_controller_reconcile_seconds_count " << duration_count_ << "\n";
  out << "# HELP fiber_controller_workqueue_depth Jobs waiting in the work queue.\n"
      << "# TYPE fiber_controller_workqueue_depth gauge\n"
      << "fiber_controller_workqueue_depth " << snapshot.workqueue_depth << "\n";
  out << "# HELP fiber_controller_api_requests_total Requests to the API server by method and "
         "HTTP status (0: no answer).\n"
      << "# TYPE fiber_controller_api_requests_total counter\n";
  for (const auto& [key, count] : snapshot.api_requests) {
    out << "fiber_controller_api_requests_total{method=\"" << key.method << "\",code=\""
        << key.status << "\"} " << count << "\n";
  }
  out << "# HELP fiber_controller_leader 1 while this controller holds the leader lease.\n"
      << "# TYPE fiber_controller_leader gauge\n"
      << "fiber_controller_leader " << (snapshot.leader ? 1 : 0) << "\n";
  return out.str();
}

}  // namespace fiber::k8s::controller
