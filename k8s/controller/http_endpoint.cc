#include "k8s/controller/http_endpoint.h"

#include <httplib.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <stdexcept>

namespace fiber::k8s::controller {
namespace {

// Whether this kernel makes IPv6 sockets at all (a kernel booted with ipv6.disable=1 does not).
bool ipv6_available() {
  const int probe = ::socket(AF_INET6, SOCK_STREAM, 0);
  if (probe < 0) return false;
  ::close(probe);
  return true;
}

}  // namespace

HttpEndpoint::HttpEndpoint(const std::string& address)
    : server_(std::make_unique<httplib::Server>()) {
  const auto colon = address.rfind(':');
  const char* port_begin = address.data() + colon + 1;
  const char* port_end = address.data() + address.size();
  int port = -1;
  if (colon == std::string::npos || std::from_chars(port_begin, port_end, port).ptr != port_end ||
      port < 0 || port > 65535) {
    throw std::invalid_argument("address \"" + address + "\" is not host:port");
  }
  host_ = address.substr(0, colon);
  // "[::]:8080": the brackets belong to the address syntax, not to the host.
  if (host_.size() > 2 && host_.front() == '[' && host_.back() == ']') {
    host_ = host_.substr(1, host_.size() - 2);
  }
  port_ = port;
  // No host: every address of both families. The kubelet probes a pod at its IP, which is an
  // IPv6 address on an IPv6-only cluster, so "0.0.0.0" would crash-loop the pod there.
  if (host_.empty()) host_ = ipv6_available() ? "::" : "0.0.0.0";
  // SO_REUSEADDR only: cpp-httplib's default adds SO_REUSEPORT, with which a second controller
  // would share a taken port silently and the probes would reach either of them. An IPv6 socket
  // also takes IPv4 connections (IPv4-mapped), whatever the node's net.ipv6.bindv6only says.
  server_->set_socket_options([](socket_t socket) {
    int yes = 1;
    setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    int domain = 0;
    socklen_t length = sizeof domain;
    if (getsockopt(socket, SOL_SOCKET, SO_DOMAIN, &domain, &length) == 0 && domain == AF_INET6) {
      int no = 0;
      setsockopt(socket, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof no);
    }
  });
}

HttpEndpoint::~HttpEndpoint() { stop(); }

void HttpEndpoint::get(const std::string& path, std::function<HttpAnswer()> handler) {
  server_->Get(
      path, [handler = std::move(handler)](const httplib::Request&, httplib::Response& response) {
        const HttpAnswer answer = handler();
        response.status = answer.status;
        response.set_content(answer.body, answer.content_type.c_str());
      });
}

void HttpEndpoint::start() {
  if (port_ == 0) {
    port_ = server_->bind_to_any_port(host_.c_str());
    if (port_ < 0) throw std::runtime_error("cannot listen on " + host_ + ":0");
  } else if (!server_->bind_to_port(host_.c_str(), port_)) {
    throw std::runtime_error("cannot listen on " + host_ + ":" + std::to_string(port_));
  }
  thread_ = std::thread([this] {
    server_->listen_after_bind();
    listener_done_ = true;
  });
  // cpp-httplib's stop() does nothing until the listener runs: wait for that (microseconds), so
  // that a stop() right after start() cannot miss it and leave the thread listening for ever.
  while (!server_->is_running() && !listener_done_) std::this_thread::yield();
}

std::string HttpEndpoint::address() const {
  const std::string host = host_.find(':') == std::string::npos ? host_ : "[" + host_ + "]";
  return host + ":" + std::to_string(port_);
}

void HttpEndpoint::stop() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace fiber::k8s::controller
