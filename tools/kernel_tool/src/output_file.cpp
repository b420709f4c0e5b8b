#include "ptxdsl/cli/output_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <stdexcept>

namespace ptxdsl::cli {
namespace {

// The signals after which a temporary file is removed before the process ends as they say.
constexpr std::array kCleanedUpOn = {SIGINT, SIGTERM, SIGHUP};

// The temporaries that exist now, for the signal handler: it may only read what is there
// already, so the paths are fixed slots the writers fill and empty.
std::array<std::atomic<const char*>, 16> g_temporaries{};

void remove_temporaries_and_end(int signal) {
  for (std::atomic<const char*>& slot : g_temporaries) {
    if (const char* path = slot.load()) unlink(path);
  }
  // SA_RESETHAND made the disposition the default again: the raised signal ends the process once
  // the handler returns, with the status the signal gives.
  raise(signal);
}

void install_handlers_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    // A file size limit is then an error a write returns (EFBIG), not a kill that skips cleanup.
    std::signal(SIGXFSZ, SIG_IGN);
    for (int signal : kCleanedUpOn) {
      struct sigaction previous {};
      sigaction(signal, nullptr, &previous);
      // An ignored signal (nohup's SIGHUP) stays ignored: it ends nothing.
      if (previous.sa_handler == SIG_IGN) continue;
      struct sigaction action {};
      action.sa_handler = remove_temporaries_and_end;
      action.sa_flags = SA_RESETHAND;
      sigemptyset(&action.sa_mask);
      sigaction(signal, &action, nullptr);
    }
  });
}

void track(const std::string& temp) {
  for (std::atomic<const char*>& slot : g_temporaries) {
    const char* empty = nullptr;
    if (slot.compare_exchange_strong(empty, temp.c_str())) return;
  }
}

void untrack(const std::string& temp) {
  for (std::atomic<const char*>& slot : g_temporaries) {
    const char* mine = temp.c_str();
    slot.compare_exchange_strong(mine, nullptr);
  }
}

// Blocks kCleanedUpOn while alive: an in-place write runs to its end (or its undoing) first.
class SignalsHeld {
 public:
  SignalsHeld() {
    sigset_t set;
    sigemptyset(&set);
    for (int signal : kCleanedUpOn) sigaddset(&set, signal);
    pthread_sigmask(SIG_BLOCK, &set, &previous_);
  }
  ~SignalsHeld() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  SignalsHeld(const SignalsHeld&) = delete;
  SignalsHeld& operator=(const SignalsHeld&) = delete;

 private:
  sigset_t previous_;
};

// 0, or the errno of the write that failed.
int write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

int pwrite_all(int fd, std::string_view text) {
  off_t at = 0;
  while (!text.empty()) {
    const ssize_t n = pwrite(fd, text.data(), text.size(), at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    text.remove_prefix(static_cast<std::size_t>(n));
    at += n;
  }
  return 0;
}

// The file a path names, the symbolic links of its last component followed (a link to a file
// not there yet names where the file will be); 0 or the errno of the failure.
int follow_links(const std::string& path, std::string& target) {
  target = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (lstat(target.c_str(), &st) != 0) return errno == ENOENT ? 0 : errno;
    if (!S_ISLNK(st.st_mode)) return 0;
    std::string link(static_cast<std::size_t>(st.st_size > 0 ? st.st_size : 4096) + 1, '\0');
    const ssize_t n = readlink(target.c_str(), link.data(), link.size());
    if (n < 0) return errno;
    link.resize(static_cast<std::size_t>(n));
    if (link.starts_with('/')) {
      target = link;
    } else {
      const std::size_t slash = target.rfind('/');
      target = (slash == std::string::npos ? std::string() : target.substr(0, slash + 1)) + link;
    }
  }
  return ELOOP;
}

// The standard stream (1 or 2) that is the file `st` describes, or -1.
int standard_stream_of(const struct stat& st) {
  for (int fd : {STDOUT_FILENO, STDERR_FILENO}) {
    struct stat s {};
    if (fstat(fd, &s) == 0 && s.st_dev == st.st_dev && s.st_ino == st.st_ino) return fd;
  }
  return -1;
}

}  // namespace

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  install_handlers_once();
  struct stat st {};
  if (stat(path_.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) fail(EISDIR);
    stream_fd_ = standard_stream_of(st);
    if (!S_ISREG(st.st_mode) || stream_fd_ >= 0) {
      way_ = Way::Stream;
      if (stream_fd_ < 0 && access(path_.c_str(), W_OK) != 0) fail(errno);
      return;
    }
    if (st.st_nlink > 1) way_ = Way::LinkedInPlace;
  } else if (errno != ENOENT) {
    fail(errno);
  }
  if (const int error = follow_links(path_, target_); error != 0) fail(error);
  if (way_ == Way::LinkedInPlace) {
    if (access(target_.c_str(), W_OK) != 0) fail(errno);
    return;
  }
  open_temp();  // which shows that the folder exists and can be written
}

