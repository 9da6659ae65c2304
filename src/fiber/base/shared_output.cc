#include "fiber/base/shared_output.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <random>
#include <system_error>
#include <vector>

namespace fiber::internal {
namespace {

// The descriptors shared, and the bit of each in the byte that comes with them.
constexpr int kShared[] = {STDOUT_FILENO, STDERR_FILENO};

[[noreturn]] void fail(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

// An abstract socket's address: a leading NUL, then the name (no file to clean up).
socklen_t abstract_address(const std::string& name, sockaddr_un& address) {
  std::memset(&address, 0, sizeof address);
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path + 1, name.data(), name.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}

std::string random_name() {
  std::random_device source;
  char name[64];
  std::snprintf(name, sizeof name, "fibermpi-output-%d-%08x%08x%08x", static_cast<int>(::getpid()),
                source(), source(), source());
  return name;
}

// Hands this process's descriptors 1 and 2 to the peer of `connection` when it runs as our user;
// none that is one of `own` (a master started with stdout closed gets its socket there).
void hand_over(int connection, const int (&own)[3]) {
  ucred peer{};
  socklen_t length = sizeof peer;
  if (::getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0 ||
      peer.uid != ::geteuid())
    return;
  std::vector<int> fds;
  unsigned char which = 0;
  for (size_t i = 0; i < std::size(kShared); ++i) {
    if (::fcntl(kShared[i], F_GETFD) == -1) continue;  // closed in the master: left out
    if (std::find(std::begin(own), std::end(own), kShared[i]) != std::end(own)) continue;
    fds.push_back(kShared[i]);
    which |= static_cast<unsigned char>(1u << i);
  }
  iovec data{&which, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * std::size(kShared))] = {};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  if (!fds.empty()) {
    message.msg_control = control;
    message.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(header), fds.data(), sizeof(int) * fds.size());
  }
  (void)::sendmsg(connection, &message, MSG_NOSIGNAL);
}

}  // namespace

SharedOutput::SharedOutput() {
  listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener_ < 0) fail("socket");
  address_ = random_name();
  sockaddr_un address;
  const socklen_t length = abstract_address(address_, address);
  if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::listen(listener_, 64) != 0 || ::pipe2(stop_, O_CLOEXEC) != 0) {
    const int error = errno;
    ::close(listener_);
    errno = error;
    fail("binding the output socket");
  }
  server_ = std::thread([this] { serve(); });
}

SharedOutput::~SharedOutput() {
  const char stop = 1;
  (void)!::write(stop_[1], &stop, 1);
  if (server_.joinable()) server_.join();
  for (int fd : {listener_, stop_[0], stop_[1]}) ::close(fd);
}

void SharedOutput::serve() {
  const int own[3] = {listener_, stop_[0], stop_[1]};
  for (;;) {
    pollfd ready[2] = {{listener_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
    if (::poll(ready, 2, -1) < 0) {
      if (errno == EINTR) continue;
      // Nothing serves the socket any more: connecting workers are refused at once and keep
      // MPI's forwarding, rather than waiting in the backlog.
      ::shutdown(listener_, SHUT_RDWR);
      return;
    }
    if (ready[1].revents) return;
    const int connection = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) {
      // Out of descriptors (EMFILE, ENFILE) the listener stays readable: wait instead of spinning.
      if (errno != EINTR && errno != ECONNABORTED) ::poll(nullptr, 0, 50);
      continue;
    }
    hand_over(connection, own);
    ::close(connection);
  }
}

bool adopt_shared_output(const std::string& address_name) {
  if (address_name.empty() || address_name.size() + 1 > sizeof(sockaddr_un::sun_path)) return false;
  const int connection = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (connection < 0) return false;
  sockaddr_un address;
  const socklen_t length = abstract_address(address_name, address);
  // A master that stopped serving must not hold a worker's start: connect (a full backlog) and
  // the answer each wait 5 s at most.
  const timeval patience{5, 0};
  (void)::setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
  (void)::setsockopt(connection, SOL_SOCKET, SO_SNDTIMEO, &patience, sizeof patience);
  unsigned char which = 0;
  iovec data{&which, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * std::size(kShared))] = {};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  const bool received = ::connect(connection, reinterpret_cast<sockaddr*>(&address), length) == 0 &&
                        ::recvmsg(connection, &message, MSG_CMSG_CLOEXEC) == 1;
  ::close(connection);
  if (!received) return false;
  std::vector<int> fds;
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const size_t start = fds.size();
    fds.resize(start + count);
    std::memcpy(fds.data() + start, CMSG_DATA(header), count * sizeof(int));
  }
  std::fflush(nullptr);
  size_t next = 0;
  bool adopted = false;
  for (size_t i = 0; i < std::size(kShared); ++i) {
    if (!(which & (1u << i)) || next >= fds.size()) continue;
    const int received = fds[next++];
    if (received == kShared[i]) {  // this worker's own was closed: the new one took its number
      adopted = ::fcntl(received, F_SETFD, 0) == 0 || adopted;
      continue;
    }
    adopted = ::dup2(received, kShared[i]) == kShared[i] || adopted;
  }
  for (int fd : fds) {
    if (std::find(std::begin(kShared), std::end(kShared), fd) == std::end(kShared)) ::close(fd);
  }
  return adopted;
}

}  // namespace fiber::internal
