#include "program_mpi.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <tuple>

#include "fiber/base/command_search_path.h"
#include "fiber/errors.h"

namespace fibermpi {
namespace {

namespace fs = std::filesystem;
using fiber::UsageError;
using fiber::internal::MpiFamily;

struct Captured {
  int status = -1;  ///< The child's exit status; -1 when it was killed or timed out.
  std::string out;
};

// Reads the child's stdout from `fd` until it closes it or `limit` passes (then kills it).
Captured collect(pid_t child, int fd, std::chrono::milliseconds limit) {
  Captured captured;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::array<char, 4096> buffer;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(child, SIGKILL);
      break;
    }
    pollfd ready{fd, POLLIN, 0};
    const int polled = ::poll(&ready, 1, static_cast<int>(left.count()));
    if (polled < 0 && errno == EINTR) continue;
    if (polled <= 0) continue;
    const ssize_t got = ::read(fd, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    captured.out.append(buffer.data(), static_cast<size_t>(got));
  }
  ::close(fd);
  // A child that closed its output may still run: waited for until the deadline, then killed.
  int wait_status = 0;
  for (;;) {
    const pid_t waited = ::waitpid(child, &wait_status, WNOHANG);
    if (waited == child) break;
    if (waited < 0 && errno != EINTR) return captured;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(child, SIGKILL);
      while (::waitpid(child, &wait_status, 0) < 0 && errno == EINTR) {
      }
      return captured;
    }
    ::usleep(1000);
  }
  if (WIFEXITED(wait_status)) captured.status = WEXITSTATUS(wait_status);
  return captured;
}

// Runs `argv` with `environment` added, stdout captured, stderr discarded.
Captured capture(const std::vector<std::string>& argv,
                 const std::vector<std::pair<std::string, std::string>>& environment,
                 std::chrono::milliseconds limit) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return {};
  std::vector<std::string> words = argv;
  std::vector<char*> exec_argv;
  for (auto& word : words) exec_argv.push_back(word.data());
  exec_argv.push_back(nullptr);
  const pid_t child = ::fork();
  if (child == 0) {
    for (const auto& [name, value] : environment) ::setenv(name.c_str(), value.c_str(), 1);
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    if (const int null = ::open("/dev/null", O_WRONLY); null >= 0) ::dup2(null, STDERR_FILENO);
    ::execv(exec_argv[0], exec_argv.data());
    std::_Exit(127);
  }
  ::close(pipe_fds[1]);
  if (child < 0) {
    ::close(pipe_fds[0]);
    return {};
  }
  return collect(child, pipe_fds[0], limit);
}

