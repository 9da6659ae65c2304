// Spawn options reach the children: extra environment variables and the working directory.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "fiber/fiber.h"
#include "test_support.h"

void report_environment(fiber::SimpleQueue<std::string> out) {
  const char* value = std::getenv("FIBER_TEST_SETTING");
  const char* worker = std::getenv("FIBER_WORKER");
  char cwd[4096] = {};
  if (!::getcwd(cwd, sizeof cwd)) cwd[0] = '?';
  out.put(std::string(value ? value : "unset") + " " + (worker ? worker : "unset") + " " + cwd);
}

int main(int argc, char** argv) {
  fiber::Config config;
  config.spawn.env.emplace_back("FIBER_TEST_SETTING", "lr=3e-4");
  config.spawn.wdir = "/tmp";
  fiber::testing::init(argc, argv, config);
  fiber::SimpleQueue<std::string> out;
  fiber::Process p(report_environment, out);
  p.start();
  const std::string seen = out.get(std::chrono::seconds(60));
  p.join();
  std::cout << "child saw: " << seen << std::endl;
  return seen == "lr=3e-4 1 /tmp" ? 0 : 1;
}
