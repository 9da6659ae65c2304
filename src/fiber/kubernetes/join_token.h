// The secret a job's processes prove to each other before one joins another (join turns): read
// from the file FIBER_JOIN_TOKEN_FILE names (in a FiberJob, the job's Secret mounted into its
// pods), used only as an HMAC-SHA256 key, never sent. Internal.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace fiber::internal {

/// What an HMAC-SHA256 of the token is: 32 bytes.
using JoinMac = std::array<unsigned char, 32>;

class JoinToken {
 public:
  /// The fewest and the most bytes a token file may hold (a trailing newline not counted): fewer
  /// is too weak to be a secret; more is not a token file (a wrong path).
  static constexpr size_t kMinBytes = 16;
  static constexpr size_t kMaxBytes = 4096;

  /// Reads the token from `path`. Throws fiber::UsageError naming the file and what is wrong:
  /// unreadable, a directory, empty, shorter than kMinBytes or longer than kMaxBytes.
  static JoinToken from_file(const std::string& path);
  /// The token of the file FIBER_JOIN_TOKEN_FILE names, or none when it is unset. Set but empty,
  /// or naming a bad file: fiber::UsageError.
  static std::optional<JoinToken> from_environment();

  /// HMAC-SHA256 of `message` under the token.
  JoinMac mac(std::string_view message) const;
  /// Whether `mac` is the token's HMAC of `message` (compared in constant time).
  bool verifies(std::string_view message, const unsigned char* mac) const;
  /// The file the token was read from, for messages.
  const std::string& file() const noexcept { return file_; }

 private:
  JoinToken(std::string key, std::string file) : key_(std::move(key)), file_(std::move(file)) {}
  std::string key_;
  std::string file_;
};

/// `bytes` bytes from the operating system's random source (OpenSSL's RAND_bytes); throws
/// fiber::Error when it has none to give.
std::string random_bytes(size_t bytes);

/// One warning line on stderr (unless FIBER_QUIET is set) that joining at `address` is open to
/// any process that reaches it, because FIBER_JOIN_TOKEN_FILE is not set; `side` says who warns
/// ("this master", "this joining job").
void warn_join_without_token(const std::string& side, const std::string& address);

}  // namespace fiber::internal
