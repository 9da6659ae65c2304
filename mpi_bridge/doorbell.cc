#include "mpi_bridge/doorbell.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

namespace fiber::bridge {

Doorbell::~Doorbell() {
  for (auto& [pid, peer] : peers_)
    if (peer.fd >= 0) ::close(peer.fd);
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
}

std::string Doorbell::path_for(const std::string& directory, int pid) {
  return directory + "/bell-" + std::to_string(pid);
}

bool Doorbell::open(const std::string& directory, int pid) {
  if (fd_ >= 0 || directory.empty()) return fd_ >= 0;
  path_ = path_for(directory, pid);
  ::unlink(path_.c_str());
  if (::mkfifo(path_.c_str(), 0600) != 0) return false;
  // Read-write, so the FIFO never reports end-of-file when no writer has it open.
  fd_ = ::open(path_.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) ::unlink(path_.c_str());
  return fd_ >= 0;
}

bool Doorbell::sleep(std::chrono::microseconds timeout) {
  if (fd_ < 0) {
    std::this_thread::sleep_for(timeout);
    return false;
  }
  sleepers_.fetch_add(1, std::memory_order_acq_rel);
  pollfd waiting{fd_, POLLIN, 0};
  // poll() has millisecond resolution; ppoll() takes the sleep as it is.
  const timespec limit{static_cast<time_t>(timeout.count() / 1000000),
                       static_cast<long>(timeout.count() % 1000000) * 1000};
  const int ready = ::ppoll(&waiting, 1, &limit, nullptr);
  sleepers_.fetch_sub(1, std::memory_order_acq_rel);
  if (ready > 0) {
    char drain[64];
    while (::read(fd_, drain, sizeof drain) > 0) {
    }
  }
  return ready > 0;
}

void Doorbell::ring_self() {
  if (fd_ < 0 || sleepers_.load(std::memory_order_acquire) == 0) return;
  const char byte = 1;
  [[maybe_unused]] const ssize_t written = ::write(fd_, &byte, 1);
}

void Doorbell::ring(const std::string& directory, int pid, std::chrono::microseconds min_gap) {
  if (directory.empty() || pid <= 0) return;
  std::lock_guard lock(peers_mutex_);
  Peer& peer = peers_[pid];
  const auto now = std::chrono::steady_clock::now();
  if (peer.fd >= 0 && now - peer.last_ring < min_gap) return;
  if (peer.fd < 0) {
    // Opened read-write: the FIFO then always has a reader, so a write after the peer died
    // cannot raise SIGPIPE.
    peer.fd = ::open(path_for(directory, pid).c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (peer.fd < 0) return;  // no FIFO (yet): it wakes by its own timer
  }
  peer.last_ring = now;
  const char byte = 1;
  // EAGAIN means the FIFO is full of rings already.
  [[maybe_unused]] const ssize_t written = ::write(peer.fd, &byte, 1);
}

void Doorbell::forget(int pid) {
  std::lock_guard lock(peers_mutex_);
  auto it = peers_.find(pid);
  if (it == peers_.end()) return;
  if (it->second.fd >= 0) ::close(it->second.fd);
  peers_.erase(it);
}

}  // namespace fiber::bridge
