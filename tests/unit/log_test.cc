// The runtime's log sink, in child processes whose stderr the test reads: the line's form (time,
// host, role, pid, level), levels, FIBER_QUIET, the per-process file in a log directory, and
// lines of many threads that never interleave.
#include "fiber/base/log.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fiber::internal {
namespace {

// What `body` writes to stderr in a child process started with `variables` set.
std::string stderr_of(const std::vector<std::pair<std::string, std::string>>& variables,
                      const std::function<void()>& body) {
  int pipe_ends[2];
  if (::pipe(pipe_ends) != 0) return "pipe failed";
  const pid_t child = ::fork();
  if (child == 0) {
    ::dup2(pipe_ends[1], STDERR_FILENO);
    ::close(pipe_ends[0]);
    ::unsetenv("FIBER_LOG_LEVEL");
    ::unsetenv("FIBER_LOG_DIR");
    ::unsetenv("FIBER_QUIET");
    for (const auto& [name, value] : variables) ::setenv(name.c_str(), value.c_str(), 1);
    body();
    ::_exit(0);
  }
  ::close(pipe_ends[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t got; (got = ::read(pipe_ends[0], buffer, sizeof buffer)) > 0;)
    text.append(buffer, static_cast<size_t>(got));
  ::close(pipe_ends[0]);
  ::waitpid(child, nullptr, 0);
  return text;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(Log, ALineNamesTimeHostRolePidAndLevel) {
  const std::string text = stderr_of({}, [] {
    set_log_role("master");
    FIBER_LOG_WARNING("worker pid %d on %s: %s", 42, "node-1", "declaring it dead");
  });
  const std::regex form(
      "fibermpi \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\.\\d{3} \\S+ master\\[\\d+\\] "
      "warning: worker pid 42 on node-1: declaring it dead\n");
  EXPECT_TRUE(std::regex_match(text, form)) << text;
}

TEST(Log, TheLevelFromTheEnvironmentAndFromConfigure) {
  const auto write_each = [] {
    FIBER_LOG_DEBUG("d");
    FIBER_LOG_INFO("i");
    FIBER_LOG_WARNING("w");
    FIBER_LOG_ERROR("e");
  };
  EXPECT_EQ(lines_of(stderr_of({}, write_each)).size(), 2u);  // warning by default
  EXPECT_EQ(lines_of(stderr_of({{"FIBER_LOG_LEVEL", "debug"}}, write_each)).size(), 4u);
  EXPECT_EQ(lines_of(stderr_of({{"FIBER_LOG_LEVEL", "error"}}, write_each)).size(), 1u);
  EXPECT_EQ(stderr_of({{"FIBER_LOG_LEVEL", "off"}}, write_each), "");
  // fiber::init's resolved configuration replaces what the environment said.
  EXPECT_EQ(lines_of(stderr_of({{"FIBER_LOG_LEVEL", "error"}},
                               [&] {
                                 configure_log(LogLevel::kInfo, "");
                                 write_each();
                               }))
                .size(),
            3u);
}

TEST(Log, QuietLeavesErrorsOnly) {
  const std::string text = stderr_of({{"FIBER_QUIET", "1"}, {"FIBER_LOG_LEVEL", "debug"}}, [] {
    FIBER_LOG_WARNING("hidden");
    FIBER_LOG_ERROR("shown");
  });
  ASSERT_EQ(lines_of(text).size(), 1u) << text;
  EXPECT_NE(text.find("error: shown"), std::string::npos);
  EXPECT_EQ(lines_of(stderr_of({{"FIBER_QUIET", "0"}}, [] { FIBER_LOG_WARNING("w"); })).size(), 1u);
}

TEST(Log, EachProcessWritesItsOwnFileInTheLogDirectory) {
  const auto directory =
      std::filesystem::temp_directory_path() / ("fiber-log-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(directory);
  const std::string text = stderr_of({{"FIBER_LOG_DIR", directory.string()}}, [] {
    set_log_role("worker");
    FIBER_LOG_WARNING("to both");
  });
  EXPECT_NE(text.find("warning: to both"), std::string::npos);
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(directory))
    files.push_back(entry.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(files[0].filename().string().find("-worker-"), std::string::npos) << files[0];
  std::ifstream file(files[0]);
  std::stringstream content;
  content << file.rdbuf();
  EXPECT_EQ(content.str(), text);
  std::filesystem::remove_all(directory);
}

TEST(Log, ADirectoryThatCannotBeWrittenIsSaidOnceAndStderrGoesOn) {
  const std::string text = stderr_of({{"FIBER_LOG_DIR", "/proc/no-such-place"}}, [] {
    FIBER_LOG_WARNING("one");
    FIBER_LOG_WARNING("two");
  });
  const auto lines = lines_of(text);
  ASSERT_EQ(lines.size(), 3u) << text;
  EXPECT_NE(lines[0].find("warning: one"), std::string::npos);
  EXPECT_NE(lines[1].find("cannot write the log file /proc/no-such-place/"), std::string::npos);
  EXPECT_NE(lines[2].find("warning: two"), std::string::npos);
}

TEST(Log, LinesOfManyThreadsNeverInterleave) {
  const std::string text = stderr_of({}, [] {
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([t] {
        for (int i = 0; i < 200; ++i) FIBER_LOG_WARNING("thread %d line %d %s", t, i, "xxxxxxxx");
      });
    for (auto& thread : threads) thread.join();
  });
  const auto lines = lines_of(text);
  ASSERT_EQ(lines.size(), 1600u);
  const std::regex whole("fibermpi .* warning: thread \\d line \\d+ xxxxxxxx");
  for (const auto& line : lines) ASSERT_TRUE(std::regex_match(line, whole)) << line;
}

TEST(Log, LevelNames) {
  LogLevel level;
  EXPECT_TRUE(parse_log_level("info", &level));
  EXPECT_EQ(level, LogLevel::kInfo);
  EXPECT_FALSE(parse_log_level("INFO", &level));
  EXPECT_FALSE(parse_log_level("verbose", &level));
  EXPECT_STREQ(log_level_name(LogLevel::kError), "error");
}

}  // namespace
}  // namespace fiber::internal
