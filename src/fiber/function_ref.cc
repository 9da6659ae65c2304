#include "fiber/function_ref.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "fiber/errors.h"

namespace fiber::detail {
namespace {

uint64_t fnv1a(const void* data, size_t size, uint64_t hash = 1469598103934665603ull) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

// Walks the notes of one PT_NOTE segment and returns the hashed GNU build-id, or 0.
uint64_t build_id_in_notes(const unsigned char* notes, size_t size) {
  size_t position = 0;
  while (position + sizeof(ElfW(Nhdr)) <= size) {
    ElfW(Nhdr) header;
    std::memcpy(&header, notes + position, sizeof header);
    const size_t name_offset = position + sizeof header;
    const size_t desc_offset = name_offset + ((header.n_namesz + 3) & ~size_t{3});
    const size_t next = desc_offset + ((header.n_descsz + 3) & ~size_t{3});
    if (next > size || desc_offset > size) return 0;
    if (header.n_type == NT_GNU_BUILD_ID && header.n_namesz == 4 &&
        std::memcmp(notes + name_offset, "GNU", 4) == 0 && header.n_descsz > 0) {
      return fnv1a(notes + desc_offset, header.n_descsz);
    }
    position = next;
  }
  return 0;
}

uint64_t fallback_id(const std::string& path) {
  struct stat info {};
  uint64_t hash = fnv1a(path.data(), path.size());
  if (::stat(path.c_str(), &info) == 0) hash = fnv1a(&info.st_size, sizeof info.st_size, hash);
  return hash;
}

int collect_module(dl_phdr_info* info, size_t, void* out) {
  auto* modules = static_cast<std::vector<ModuleTable::Module>*>(out);
  ModuleTable::Module module;
  module.path =
      (info->dlpi_name && info->dlpi_name[0]) ? info->dlpi_name : ModuleTable::executable_path();
  module.base = info->dlpi_addr;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type == PT_LOAD && (segment.p_flags & PF_X)) {
      module.code_ranges.emplace_back(segment.p_vaddr, segment.p_vaddr + segment.p_memsz);
    } else if (segment.p_type == PT_NOTE && module.id == 0) {
      module.id = build_id_in_notes(
          reinterpret_cast<const unsigned char*>(info->dlpi_addr + segment.p_vaddr),
          segment.p_memsz);
    }
  }
  if (module.id == 0) module.id = fallback_id(module.path);
  modules->push_back(std::move(module));
  return 0;
}

bool in_code(const ModuleTable::Module& module, uintptr_t offset) {
  for (const auto& [begin, end] : module.code_ranges) {
    if (offset >= begin && offset < end) return true;
  }
  return false;
}

}  // namespace

ModuleTable& ModuleTable::instance() {
  // Never destroyed: the runtime still decodes and compares module ids in its exit handler,
  // which can run after function-local statics are gone.
  static ModuleTable* table = new ModuleTable();
  return *table;
}

std::string ModuleTable::executable_path() {
  char path[4096];
  const ssize_t length = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (length <= 0) return {};
  return std::string(path, static_cast<size_t>(length));
}

void ModuleTable::scan_locked() {
  modules_.clear();
  dl_iterate_phdr(collect_module, &modules_);
  scanned_ = true;
}

const ModuleTable::Module* ModuleTable::find_by_address_locked(uintptr_t address) const {
  for (const auto& module : modules_) {
    if (address >= module.base && in_code(module, address - module.base)) return &module;
  }
  return nullptr;
}

const ModuleTable::Module* ModuleTable::find_by_id_locked(uint64_t id) const {
  for (const auto& module : modules_) {
    if (module.id == id) return &module;
  }
  return nullptr;
}

FunctionRef ModuleTable::encode(const void* address) {
  const auto target = reinterpret_cast<uintptr_t>(address);
  std::lock_guard lock(mutex_);
  if (!scanned_) scan_locked();
  const Module* module = find_by_address_locked(target);
  if (!module) {
    scan_locked();
    module = find_by_address_locked(target);
  }
  if (!module) throw Error("function reference: address is not code of any loaded module");
  return FunctionRef{module->id, target - module->base};
}

