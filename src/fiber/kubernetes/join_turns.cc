#include "fiber/kubernetes/join_turns.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "fiber/base/log.h"
#include "fiber/errors.h"
#include "fiber/kubernetes/join_handshake.h"

namespace fiber::internal {
namespace {

using Clock = std::chrono::steady_clock;

std::string system_error(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

JoinTurns::JoinTurns(const std::string& host, std::chrono::seconds turn_limit,
                     std::function<void()> on_begin, std::function<void()> on_end,
                     std::function<void(const std::string&, int)> on_pod_gone, JoinGuard guard)
    : guard_(std::move(guard)),
      turn_limit_(turn_limit),
      on_begin_(std::move(on_begin)),
      on_end_(std::move(on_end)),
      on_pod_gone_(std::move(on_pod_gone)) {
  // An IPv4 or IPv6 address (a pod's status.podIP is either), or none: every address of both
  // families, where the machine has IPv6 (a dual-stack socket), else every IPv4 one.
  sockaddr_storage where{};
  socklen_t length = 0;
  const std::string bare = host.size() > 2 && host.front() == '[' && host.back() == ']'
                               ? host.substr(1, host.size() - 2)
                               : host;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&where);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&where);
  if (bare.empty()) {
    listener_ = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener_ >= 0) {
      const int off = 0;
      ::setsockopt(listener_, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
      v6->sin6_family = AF_INET6;
      v6->sin6_addr = in6addr_any;
      length = sizeof(sockaddr_in6);
    } else {
      v4->sin_family = AF_INET;
      v4->sin_addr.s_addr = htonl(INADDR_ANY);
      length = sizeof(sockaddr_in);
    }
  } else if (::inet_pton(AF_INET, bare.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    length = sizeof(sockaddr_in);
  } else if (::inet_pton(AF_INET6, bare.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    length = sizeof(sockaddr_in6);
  } else {
    throw Error("fibermpi: '" + host +
                "' is not an IPv4 or IPv6 address to hand out join turns at");
  }
  if (listener_ < 0) listener_ = ::socket(where.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener_ < 0) throw Error(system_error("fibermpi: cannot open the join-turn socket"));
  if (::bind(listener_, reinterpret_cast<sockaddr*>(&where), length) != 0 ||
      ::listen(listener_, 128) != 0 ||
      ::getsockname(listener_, reinterpret_cast<sockaddr*>(&where), &length) != 0) {
    const std::string why =
        system_error("fibermpi: cannot listen for join turns at '" + host + "'");
    ::close(listener_);
    throw Error(why);
  }
  if (::pipe2(wake_, O_CLOEXEC) != 0) {
    ::close(listener_);
    throw Error(system_error("fibermpi: cannot make the join-turn pipe"));
  }
  const bool ipv6 = where.ss_family == AF_INET6;
  const int port = ntohs(ipv6 ? v6->sin6_port : v4->sin_port);
  port_ = port;
  char text[INET6_ADDRSTRLEN] = {};
  if (bare.empty()) {
    std::snprintf(text, sizeof(text), "%s", ipv6 ? "::" : "0.0.0.0");
  } else {
    ::inet_ntop(where.ss_family, ipv6 ? static_cast<void*>(&v6->sin6_addr) : &v4->sin_addr, text,
                sizeof(text));
  }
  address_ = join_turn_address(text, port);
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

namespace {

// What a joined pod's rank 0 says to pass its turn on: "j<name>[/<uid>] <pid>\n". The name is
// a DNS-1123 subdomain (253 characters at most), the uid lower-case letters, digits and dashes.
constexpr size_t kMaxNotice = 1 + 253 + 1 + 64 + 1 + 10 + 1;

bool is_subdomain(const std::string& name, size_t most) {
  const auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (name.empty() || name.size() > most || !alnum(name.front()) || !alnum(name.back()))
    return false;
  return std::all_of(name.begin(), name.end(),
                     [&](char c) { return alnum(c) || c == '-' || c == '.'; });
}

// "NAME" or "NAME/UID", as fiberjob_pod_identity() makes it.
bool is_pod_identity(const std::string& identity) {
  const auto slash = identity.find('/');
  if (slash == std::string::npos) return is_subdomain(identity, 253);
  return is_subdomain(identity.substr(0, slash), 253) &&
         is_subdomain(identity.substr(slash + 1), 64);
}

struct JoinNotice {
  std::string pod;
  int pid = 0;
};

std::optional<JoinNotice> parse_notice(const std::string& line) {
  const auto space = line.rfind(' ');
  if (line.size() < 4 || line.front() != 'j' || space == std::string::npos) return std::nullopt;
  const std::string pod = line.substr(1, space - 1);
  const std::string pid = line.substr(space + 1);
  if (!is_pod_identity(pod) || pid.empty() || pid.size() > 10 ||
      !std::all_of(pid.begin(), pid.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  const long value = std::stol(pid);
  if (value < 1 || value > 0x7fffffff) return std::nullopt;
  return JoinNotice{pod, static_cast<int>(value)};
}

// A watched connection of a pod that vanished without a word (a node lost, a partition) is
// closed by keepalive after about 90 s instead of being kept for the launcher's life.
void keep_alive(int fd) {
  const int on = 1, idle = 30, interval = 10, count = 6;
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
}

// The text of the peer address of `fd`, for log lines ("10.1.2.3:4711", "[fd00::5]:4711").
std::string peer_of(int fd) {
  sockaddr_storage peer{};
  socklen_t length = sizeof(peer);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) != 0)
    return "an unknown address";
  char text[INET6_ADDRSTRLEN] = {};
  if (peer.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&peer);
    ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
    return join_turn_address(text, ntohs(v6->sin6_port));
  }
  const auto* v4 = reinterpret_cast<const sockaddr_in*>(&peer);
  ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text));
  return join_turn_address(text, ntohs(v4->sin_port));
}

bool send_whole(int fd, const std::string& bytes) {
  return ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}

void refuse(int fd, const std::string& peer, const char* why) {
  FIBER_LOG_WARNING("refused a joining job at %s: %s", peer.c_str(), why);
  ::close(fd);
}

// A connection that waits for its turn, with what its handshake agreed (with a token).
struct Waiting {
  int fd = -1;
  std::optional<MasterHandshake> handshake;
};

// A connection that has not proven the token yet.
struct Proving {
  MasterHandshake handshake;
  Clock::time_point deadline;
  std::string peer;
};

}  // namespace

void JoinTurns::loop() {
  std::deque<Waiting> waiting;
  std::map<int, Proving> proving;  // connections still in the join handshake, by descriptor
  int holder = -1;
  std::string holder_said;  // what the holder sent so far: "j<pod name>\n" once joined
  Clock::time_point granted{};
  std::map<int, JoinNotice> watched;  // connections of joined pods, by descriptor
  auto end_turn = [&] {
    holder = -1;
    holder_said.clear();
    if (on_end_) on_end_();
  };
  // A new connection: with a token it must prove it first; without one it waits at once.
  auto take = [&](int client) {
    if (!guard_.token) {
      waiting.push_back(Waiting{client, std::nullopt});
      return;
    }
    MasterHandshake handshake(*guard_.token);
    if (!send_whole(client, handshake.greeting())) {
      ::close(client);
      return;
    }
    proving.emplace(client, Proving{std::move(handshake), Clock::now() + guard_.handshake_limit,
                                    peer_of(client)});
  };
  // What a proving connection sent: its proof, then it waits (the master proves the token back).
  auto hear = [&](int fd) {
    Proving& state = proving.at(fd);
    char chunk[128];
    const ssize_t got = ::recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (got <= 0) {
      refuse(fd, state.peer, "it closed the connection before proving the job's join token");
    } else {
      switch (state.handshake.take(std::string_view(chunk, static_cast<size_t>(got)))) {
        case MasterHandshake::Step::kMore:
          return;
        case MasterHandshake::Step::kRefused:
          // The master's own proof all the same, so that a job given another token says so
          // too; it covers this master's nonce alone, so it proves nothing anywhere else.
          (void)send_whole(fd, state.handshake.proof());
          refuse(fd, state.peer, "it did not prove the job's join token");
          break;
        case MasterHandshake::Step::kProven:
          if (send_whole(fd, state.handshake.proof())) {
            waiting.push_back(Waiting{fd, std::move(state.handshake)});
          } else {
            ::close(fd);
          }
          break;
      }
    }
    proving.erase(fd);
  };
  for (;;) {
    if (holder < 0) {
      while (!waiting.empty() && holder < 0) {
        Waiting next = std::move(waiting.front());
        waiting.pop_front();
        const std::string grant =
            next.handshake ? next.handshake->grant(guard_.port) : std::string(1, kJoinGrant);
        if (on_begin_) on_begin_();
        if (send_whole(next.fd, grant)) {
          holder = next.fd;
          granted = Clock::now();
        } else {
          if (on_end_) on_end_();
          ::close(next.fd);  // it left while it waited
        }
      }
    }
    std::vector<pollfd> fds = {{wake_[0], POLLIN, 0}, {listener_, POLLIN, 0}};
    if (holder >= 0) fds.push_back({holder, POLLIN, 0});
    const size_t first_proving = fds.size();
    for (const auto& [fd, state] : proving) fds.push_back({fd, POLLIN, 0});
    const size_t first_watched = fds.size();
    for (const auto& [fd, pod] : watched) fds.push_back({fd, POLLIN, 0});
    const int timeout_ms = holder >= 0 || !proving.empty() ? 100 : -1;
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
      FIBER_LOG_WARNING("join turns stop: %s", std::strerror(errno));
      break;
    }
    if (fds[0].revents != 0) break;
    if (fds[1].revents & POLLIN) {
      const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0) {
        take(client);
      } else if (errno == EMFILE || errno == ENFILE) {
        // Out of descriptors: try again shortly instead of spinning on the ready listener.
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    for (size_t i = first_proving; i < first_watched; ++i)
      if (fds[i].revents != 0) hear(fds[i].fd);
    // A peer that stalls mid-handshake holds no turn and no thread: it is dropped at its deadline.
    const auto now = Clock::now();
    for (auto it = proving.begin(); it != proving.end();) {
      if (now < it->second.deadline) {
        ++it;
        continue;
      }
      refuse(it->first, it->second.peer,
             "it did not prove the job's join token in time (the handshake stalled)");
      it = proving.erase(it);
    }
    // A joined pod's connection ends with the pod (its processes die, the kernel closes it):
    // the pod is gone, long before a heartbeat would say so.
    for (size_t i = first_watched; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      char scratch[256];
      const ssize_t got = ::recv(fds[i].fd, scratch, sizeof(scratch), MSG_DONTWAIT);
      if (got > 0 || (got < 0 && (errno == EAGAIN || errno == EINTR))) continue;  // chatter
      const JoinNotice notice = watched[fds[i].fd];
      ::close(fds[i].fd);
      watched.erase(fds[i].fd);
      if (on_pod_gone_) on_pod_gone_(notice.pod, notice.pid);
    }
    // The holder gives its turn back by saying it joined ("j<pod name>\n": its connection is
    // then watched), by closing the socket (or dying, which closes it too); a holder silent past
    // the limit (its pod vanished without a reset) loses it.
    if (holder >= 0 && fds.size() > 2 && fds[2].revents != 0) {
      char chunk[128];
      const ssize_t got = ::recv(holder, chunk, sizeof(chunk), MSG_DONTWAIT);
      if (got > 0) {
        holder_said.append(chunk, static_cast<size_t>(got));
        const auto newline = holder_said.find('\n');
        if (newline != std::string::npos) {
          if (const auto notice = parse_notice(holder_said.substr(0, newline))) {
            keep_alive(holder);
            watched[holder] = *notice;
          } else {
            FIBER_LOG_WARNING(
                "a joining pod sent a malformed join notice; its "
                "connection is closed");
            ::close(holder);
          }
          end_turn();
        } else if (holder_said.size() > kMaxNotice) {
          FIBER_LOG_WARNING(
              "a joining pod sent a join notice of more than %zu "
              "bytes; its connection is closed",
              kMaxNotice);
          ::close(holder);
          end_turn();
        }
      } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        ::close(holder);
        end_turn();
      }
    }
    if (holder >= 0 && Clock::now() - granted > turn_limit_) {
      ::close(holder);
      end_turn();
    }
  }
  if (holder >= 0) {
    ::close(holder);
    if (on_end_) on_end_();
  }
  for (const Waiting& each : waiting) ::close(each.fd);
  for (const auto& [fd, state] : proving) ::close(fd);
  for (const auto& [fd, pod] : watched) ::close(fd);
}

