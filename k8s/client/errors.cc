#include "k8s/client/errors.h"

#include <curl/curl.h>

#include "k8s/client/json_fields.h"

namespace fiber::k8s {
namespace {

std::string describe(long code, const std::string& reason, const std::string& message,
                     const std::string& where) {
  std::string text = where + ": " + std::to_string(code);
  if (!reason.empty()) text += " " + reason;
  if (!message.empty()) text += ": " + message;
  return text;
}

}  // namespace

TransportError::TransportError(const std::string& what, int curl_code)
    : ClientError(what), curl_code_(curl_code) {}

bool TransportError::is_timeout() const noexcept { return curl_code_ == CURLE_OPERATION_TIMEDOUT; }

ApiError::ApiError(long code, std::string reason, std::string message, nlohmann::json status,
                   const std::string& where)
    : ClientError(describe(code, reason, message, where)),
      code_(code),
      reason_(std::move(reason)),
      message_(std::move(message)),
      status_(std::move(status)) {}

ApiError::ApiError(long code, const std::string& method, const std::string& path,
                   const std::string& body)
    : ApiError(code, parse_body(body), method + " " + path) {}

ApiError::ApiError(long code, ParsedBody parsed, const std::string& where)
    : ApiError(code, std::move(parsed.reason), std::move(parsed.message), std::move(parsed.status),
               where) {}

ApiError::ParsedBody ApiError::parse_body(const std::string& body) {
  nlohmann::json status = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (status.is_discarded()) status = nullptr;
  if (status.is_object() && string_field(status, "kind") == "Status") {
    return {string_field(status, "reason"), string_field(status, "message"), status};
  }
  // Not a Status (a proxy's HTML page, plain text): the start of the text is the message.
  return {"", body.substr(0, 500), status};
}

ApiError ApiError::from_status(const nlohmann::json& status, const std::string& path) {
  long code = 500;
  if (status.is_object() && status.contains("code") && status["code"].is_number_integer()) {
    code = status["code"].get<long>();
  }
  return ApiError(code, string_field(status, "reason"), string_field(status, "message"), status,
                  "watch " + path);
}

}  // namespace fiber::k8s
