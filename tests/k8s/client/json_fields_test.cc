#include "k8s/client/json_fields.h"

#include <gtest/gtest.h>

namespace fiber::k8s {
namespace {

using nlohmann::json;

TEST(JsonFields, ReadsStringsAndToleratesAnythingElse) {
  const json pod = {
      {"kind", "Pod"},
      {"metadata",
       {{"name", "p"}, {"generation", 3}, {"labels", {{"fibermpi.io/role", "worker"}}}}}};
  EXPECT_EQ(string_field(pod, "kind"), "Pod");
  EXPECT_EQ(metadata_field(pod, "name"), "p");
  EXPECT_EQ(label_value(pod, "fibermpi.io/role"), "worker");

  EXPECT_EQ(string_field(pod, "absent"), "");
  EXPECT_EQ(metadata_field(pod, "generation"), "") << "a number is not a string";
  EXPECT_EQ(label_value(pod, "absent"), "");
  for (const json& odd : {json(nullptr), json("text"), json::array({1}), json{{"metadata", 5}},
                          json{{"metadata", {{"labels", "x"}}}}}) {
    EXPECT_EQ(string_field(odd, "kind"), "");
    EXPECT_EQ(metadata_field(odd, "name"), "");
    EXPECT_EQ(label_value(odd, "a"), "");
  }
}

TEST(JsonFields, AStringAtAPointerIsReadWhereverItIsAndNothingElseIs) {
  const json pod = {{"status", {{"phase", "Running"}, {"podIP", 5}, {"conditions", {"x"}}}}};
  EXPECT_EQ(string_at(pod, "/status/phase"_json_pointer), "Running");
  EXPECT_EQ(string_at(pod, "/status/podIP"_json_pointer), "") << "a number is not a string";
  EXPECT_EQ(string_at(pod, "/status/conditions/0"_json_pointer), "x");
  EXPECT_EQ(string_at(pod, "/status/absent"_json_pointer), "");
  EXPECT_EQ(string_at(pod, "/status/phase/deeper"_json_pointer), "");
  for (const json& odd : {json(nullptr), json("text"), json::array({1}), json{{"status", 5}}})
    EXPECT_EQ(string_at(odd, "/status/phase"_json_pointer), "");
}

}  // namespace
}  // namespace fiber::k8s
