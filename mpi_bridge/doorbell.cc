#include "mpi_bridge/doorbell.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

namespace fiber::bridge {
namespace {

// The shared word is used by several processes at once: it must need no lock of the process.
static_assert(std::atomic<uint32_t>::is_always_lock_free);

constexpr size_t kSleepersFileSize = sizeof(std::atomic<uint32_t>);

// The word a sleeping thread counted itself in, so that it uncounts itself there even when the
// doorbell opened meanwhile. A thread sleeps on one doorbell at a time.
thread_local std::atomic<uint32_t>* t_counted_in = nullptr;

}  // namespace

Doorbell::~Doorbell() {
  for (auto& [pid, peer] : peers_) {
    if (peer.fd >= 0) ::close(peer.fd);
    unmap_sleepers(peer.sleepers);
  }
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  if (std::atomic<uint32_t>* shared = shared_.load()) {
    unmap_sleepers(shared);
    ::unlink(sleepers_path_.c_str());
  }
}

std::string Doorbell::path_for(const std::string& directory, int pid) {
  return directory + "/bell-" + std::to_string(pid);
}

std::string Doorbell::sleepers_path_for(const std::string& directory, int pid) {
  return directory + "/bell-" + std::to_string(pid) + ".sleepers";
}

std::atomic<uint32_t>* Doorbell::map_sleepers(int fd) {
  void* word = ::mmap(nullptr, kSleepersFileSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (word == MAP_FAILED) return nullptr;
  return static_cast<std::atomic<uint32_t>*>(word);
}

void Doorbell::unmap_sleepers(std::atomic<uint32_t>* sleepers) {
  if (sleepers) ::munmap(static_cast<void*>(sleepers), kSleepersFileSize);
}

bool Doorbell::open(const std::string& directory, int pid) {
  if (fd_ >= 0 || directory.empty()) return fd_ >= 0;
  // The shared word first: a peer that finds the FIFO finds the word too.
  sleepers_path_ = sleepers_path_for(directory, pid);
  const int word_fd =
      ::open(sleepers_path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, S_IRUSR | S_IWUSR);
  std::atomic<uint32_t>* shared = nullptr;
  if (word_fd >= 0) {
    if (::ftruncate(word_fd, kSleepersFileSize) == 0) shared = map_sleepers(word_fd);
    ::close(word_fd);
  }
  if (shared) {
    shared_.store(shared, std::memory_order_release);
  } else {
    ::unlink(sleepers_path_.c_str());
  }
  path_ = path_for(directory, pid);
  ::unlink(path_.c_str());
  if (::mkfifo(path_.c_str(), 0600) != 0) return false;
  // Read-write, so the FIFO never reports end-of-file when no writer has it open.
  fd_ = ::open(path_.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) ::unlink(path_.c_str());
  return fd_ >= 0;
}

void Doorbell::prepare_sleep() noexcept {
  t_counted_in = &own_sleepers();
  // Sequentially consistent: ordered before the last look for messages that follows.
  t_counted_in->fetch_add(1, std::memory_order_seq_cst);
}

void Doorbell::cancel_sleep() noexcept {
  if (t_counted_in) t_counted_in->fetch_sub(1, std::memory_order_acq_rel);
  t_counted_in = nullptr;
}

bool Doorbell::sleep(std::chrono::microseconds timeout) {
  if (fd_ < 0) {
    std::this_thread::sleep_for(timeout);
    cancel_sleep();
    return false;
  }
  pollfd waiting{fd_, POLLIN, 0};
  // poll() has millisecond resolution; ppoll() takes the sleep as it is.
  const timespec limit{static_cast<time_t>(timeout.count() / 1000000),
                       static_cast<long>(timeout.count() % 1000000) * 1000};
  const int ready = ::ppoll(&waiting, 1, &limit, nullptr);
  cancel_sleep();
  if (ready > 0) {
    char drain[64];
    while (::read(fd_, drain, sizeof drain) > 0) {
    }
  }
  return ready > 0;
}

void Doorbell::ring_self() {
  // A thread that changes state during its own last look before sleeping needs no ring: it
  // checks that state after its look anyway.
  std::atomic<uint32_t>& sleepers = own_sleepers();
  const uint32_t calling = t_counted_in == &sleepers ? 1 : 0;
  if (fd_ < 0 || sleepers.load(std::memory_order_seq_cst) <= calling) return;
  const char byte = 1;
  [[maybe_unused]] const ssize_t written = ::write(fd_, &byte, 1);
}

void Doorbell::ring(const std::string& directory, int pid) {
  if (directory.empty() || pid <= 0) return;
  std::lock_guard lock(peers_mutex_);
  Peer& peer = peers_[pid];
  if (peer.fd < 0) {
    // Opened read-write: the FIFO then always has a reader, so a write after the peer died
    // cannot raise SIGPIPE.
    peer.fd = ::open(path_for(directory, pid).c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (peer.fd < 0) return;  // no FIFO (yet): it wakes by its own timer
    const int word_fd = ::open(sleepers_path_for(directory, pid).c_str(), O_RDWR | O_CLOEXEC);
    if (word_fd >= 0) {
      peer.sleepers = map_sleepers(word_fd);
      ::close(word_fd);
    }
  }
  // The message was sent before this point; the peer announces its sleep before it looks for
  // messages a last time. With a full fence between, either it sees the message or this sees it
  // about to sleep.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (peer.sleepers && peer.sleepers->load(std::memory_order_relaxed) == 0) return;
  const char byte = 1;
  // EAGAIN means the FIFO is full of rings already.
  [[maybe_unused]] const ssize_t written = ::write(peer.fd, &byte, 1);
}

void Doorbell::remove_files_of(const std::string& directory, int pid) {
  if (directory.empty() || pid <= 0) return;
  ::unlink(path_for(directory, pid).c_str());
  ::unlink(sleepers_path_for(directory, pid).c_str());
}

void Doorbell::forget(int pid) {
  std::lock_guard lock(peers_mutex_);
  auto it = peers_.find(pid);
  if (it == peers_.end()) return;
  if (it->second.fd >= 0) ::close(it->second.fd);
  unmap_sleepers(it->second.sleepers);
  peers_.erase(it);
}

}  // namespace fiber::bridge