bool hand_back_join_turn(int turn, const std::string& pod, int pid) {
  const std::string notice = "j" + pod + " " + std::to_string(pid) + "\n";
  if (!parse_notice(notice.substr(0, notice.size() - 1)) ||
      ::send(turn, notice.data(), notice.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(notice.size())) {
    ::close(turn);  // the turn passes on all the same; the pod is then watched by heartbeats
    return false;
  }
  // Kept open for the life of this process, on purpose: its end tells the launcher this process
  // is gone. Close-on-exec, so children do not hold it.
  return true;
}

std::string join_turn_address(const std::string& host, int port) {
  const bool ipv6 = host.find(':') != std::string::npos && host.front() != '[';
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::pair<std::string, std::string> split_join_turn_address(const std::string& address) {
  const auto bad = [&](const char* why) {
    return Error("fibermpi: bad join-turn address '" + address + "': " + why);
  };
  std::string host, port;
  if (!address.empty() && address.front() == '[') {
    const auto close = address.find(']');
    if (close == std::string::npos) throw bad("an IPv6 address in [ ] has no ]");
    if (close + 1 >= address.size() || address[close + 1] != ':') throw bad("no :port after ]");
    host = address.substr(1, close - 1);
    port = address.substr(close + 2);
  } else {
    const auto colon = address.rfind(':');
    if (colon == std::string::npos) throw bad("no :port");
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (host.find(':') != std::string::npos) throw bad("an IPv6 address must be in [ ]");
  }
  if (host.empty()) throw bad("no host");
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      std::stoi(port) < 1 || std::stoi(port) > 65535) {
    throw bad("the port is not a number from 1 to 65535");
  }
  return {host, port};
}

namespace {

// Connects to one of the addresses `host` resolves to, each attempt ending by `give_up` (a
// master behind a dropped SYN would otherwise hold the joiner for the kernel's ~2 minutes).
int connect_by(const std::string& host, const std::string& port, const std::string& address,
               Clock::time_point give_up) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0 || !found)
    throw Error("fibermpi: cannot resolve the master's join-turn address " + address);
  // Every address the name has, in the resolver's order (a dual-stack name has both families).
  int fd = -1;
  int last_errno = ETIMEDOUT;
  for (const addrinfo* each = found; each != nullptr && fd < 0; each = each->ai_next) {
    fd = ::socket(each->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    int error = 0;
    if (::connect(fd, each->ai_addr, each->ai_addrlen) != 0) {
      error = errno;
      if (error == EINPROGRESS) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(give_up - Clock::now()).count();
        pollfd wait{fd, POLLOUT, 0};
        int ready = 0;
        do {
          ready = ::poll(&wait, 1, static_cast<int>(std::max<long long>(left, 0)));
        } while (ready < 0 && errno == EINTR);
        socklen_t length = sizeof(error);
        if (ready <= 0) {
          error = ETIMEDOUT;
        } else if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) {
          error = errno;
        }
      }
    }
    if (error != 0) {
      last_errno = error;
      ::close(fd);
      fd = -1;
      continue;
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  }
  ::freeaddrinfo(found);
  if (fd < 0) {
    errno = last_errno;
    throw Error(system_error("fibermpi: cannot reach the master at " + address));
  }
  return fd;
}

}  // namespace