OutputFile::~OutputFile() {
  drop_temp();
}

void OutputFile::open_temp() {
  temp_ = target_ + ".tmp-XXXXXX";
  if (const int error = make_tracked_temp(); error != 0) {
    temp_.clear();
    fail(error);
  }
}

int OutputFile::make_tracked_temp() {
  // Held from its creation until it is tracked: a signal between the two would leave it behind.
  const SignalsHeld held;
  temp_fd_ = mkostemp(temp_.data(), O_CLOEXEC);
  if (temp_fd_ < 0) return errno;
  track(temp_);
  return 0;
}

void OutputFile::drop_temp() {
  if (temp_fd_ >= 0) close(temp_fd_);
  temp_fd_ = -1;
  if (temp_.empty()) return;
  unlink(temp_.c_str());
  untrack(temp_);
  temp_.clear();
}

void OutputFile::commit(std::string_view text) {
  if (committed_) throw std::logic_error("OutputFile::commit called twice");
  switch (way_) {
    case Way::Replace:
      replace(text);
      break;
    case Way::LinkedInPlace:
      write_linked(text);
      break;
    case Way::Stream:
      write_stream(text);
      break;
  }
  committed_ = true;
}

void OutputFile::replace(std::string_view text) {
  // Made like the file it replaces, where one is there by now; else mkstemp's 0600 becomes the
  // mode a new file gets.
  struct stat old {};
  if (stat(target_.c_str(), &old) == 0 && S_ISREG(old.st_mode)) {
    fchmod(temp_fd_, old.st_mode & 07777);
    if (fchown(temp_fd_, old.st_uid, old.st_gid) != 0) {
      // Only root gives a file away; anyone else's new file is theirs.
    }
  } else {
    const mode_t mask = umask(0);
    umask(mask);
    fchmod(temp_fd_, 0666 & ~mask);
  }
  int error = write_all(temp_fd_, text);
  if (error == 0 && fsync(temp_fd_) != 0) error = errno;
  if (error == 0) {
    const int fd = temp_fd_;
    temp_fd_ = -1;
    if (close(fd) != 0) error = errno;
  }
  if (error == 0 && rename(temp_.c_str(), target_.c_str()) != 0) error = errno;
  if (error != 0) {
    drop_temp();
    fail(error);
  }
  untrack(temp_);
  temp_.clear();
}

void OutputFile::write_linked(std::string_view text) {
  // The old text, to write back should the in-place write fail.
  std::string old;
  {
    const int fd = open(target_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(errno);
    std::array<char, 65536> buffer;
    for (;;) {
      const ssize_t n = read(fd, buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int error = errno;
        close(fd);
        fail(error);
      }
      if (n == 0) break;
      old.append(buffer.data(), static_cast<std::size_t>(n));
    }
    close(fd);
  }
  // The whole text in a temporary first: a full disk or a file size limit shows there, with the
  // file untouched. A folder that takes no new file leaves only the in-place write.
  temp_ = target_ + ".tmp-XXXXXX";
  if (make_tracked_temp() != 0) {
    temp_.clear();
  } else {
    int error = write_all(temp_fd_, text);
    if (error == 0 && fsync(temp_fd_) != 0) error = errno;
    drop_temp();  // its blocks go back for the write in place
    if (error != 0) fail(error);
  }
  const SignalsHeld held;
  const int fd = open(target_.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) fail(errno);
  int error = pwrite_all(fd, text);
  if (error == 0 && ftruncate(fd, static_cast<off_t>(text.size())) != 0) error = errno;
  if (error == 0 && fsync(fd) != 0) error = errno;
  if (error == 0) {
    if (close(fd) != 0) fail(errno);
    return;
  }
  const bool restored = pwrite_all(fd, old) == 0 &&
                        ftruncate(fd, static_cast<off_t>(old.size())) == 0 && fsync(fd) == 0;
  close(fd);
  fail(error, restored ? "its old text was written back"
                       : "writing its old text back failed too: it may be cut short");
}

void OutputFile::write_stream(std::string_view text) const {
  // What the command printed comes first where the file is its own stdout.
  std::cout.flush();
  std::fflush(stdout);
  const int fd =
      stream_fd_ >= 0 ? stream_fd_ : open(path_.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) fail(errno);
  const int error = write_all(fd, text);
  if (stream_fd_ < 0 && close(fd) != 0 && error == 0) fail(errno);
  if (error != 0) fail(error);
}

void OutputFile::fail(int error, std::string_view detail) const {
  throw std::runtime_error(fmt::format("cannot write '{}': {}{}{}", path_, std::strerror(error),
                                       detail.empty() ? "" : "; ", detail));
}

void write_text_file(const std::string& path, std::string_view text) {
  OutputFile(path).commit(text);
}

}  // namespace ptxdsl::cli
