// A fresh directory under the system temp directory for a test's files, removed with its
// contents at scope exit.
#pragma once

#include <stdlib.h>  // mkdtemp

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace memplan::test {

class TempDir {
 public:
  // memplan_<tag>_XXXXXX, made by mkdtemp.
  explicit TempDir(const std::string& tag) {
    std::string tmpl = (std::filesystem::temp_directory_path() / ("memplan_" + tag + "_XXXXXX")).string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // The path of `name` in the directory, as a string: dir.file("a.npy") or dir / "a.npy".
  std::string file(const std::string& name) const { return (path / name).string(); }
  std::string operator/(const std::string& name) const { return file(name); }

  // The names of what the directory holds.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(path)) names.push_back(e.path().filename().string());
    return names;
  }

  std::filesystem::path path;
};

}  // namespace memplan::test
