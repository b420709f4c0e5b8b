#pragma once

#include <string>
#include <string_view>

// A file a command writes whole, once its work is done (emit -o, bench --json, tune --out, a
// kernel tool's emit -o). Every writer goes through it, for these guarantees (docs/cli.md, "Output
// files"):
// - checked when constructed, before the work: a directory, a missing folder, or a folder or file
//   that cannot be written fails at once;
// - a regular file is written to a temporary beside it (FILE.tmp-XXXXXX), synced, and renamed over
//   it: on a failure (a full disk, a file size limit) or SIGINT, SIGTERM or SIGHUP, the old file
//   stays whole and the temporary is removed; the new file keeps the old one's mode and owner;
// - a symbolic link is followed: the file it names is replaced, and the link stays a link;
// - a file with other hard links is written in place, so that every name sees the new text: the
//   text is first written whole to a temporary beside it (which shows that the disk has room),
//   and should the in-place write still fail, the old text is written back;
// - anything that is not a regular file (/dev/null, /dev/full, a FIFO, a terminal) and the file
//   that stdout or stderr already is (/dev/stdout) is written in place, as a stream.
namespace ptxdsl::cli {

class OutputFile {
 public:
  explicit OutputFile(std::string path);
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();
  // Writes `text` as the whole of the file; a runtime_error naming the file and why, on failure.
  void commit(std::string_view text);

 private:
  enum class Way { Replace, LinkedInPlace, Stream };
  void open_temp();
  // mkostemp on temp_'s pattern, tracked for the signal handlers; 0 or the errno.
  int make_tracked_temp();
  void drop_temp();
  void replace(std::string_view text);
  void write_linked(std::string_view text);
  void write_stream(std::string_view text) const;
  [[noreturn]] void fail(int error, std::string_view detail = {}) const;

  std::string path_;    // as given, for messages and for streams
  std::string target_;  // the file it names, symbolic links followed
  Way way_ = Way::Replace;
  int stream_fd_ = -1;  // stdout or stderr, where the file is one of them
  std::string temp_;
  int temp_fd_ = -1;
  bool committed_ = false;
};

// `text` as the whole of the file at `path`, through OutputFile.
void write_text_file(const std::string& path, std::string_view text);

}  // namespace ptxdsl::cli
