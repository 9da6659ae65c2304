// A fresh folder under the system's temporary directory for one test, removed with everything in
// it when the test is done.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace fiber::k8s::testing {

class TempFolder {
 public:
  /// A folder named `<prefix>.` and six random characters (mkdtemp).
  explicit TempFolder(const std::string& prefix) {
    std::string name = (std::filesystem::temp_directory_path() / (prefix + ".XXXXXX")).string();
    if (mkdtemp(name.data()) == nullptr) throw std::runtime_error("cannot make a folder " + name);
    path_ = name;
  }
  ~TempFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace fiber::k8s::testing
