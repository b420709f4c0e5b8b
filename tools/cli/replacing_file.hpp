#pragma once

#include <string>

// A file written whole or not at all: a temporary beside it, renamed over it once the text is
// complete, so that a run that fails midway leaves the old file as it was. Created on
// construction, so that a path that cannot be written fails before the work does.
namespace ptxdsl::cli {

class ReplacingFile {
 public:
  explicit ReplacingFile(std::string path);
  ReplacingFile(const ReplacingFile&) = delete;
  ReplacingFile& operator=(const ReplacingFile&) = delete;
  ~ReplacingFile();
  void commit(const std::string& text);

 private:
  [[noreturn]] void fail() const;
  std::string path_, temp_;
  bool committed_ = false;
};

}  // namespace ptxdsl::cli
