#include "k8s/controller/name_service_uri.h"

#include <algorithm>
#include <cctype>

namespace fiber::k8s::controller {
namespace {

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

// "tcp://10.0.0.1:5000" or "tcp://a,b:5000": a scheme of letters and digits, "://", an address.
bool is_contact_point(std::string_view text) {
  const auto separator = text.find("://");
  if (separator == std::string_view::npos || separator == 0) return false;
  const std::string_view scheme = text.substr(0, separator);
  const bool scheme_ok = std::all_of(scheme.begin(), scheme.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0;
  });
  return scheme_ok && separator + 3 < text.size();
}

bool is_uri_line(std::string_view line) {
  if (line.empty() || std::any_of(line.begin(), line.end(), is_space)) return false;
  const auto first = line.find(';');
  if (first == std::string_view::npos || first == 0) return false;
  std::string_view rest = line.substr(first + 1);
  do {
    const auto next = rest.find(';');
    if (!is_contact_point(rest.substr(0, next))) return false;
    rest = next == std::string_view::npos ? std::string_view() : rest.substr(next + 1);
  } while (!rest.empty());
  return true;
}

}  // namespace

std::optional<std::string> find_name_service_uri(std::string_view log) {
  while (!log.empty()) {
    const auto end = log.find('\n');
    const std::string_view line = trim(log.substr(0, end));
    if (is_uri_line(line)) return std::string(line);
    if (end == std::string_view::npos) break;
    log.remove_prefix(end + 1);
  }
  return std::nullopt;
}

}  // namespace fiber::k8s::controller
