#include "fiber/base/log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

namespace fiber::internal {
namespace {

struct Sink {
  std::mutex mutex;  // guards role, directory and the file's opening
  std::atomic<int> level{static_cast<int>(LogLevel::kWarning)};
  std::atomic<bool> quiet{false};
  std::string role = "fibermpi";
  std::string directory;
  int file = -1;
  bool file_failed = false;
};

Sink& sink() {
  // Never destroyed: threads and exit handlers may log while static destructors run.
  static Sink* const instance = [] {
    auto* created = new Sink;
    LogLevel level;
    if (const char* text = std::getenv("FIBER_LOG_LEVEL"); text && parse_log_level(text, &level))
      created->level = static_cast<int>(level);
    if (const char* directory = std::getenv("FIBER_LOG_DIR")) created->directory = directory;
    const char* quiet = std::getenv("FIBER_QUIET");
    created->quiet = quiet && *quiet && std::strcmp(quiet, "0") != 0;
    return created;
  }();
  return *instance;
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

// The process's own file in the log directory, opened on its first line.
int log_file_locked(Sink& state, const std::string& host) {
  if (state.file >= 0 || state.file_failed || state.directory.empty()) return state.file;
  ::mkdir(state.directory.c_str(), 0755);
  const std::string path = state.directory + "/fibermpi-" + host + "-" + state.role + "-" +
                           std::to_string(::getpid()) + ".log";
  state.file = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (state.file < 0) {
    state.file_failed = true;
    const std::string line = "fibermpi: cannot write the log file " + path + ": " +
                             std::strerror(errno) + "; logging to stderr only\n";
    write_fully(STDERR_FILENO, line.data(), line.size());
  }
  return state.file;
}

}  // namespace

void write_fully(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t written = ::write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      return;
    }
    data += written;
    size -= static_cast<size_t>(written);
  }
}

bool parse_log_level(const std::string& text, LogLevel* level) {
  static const std::pair<const char*, LogLevel> kLevels[] = {{"debug", LogLevel::kDebug},
                                                             {"info", LogLevel::kInfo},
                                                             {"warning", LogLevel::kWarning},
                                                             {"error", LogLevel::kError},
                                                             {"off", LogLevel::kOff}};
  for (const auto& [name, value] : kLevels) {
    if (text == name) {
      *level = value;
      return true;
    }
  }
  return false;
}

const char* log_level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
    case LogLevel::kOff:
      return "off";
  }
  return "?";
}

void configure_log(LogLevel level, const std::string& directory) {
  Sink& state = sink();
  std::lock_guard lock(state.mutex);
  state.level = static_cast<int>(level);
  if (directory != state.directory) {
    if (state.file >= 0) ::close(state.file);
    state.file = -1;
    state.file_failed = false;
    state.directory = directory;
  }
}

void set_log_role(const std::string& role) {
  Sink& state = sink();
  std::lock_guard lock(state.mutex);
  state.role = role;
}

bool log_enabled(LogLevel level) {
  if (level == LogLevel::kOff) return false;
  const Sink& state = sink();
  if (state.quiet.load() && level < LogLevel::kError) return false;
  return static_cast<int>(level) >= state.level.load();
}

void log_line(LogLevel level, const char* format, ...) {
  if (!log_enabled(level)) return;
  static const std::string host = host_name();
  char message[2048];
  va_list arguments;
  va_start(arguments, format);
  std::vsnprintf(message, sizeof message, format, arguments);
  va_end(arguments);
  size_t length = std::strlen(message);
  while (length > 0 && message[length - 1] == '\n') message[--length] = '\0';

  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  tm utc{};
  ::gmtime_r(&now.tv_sec, &utc);
  char seconds[32];
  std::strftime(seconds, sizeof seconds, "%Y-%m-%d %H:%M:%S", &utc);
  char when[48];
  std::snprintf(when, sizeof when, "%s.%03d", seconds, static_cast<int>(now.tv_nsec / 1000000));

  Sink& state = sink();
  std::lock_guard lock(state.mutex);
  const std::string line = std::string("fibermpi ") + when + " " + host + " " + state.role + "[" +
                           std::to_string(::getpid()) + "] " + log_level_name(level) + ": " +
                           std::string(message, length) + "\n";
  write_fully(STDERR_FILENO, line.data(), line.size());
  if (const int file = log_file_locked(state, host); file >= 0)
    write_fully(file, line.data(), line.size());
}

}  // namespace fiber::internal