// The ELF header and program headers of `path` say it is a dynamically linked program (it has
// an interpreter); anything else is refused before the loader is asked to trace it, since a
// static program would simply run.
void require_dynamic_program(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw UsageError("cannot read " + path + ": " + std::strerror(errno));
  Elf64_Ehdr header{};
  file.read(reinterpret_cast<char*>(&header), sizeof header);
  if (!file || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) {
    throw UsageError(path + " is not a compiled program (no ELF header; a script?): fibermpi run " +
                     "takes the MPI program itself");
  }
  if (header.e_ident[EI_CLASS] != ELFCLASS64) {
    throw UsageError(path + " is not a 64-bit program");
  }
  for (int i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr program_header{};
    file.seekg(static_cast<std::streamoff>(header.e_phoff) +
               static_cast<std::streamoff>(i) * header.e_phentsize);
    file.read(reinterpret_cast<char*>(&program_header), sizeof program_header);
    if (!file) break;
    if (program_header.p_type == PT_INTERP) return;
  }
  throw UsageError(path + " is not a dynamically linked program: fibermpi run finds the MPI a " +
                   "program uses from the libmpi it links");
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

std::string trimmed(std::string text) {
  const auto begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return {};
  const auto end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

// "Open MPI v4.1.4, package: ..." -> "4.1.4"; "MPICH Version:   5.0.2\n..." -> "5.0.2".
std::string version_number(const std::string& text, MpiFamily family) {
  if (family == MpiFamily::kMpich) {
    const std::string line = first_line(text);
    return trimmed(line.substr(line.find(':') + 1));
  }
  const auto begin = text.find(" v") + 2;
  return text.substr(begin, text.find_first_of(", \n", begin) - begin);
}

}  // namespace

namespace {

// The place and size of the section `name` (".rodata") in the ELF file, when it has one.
std::optional<std::pair<uint64_t, uint64_t>> elf_section(std::ifstream& file, const char* name) {
  Elf64_Ehdr header{};
  file.seekg(0);
  file.read(reinterpret_cast<char*>(&header), sizeof header);
  if (!file || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_shstrndx >= header.e_shnum)
    return std::nullopt;
  const auto section_header = [&](unsigned index) {
    Elf64_Shdr section{};
    file.seekg(static_cast<std::streamoff>(header.e_shoff + uint64_t{index} * header.e_shentsize));
    file.read(reinterpret_cast<char*>(&section), sizeof section);
    return section;
  };
  const Elf64_Shdr names = section_header(header.e_shstrndx);
  if (!file || names.sh_size > (uint64_t{1} << 24)) return std::nullopt;
  std::string table(names.sh_size, '\0');
  file.seekg(static_cast<std::streamoff>(names.sh_offset));
  file.read(table.data(), static_cast<std::streamsize>(table.size()));
  for (unsigned index = 0; file && index < header.e_shnum; ++index) {
    const Elf64_Shdr section = section_header(index);
    if (section.sh_name < table.size() && std::strcmp(table.c_str() + section.sh_name, name) == 0)
      return std::make_pair(static_cast<uint64_t>(section.sh_offset), section.sh_size);
  }
  return std::nullopt;
}

}  // namespace

bool links_fibermpi(const std::string& program) {
  // The marker mpi_bridge compiles into every program linked with fibermpi: a constant string,
  // so only the read-only data is read (a program with debug information is tens of MB), or the
  // whole file when its sections cannot be read.
  constexpr std::string_view kMarker = "fibermpi-worker-abi-";
  std::ifstream file(program, std::ios::binary);
  uint64_t begin = 0;
  uint64_t left = UINT64_MAX;
  if (const auto rodata = elf_section(file, ".rodata")) std::tie(begin, left) = *rodata;
  file.clear();
  file.seekg(static_cast<std::streamoff>(begin));
  std::string window;
  std::array<char, 1 << 16> buffer;
  while (left > 0) {
    const auto wanted = static_cast<std::streamsize>(std::min<uint64_t>(buffer.size(), left));
    file.read(buffer.data(), wanted);
    const auto got = file.gcount();
    if (got <= 0) break;
    left -= static_cast<uint64_t>(got);
    // The tail of the previous block is kept, so a marker across two blocks is found too.
    window.append(buffer.data(), static_cast<size_t>(got));
    if (window.find(kMarker) != std::string::npos) return true;
    window.erase(0, window.size() - std::min(window.size(), kMarker.size()));
  }
  return false;
}

std::string find_program(const std::string& name) {
  if (name.empty()) throw UsageError("no program named: fibermpi run PROGRAM [ARGS...]");
  std::error_code error;
  if (name.find('/') != std::string::npos) {
    if (!fs::is_regular_file(name, error) || ::access(name.c_str(), X_OK) != 0)
      throw UsageError("PROGRAM " + name + " is not an executable file");
    return fs::absolute(name).lexically_normal().string();
  }
  for (const std::string& folder : fiber::internal::command_search_folders()) {
    const fs::path candidate = fs::path(folder) / name;
    if (fs::is_regular_file(candidate, error) && ::access(candidate.c_str(), X_OK) == 0)
      return fs::absolute(candidate).lexically_normal().string();
  }
  throw UsageError("PROGRAM " + name + " is not on PATH (give its path, e.g. ./" + name + ")");
}

std::optional<std::string> linked_libmpi(const std::string& program) {
  require_dynamic_program(program);
  const Captured traced =
      capture({program}, {{"LD_TRACE_LOADED_OBJECTS", "1"}}, std::chrono::seconds(20));
  if (traced.status != 0) {
    throw UsageError("the dynamic loader could not list the libraries of " + program);
  }
  std::stringstream lines(traced.out);
  for (std::string line; std::getline(lines, line);) {
    // "\tlibmpi.so.40 => /usr/lib/x86_64-linux-gnu/libmpi.so.40 (0x...)"
    const std::string entry = trimmed(line);
    if (entry.rfind("libmpi.so", 0) != 0) continue;
    const auto arrow = entry.find(" => ");
    const std::string name = entry.substr(0, entry.find(' '));
    if (arrow == std::string::npos) continue;
    const std::string target = entry.substr(arrow + 4);
    if (target.rfind("not found", 0) == 0) {
      throw UsageError(program + " needs " + name +
                       ", which the dynamic loader cannot find (is the MPI it was built against "
                       "installed, or LD_LIBRARY_PATH missing?)");
    }
    // The load address closes the line; a path may itself hold " (".
    const auto address = target.rfind(" (0x");
    return address == std::string::npos ? target : target.substr(0, address);
  }
  return std::nullopt;
}

MpiLibrary probe_library(const std::string& path) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
    throw UsageError(std::string("cannot make a pipe: ") + std::strerror(errno));
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child == 0) {
    // A child of its own: a library's constructors and symbols stay out of the tool.
    ::close(pipe_fds[0]);
    std::string answer;
    if (void* library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      using VersionCall = int (*)(char*, int*);
      auto get_version = reinterpret_cast<VersionCall>(::dlsym(library, "MPI_Get_library_version"));
      std::array<char, 8192> text{};
      int length = 0;
      if (get_version && get_version(text.data(), &length) == 0) {
        answer = std::string(::dlsym(library, "MPIX_Comm_agree") ? "ulfm=1\n" : "ulfm=0\n") +
                 std::string(text.data(), std::strlen(text.data()));
      }
    }
    size_t written = 0;
    while (written < answer.size()) {
      const ssize_t sent = ::write(pipe_fds[1], answer.data() + written, answer.size() - written);
      if (sent <= 0) break;
      written += static_cast<size_t>(sent);
    }
    std::_Exit(answer.empty() ? 1 : 0);
  }
  ::close(pipe_fds[1]);
  if (child < 0) {
    ::close(pipe_fds[0]);
    throw UsageError(std::string("cannot start a process: ") + std::strerror(errno));
  }
  const Captured probed = collect(child, pipe_fds[0], std::chrono::seconds(20));
  if (probed.status != 0 || probed.out.size() < 7) {
    throw UsageError("cannot load " + path + " to ask its MPI version (MPI_Get_library_version)");
  }
  MpiLibrary library;
  library.path = path;
  library.has_ulfm = probed.out.rfind("ulfm=1", 0) == 0;
  const std::string text = probed.out.substr(7);
  library.version_text = trimmed(first_line(text));
  if (!fiber::internal::family_from_library_version(text, library.family)) {
    throw UsageError(path + " is an MPI fibermpi does not know (" + library.version_text +
                     "); it knows Open MPI 4.1 and 5, and MPICH");
  }
  library.version = version_number(text, library.family);
  // MPICH has MPIX_Comm_agree too, but its fault tolerance (MPIR_CVAR_ENABLE_FT) fails in
  // MPI_Init here and fibermpi does not use it.
  if (library.family == MpiFamily::kMpich) library.has_ulfm = false;
  return library;
}

