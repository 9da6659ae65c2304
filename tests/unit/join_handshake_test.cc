// The join handshake over real TCP sockets on the loopback: the same token proven both ways
// hands the joiner the master's port; another token, a peer that closes or stalls mid-handshake,
// a side with a token facing one without are each refused with a clear line, within the
// handshake's limit, and the turns go on for the others. Token files: what is refused, and why.
#include "fiber/kubernetes/join_handshake.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "fiber/base/log.h"
#include "fiber/errors.h"
#include "fiber/kubernetes/join_turns.h"

namespace fiber::internal {
namespace {

// The refusals checked below are warnings, which FIBER_QUIET (set for every test) would hide:
// cleared before the log sink first reads it.
[[maybe_unused]] const bool kWarningsShown = (::unsetenv("FIBER_QUIET"), true);

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class TokenFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("join_handshake_test." + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string file(const std::string& name, const std::string& contents) {
    const auto path = dir_ / name;
    std::ofstream(path, std::ios::binary) << contents;
    return path.string();
  }
  JoinToken token(const std::string& name, const std::string& contents) {
    return JoinToken::from_file(file(name, contents));
  }

  std::filesystem::path dir_;
};

std::string usage_error_of(const std::string& path) {
  try {
    JoinToken::from_file(path);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

TEST_F(TokenFiles, ABadTokenFileIsAUsageErrorNamingTheFileAndTheProblem) {
  const std::string empty = file("empty", "");
  EXPECT_EQ(usage_error_of(empty),
            "fibermpi: the join token file '" + empty + "' (FIBER_JOIN_TOKEN_FILE) is empty");
  EXPECT_EQ(usage_error_of(file("newline", "\n")).find("is empty") != std::string::npos, true);
  const std::string shorter = file("short", "abc\n");
  EXPECT_NE(usage_error_of(shorter).find("'" + shorter +
                                         "' (FIBER_JOIN_TOKEN_FILE) holds 3 bytes, "
                                         "fewer than the 16 a join token needs"),
            std::string::npos);
  const std::string missing = (dir_ / "missing").string();
  EXPECT_EQ(usage_error_of(missing), "fibermpi: the join token file '" + missing +
                                         "' (FIBER_JOIN_TOKEN_FILE) cannot be read: No such file "
                                         "or directory");
  EXPECT_NE(usage_error_of(dir_.string()).find("is a directory"), std::string::npos);
  EXPECT_NE(usage_error_of(file("big", std::string(5000, 'x'))).find("more than 4096 bytes"),
            std::string::npos);
}

TEST_F(TokenFiles, ATrailingNewlineIsNoPartOfTheToken) {
  const JoinToken bare = token("bare", "0123456789abcdef0123");
  const JoinToken echoed = token("echoed", "0123456789abcdef0123\n");
  const JoinToken other = token("other", "0123456789abcdef0124");
  EXPECT_EQ(bare.mac("m"), echoed.mac("m"));
  EXPECT_NE(bare.mac("m"), other.mac("m"));
  EXPECT_TRUE(bare.verifies("m", echoed.mac("m").data()));
  EXPECT_FALSE(bare.verifies("m", other.mac("m").data()));
}

TEST(JoinUri, AJoinAddressNamesTheTurns) {
  EXPECT_EQ(join_uri("10.0.0.5:4000"), "fiber-join://10.0.0.5:4000");
  EXPECT_TRUE(is_join_uri("fiber-join://[fd00::5]:4000"));
  EXPECT_FALSE(is_join_uri("2634219521.0:1398546434"));  // an Open MPI 4.1 port
  EXPECT_EQ(turn_address_of("fiber-join://[fd00::5]:4000"), "[fd00::5]:4000");
  EXPECT_THROW(turn_address_of("10.0.0.5:4000"), Error);
}

// Runs `body` and returns what the runtime logged from its start until `until` shows (or 5 s
// pass). The turns' thread logs on its own time, so the lines are read from the process's log
// file, which keeps every one of them: stderr captured between polls loses what is written
// between one capture and the next.
template <typename Body>
std::string log_lines_during(const std::filesystem::path& log_dir, Body body,
                             const std::string& until) {
  const auto read_all = [&] {
    std::string text;
    if (!std::filesystem::exists(log_dir)) return text;
    for (const auto& entry : std::filesystem::directory_iterator(log_dir)) {
      std::ifstream in(entry.path(), std::ios::binary);
      text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    return text;
  };
  const size_t before = read_all().size();
  body();
  std::string text;
  const auto give_up = Clock::now() + 5s;
  do {
    text = read_all().substr(before);
    if (text.find(until) != std::string::npos) break;
    std::this_thread::sleep_for(20ms);
  } while (Clock::now() < give_up);
  return text;
}

class Handshake : public TokenFiles {
 protected:
  void SetUp() override {
    TokenFiles::SetUp();
    configure_log(LogLevel::kWarning, (dir_ / "log").string());
  }
  void TearDown() override {
    configure_log(LogLevel::kWarning, "");
    TokenFiles::TearDown();
  }
  template <typename Body>
  std::string logged_during(Body body, const std::string& until) {
    return log_lines_during(dir_ / "log", body, until);
  }
  JoinGuard guard(const JoinToken& token, std::chrono::milliseconds limit = kJoinHandshakeLimit) {
    JoinGuard made;
    made.token = token;
    made.port = "port-of-the-master";
    made.handshake_limit = limit;
    return made;
  }
};

TEST_F(Handshake, TheSameTokenIsProvenBothWaysAndTheGrantCarriesThePort) {
  const JoinToken token = this->token("t", "the-job-token-0123456789");
  const JoinToken same = this->token("t2", "the-job-token-0123456789\n");
  JoinTurns turns("127.0.0.1", 60s, {}, {}, {}, guard(token));
  JoinTurn first = wait_for_join_turn(turns.address(), 10s, &same);
  EXPECT_EQ(first.port, "port-of-the-master");
  ::close(first.fd);
  JoinTurn second = wait_for_join_turn(turns.address(), 10s, &same);  // the turn passed on
  EXPECT_EQ(second.port, "port-of-the-master");
  ::close(second.fd);
}

TEST_F(Handshake, AnotherTokenIsRefusedOnBothSidesAndTheTurnsGoOn) {
  const JoinToken token = this->token("t", "the-job-token-0123456789");
  const JoinToken wrong = this->token("w", "another-job-token-98765");
  JoinTurns turns("127.0.0.1", 60s, {}, {}, {}, guard(token));
  std::string joiner;
  const std::string master = logged_during(
      [&] {
        try {
          wait_for_join_turn(turns.address(), 10s, &wrong);
        } catch (const JoinRefused& e) {
          joiner = e.what();
        }
      },
      "refused a joining job");
  EXPECT_EQ(joiner, "fibermpi: the master at " + turns.address() +
                        " did not prove the join token; refusing to join it");
  EXPECT_NE(master.find("warning: refused a joining job at 127.0.0.1:"), std::string::npos)
      << master;
  EXPECT_NE(master.find(": it did not prove the job's join token"), std::string::npos) << master;
  JoinTurn next = wait_for_join_turn(turns.address(), 10s, &token);
  EXPECT_EQ(next.port, "port-of-the-master");
  ::close(next.fd);
}

int raw_connect(const std::string& address) {
  const auto [host, port] = split_join_turn_address(address);
  sockaddr_in where{};
  where.sin_family = AF_INET;
  where.sin_port = htons(static_cast<uint16_t>(std::stoi(port)));
  ::inet_pton(AF_INET, host.c_str(), &where.sin_addr);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&where), sizeof(where)), 0);
  return fd;
}

TEST_F(Handshake, AJoinerThatClosesOrStallsMidHandshakeIsDroppedAndOthersStillGetTurns) {
  const JoinToken token = this->token("t", "the-job-token-0123456789");
  JoinTurns turns("127.0.0.1", 60s, {}, {}, {}, guard(token, 500ms));
  const std::string closed = logged_during(
      [&] {
        const int fd = raw_connect(turns.address());
        char greeting[36];
        EXPECT_EQ(::recv(fd, greeting, sizeof(greeting), MSG_WAITALL), 36);
        ::close(fd);
      },
      "before proving");
  EXPECT_NE(closed.find("it closed the connection before proving the job's join token"),
            std::string::npos)
      << closed;
  int staller = -1;
  const auto start = Clock::now();
  const std::string stalled = logged_during(
      [&] {
        staller = raw_connect(turns.address());
        // While it stalls, a joiner with the token gets its turn.
        JoinTurn other = wait_for_join_turn(turns.address(), 10s, &token);
        EXPECT_EQ(other.port, "port-of-the-master");
        ::close(other.fd);
      },
      "stalled");
  EXPECT_NE(stalled.find("in time (the handshake stalled)"), std::string::npos) << stalled;
  EXPECT_LT(Clock::now() - start, 3s);
  char byte;
  ssize_t got = 0;
  while ((got = ::recv(staller, &byte, 1, 0)) > 0) {
  }
  EXPECT_EQ(got, 0);  // the master closed it
  ::close(staller);
}

// A listener that takes one connection and sends `what`, then stays silent.
class SilentMaster {
 public:
  explicit SilentMaster(std::string what) : what_(std::move(what)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in where{};
    where.sin_family = AF_INET;
    where.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(where);
    ::bind(listener_, reinterpret_cast<sockaddr*>(&where), length);
    ::listen(listener_, 4);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&where), &length);
    address_ = "127.0.0.1:" + std::to_string(ntohs(where.sin_port));
    thread_ = std::thread([this] {
      peer_ = ::accept(listener_, nullptr, nullptr);
      (void)!::send(peer_, what_.data(), what_.size(), MSG_NOSIGNAL);
    });
  }
  ~SilentMaster() {
    thread_.join();
    ::close(peer_);
    ::close(listener_);
  }
  const std::string& address() const { return address_; }

