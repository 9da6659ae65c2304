#include "fiber/runtime/join_turns.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <vector>

#include "fiber/errors.h"

namespace fiber::detail {
namespace {

using Clock = std::chrono::steady_clock;

std::string system_error(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

JoinTurns::JoinTurns(const std::string& host, std::chrono::seconds turn_limit,
                     std::function<void()> on_begin, std::function<void()> on_end)
    : turn_limit_(turn_limit), on_begin_(std::move(on_begin)), on_end_(std::move(on_end)) {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener_ < 0) throw Error(system_error("fibermpi: cannot open the join-turn socket"));
  sockaddr_in where{};
  where.sin_family = AF_INET;
  where.sin_port = 0;
  where.sin_addr.s_addr = htonl(INADDR_ANY);
  if (!host.empty() && ::inet_pton(AF_INET, host.c_str(), &where.sin_addr) != 1)
    throw Error("fibermpi: '" + host + "' is not an IPv4 address to hand out join turns at");
  socklen_t length = sizeof(where);
  if (::bind(listener_, reinterpret_cast<sockaddr*>(&where), sizeof(where)) != 0 ||
      ::listen(listener_, 128) != 0 ||
      ::getsockname(listener_, reinterpret_cast<sockaddr*>(&where), &length) != 0) {
    const std::string why = system_error("fibermpi: cannot listen for join turns");
    ::close(listener_);
    throw Error(why);
  }
  if (::pipe2(wake_, O_CLOEXEC) != 0) {
    ::close(listener_);
    throw Error(system_error("fibermpi: cannot make the join-turn pipe"));
  }
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &where.sin_addr, text, sizeof(text));
  address_ = std::string(host.empty() ? text : host) + ":" + std::to_string(ntohs(where.sin_port));
  thread_ = std::thread([this] { loop(); });
}

JoinTurns::~JoinTurns() {
  if (thread_.joinable()) {
    const char stop = 'x';
    (void)!::write(wake_[1], &stop, 1);
    thread_.join();
  }
  for (int fd : {listener_, wake_[0], wake_[1]})
    if (fd >= 0) ::close(fd);
}

void JoinTurns::loop() {
  std::deque<int> waiting;
  int holder = -1;
  Clock::time_point granted{};
  for (;;) {
    if (holder < 0) {
      while (!waiting.empty() && holder < 0) {
        const int next = waiting.front();
        waiting.pop_front();
        const char go = 'g';
        if (on_begin_) on_begin_();
        if (::send(next, &go, 1, MSG_NOSIGNAL) == 1) {
          holder = next;
          granted = Clock::now();
        } else {
          if (on_end_) on_end_();
          ::close(next);  // it left while it waited
        }
      }
    }
    std::vector<pollfd> fds = {{wake_[0], POLLIN, 0}, {listener_, POLLIN, 0}};
    if (holder >= 0) fds.push_back({holder, POLLIN, 0});
    const int timeout_ms = holder >= 0 ? 100 : -1;
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
      std::fprintf(stderr, "fibermpi: join turns stop: %s\n", std::strerror(errno));
      break;
    }
    if (fds[0].revents != 0) break;
    if (fds[1].revents & POLLIN) {
      const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0) {
        waiting.push_back(client);
      } else if (errno == EMFILE || errno == ENFILE) {
        // Out of descriptors: try again shortly instead of spinning on the ready listener.
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    // The holder gives its turn back by closing the socket (or dies, which closes it too); a
    // holder silent past the limit (its pod vanished without a reset) loses it.
    if (holder >= 0 &&
        ((fds.size() > 2 && fds[2].revents != 0) || Clock::now() - granted > turn_limit_)) {
      ::close(holder);
      holder = -1;
      if (on_end_) on_end_();
    }
  }
  if (holder >= 0) {
    ::close(holder);
    if (on_end_) on_end_();
  }
  for (int fd : waiting) ::close(fd);
}

int wait_for_join_turn(const std::string& address, std::chrono::seconds limit) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) throw Error("fibermpi: bad join-turn address '" + address + "'");
  const std::string host = address.substr(0, colon);
  const std::string port = address.substr(colon + 1);
  const auto give_up = Clock::now() + limit;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0 || !found)
    throw Error("fibermpi: cannot resolve the master's join-turn address " + address);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int connected = fd < 0 ? -1 : ::connect(fd, found->ai_addr, found->ai_addrlen);
  ::freeaddrinfo(found);
  if (connected != 0) {
    const std::string why = system_error("fibermpi: cannot reach the master at " + address);
    if (fd >= 0) ::close(fd);
    throw Error(why);
  }
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(give_up - Clock::now()).count();
    if (left <= 0) break;
    pollfd wait{fd, POLLIN, 0};
    const int ready = ::poll(&wait, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    char go = 0;
    if (::recv(fd, &go, 1, 0) == 1 && go == 'g') return fd;
    ::close(fd);
    throw Error("fibermpi: the master at " + address + " closed the join-turn connection");
  }
  ::close(fd);
  throw Error("fibermpi: no turn to join the master at " + address + " within " +
              std::to_string(limit.count()) + " s");
}

}  // namespace fiber::detail