std::optional<PythonFibermpi> python_fibermpi(const std::string& interpreter) {
  // Finds the package without importing it (its import would start a worker under a launcher),
  // loads the extension as a plain shared library (its libmpi comes with it, by its RUNPATH) and
  // reads which libmpi the loader mapped.
  static const char* const kAsk = R"(
import ctypes, glob, importlib.util, os, sys
spec = importlib.util.find_spec("fibermpi")
for folder in (spec.submodule_search_locations or []) if spec else []:
    for extension in sorted(glob.glob(os.path.join(folder, "_core*.so"))):
        ctypes.CDLL(extension)
        for line in open("/proc/self/maps"):
            path = line.split()[-1]
            if "/libmpi.so" in path:
                print(extension)
                print(path)
                sys.exit(0)
sys.exit(3)
)";
  const Captured asked = capture({interpreter, "-c", kAsk}, {{"PYTHONDONTWRITEBYTECODE", "1"}},
                                 std::chrono::seconds(30));
  if (asked.status != 0) return std::nullopt;
  std::stringstream lines(asked.out);
  PythonFibermpi found;
  if (!std::getline(lines, found.extension) || !std::getline(lines, found.libmpi) ||
      found.extension.empty() || found.libmpi.empty())
    return std::nullopt;
  return found;
}

bool runs_fibermpi(const std::string& program) {
  if (links_fibermpi(program)) return true;
  const auto python = python_fibermpi(program);
  return python && links_fibermpi(python->extension);
}

