// Functions travel between processes by reference, never as code: an address is encoded as
// (module identity, offset inside that module), and the receiving process, which runs the same
// binary, turns it back into an address in its own, differently relocated, copy.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace fiber::detail {

/// A code address that means the same thing in every process running the same binaries.
struct FunctionRef {
  uint64_t module_id = 0;  ///< Hash of the module's GNU build-id (or of its path and size).
  uint64_t offset = 0;     ///< Address minus the module's load base.
  friend bool operator==(const FunctionRef&, const FunctionRef&) = default;
};

/// The loaded modules (executable and shared libraries) of this process, with their identities
/// and executable ranges. Built lazily and rebuilt when an unknown module is asked for, so code
/// from libraries loaded later with dlopen resolves too.
class ModuleTable {
 public:
  struct Module {
    std::string path;
    uint64_t id = 0;
    uintptr_t base = 0;
    std::vector<std::pair<uintptr_t, uintptr_t>>
        code_ranges;  ///< [begin, end) offsets, executable.
  };

  /// The table of this process.
  static ModuleTable& instance();

  /// Encodes a code address; throws fiber::Error when it lies in no loaded module's code.
  FunctionRef encode(const void* address);
  /// Decodes a reference made by a process running the same binaries; throws fiber::ProtocolError
  /// naming the problem when the module is not loaded here or the offset is not code.
  void* decode(const FunctionRef& ref);
  /// Identity of the module holding fibermpi's own code, compared at handshake so a worker
  /// running another build is refused: the main executable of a C++ program, the extension
  /// module of a Python program (whose executable, the interpreter, says nothing of the build).
  uint64_t engine_module_id();
  /// fibermpi's code is part of the main executable (not of a shared module such as a Python
  /// extension), so a program to spawn can be checked by its build-id before it starts.
  bool engine_in_main_executable();
  /// Path of the main executable as the kernel reports it (/proc/self/exe).
  static std::string executable_path();
  /// The program that runs this process's code again (a relaunch under the MPI's own launcher, a
  /// worker pod's ranks): executable_path(), unless a front end set another. An interpreter's
  /// front end sets the interpreter as the user started it: /proc/self/exe resolves a virtual
  /// environment's python to the system's, which has none of the environment's packages.
  static std::string program_path();
  static void set_program_path(std::string path);

 private:
  void scan_locked();
  const Module* find_by_address_locked(uintptr_t address) const;
  const Module* find_by_id_locked(uint64_t id) const;
  /// The module holding this code (the table's own functions).
  const Module* engine_locked();

  std::mutex mutex_;
  std::vector<Module> modules_;
  bool scanned_ = false;
};

/// Reads the GNU build-id note of an ELF file on disk, hashed the same way as ModuleTable's ids;
/// 0 when the file has none or cannot be read.
uint64_t build_id_of_file(const std::string& path);

}  // namespace fiber::detail
