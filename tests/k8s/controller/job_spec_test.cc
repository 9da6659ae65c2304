#include "k8s/controller/job_spec.h"

#include <gtest/gtest.h>

namespace fiber::k8s::controller {
namespace {

using nlohmann::json;

json minimal_job() {
  return {{"metadata", {{"name", "a"}, {"namespace", "n"}, {"uid", "u"}, {"generation", 2}}},
          {"spec",
           {{"launcher", {{"template", json::object()}}},
            {"workers", {{"template", json::object()}, {"maxReplicas", 3}}}}}};
}

TEST(JobSpec, DefaultsOfAMinimalJob) {
  const JobSpec spec = parse_job_spec(minimal_job());
  EXPECT_EQ(spec.name, "a");
  EXPECT_EQ(spec.ns, "n");
  EXPECT_EQ(spec.uid, "u");
  EXPECT_EQ(spec.generation, 2);
  EXPECT_FALSE(spec.replicas);
  EXPECT_EQ(spec.min_replicas, 0);
  EXPECT_EQ(spec.max_replicas, 3);
  EXPECT_EQ(spec.slots_per_worker, 1);
  EXPECT_FALSE(spec.suspend);
  EXPECT_EQ(spec.clean_pod_policy, CleanPodPolicy::kRunning);
  EXPECT_FALSE(spec.max_worker_replacements);
  EXPECT_FALSE(spec.ttl_seconds_after_finished);
  EXPECT_EQ(spec.node_loss_toleration_seconds, 30);
  EXPECT_TRUE(spec.name_service_template.is_null());
  EXPECT_EQ(spec.desired_workers(), 0);
}

TEST(JobSpec, ReadsEveryField) {
  json job = minimal_job();
  job["spec"]["workers"].update({{"replicas", 2},
                                 {"minReplicas", 1},
                                 {"slotsPerWorker", 4},
                                 {"workersToDelete", {"a-worker-1"}}});
  job["spec"]["nameService"] = {{"template", {{"spec", json::object()}}}};
  job["spec"]["runPolicy"] = {
      {"suspend", true},         {"activeDeadlineSeconds", 600}, {"ttlSecondsAfterFinished", 0},
      {"cleanPodPolicy", "All"}, {"maxWorkerReplacements", 5},   {"nodeLossTolerationSeconds", 0}};
  const JobSpec spec = parse_job_spec(job);
  EXPECT_EQ(spec.replicas, 2);
  EXPECT_EQ(spec.min_replicas, 1);
  EXPECT_EQ(spec.slots_per_worker, 4);
  EXPECT_EQ(spec.workers_to_delete, (std::set<std::string>{"a-worker-1"}));
  EXPECT_TRUE(spec.name_service_template.is_object());
  EXPECT_TRUE(spec.suspend);
  EXPECT_EQ(spec.active_deadline_seconds, 600);
  EXPECT_EQ(spec.ttl_seconds_after_finished, 0);
  EXPECT_EQ(spec.clean_pod_policy, CleanPodPolicy::kAll);
  EXPECT_EQ(spec.max_worker_replacements, 5);
  EXPECT_EQ(spec.node_loss_toleration_seconds, 0);
  EXPECT_EQ(spec.desired_workers(), 2);
}

void expect_invalid(const json& job, const std::string& message) {
  try {
    parse_job_spec(job);
    ADD_FAILURE() << "accepted " << job.dump();
  } catch (const InvalidJobError& error) {
    EXPECT_EQ(std::string(error.what()), message);
  }
}

TEST(JobSpec, BadJobsAreRefusedWithTheField) {
  json job = minimal_job();
  job["spec"]["workers"].erase("template");
  expect_invalid(job, "spec.workers.template is required and must be an object");
  job = minimal_job();
  job["spec"]["workers"]["minReplicas"] = 4;
  expect_invalid(job,
                 "spec.workers.minReplicas must be less than or equal to spec.workers.maxReplicas");
  job = minimal_job();
  job["spec"]["workers"]["replicas"] = -1;
  expect_invalid(job, "spec.workers.replicas must be at least 0, not -1");
  job = minimal_job();
  job["spec"]["workers"]["replicas"] = "two";
  expect_invalid(job, "spec.workers.replicas must be an integer");
  job = minimal_job();
  job["spec"]["runPolicy"] = {{"cleanPodPolicy", "Some"}};
  expect_invalid(job, "spec.runPolicy.cleanPodPolicy must be Running, All or None, not \"Some\"");
  job = minimal_job();
  job["spec"]["runPolicy"] = {{"nodeLossTolerationSeconds", -5}};
  expect_invalid(job, "spec.runPolicy.nodeLossTolerationSeconds must be at least 0, not -5");
  job["spec"]["runPolicy"] = {{"nodeLossTolerationSeconds", 86401}};
  expect_invalid(job, "spec.runPolicy.nodeLossTolerationSeconds must be at most 86400");
  job = minimal_job();
  job["metadata"].erase("uid");
  expect_invalid(job, "metadata.uid is required and must be a non-empty string");
  expect_invalid(json::array(), "metadata is required and must be an object");
}

TEST(JobSpec, ConfigIsAStringWhenPresent) {
  EXPECT_FALSE(parse_job_spec(minimal_job()).config);
  json job = minimal_job();
  job["spec"]["config"] = "pool_size: 4\n";
  EXPECT_EQ(parse_job_spec(job).config, "pool_size: 4\n");
  job["spec"]["config"] = json{{"pool_size", 4}};
  try {
    parse_job_spec(job);
    ADD_FAILURE() << "a config that is no string was accepted";
  } catch (const InvalidJobError& error) {
    EXPECT_STREQ(error.what(), "spec.config must be a string (a fiber.yaml)");
  }
}

}  // namespace
}  // namespace fiber::k8s::controller