JoinTurn wait_for_join_turn(const std::string& address, std::chrono::seconds limit,
                            const JoinToken* token, std::chrono::milliseconds handshake_limit) {
  const auto [host, port] = split_join_turn_address(address);
  const auto give_up = Clock::now() + limit;
  JoinTurn turn;
  turn.fd = connect_by(host, port, address, give_up);
  try {
    std::optional<JoinerHandshake> handshake;
    if (token) {
      handshake.emplace(*token, address);
      handshake->prove(turn.fd, std::min(give_up, Clock::now() + handshake_limit));
    }
    const std::string grant = read_from_master(turn.fd, 1, give_up, "the turn to join", address);
    if (grant[0] != kJoinGrant && !token) {
      throw UsageError("fibermpi: the master at " + address +
                       " asks for a join token, and FIBER_JOIN_TOKEN_FILE is not set here: set it "
                       "to the file holding the master's token");
    }
    if (grant[0] != kJoinGrant) {
      throw JoinRefused("fibermpi: the master at " + address +
                        " sent no grant after the join handshake; refusing to join it");
    }
    if (handshake)
      turn.port = handshake->read_grant(turn.fd, std::min(give_up, Clock::now() + handshake_limit));
  } catch (const Error& e) {
    ::close(turn.fd);
    // A wait that ran out is the turn not coming, not the master misbehaving.
    if (Clock::now() >= give_up && dynamic_cast<const JoinRefused*>(&e) == nullptr) {
      throw Error("fibermpi: no turn to join the master at " + address + " within " +
                  std::to_string(limit.count()) + " s");
    }
    throw;
  }
  return turn;
}

bool is_join_uri(const std::string& address) { return address.starts_with(kJoinUriScheme); }

std::string join_uri(const std::string& turn_address) {
  return std::string(kJoinUriScheme) + turn_address;
}

std::string turn_address_of(const std::string& uri) {
  if (!is_join_uri(uri)) {
    throw Error("fibermpi: '" + uri + "' is no join address (" + std::string(kJoinUriScheme) +
                "host:port)");
  }
  return uri.substr(kJoinUriScheme.size());
}

}  // namespace fiber::internal
