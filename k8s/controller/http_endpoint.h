// A small HTTP server for the controller's probes (/healthz, /readyz) and /metrics.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace httplib {
class Server;
}

namespace fiber::k8s::controller {

/// What a route answers: status and plain-text body.
struct HttpAnswer {
  int status = 200;
  std::string body;
  std::string content_type = "text/plain; charset=utf-8";
};

/// Serves GET routes on "host:port" on a thread of its own.
class HttpEndpoint {
 public:
  /// `address` is "host:port" (port 0 picks a free one; an IPv6 host in brackets, "[::1]:8080").
  /// No host (":8080") listens on every address of both families: "[::]" taking IPv4 as well,
  /// or "0.0.0.0" where the kernel has no IPv6. Throws std::invalid_argument when it is not of
  /// that form.
  explicit HttpEndpoint(const std::string& address);
  /// Stops the server.
  ~HttpEndpoint();
  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;

  /// Answers GET `path` with `handler` (called on the server's threads). Add before start().
  void get(const std::string& path, std::function<HttpAnswer()> handler);
  /// Binds and starts serving; throws std::runtime_error naming the address when it cannot bind.
  void start();
  /// The bound port (after start()).
  int port() const { return port_; }
  /// "host:port" as bound (after start()), an IPv6 host in brackets.
  std::string address() const;
  /// Stops serving and joins the thread. Idempotent.
  void stop();

 private:
  std::string host_;
  int port_ = 0;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<bool> listener_done_{false};
};

}  // namespace fiber::k8s::controller