 private:
  std::string what_;
  int listener_ = -1;
  int peer_ = -1;
  std::string address_;
  std::thread thread_;
};

TEST_F(Handshake, AMasterThatStallsMidHandshakeIsAnErrorWithinTheLimit) {
  const JoinToken token = this->token("t", "the-job-token-0123456789");
  SilentMaster stalls("FJT1half-a-nonce");
  const auto start = Clock::now();
  try {
    wait_for_join_turn(stalls.address(), 30s, &token, 500ms);
    ADD_FAILURE() << "a stalled handshake was taken";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "fibermpi: the master at " + stalls.address() +
                                         " did not complete the join handshake in time; giving up "
                                         "on it");
  }
  EXPECT_LT(Clock::now() - start, 3s);
}

TEST_F(Handshake, ATokenOnOneSideOnlyIsRefusedClearly) {
  const JoinToken token = this->token("t", "the-job-token-0123456789");
  {
    JoinTurns guarded("127.0.0.1", 60s, {}, {}, {}, guard(token));
    try {
      wait_for_join_turn(guarded.address(), 10s);
      ADD_FAILURE() << "a joiner without a token was let in";
    } catch (const UsageError& e) {
      EXPECT_NE(
          std::string(e.what()).find("asks for a join token, and FIBER_JOIN_TOKEN_FILE is not "
                                     "set here"),
          std::string::npos)
          << e.what();
    }
  }
  JoinTurns open("127.0.0.1", 60s);
  try {
    wait_for_join_turn(open.address(), 10s, &token);
    ADD_FAILURE() << "a master without a token was joined";
  } catch (const JoinRefused& e) {
    EXPECT_EQ(std::string(e.what()), "fibermpi: the master at " + open.address() +
                                         " did not prove the join token; refusing to join it (it "
                                         "asks for no token)");
  }
}

TEST(JoinTurns, AConnectToAnAddressThatNeverAnswersEndsWithinTheLimit) {
  // 192.0.2.0/24 is TEST-NET-1: routed nowhere, a SYN there is never answered (or refused at
  // once where there is no route at all).
  const auto start = Clock::now();
  EXPECT_THROW(wait_for_join_turn("192.0.2.1:4000", 2s), Error);
  EXPECT_LT(Clock::now() - start, 4s);
}

}  // namespace
}  // namespace fiber::internal
