#include "fiber/function_ref.h"

#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fiber/errors.h"

// External linkage and noinline keep a real, distinct body in the executable's code segment.
__attribute__((noinline)) int function_ref_test_add_one(int value) { return value + 1; }
__attribute__((noinline)) int function_ref_test_twice(int value) { return value * 2; }

int function_ref_test_data = 42;

namespace {

using fiber::detail::build_id_of_file;
using fiber::detail::FunctionRef;
using fiber::detail::ModuleTable;

const void* address_of(int (*function)(int)) { return reinterpret_cast<const void*>(function); }

// A minimal 64-bit ELF file: header, one program header at offset 64, and one PT_NOTE segment
// holding a GNU build-id note. Tests corrupt single fields of it.
struct CraftedElf {
  Elf64_Ehdr header{};
  Elf64_Phdr note_segment{};
  Elf64_Nhdr note{};
  char note_name[4] = {'G', 'N', 'U', '\0'};
  unsigned char build_id[8] = {1, 2, 3, 4, 5, 6, 7, 8};

  static constexpr size_t kPhdrOffset = sizeof(Elf64_Ehdr);
  static constexpr size_t kNoteOffset = kPhdrOffset + sizeof(Elf64_Phdr);
  static constexpr size_t kNoteSize = sizeof(Elf64_Nhdr) + 4 + 8;

  CraftedElf() {
    std::memcpy(header.e_ident, ELFMAG, SELFMAG);
    header.e_ident[EI_CLASS] = ELFCLASS64;
    header.e_ident[EI_DATA] = ELFDATA2LSB;
    header.e_ident[EI_VERSION] = EV_CURRENT;
    header.e_type = ET_EXEC;
    header.e_machine = EM_X86_64;
    header.e_version = EV_CURRENT;
    header.e_phoff = kPhdrOffset;
    header.e_ehsize = sizeof(Elf64_Ehdr);
    header.e_phentsize = sizeof(Elf64_Phdr);
    header.e_phnum = 1;
    note_segment.p_type = PT_NOTE;
    note_segment.p_offset = kNoteOffset;
    note_segment.p_filesz = kNoteSize;
    note_segment.p_memsz = kNoteSize;
    note_segment.p_align = 4;
    note.n_namesz = 4;
    note.n_descsz = sizeof build_id;
    note.n_type = NT_GNU_BUILD_ID;
  }

