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
  /// Identity of the main executable, compared at handshake so a worker running another binary
  /// is refused.
  uint64_t main_module_id();
  /// Path of the main executable as the kernel reports it (/proc/self/exe).
  static std::string executable_path();

 private:
  void scan_locked();
  const Module* find_by_address_locked(uintptr_t address) const;
  const Module* find_by_id_locked(uint64_t id) const;

  std::mutex mutex_;
  std::vector<Module> modules_;
  bool scanned_ = false;
};

/// Reads the GNU build-id note of an ELF file on disk, hashed the same way as ModuleTable's ids;
/// 0 when the file has none or cannot be read.
uint64_t build_id_of_file(const std::string& path);

}  // namespace fiber::detail
