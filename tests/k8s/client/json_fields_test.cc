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

}  // namespace
}  // namespace fiber::k8s
