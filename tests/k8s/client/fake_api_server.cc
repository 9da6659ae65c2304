#include "tests/k8s/client/fake_api_server.h"

#include <csignal>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace fiber::k8s::testing {

void LineChannel::push(std::string bytes) {
  std::lock_guard lock(mutex_);
  pending_.push_back(std::move(bytes));
  changed_.notify_all();
}

void LineChannel::close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  changed_.notify_all();
}

std::optional<std::string> LineChannel::pop(std::chrono::milliseconds wait) {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, wait, [this] { return !pending_.empty() || closed_; });
  if (pending_.empty()) return std::nullopt;
  std::string bytes = std::move(pending_.front());
  pending_.pop_front();
  return bytes;
}

bool LineChannel::drained() const {
  std::lock_guard lock(mutex_);
  return closed_ && pending_.empty();
}

FakeApiServer::FakeApiServer(const std::function<void(httplib::Server&)>& add_routes) {
  // A stream the client abandoned is closed under the server's feet; a write to it must fail,
  // not end the test process.
  std::signal(SIGPIPE, SIG_IGN);
  add_routes(server_);
  // Every watch holds a thread of the pool while it is open: the controller's nine informers
  // would take all of httplib's default eight, and its lists would never be answered.
  server_.new_task_queue = [] { return new httplib::ThreadPool(32); };
  port_ = server_.bind_to_any_port("127.0.0.1");
  if (port_ <= 0) throw std::runtime_error("the fake API server cannot bind a port");
  thread_ = std::thread([this] { server_.listen_after_bind(); });
  // Connections wait in the listen backlog until the loop runs, so clients may start at once;
  // waiting for is_running() keeps stop() from racing the start.
  while (!server_.is_running()) std::this_thread::yield();
}

FakeApiServer::~FakeApiServer() {
  closing_ = true;
  server_.stop();
  thread_.join();
}

std::string FakeApiServer::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

ClusterAccess FakeApiServer::access() const {
  ClusterAccess access;
  access.server = url();
  return access;
}

void FakeApiServer::stream(httplib::Response& response, std::shared_ptr<LineChannel> channel) {
  response.set_chunked_content_provider(
      "application/json", [this, channel](std::size_t, httplib::DataSink& sink) {
        while (!closing_) {
          if (auto bytes = channel->pop(std::chrono::milliseconds(20))) {
            if (!sink.write(bytes->data(), bytes->size())) return false;
          } else if (channel->drained()) {
            sink.done();
            return true;
          } else if (!sink.is_writable()) {
            return false;
          }
        }
        return false;
      });
}

std::string status_body(int code, const std::string& reason, const std::string& message) {
  return nlohmann::json{
      {"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()},
      {"status", "Failure"}, {"message", message}, {"reason", reason},
      {"code", code}}
      .dump();
}

std::string event_line(const std::string& type, const nlohmann::json& object) {
  return nlohmann::json{{"type", type}, {"object", object}}.dump() + "\n";
}

bool wait_until(std::mutex& mutex, std::condition_variable& changed,
                const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex);
  return changed.wait_for(lock, timeout, condition);
}

}  // namespace fiber::k8s::testing
