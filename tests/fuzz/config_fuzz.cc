// libFuzzer target: the configuration a user writes, fiber.yaml and the FIBER_* variables. The
// first byte picks the source: the rest is a YAML document, or the value of the variable of the
// key the second byte picks. The property: applied, or refused with fiber::ConfigError; no
// crash, sanitizer report, or other exception.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "fiber/base/config_file.h"
#include "fiber/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const std::string text(reinterpret_cast<const char*>(data + 2), size - 2);
  static const std::vector<std::string> keys = fiber::internal::config_keys();
  fiber::internal::ResolvedConfig resolved;
  try {
    if (data[0] % 2 == 0) {
      fiber::internal::apply_config_text(text, "fuzz.yaml", resolved);
    } else {
      const std::string variable =
          fiber::internal::config_environment_variable(keys[data[1] % keys.size()]);
      fiber::internal::apply_config_environment(
          [&](const std::string& name) -> std::optional<std::string> {
            if (name == variable) return text;
            return std::nullopt;
          },
          resolved);
    }
  } catch (const fiber::ConfigError&) {
    // Refused, naming the key or the document.
  }
  return 0;
}
