// Errors of the Kubernetes client: one root, then what went wrong where.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace fiber::k8s {

/// Root of every error the client library throws.
class ClientError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A kubeconfig or in-cluster configuration that cannot be used; what() names the missing or
/// unsupported piece (context, cluster, user, file, exec plugin...).
class ConfigError : public ClientError {
 public:
  using ClientError::ClientError;
};

/// No HTTP answer: connection refused, TLS failure, timeout, cancelled transfer.
class TransportError : public ClientError {
 public:
  /// `curl_code` is libcurl's CURLcode (0 when the failure did not come from libcurl).
  TransportError(const std::string& what, int curl_code);
  /// libcurl's CURLcode of the failure.
  int curl_code() const noexcept { return curl_code_; }
  /// True when the transfer ended because it timed out.
  bool is_timeout() const noexcept;

 private:
  int curl_code_;
};

/// The API server answered with a non-2xx status, or a watch delivered an ERROR event. Carries the
/// metav1.Status fields when the body was one.
class ApiError : public ClientError {
 public:
  /// Builds the error of an HTTP answer: `code` is the HTTP status, `body` the raw response body
  /// (a Status object when the server sent one; any other text is kept as the message).
  ApiError(long code, const std::string& method, const std::string& path, const std::string& body);
  /// Builds the error of a watch ERROR event whose object is the metav1.Status `status`.
  static ApiError from_status(const nlohmann::json& status, const std::string& path);

  /// HTTP status code (Status.code for a watch ERROR event).
  long code() const noexcept { return code_; }
  /// Status.reason, e.g. "NotFound", "Conflict", "AlreadyExists", "Invalid", "Expired"; may be
  /// empty.
  const std::string& reason() const noexcept { return reason_; }
  /// Status.message, or the raw body when it was not a Status.
  const std::string& message() const noexcept { return message_; }
  /// The Status object as received (null when the body was not JSON).
  const nlohmann::json& status() const noexcept { return status_; }

  /// 410 Gone / reason Expired: the resourceVersion is too old; relist.
  bool is_gone() const noexcept { return code_ == 410; }
  /// 409 Conflict: a stale resourceVersion on update, or the object already exists.
  bool is_conflict() const noexcept { return code_ == 409; }
  /// 409 with reason AlreadyExists (a create of a name that is taken).
  bool is_already_exists() const noexcept { return code_ == 409 && reason_ == "AlreadyExists"; }
  /// 404 Not Found.
  bool is_not_found() const noexcept { return code_ == 404; }
  /// 422 Unprocessable Entity: the object failed validation.
  bool is_invalid() const noexcept { return code_ == 422; }
  /// 403 Forbidden.
  bool is_forbidden() const noexcept { return code_ == 403; }
  /// 429 or 5xx: worth retrying later.
  bool is_retryable() const noexcept { return code_ == 429 || code_ >= 500; }

 private:
  struct ParsedBody {
    std::string reason;
    std::string message;
    nlohmann::json status;
  };
  static ParsedBody parse_body(const std::string& body);
  ApiError(long code, ParsedBody parsed, const std::string& where);
  ApiError(long code, std::string reason, std::string message, nlohmann::json status,
           const std::string& where);

  long code_;
  std::string reason_;
  std::string message_;
  nlohmann::json status_;
};

}  // namespace fiber::k8s
