#include "k8s/controller/name_service_uri.h"

#include <gtest/gtest.h>

namespace fiber::k8s::controller {
namespace {

TEST(NameServiceUri, FindsTheOmpiServerLine) {
  EXPECT_EQ(find_name_service_uri("123456.0;tcp://10.244.1.5:40123\n"),
            "123456.0;tcp://10.244.1.5:40123");
}

TEST(NameServiceUri, SkipsNoiseBeforeTheUriAndTrimsIt) {
  const std::string log =
      "ompi-server: starting\n"
      "warning: something; else\n"
      "  3490709504.0;tcp://172.17.0.2,10.0.0.1:38727;tcp6://[fe80::1]:38728  \r\n"
      "7.0;tcp://10.0.0.9:1\n";
  EXPECT_EQ(find_name_service_uri(log),
            "3490709504.0;tcp://172.17.0.2,10.0.0.1:38727;tcp6://[fe80::1]:38728");
}

TEST(NameServiceUri, ReadsWhatDebiansOpenMpi41ServerPrints) {
  // Captured from `ompi-server --no-daemonize -r -` (Open MPI 4.1) stopped by timeout(1).
  const std::string log =
      "(null): Forwarding signal 18 to job\n"
      "84672512.0;tcp://192.0.2.2:55263;tcp6://[fd00::2]:36141\n";
  EXPECT_EQ(find_name_service_uri(log), "84672512.0;tcp://192.0.2.2:55263;tcp6://[fd00::2]:36141");
}

TEST(NameServiceUri, AcceptsPmixStyleIdentifiers) {
  EXPECT_EQ(find_name_service_uri("ompi-server.node1.77@0.0;tcp4://10.0.0.2:5000"),
            "ompi-server.node1.77@0.0;tcp4://10.0.0.2:5000");
}

TEST(NameServiceUri, NothingWhileTheServerHasNotPrintedIt) {
  EXPECT_EQ(find_name_service_uri(""), std::nullopt);
  EXPECT_EQ(find_name_service_uri("starting\n"), std::nullopt);
  EXPECT_EQ(find_name_service_uri("123456.0;tcp://"), std::nullopt);
  EXPECT_EQ(find_name_service_uri(";tcp://10.0.0.1:1"), std::nullopt);
  EXPECT_EQ(find_name_service_uri("123456.0;10.0.0.1:1"), std::nullopt);
  EXPECT_EQ(find_name_service_uri("id;tcp://a:1 and more"), std::nullopt);
  EXPECT_EQ(find_name_service_uri("id;tcp://a:1;garbage"), std::nullopt);
}

}  // namespace
}  // namespace fiber::k8s::controller
