#include "replacing_file.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace ptxdsl::cli {

ReplacingFile::ReplacingFile(std::string path)
    : path_(std::move(path)), temp_(path_ + ".tmp-XXXXXX") {
  const int fd = mkstemp(temp_.data());
  if (fd < 0) fail();
  // mkstemp's 0600 would replace the file's usual mode; take the one a new file would get.
  const mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  close(fd);
}

ReplacingFile::~ReplacingFile() {
  if (!committed_) std::remove(temp_.c_str());
}

void ReplacingFile::commit(const std::string& text) {
  std::ofstream out(temp_, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out || std::rename(temp_.c_str(), path_.c_str()) != 0) fail();
  committed_ = true;
}

void ReplacingFile::fail() const {
  throw std::runtime_error(fmt::format("cannot write '{}': {}", path_, std::strerror(errno)));
}

}  // namespace ptxdsl::cli