ProgramMpi find_program_mpi(const std::string& program) {
  auto libmpi = linked_libmpi(program);
  if (!libmpi) {
    if (const auto python = python_fibermpi(program)) libmpi = python->libmpi;
  }
  if (!libmpi) {
    throw UsageError(program + " links no libmpi: it is not an MPI program (fibermpi programs " +
                     "link the fibermpi library and its MPI), nor a Python with the fibermpi "
                     "package installed (pip install . in the checkout)");
  }
  ProgramMpi found = mpi_of_library(*libmpi, program);
  found.program = program;
  return found;
}

ProgramMpi mpi_of_library(const std::string& libmpi, const std::string& user) {
  ProgramMpi found;
  found.library = probe_library(libmpi);
  const bool open_mpi = found.library.family != MpiFamily::kMpich;
  const char* launcher_name = open_mpi ? "mpirun" : "mpiexec";
  // Besides mpirun, the names some distributions give Open MPI's launcher.
  std::vector<std::string> launcher_names = {launcher_name};
  if (open_mpi) launcher_names.insert(launcher_names.end(), {"mpirun.openmpi", "orterun"});

  std::vector<std::string> looked_in;
  auto environment_for = [&](const fs::path& mpirun) {
    std::vector<std::pair<std::string, std::string>> environment;
    const fs::path prefix = mpirun.parent_path().parent_path();
    // A relocated Open MPI 5 (PyPI's wheel) finds its help texts and prte through OPAL_PREFIX.
    if (found.library.family == MpiFamily::kOpenMpi5 && !std::getenv("OPAL_PREFIX"))
      environment.emplace_back("OPAL_PREFIX", prefix.string());
    environment.emplace_back(
        "PATH", fiber::internal::command_search_path_after(mpirun.parent_path().string()));
    return environment;
  };
  auto matches = [&](const fs::path& mpirun) {
    const Captured said =
        capture({mpirun.string(), "--version"}, environment_for(mpirun), std::chrono::seconds(20));
    return said.status == 0 && said.out.find(found.library.version) != std::string::npos;
  };

  if (const char* chosen = std::getenv("FIBER_MPIRUN"); chosen && *chosen) {
    try {
      found.mpirun = find_program(chosen);
    } catch (const UsageError&) {
      throw UsageError(std::string("FIBER_MPIRUN=") + chosen +
                       " is not an executable file (give the path of the mpirun to use)");
    }
    // Its real place: OPAL_PREFIX is derived from the folder it lives in, not from a link's.
    std::error_code ignored;
    const fs::path real = fs::canonical(found.mpirun, ignored);
    found.environment = environment_for(ignored ? fs::path(found.mpirun) : real);
    return found;
  }
  std::error_code error;
  // The folder of the library file itself first: a distribution's symbolic links (/lib ->
  // /usr/lib) would otherwise lead to a launcher path of the same links.
  std::vector<fs::path> library_folders;
  const fs::path resolved = fs::canonical(libmpi, error);
  if (!error) library_folders.push_back(resolved.parent_path());
  if (library_folders.empty() || fs::path(libmpi).parent_path() != library_folders.front())
    library_folders.push_back(fs::path(libmpi).parent_path());
  for (const fs::path& folder : library_folders) {
    // <prefix>/lib/libmpi.so (an installation of its own) or <prefix>/lib/<multiarch>/ (a
    // distribution's: Debian's /usr/lib/x86_64-linux-gnu/).
    for (const fs::path& prefix : {folder.parent_path(), folder.parent_path().parent_path()}) {
      looked_in.push_back((prefix / "bin").lexically_normal().string());
      for (const std::string& name : launcher_names) {
        const fs::path candidate = (prefix / "bin" / name).lexically_normal();
        if (!fs::is_regular_file(candidate, error) || ::access(candidate.c_str(), X_OK) != 0)
          continue;
        if (!matches(candidate)) continue;
        found.mpirun = candidate.string();
        found.environment = environment_for(candidate);
        return found;
      }
    }
  }
  std::string folders;
  for (const auto& folder : looked_in) folders += (folders.empty() ? "" : ", ") + folder;
  throw UsageError("no " + std::string(launcher_name) + " of " + found.library.version_text +
                   " (the MPI of " + user + ", " + libmpi + ") in " + folders +
                   ": set FIBER_MPIRUN to its path");
}

}  // namespace fibermpi
