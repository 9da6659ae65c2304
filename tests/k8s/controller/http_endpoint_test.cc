#include "k8s/controller/http_endpoint.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

namespace fiber::k8s::controller {
namespace {

TEST(HttpEndpoint, ServesItsRoutesOnAChosenPort) {
  HttpEndpoint endpoint("127.0.0.1:0");
  endpoint.get("/readyz", [] { return HttpAnswer{503, "not yet\n"}; });
  endpoint.get("/metrics", [] { return HttpAnswer{200, "m 1\n", "text/plain; version=0.0.4"}; });
  endpoint.start();
  ASSERT_GT(endpoint.port(), 0);
  EXPECT_EQ(endpoint.address(), "127.0.0.1:" + std::to_string(endpoint.port()));
  httplib::Client client("127.0.0.1", endpoint.port());
  client.set_read_timeout(5, 0);
  auto ready = client.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 503);
  EXPECT_EQ(ready->body, "not yet\n");
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->get_header_value("Content-Type"), "text/plain; version=0.0.4");
  auto missing = client.Get("/other");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  endpoint.stop();
  endpoint.stop();
}

TEST(HttpEndpoint, BadAddressesAreRefused) {
  for (const char* address : {"8080", "host:", ":", "host:http", "host:70000", "host:-1"}) {
    EXPECT_THROW(HttpEndpoint{address}, std::invalid_argument) << address;
  }
  EXPECT_NO_THROW(HttpEndpoint{"[::1]:0"});
}

bool ipv6_loopback_usable() {
  const int probe = ::socket(AF_INET6, SOCK_STREAM, 0);
  if (probe < 0) return false;
  sockaddr_in6 loopback{};
  loopback.sin6_family = AF_INET6;
  loopback.sin6_addr = in6addr_loopback;
  const bool bound = ::bind(probe, reinterpret_cast<sockaddr*>(&loopback), sizeof loopback) == 0;
  ::close(probe);
  return bound;
}

int status_of_get(const std::string& host, int port) {
  httplib::Client client(host, port);
  client.set_connection_timeout(5, 0);
  client.set_read_timeout(5, 0);
  auto answer = client.Get("/healthz");
  return answer ? answer->status : -1;
}

// The controller's default (":8081"): the kubelet probes the pod's IP, IPv4 or IPv6.
TEST(HttpEndpoint, NoHostServesBothFamilies) {
  HttpEndpoint endpoint(":0");
  endpoint.get("/healthz", [] { return HttpAnswer{200, "ok\n"}; });
  endpoint.start();
  ASSERT_GT(endpoint.port(), 0);
  EXPECT_EQ(status_of_get("127.0.0.1", endpoint.port()), 200);
  if (!ipv6_loopback_usable()) GTEST_SKIP() << "no IPv6 loopback here";
  EXPECT_EQ(endpoint.address(), "[::]:" + std::to_string(endpoint.port()));
  EXPECT_EQ(status_of_get("::1", endpoint.port()), 200);
}

TEST(HttpEndpoint, AnIpv6HostIsBracketedAndServed) {
  if (!ipv6_loopback_usable()) GTEST_SKIP() << "no IPv6 loopback here";
  HttpEndpoint endpoint("[::1]:0");
  endpoint.get("/healthz", [] { return HttpAnswer{200, "ok\n"}; });
  endpoint.start();
  EXPECT_EQ(endpoint.address(), "[::1]:" + std::to_string(endpoint.port()));
  EXPECT_EQ(status_of_get("::1", endpoint.port()), 200);
  // Bound to the IPv6 loopback only: IPv4 finds nothing there.
  EXPECT_EQ(status_of_get("127.0.0.1", endpoint.port()), -1);
}

TEST(HttpEndpoint, PortTakenIsReported) {
  HttpEndpoint first("127.0.0.1:0");
  first.start();
  HttpEndpoint second("127.0.0.1:" + std::to_string(first.port()));
  try {
    second.start();
    ADD_FAILURE() << "bound a taken port";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()),
              "cannot listen on 127.0.0.1:" + std::to_string(first.port()));
  }
}

}  // namespace
}  // namespace fiber::k8s::controller
