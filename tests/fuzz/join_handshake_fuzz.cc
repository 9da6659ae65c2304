// libFuzzer target: the join handshake, the first bytes any pod that reaches a launcher's turns
// port sends, and those a joining job reads from whoever answers at a published address. The
// first byte picks the side: the master taking a joiner's answer (in two pieces, cut where the
// second byte says), or the joiner reading a greeting and proof, or a grant, from a socket. The
// property: no crash or sanitizer report, nothing but a refusal (JoinRefused or fiber::Error)
// for bad bytes, and never a proof or a grant accepted from bytes that do not hold the token.
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>

#include "fiber/errors.h"
#include "fiber/kubernetes/join_handshake.h"

namespace {

using fiber::internal::JoinerHandshake;
using fiber::internal::JoinToken;
using fiber::internal::MasterHandshake;

const JoinToken& token() {
  static const JoinToken loaded = [] {
    const std::string path = "/tmp/fibermpi-fuzz-join-token-" + std::to_string(::getpid());
    std::ofstream(path) << "0123456789abcdef0123456789abcdef";
    JoinToken read = JoinToken::from_file(path);
    ::unlink(path.c_str());
    return read;
  }();
  return loaded;
}

void master_side(std::string_view bytes, size_t cut) {
  MasterHandshake master(token());
  (void)master.greeting();
  cut = std::min(cut, bytes.size());
  auto step = master.take(bytes.substr(0, cut));
  if (step == MasterHandshake::Step::kMore) step = master.take(bytes.substr(cut));
  // The answer's HMAC covers the master's fresh nonce: no input can know it.
  if (step == MasterHandshake::Step::kProven) std::abort();
}

/// Runs `read` on a socket whose peer sent `bytes` and closed.
template <class Read>
void joiner_reads(std::string_view bytes, Read read) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) std::abort();
  // What fits in the socket's buffer: the inputs are short.
  if (!bytes.empty() && ::write(fds[1], bytes.data(), bytes.size()) < 0) std::abort();
  ::shutdown(fds[1], SHUT_WR);
  try {
    read(fds[0]);
    std::abort();  // accepted: bytes that do not hold the token proved it
  } catch (const fiber::Error&) {
    // JoinRefused, or the connection closed before the message was whole.
  }
  ::close(fds[0]);
  ::close(fds[1]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data + 2), size - 2);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  switch (data[0] % 3) {
    case 0:
      master_side(bytes, data[1]);
      break;
    case 1:
      joiner_reads(bytes, [&](int fd) { JoinerHandshake(token(), "fuzz").prove(fd, deadline); });
      break;
    default:
      joiner_reads(
          bytes, [&](int fd) { (void)JoinerHandshake(token(), "fuzz").read_grant(fd, deadline); });
      break;
  }
  return 0;
}