void* ModuleTable::decode(const FunctionRef& ref) {
  std::lock_guard lock(mutex_);
  if (!scanned_) scan_locked();
  const Module* module = find_by_id_locked(ref.module_id);
  if (!module) {
    scan_locked();
    module = find_by_id_locked(ref.module_id);
  }
  if (!module) {
    throw ProtocolError(
        "function reference names module " + std::to_string(ref.module_id) +
        ", which is not loaded in this process: the processes run different binaries");
  }
  if (!in_code(*module, ref.offset)) {
    throw ProtocolError("function reference offset " + std::to_string(ref.offset) +
                        " is not code in " + module->path);
  }
  return reinterpret_cast<void*>(module->base + ref.offset);
}

const ModuleTable::Module* ModuleTable::engine_locked() {
  if (!scanned_) scan_locked();
  const auto here = reinterpret_cast<uintptr_t>(&ModuleTable::instance);
  return find_by_address_locked(here);
}

uint64_t ModuleTable::engine_module_id() {
  std::lock_guard lock(mutex_);
  const Module* engine = engine_locked();
  return engine ? engine->id : 0;
}

bool ModuleTable::engine_in_main_executable() {
  std::lock_guard lock(mutex_);
  const Module* engine = engine_locked();
  return engine && !modules_.empty() && engine == &modules_.front();
}

namespace {
std::mutex program_path_mutex;
std::string program_path_override;
}  // namespace

std::string ModuleTable::program_path() {
  {
    std::lock_guard lock(program_path_mutex);
    if (!program_path_override.empty()) return program_path_override;
  }
  return executable_path();
}

void ModuleTable::set_program_path(std::string path) {
  std::lock_guard lock(program_path_mutex);
  program_path_override = std::move(path);
}

namespace {

// Reads `size` bytes at `offset` of `fd`; false at the file's end or on an error.
bool read_at(int fd, uint64_t offset, void* out, size_t size) {
  auto* to = static_cast<char*>(out);
  while (size > 0) {
    const ssize_t got = ::pread(fd, to, size, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    to += got;
    offset += static_cast<uint64_t>(got);
    size -= static_cast<size_t>(got);
  }
  return true;
}

// Note segments hold a few hundred bytes; one larger than this is not read.
constexpr uint64_t kMaxNoteSegmentBytes = uint64_t{1} << 20;

}  // namespace

uint64_t build_id_of_file(const std::string& path) {
  // Only the ELF header, the program headers and the note segments are read: every spawn checks
  // its executable, and reading the whole of a test binary with debug information (43 MB) took
  // 0.1 s of each spawn.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0 || info.st_size < 0) return 0;
  const auto size = static_cast<uint64_t>(info.st_size);
  ElfW(Ehdr) header;
  if (size < sizeof header || !read_at(fd, 0, &header, sizeof header)) return 0;
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64)
    return 0;
  if (header.e_phoff > size) return 0;
  std::vector<unsigned char> notes;
  for (ElfW(Half) i = 0; i < header.e_phnum; ++i) {
    const uint64_t at = header.e_phoff + uint64_t{i} * header.e_phentsize;
    if (at < header.e_phoff || at > size || sizeof(ElfW(Phdr)) > size - at) return 0;
    ElfW(Phdr) segment;
    if (!read_at(fd, at, &segment, sizeof segment)) return 0;
    if (segment.p_type != PT_NOTE || segment.p_offset > size ||
        segment.p_filesz > size - segment.p_offset || segment.p_filesz > kMaxNoteSegmentBytes)
      continue;
    notes.resize(segment.p_filesz);
    if (!read_at(fd, segment.p_offset, notes.data(), notes.size())) continue;
    if (const uint64_t id = build_id_in_notes(notes.data(), notes.size())) return id;
  }
  return 0;
}

}  // namespace fiber::detail
