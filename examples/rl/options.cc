#include "rl/options.h"

#include <charconv>
#include <cstdio>
#include <system_error>
#include <utility>

namespace rl {
namespace {

const IntOption* find_option(std::string_view name, std::span<const IntOption> options) {
  for (const IntOption& option : options)
    if (option.name == name) return &option;
  return nullptr;
}

ParseResult error(std::string message) { return {ParseResult::Status::kError, std::move(message)}; }

}  // namespace

ParseResult parse_options(int argc, char** argv, std::span<const IntOption> options) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") return {ParseResult::Status::kHelp, {}};
    if (!arg.starts_with("--")) return error("unexpected argument '" + std::string(arg) + "'");
    const IntOption* option = find_option(arg.substr(2), options);
    if (option == nullptr) return error("unknown option " + std::string(arg));
    if (i + 1 == argc) return error(std::string(arg) + " needs a value");
    const std::string_view text = argv[++i];
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size())
      return error(std::string(arg) + ": '" + std::string(text) + "' is not an integer");
    if (value < option->min || value > option->max)
      return error(std::string(arg) + ": " + std::string(text) + " is outside [" +
                   std::to_string(option->min) + ", " + std::to_string(option->max) + "]");
    *option->value = value;
  }
  return {};
}

std::string usage(std::string_view command, std::span<const IntOption> options) {
  std::string text = "usage: " + std::string(command) + " [options]\n";
  for (const IntOption& option : options) {
    text += "  --" + std::string(option.name) + " N  " + std::string(option.help) + " (" +
            std::to_string(option.min) + ".." + std::to_string(option.max) + ", default " +
            std::to_string(*option.value) + ")\n";
  }
  return text;
}

int reject(const ParseResult& result, std::string_view program, std::string_view usage_text,
           bool print) {
  if (print) {
    if (!result.error.empty())
      std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(program.size()), program.data(),
                   result.error.c_str());
    std::fwrite(usage_text.data(), 1, usage_text.size(), stderr);
  }
  return result.status == ParseResult::Status::kHelp ? 0 : 2;
}

}  // namespace rl
