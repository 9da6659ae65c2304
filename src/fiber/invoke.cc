#include "fiber/invoke.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <typeinfo>

#include "fiber/function_ref.h"

namespace fiber::detail {

std::string current_exception_type_name() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  if (!type) return "unknown exception";
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(type->name(), nullptr, nullptr, &status), &std::free);
  return status == 0 && demangled ? demangled.get() : type->name();
}

void run_task(const TaskSpec& task, serial::Writer* result) {
  auto& modules = ModuleTable::instance();
  const auto invoker = reinterpret_cast<Invoker>(modules.decode(task.invoker));
  void* fn = task.fn.module_id == 0 ? nullptr : modules.decode(task.fn);
  serial::Reader args(task.args);
  invoker(fn, args, result);
}

}  // namespace fiber::detail
