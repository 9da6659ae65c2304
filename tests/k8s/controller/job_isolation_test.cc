#include "k8s/controller/job_isolation.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace fiber::k8s::controller {
namespace {

using nlohmann::json;

JobSpec job() {
  JobSpec spec;
  spec.name = "pi";
  spec.ns = "ns";
  spec.uid = "job-uid";
  return spec;
}

const json kOwner = {{"apiVersion", "fibermpi.io/v1alpha1"},
                     {"kind", "FiberJob"},
                     {"name", "pi"},
                     {"uid", "job-uid"},
                     {"controller", true},
                     {"blockOwnerDeletion", true}};

TEST(JobIsolation, TheJoinTokenSecretIsTheJobsAndHoldsTheToken) {
  const json secret = build_join_token_secret(job(), "0123456789abcdef0123");
  EXPECT_EQ(secret["apiVersion"], "v1");
  EXPECT_EQ(secret["kind"], "Secret");
  EXPECT_EQ(secret["type"], "Opaque");
  EXPECT_EQ(secret["metadata"]["name"], "pi-join-token");
  EXPECT_EQ(secret["metadata"]["namespace"], "ns");
  EXPECT_EQ(secret["metadata"]["labels"], (json{{"fibermpi.io/job-name", "pi"}}));
  EXPECT_EQ(secret["metadata"]["ownerReferences"], json::array({kOwner}));
  EXPECT_EQ(secret["stringData"], (json{{"token", "0123456789abcdef0123"}}));
}

TEST(JobIsolation, ARandomTokenIs256BitsInHexAndNeverTheSame) {
  const std::string first = random_join_token();
  const std::string second = random_join_token();
  EXPECT_EQ(first.size(), 64u);
  EXPECT_TRUE(std::all_of(first.begin(), first.end(),
                          [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }));
  EXPECT_NE(first, second);
}

TEST(JobIsolation, TheNetworkPolicyAdmitsOnlyTheJobsOwnPods) {
  const json policy = build_network_policy(job());
  EXPECT_EQ(policy["apiVersion"], "networking.k8s.io/v1");
  EXPECT_EQ(policy["kind"], "NetworkPolicy");
  EXPECT_EQ(policy["metadata"]["name"], "pi");
  EXPECT_EQ(policy["metadata"]["ownerReferences"], json::array({kOwner}));
  const json same_job = {{"matchLabels", {{"fibermpi.io/job-name", "pi"}}}};
  EXPECT_EQ(policy["spec"], (json{{"podSelector", same_job},
                                  {"policyTypes", {"Ingress"}},
                                  {"ingress", {{{"from", {{{"podSelector", same_job}}}}}}}}));
}

}  // namespace
}  // namespace fiber::k8s::controller
