#pragma once

#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

namespace ptxdsl::test {

// A folder of files for one test case under /tmp, removed with what is in it.
class Scratch {
 public:
  explicit Scratch(const std::string& what = "test") {
    std::string pattern = "/tmp/ptxdsl-" + what + "-XXXXXX";
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    dir_ = pattern;
  }
  ~Scratch() {
    std::error_code ignored;  // a destructor must not throw; /tmp is cleaned eventually anyway
    std::filesystem::remove_all(dir_, ignored);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  const std::string& dir() const { return dir_; }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  // Writes `text` to the file `name` (its folders made as needed), with `mode`; its path.
  std::string file(const std::string& name, const std::string& text, mode_t mode = 0644) const {
    const std::string p = path(name);
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    {
      std::ofstream out(p, std::ios::binary | std::ios::trunc);
      out << text;
      REQUIRE(out.good());
    }
    REQUIRE(chmod(p.c_str(), mode) == 0);
    return p;
  }
  // The folder's entries, sorted (read in this process: test cases run in parallel).
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      out.push_back(entry.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  std::string dir_;
};

}  // namespace ptxdsl::test
