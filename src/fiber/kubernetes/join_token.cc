#include "fiber/kubernetes/join_token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "fiber/base/log.h"
#include "fiber/errors.h"

namespace fiber::internal {

JoinToken JoinToken::from_file(const std::string& path) {
  const auto bad = [&](const std::string& why) {
    return UsageError("fibermpi: the join token file '" + path + "' (FIBER_JOIN_TOKEN_FILE) " +
                      why);
  };
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    throw bad(std::string("cannot be read: ") + std::strerror(errno));
  if (S_ISDIR(info.st_mode)) throw bad("is a directory, not a file holding the token");
  // A file larger than any token is refused before it is read (a wrong path: a log, /dev/zero).
  if (S_ISREG(info.st_mode) && info.st_size > static_cast<off_t>(kMaxBytes + 2))
    throw bad("holds more than " + std::to_string(kMaxBytes) + " bytes: it is not a token");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw bad(std::string("cannot be read: ") + std::strerror(errno));
  std::string key;
  key.resize(kMaxBytes + 3);
  in.read(key.data(), static_cast<std::streamsize>(key.size()));
  if (in.bad()) throw bad("cannot be read");
  key.resize(static_cast<size_t>(in.gcount()));
  // `echo SECRET > file` and `openssl rand -hex 32 > file` end the token with a newline.
  if (!key.empty() && key.back() == '\n') key.pop_back();
  if (!key.empty() && key.back() == '\r') key.pop_back();
  if (key.empty()) throw bad("is empty");
  if (key.size() > kMaxBytes)
    throw bad("holds more than " + std::to_string(kMaxBytes) + " bytes: it is not a token");
  if (key.size() < kMinBytes) {
    throw bad("holds " + std::to_string(key.size()) + " bytes, fewer than the " +
              std::to_string(kMinBytes) +
              " a join token needs (make one with `openssl rand -hex 32 > FILE`)");
  }
  return JoinToken(std::move(key), path);
}

std::optional<JoinToken> JoinToken::from_environment() {
  const char* path = std::getenv("FIBER_JOIN_TOKEN_FILE");
  if (path == nullptr) return std::nullopt;
  if (*path == '\0')
    throw UsageError("fibermpi: FIBER_JOIN_TOKEN_FILE is set but empty: name the join token file");
  return from_file(path);
}

JoinMac JoinToken::mac(std::string_view message) const {
  JoinMac out{};
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), out.data(),
           &length) == nullptr ||
      length != out.size()) {
    throw Error("fibermpi: OpenSSL could not compute an HMAC-SHA256 of the join token");
  }
  return out;
}

bool JoinToken::verifies(std::string_view message, const unsigned char* mac) const {
  const JoinMac expected = this->mac(message);
  return CRYPTO_memcmp(expected.data(), mac, expected.size()) == 0;
}

std::string random_bytes(size_t bytes) {
  std::string out(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(bytes)) != 1)
    throw Error("fibermpi: OpenSSL's random source gave no bytes for a join nonce");
  return out;
}

void warn_join_without_token(const std::string& side, const std::string& address) {
  if (std::getenv("FIBER_QUIET")) return;
  FIBER_LOG_WARNING(
      "FIBER_JOIN_TOKEN_FILE is not set: %s joins at %s without proving a join "
      "token, so any process that reaches it can join (set it on the master and the "
      "joining jobs, or FIBER_QUIET=1 to hide this)",
      side.c_str(), address.c_str());
}

}  // namespace fiber::internal
