// The proof, both ways, that a joining job and the master it joins hold the same join token,
// made on the join-turn TCP connection before any MPI connect: refusing a job after an MPI
// connect is unsafe on Open MPI 4.1 (late messages on a freed communicator reach whichever
// communicator reuses its context id). The token never travels; each side sends an HMAC over a
// fresh nonce of each side:
//   master -> joiner  greeting  "FJT1", the master's nonce (32 bytes)
//   joiner -> master  answer    the joiner's nonce (32 bytes), HMAC(token, "joiner" nonces)
//   master -> joiner  proof     HMAC(token, "master" nonces)
//   master -> joiner  grant     'g', the MPI port's length (2 bytes, big-endian), the port,
//                               HMAC(token, "grant" nonces port), when the joiner's turn comes
// The labels keep one side's HMAC from standing for the other's, the nonces keep a recorded
// exchange from being replayed, and the grant's HMAC keeps a relay between the two from
// handing the joiner a port of its own. The master's MPI port travels only in the grant, so a
// rogue publish on the name service can at most send a joiner to a peer that cannot prove the
// token, which the joiner then refuses. Internal.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "fiber/errors.h"
#include "fiber/kubernetes/join_token.h"

namespace fiber::internal {

/// Bytes of each side's nonce.
inline constexpr size_t kJoinNonceBytes = 32;
/// The first byte of a grant, with or without a token ("g" alone without one).
inline constexpr char kJoinGrant = 'g';

/// A joining job refused the master it reached: it did not prove the join token (a rogue
/// peer, another job's master, or a master without the token). The job may look again.
class JoinRefused : public Error {
 public:
  explicit JoinRefused(const std::string& what) : Error(what) {}
};

/// The master's side, driven by the join turns' poll loop (it never blocks).
class MasterHandshake {
 public:
  explicit MasterHandshake(const JoinToken& token);

  /// What the master sends first.
  std::string greeting() const;

  enum class Step { kMore, kProven, kRefused };
  /// Takes bytes the joiner sent: kProven once its answer proves the token (send proof()
  /// then), kRefused when it does not or sends more than an answer, kMore until it is complete.
  Step take(std::string_view bytes);

  /// The master's HMAC, once the joiner proved the token.
  std::string proof() const;
  /// The turn's grant, carrying the master's MPI `port`.
  std::string grant(const std::string& port) const;

 private:
  const JoinToken* token_;
  std::string master_nonce_;
  std::string answer_;
};

/// The joining job's side, on a connected socket; each read waits until a deadline.
class JoinerHandshake {
 public:
  /// `address` names the master in messages.
  JoinerHandshake(const JoinToken& token, std::string address);

  /// Reads the greeting, answers it and checks the master's proof, all by `deadline`. Throws
  /// JoinRefused when the master's proof is wrong or it answers as a master without a token,
  /// fiber::Error when the connection closes or the deadline passes first.
  void prove(int fd, std::chrono::steady_clock::time_point deadline);

  /// Reads the rest of a grant (its first byte already read) by `deadline` and returns the MPI
  /// port it carries; throws JoinRefused when its HMAC is wrong, fiber::Error as prove() does.
  std::string read_grant(int fd, std::chrono::steady_clock::time_point deadline);

 private:
  const JoinToken* token_;
  std::string address_;
  std::string master_nonce_;
  std::string joiner_nonce_;
};

/// Reads exactly `size` bytes from `fd` by `deadline`; throws fiber::Error saying `what` was
/// being read from the master at `address` when the connection closes or the deadline passes.
std::string read_from_master(int fd, size_t size, std::chrono::steady_clock::time_point deadline,
                             const std::string& what, const std::string& address);

}  // namespace fiber::internal
