#include "k8s/controller/metrics.h"

#include <gtest/gtest.h>

namespace fiber::k8s::controller {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

TEST(Metrics, RendersCountersHistogramAndGauges) {
  ControllerMetrics metrics;
  metrics.observe_reconcile(ReconcileResult::kOk, std::chrono::milliseconds(3));
  metrics.observe_reconcile(ReconcileResult::kOk, std::chrono::milliseconds(30));
  metrics.observe_reconcile(ReconcileResult::kConflict, std::chrono::seconds(20));
  MetricsSnapshot snapshot;
  snapshot.workqueue_depth = 7;
  snapshot.api_requests[{"GET", 200}] = 12;
  snapshot.api_requests[{"PUT", 409}] = 1;
  snapshot.leader = true;
  const std::string text = metrics.render(snapshot);
  EXPECT_TRUE(has_line(text, "fiber_controller_reconciles_total{result=\"ok\"} 2")) << text;
  EXPECT_TRUE(has_line(text, "fiber_controller_reconciles_total{result=\"error\"} 0"));
  EXPECT_TRUE(has_line(text, "fiber_controller_reconciles_total{result=\"conflict\"} 1"));
  EXPECT_TRUE(has_line(text, "fiber_controller_reconcile_seconds_bucket{le=\"0.005\"} 1"));
  EXPECT_TRUE(has_line(text, "fiber_controller_reconcile_seconds_bucket{le=\"0.05\"} 2"));
  EXPECT_TRUE(has_line(text, "fiber_controller_reconcile_seconds_bucket{le=\"10\"} 2"));
  EXPECT_TRUE(has_line(text, "fiber_controller_reconcile_seconds_bucket{le=\"+Inf\"} 3"));
  EXPECT_TRUE(has_line(text, "fiber_controller_reconcile_seconds_count 3"));
  EXPECT_TRUE(has_line(text, "fiber_controller_reconcile_seconds_sum 20.033"));
  EXPECT_TRUE(has_line(text, "fiber_controller_workqueue_depth 7"));
  EXPECT_TRUE(
      has_line(text, "fiber_controller_api_requests_total{method=\"GET\",code=\"200\"} 12"));
  EXPECT_TRUE(has_line(text, "fiber_controller_api_requests_total{method=\"PUT\",code=\"409\"} 1"));
  EXPECT_TRUE(has_line(text, "fiber_controller_leader 1"));
  EXPECT_TRUE(has_line(text, "# TYPE fiber_controller_reconcile_seconds histogram"));
}

}  // namespace
}  // namespace fiber::k8s::controller
