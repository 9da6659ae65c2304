#include "fiber/base/process_watch.h"

#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <iterator>

#include "fiber/base/process_presence.h"

namespace fiber::internal {
namespace {

// A pidfd for `pid`, or -1 (errno says why: ESRCH when it has already ended).
int open_pidfd(int pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  errno = ENOSYS;
  return -1;
#endif
}

}  // namespace

ProcessWatch::ProcessWatch() : epoll_(::epoll_create1(EPOLL_CLOEXEC)) {}

ProcessWatch::~ProcessWatch() {
  for (auto& [pid, watched] : watched_)
    if (watched.pidfd >= 0) ::close(watched.pidfd);
  if (epoll_ >= 0) ::close(epoll_);
}

void ProcessWatch::begin_round() {
  ++round_;
  if (epoll_ < 0) return;
  std::array<epoll_event, 64> ready{};
  for (;;) {
    const int count = ::epoll_wait(epoll_, ready.data(), static_cast<int>(ready.size()), 0);
    if (count <= 0) return;
    for (int i = 0; i < count; ++i) {
      auto it = watched_.find(static_cast<int>(ready[static_cast<size_t>(i)].data.u32));
      if (it == watched_.end() || it->second.pidfd < 0) continue;
      // Ended: nothing more to wait for on its pidfd.
      ::epoll_ctl(epoll_, EPOLL_CTL_DEL, it->second.pidfd, nullptr);
      ::close(it->second.pidfd);
      it->second.pidfd = -1;
      it->second.ended = true;
    }
    if (count < static_cast<int>(ready.size())) return;
  }
}

bool ProcessWatch::gone(int pid) {
  if (pid <= 0) return false;
  auto [it, added] = watched_.try_emplace(pid);
  Watched& watched = it->second;
  watched.round = round_;
  if (added && epoll_ >= 0) {
    const int fd = open_pidfd(pid);
    if (fd < 0) {
      if (errno == ESRCH) watched.ended = true;
    } else {
      epoll_event event{};
      event.events = EPOLLIN;
      event.data.u32 = static_cast<uint32_t>(pid);
      if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &event) == 0) {
        watched.pidfd = fd;
      } else {
        ::close(fd);
      }
    }
  }
  if (watched.ended) return true;
  if (watched.pidfd >= 0) return false;
  // No pidfd for this one: asked directly, every time.
  watched.ended = process_gone(pid);
  return watched.ended;
}

void ProcessWatch::end_round() {
  for (auto it = watched_.begin(); it != watched_.end();) {
    if (it->second.round == round_) {
      ++it;
      continue;
    }
    auto next = std::next(it);
    forget(it);
    it = next;
  }
}

void ProcessWatch::forget(std::unordered_map<int, Watched>::iterator it) {
  if (it->second.pidfd >= 0) {
    ::epoll_ctl(epoll_, EPOLL_CTL_DEL, it->second.pidfd, nullptr);
    ::close(it->second.pidfd);
  }
  watched_.erase(it);
}

size_t ProcessWatch::watched_by_pidfd() const {
  size_t count = 0;
  for (const auto& [pid, watched] : watched_)
    if (watched.pidfd >= 0) ++count;
  return count;
}

}  // namespace fiber::internal
