// How ConfigMap NAME-release reads, for the launcher and the controller alike.
#include "k8s/client/release_request.h"

#include <gtest/gtest.h>

namespace fiber::k8s {
namespace {

using nlohmann::json;
using Names = std::set<std::string>;

json config_map(const char* key, const std::string& value) { return {{"data", {{key, value}}}}; }

TEST(ReleaseRequest, ListedNamesAreTrimmedAndBadLinesRefused) {
  std::vector<std::string> refused;
  const Names names = parse_release_list(
      config_map(kReleaseListKey, "pi-worker-1\n  pi-worker-2\t\r\n\n Pi_Worker\npi-worker-1\n"),
      refused);
  EXPECT_EQ(names, (Names{"pi-worker-1", "pi-worker-2"}));
  EXPECT_EQ(refused, (std::vector<std::string>{"'Pi_Worker' is not a pod name"}));
}

TEST(ReleaseRequest, AnAbsentOrNonStringListIsEmpty) {
  std::vector<std::string> refused;
  EXPECT_TRUE(parse_release_list(json::object(), refused).empty());
  EXPECT_TRUE(parse_release_list(json{{"data", {{kReleaseListKey, 3}}}}, refused).empty());
  EXPECT_TRUE(parse_release_list(json::array(), refused).empty());
  EXPECT_TRUE(refused.empty());
}

TEST(ReleaseRequest, ARequestIsACountBetweenBlanksUpToTheCrdsBound) {
  std::vector<std::string> refused;
  EXPECT_EQ(parse_requested_workers(config_map(kRequestedWorkersKey, " 3\n"), refused), 3);
  EXPECT_EQ(parse_requested_workers(config_map(kRequestedWorkersKey, ""), refused), 0);
  EXPECT_EQ(parse_requested_workers(config_map(kRequestedWorkersKey, "100000"), refused), 100000);
  EXPECT_EQ(parse_requested_workers(json::object(), refused), 0);
  EXPECT_TRUE(refused.empty());
  for (const char* bad : {"100001", "-1", "3 pods", "99999999999999999999", "0x10"}) {
    EXPECT_EQ(parse_requested_workers(config_map(kRequestedWorkersKey, bad), refused), 0) << bad;
  }
  ASSERT_EQ(refused.size(), 5u);
  EXPECT_EQ(refused[0], "workersRequested '100001' is not a count of worker pods (0 to 100000)");
}

TEST(ReleaseRequest, TheListTextReadsBackAsTheSameNames) {
  const Names names{"pi-worker-0", "pi-worker-7"};
  std::vector<std::string> refused;
  EXPECT_EQ(release_list_text(names), "pi-worker-0\npi-worker-7\n");
  EXPECT_EQ(parse_release_list(config_map(kReleaseListKey, release_list_text(names)), refused),
            names);
}

}  // namespace
}  // namespace fiber::k8s
