#include "fiber/kubernetes/join_handshake.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace fiber::internal {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kGreetingTag = "FJT1";
constexpr size_t kMacBytes = std::tuple_size_v<JoinMac>;
constexpr size_t kAnswerBytes = kJoinNonceBytes + kMacBytes;

std::string labelled(std::string_view label, const std::string& master_nonce,
                     const std::string& joiner_nonce, std::string_view tail = {}) {
  std::string message = "fibermpi join " + std::string(label) + " ";
  message += master_nonce;
  message += joiner_nonce;
  message += tail;
  return message;
}

std::string as_bytes(const JoinMac& mac) { return std::string(mac.begin(), mac.end()); }

const unsigned char* unsigned_bytes(const std::string& text, size_t at = 0) {
  return reinterpret_cast<const unsigned char*>(text.data() + at);
}

void send_all(int fd, const std::string& bytes, const std::string& address) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t done = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (done < 0 && errno == EINTR) continue;
    if (done <= 0) {
      throw Error("fibermpi: the join handshake with the master at " + address +
                  " failed: " + std::strerror(errno));
    }
    sent += static_cast<size_t>(done);
  }
}

}  // namespace

MasterHandshake::MasterHandshake(const JoinToken& token)
    : token_(&token), master_nonce_(random_bytes(kJoinNonceBytes)) {}

std::string MasterHandshake::greeting() const { return std::string(kGreetingTag) + master_nonce_; }

MasterHandshake::Step MasterHandshake::take(std::string_view bytes) {
  answer_ += bytes;
  if (answer_.size() < kAnswerBytes) return Step::kMore;
  if (answer_.size() > kAnswerBytes) return Step::kRefused;
  const std::string joiner_nonce = answer_.substr(0, kJoinNonceBytes);
  return token_->verifies(labelled("joiner", master_nonce_, joiner_nonce),
                          unsigned_bytes(answer_, kJoinNonceBytes))
             ? Step::kProven
             : Step::kRefused;
}

std::string MasterHandshake::proof() const {
  return as_bytes(
      token_->mac(labelled("master", master_nonce_, answer_.substr(0, kJoinNonceBytes))));
}

std::string MasterHandshake::grant(const std::string& port) const {
  const std::string joiner_nonce = answer_.substr(0, kJoinNonceBytes);
  std::string message(1, kJoinGrant);
  message += static_cast<char>((port.size() >> 8) & 0xff);
  message += static_cast<char>(port.size() & 0xff);
  message += port;
  message += as_bytes(token_->mac(labelled("grant", master_nonce_, joiner_nonce, port)));
  return message;
}

JoinerHandshake::JoinerHandshake(const JoinToken& token, std::string address)
    : token_(&token), address_(std::move(address)), joiner_nonce_(random_bytes(kJoinNonceBytes)) {}

void JoinerHandshake::prove(int fd, Clock::time_point deadline) {
  const std::string refused =
      "fibermpi: the master at " + address_ + " did not prove the join token; refusing to join it";
  // A master without a token sends nothing but its grant byte when the turn comes.
  const std::string tag = read_from_master(fd, 1, deadline, "the join handshake", address_);
  if (tag[0] != kGreetingTag[0]) throw JoinRefused(refused + " (it asks for no token)");
  const std::string greeting = tag + read_from_master(fd, kGreetingTag.size() - 1 + kJoinNonceBytes,
                                                      deadline, "the join handshake", address_);
  if (greeting.compare(0, kGreetingTag.size(), kGreetingTag) != 0)
    throw JoinRefused(refused + " (it does not speak the join handshake)");
  master_nonce_ = greeting.substr(kGreetingTag.size());
  send_all(fd,
           joiner_nonce_ + as_bytes(token_->mac(labelled("joiner", master_nonce_, joiner_nonce_))),
           address_);
  const std::string proof =
      read_from_master(fd, kMacBytes, deadline, "the master's proof of the join token", address_);
  if (!token_->verifies(labelled("master", master_nonce_, joiner_nonce_), unsigned_bytes(proof)))
    throw JoinRefused(refused);
}

std::string JoinerHandshake::read_grant(int fd, Clock::time_point deadline) {
  const std::string length = read_from_master(fd, 2, deadline, "the join grant", address_);
  const size_t size = (static_cast<size_t>(static_cast<unsigned char>(length[0])) << 8) |
                      static_cast<unsigned char>(length[1]);
  const std::string port = read_from_master(fd, size, deadline, "the join grant", address_);
  const std::string mac = read_from_master(fd, kMacBytes, deadline, "the join grant", address_);
  if (port.empty() || !token_->verifies(labelled("grant", master_nonce_, joiner_nonce_, port),
                                        unsigned_bytes(mac))) {
    throw JoinRefused("fibermpi: the master at " + address_ +
                      " did not prove the join token for the port it granted; refusing to join it");
  }
  return port;
}

std::string read_from_master(int fd, size_t size, Clock::time_point deadline,
                             const std::string& what, const std::string& address) {
  std::string bytes;
  bytes.reserve(size);
  while (bytes.size() < size) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      throw Error("fibermpi: the master at " + address + " did not complete " + what +
                  " in time; giving up on it");
    }
    pollfd wait{fd, POLLIN, 0};
    const int ready = ::poll(&wait, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno != EINTR)
      throw Error("fibermpi: waiting for " + what + " from the master at " + address + ": " +
                  std::strerror(errno));
    if (ready <= 0) continue;
    char chunk[512];
    const ssize_t got = ::recv(fd, chunk, std::min(sizeof(chunk), size - bytes.size()), 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      throw Error("fibermpi: the master at " + address +
                  " closed the join-turn connection during " + what);
    }
    bytes.append(chunk, static_cast<size_t>(got));
  }
  return bytes;
}

}  // namespace fiber::internal
