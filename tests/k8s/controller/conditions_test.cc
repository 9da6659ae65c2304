#include "k8s/controller/conditions.h"

#include <gtest/gtest.h>

namespace fiber::k8s::controller {
namespace {

using nlohmann::json;

TEST(Conditions, NewConditionInTheStandardForm) {
  json conditions;
  set_condition(conditions, Condition{"Created", true, "ServiceCreated", "ok"}, 2,
                "2026-01-01T00:00:00Z");
  EXPECT_EQ(conditions, (json{{{"type", "Created"},
                               {"status", "True"},
                               {"reason", "ServiceCreated"},
                               {"message", "ok"},
                               {"observedGeneration", 2},
                               {"lastTransitionTime", "2026-01-01T00:00:00Z"}}}));
}

TEST(Conditions, TransitionTimeKeptWhileTheStatusStays) {
  json conditions;
  set_condition(conditions, Condition{"WorkersReady", false, "A", "1 of 2"}, 1, "T1");
  set_condition(conditions, Condition{"WorkersReady", false, "B", "0 of 2"}, 2, "T2");
  ASSERT_EQ(conditions.size(), 1u);
  EXPECT_EQ(conditions[0]["lastTransitionTime"], "T1");
  EXPECT_EQ(conditions[0]["reason"], "B");
  EXPECT_EQ(conditions[0]["message"], "0 of 2");
  EXPECT_EQ(conditions[0]["observedGeneration"], 2);
  set_condition(conditions, Condition{"WorkersReady", true, "C", "2 of 2"}, 2, "T3");
  EXPECT_EQ(conditions[0]["lastTransitionTime"], "T3");
  EXPECT_EQ(conditions[0]["status"], "True");
}

TEST(Conditions, FindAndTest) {
  json conditions;
  set_condition(conditions, Condition{"Failed", true, "R", "m"}, 1, "T");
  set_condition(conditions, Condition{"Degraded", false, "R", "m"}, 1, "T");
  EXPECT_TRUE(condition_is_true(conditions, "Failed"));
  EXPECT_FALSE(condition_is_true(conditions, "Degraded"));
  EXPECT_FALSE(condition_is_true(conditions, "Succeeded"));
  EXPECT_EQ(find_condition(conditions, "Succeeded"), nullptr);
  EXPECT_EQ(find_condition(json(), "Failed"), nullptr);
}

}  // namespace
}  // namespace fiber::k8s::controller