  std::vector<char> bytes() const {
    std::vector<char> out(kNoteOffset + kNoteSize);
    std::memcpy(out.data(), &header, sizeof header);
    std::memcpy(out.data() + kPhdrOffset, &note_segment, sizeof note_segment);
    std::memcpy(out.data() + kNoteOffset, &note, sizeof note);
    std::memcpy(out.data() + kNoteOffset + sizeof note, note_name, sizeof note_name);
    std::memcpy(out.data() + kNoteOffset + sizeof note + sizeof note_name, build_id,
                sizeof build_id);
    return out;
  }
};

// Writes `elf` to a file under /tmp, returns build_id_of_file of it and deletes the file.
uint64_t build_id_of_crafted(const CraftedElf& elf, const std::string& tag) {
  const std::filesystem::path path =
      std::filesystem::path("/tmp") /
      ("fibermpi_function_ref_test_" + tag + "." + std::to_string(::getpid()));
  {
    const std::vector<char> bytes = elf.bytes();
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  const uint64_t id = build_id_of_file(path.string());
  std::filesystem::remove(path);
  EXPECT_FALSE(std::filesystem::exists(path));
  return id;
}

// The load base of the main executable, recovered from a known code address.
uintptr_t main_base() {
  const void* code = address_of(&function_ref_test_add_one);
  return reinterpret_cast<uintptr_t>(code) - ModuleTable::instance().encode(code).offset;
}

TEST(FunctionRefTest, FreeFunctionRoundTrips) {
  auto& table = ModuleTable::instance();
  const void* address = address_of(&function_ref_test_add_one);
  const FunctionRef ref = table.encode(address);
  EXPECT_EQ(ref.module_id, table.engine_module_id());
  EXPECT_NE(ref.offset, 0u);
  void* decoded = table.decode(ref);
  EXPECT_EQ(decoded, address);
  EXPECT_EQ(reinterpret_cast<int (*)(int)>(decoded)(41), 42);
}

TEST(FunctionRefTest, DistinctFunctionsGetDistinctReferences) {
  auto& table = ModuleTable::instance();
  const FunctionRef first = table.encode(address_of(&function_ref_test_add_one));
  const FunctionRef second = table.encode(address_of(&function_ref_test_twice));
  EXPECT_EQ(first.module_id, second.module_id);
  EXPECT_NE(first, second);
  EXPECT_EQ(table.encode(address_of(&function_ref_test_add_one)), first);
  EXPECT_EQ(reinterpret_cast<int (*)(int)>(table.decode(second))(21), 42);
}

TEST(FunctionRefTest, LibcFunctionRoundTrips) {
  auto& table = ModuleTable::instance();
  const void* address = reinterpret_cast<const void*>(&::strlen);
  const FunctionRef ref = table.encode(address);
  void* decoded = table.decode(ref);
  EXPECT_EQ(decoded, address);
  EXPECT_EQ(reinterpret_cast<size_t (*)(const char*)>(decoded)("hello"), 5u);

  Dl_info info{};
  ASSERT_NE(dladdr(address, &info), 0);
  ASSERT_NE(info.dli_fname, nullptr);
  const std::string library = info.dli_fname;
  if (library != ModuleTable::executable_path()) {
    EXPECT_NE(ref.module_id, table.engine_module_id());
    const uint64_t library_id = build_id_of_file(library);
    if (library_id != 0) {
      EXPECT_EQ(ref.module_id, library_id) << library;
    }
  }
}

TEST(FunctionRefTest, MainModuleIdMatchesBuildIdOnDisk) {
  const std::string executable = ModuleTable::executable_path();
  ASSERT_FALSE(executable.empty());
  EXPECT_TRUE(std::filesystem::exists(executable));
  const uint64_t id = ModuleTable::instance().engine_module_id();
  EXPECT_NE(id, 0u);
  EXPECT_EQ(id, build_id_of_file(executable));
  EXPECT_EQ(ModuleTable::instance().engine_module_id(), id);
}

TEST(FunctionRefTest, UnknownModuleIsRefused) {
  auto& table = ModuleTable::instance();
  FunctionRef ref = table.encode(address_of(&function_ref_test_add_one));
  ref.module_id ^= 0x5a5a5a5a5a5a5a5aull;
  try {
    table.decode(ref);
    FAIL() << "decode of an unknown module returned";
  } catch (const fiber::ProtocolError& error) {
    EXPECT_NE(std::string(error.what()).find("different binaries"), std::string::npos)
        << error.what();
  }
}

TEST(FunctionRefTest, OffsetOutsideCodeIsRefused) {
  auto& table = ModuleTable::instance();
  const uint64_t main_id = table.engine_module_id();
  EXPECT_THROW(table.decode(FunctionRef{main_id, uint64_t{1} << 60}), fiber::ProtocolError);
  EXPECT_THROW(table.decode(FunctionRef{main_id, ~uint64_t{0}}), fiber::ProtocolError);
  const uint64_t data_offset = reinterpret_cast<uintptr_t>(&function_ref_test_data) - main_base();
  EXPECT_THROW(table.decode(FunctionRef{main_id, data_offset}), fiber::ProtocolError);
}

TEST(FunctionRefTest, DataAddressIsNotEncoded) {
  auto& table = ModuleTable::instance();
  EXPECT_THROW(table.encode(&function_ref_test_data), fiber::Error);
  int local = 0;
  EXPECT_THROW(table.encode(&local), fiber::Error);
  EXPECT_THROW(table.encode(nullptr), fiber::Error);
  EXPECT_EQ(function_ref_test_data, 42);
}

TEST(FunctionRefTest, BuildIdOfUnreadableOrNonElfFileIsZero) {
  EXPECT_EQ(build_id_of_file("/nonexistent"), 0u);
  EXPECT_EQ(build_id_of_file(""), 0u);

  const auto path = std::filesystem::temp_directory_path() /
                    ("fibermpi_function_ref_test_not_elf." + std::to_string(::getpid()));
  {
    std::ofstream file(path, std::ios::binary);
    file << "\x7f"
         << "ELF" << std::string(200, 'x');
  }
  EXPECT_EQ(build_id_of_file(path.string()), 0u);
  std::filesystem::remove(path);
}

// The crafted file is well formed, so the corrupt variants below fail for the corrupted field.
TEST(FunctionRefTest, BuildIdOfCraftedElfIsFound) {
  EXPECT_NE(build_id_of_crafted(CraftedElf(), "valid"), 0u);
}

// Regression: an e_phoff near 2^64 wrapped the bounds check and read far outside the file.
TEST(FunctionRefTest, BuildIdWithProgramHeadersPastEndIsZero) {
  CraftedElf elf;
  elf.header.e_phoff = ~0ull - 15;
  EXPECT_EQ(build_id_of_crafted(elf, "huge_phoff"), 0u);

  elf.header.e_phoff = ~0ull;
  EXPECT_EQ(build_id_of_crafted(elf, "max_phoff"), 0u);

  // A program header that starts inside the file but runs past its end.
  elf.header.e_phoff = CraftedElf::kNoteOffset + CraftedElf::kNoteSize - 8;
  EXPECT_EQ(build_id_of_crafted(elf, "straddling_phdr"), 0u);
}

// Regression: a PT_NOTE whose p_offset or p_filesz lies past the end wrapped the bounds check.
TEST(FunctionRefTest, BuildIdWithNoteSegmentPastEndIsZero) {
  CraftedElf elf;
  elf.note_segment.p_offset = ~0ull - 7;
  EXPECT_EQ(build_id_of_crafted(elf, "huge_note_offset"), 0u);

  elf.note_segment.p_offset = ~0ull;
  elf.note_segment.p_filesz = 1;
  EXPECT_EQ(build_id_of_crafted(elf, "max_note_offset"), 0u);

  // p_offset + p_filesz wraps around to a small number.
  elf.note_segment.p_offset = CraftedElf::kNoteOffset;
  elf.note_segment.p_filesz = ~0ull - CraftedElf::kNoteOffset + 2;
  EXPECT_EQ(build_id_of_crafted(elf, "wrapping_note_size"), 0u);

  elf.note_segment.p_filesz = CraftedElf::kNoteSize + 1;
  EXPECT_EQ(build_id_of_crafted(elf, "long_note_size"), 0u);
}

}  // namespace
