// An HTTP server on a free local port for the client tests: each test scripts the answers of the
// API server it needs (routes, Status errors, watch streams fed line by line).
#pragma once

#include <httplib.h>

#include <atomic>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "k8s/client/kube_config.h"

namespace fiber::k8s::testing {

/// Bytes a test hands to an open watch stream, in order; closing it ends the stream.
class LineChannel {
 public:
  /// Queues `bytes` exactly as given (a test adds the newline of each event itself).
  void push(std::string bytes);
  /// Ends the stream once the queued bytes are sent.
  void close();
  /// Waits up to `wait` for bytes; nullopt when none came.
  std::optional<std::string> pop(std::chrono::milliseconds wait);
  /// True when closed and everything was sent.
  bool drained() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::string> pending_;
  bool closed_ = false;
};

/// Runs an httplib::Server on 127.0.0.1 on a thread of its own until destroyed.
class FakeApiServer {
 public:
  /// `add_routes` registers the handlers before the server starts listening.
  explicit FakeApiServer(const std::function<void(httplib::Server&)>& add_routes);
  /// Ends open streams, stops the server and joins its thread.
  ~FakeApiServer();

  /// "http://127.0.0.1:<port>".
  std::string url() const;
  /// A ClusterAccess for this server (plain HTTP, no credentials).
  ClusterAccess access() const;
  /// Answers `response` with a chunked stream fed by `channel` until it is closed (or the server
  /// stops).
  void stream(httplib::Response& response, std::shared_ptr<LineChannel> channel);

 private:
  httplib::Server server_;
  int port_ = 0;
  std::atomic<bool> closing_{false};
  std::thread thread_;
};

/// A metav1.Status body as the API server words it.
std::string status_body(int code, const std::string& reason, const std::string& message);

/// A watch event line: {"type": type, "object": object} and a newline.
std::string event_line(const std::string& type, const nlohmann::json& object);

/// Waits until `condition` holds (checked whenever `changed` is notified under `mutex`) or the
/// timeout passes; returns the condition.
bool wait_until(std::mutex& mutex, std::condition_variable& changed,
                const std::function<bool()>& condition,
                std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace fiber::k8s::testing
