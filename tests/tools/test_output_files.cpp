// The files the tools write (emit -o, bench --json, tune --out, a kernel tool's emit -o), as
// docs/cli.md's "Output files" promises: nothing destroyed, nothing half written, nothing left
// behind. Device nodes are made in a scratch folder (as root), never the machine's own /dev.
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ptxdsl/runtime/driver.hpp"
#include "run_binary.hpp"
#include "scratch.hpp"
#include "skip.hpp"

#if !defined(PTXDSL_TEST_TOOL) || !defined(PTXDSL_CLI)
#error "PTXDSL_TEST_TOOL and PTXDSL_CLI must name the test tool and the ptxdsl binary"
#endif

namespace {

using ptxdsl::test::read_file;
using ptxdsl::test::Result;
using ptxdsl::test::run_argv;

std::string ptxdsl_binary() {
  return ptxdsl::test::binary_path("PTXDSL_CLI", PTXDSL_CLI);
}
std::string tool_binary() {
  return ptxdsl::test::binary_path("PTXDSL_TEST_TOOL", PTXDSL_TEST_TOOL);
}

const std::vector<std::string> kEmit = {"emit", "rms_fwd", "--width", "64", "--dtype", "f32"};
std::vector<std::string> emit_to(const std::string& path) {
  std::vector<std::string> args = kEmit;
  args.insert(args.end(), {"-o", path});
  return args;
}

using Scratch = ptxdsl::test::Scratch;

struct stat stat_of(const std::string& path, bool follow = true) {
  struct stat st {};
  REQUIRE((follow ? stat(path.c_str(), &st) : lstat(path.c_str(), &st)) == 0);
  return st;
}

const std::string kOld = "the old text\n";

}  // namespace

TEST_CASE("outputs that are not regular files are written in place, never replaced", "[tools]") {
  const Scratch scratch("output-test");
  // A FIFO needs no privilege: a reader takes what is written into it.
  const std::string fifo = scratch.path("pipe");
  REQUIRE(mkfifo(fifo.c_str(), 0644) == 0);
  const std::string got = scratch.path("from-pipe.ptx");
  REQUIRE(std::system(("cat '" + fifo + "' > '" + got + "' &").c_str()) == 0);
  const Result to_fifo = run_argv(ptxdsl_binary(), emit_to(fifo));
  CHECK(to_fifo.status == 0);
  CHECK(S_ISFIFO(stat_of(fifo).st_mode));
  for (int i = 0; i < 100 && read_file(got).find(".entry") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(read_file(got).find(".entry") != std::string::npos);

  // stdout by name: the output goes where stdout goes, after what was printed.
  const std::string to_stdout = scratch.path("stdout");
  REQUIRE(symlink("/proc/self/fd/1", to_stdout.c_str()) == 0);
  std::vector<std::string> args = emit_to(to_stdout);
  args.push_back("--json");
  const Result through_stdout = run_argv(ptxdsl_binary(), args);
  CHECK(through_stdout.status == 0);
  CHECK(through_stdout.out.find(".entry") != std::string::npos);
  CHECK(through_stdout.out.find("\"ptx_file\"") != std::string::npos);
  CHECK(S_ISLNK(stat_of(to_stdout, false).st_mode));
  const Result bench = run_argv(ptxdsl_binary(), {"bench", "--host", "--json", to_stdout});
  CHECK(bench.status == 0);
  CHECK(bench.out.find("host: PTX generation") < bench.out.find("\"ptx_generation\""));
  CHECK(S_ISLNK(stat_of(to_stdout, false).st_mode));

  // Device nodes of the machine's null and full devices, made here (as root only).
  const std::string null_dev = scratch.path("null"), full_dev = scratch.path("full");
  if (mknod(null_dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0 ||
      mknod(full_dev.c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0) {
    PTXDSL_SKIP("device nodes cannot be made here (not root): /dev/null and /dev/full untested");
  }
  for (const std::vector<std::string>& writer :
       {emit_to(null_dev), std::vector<std::string>{"bench", "--host", "--json", null_dev}}) {
    CAPTURE(writer);
    const Result r = run_argv(ptxdsl_binary(), writer);
    CHECK(r.status == 0);
    CHECK(S_ISCHR(stat_of(null_dev).st_mode));
  }
  const Result full = run_argv(ptxdsl_binary(), emit_to(full_dev));
  CHECK(full.status == 1);
  CHECK(full.err.find("cannot write '" + full_dev + "': No space left on device") !=
        std::string::npos);
  CHECK(S_ISCHR(stat_of(full_dev).st_mode));
  CHECK(scratch.names() ==
        std::vector<std::string>{"from-pipe.ptx", "full", "null", "pipe", "stdout"});
}

TEST_CASE("a symbolic link is followed, and the file it names replaced", "[tools]") {
  const Scratch scratch("output-test");
  REQUIRE(mkdir(scratch.path("real").c_str(), 0755) == 0);
  const std::string real = scratch.file("real/out.ptx", kOld);
  const std::string link = scratch.path("link.ptx");
  REQUIRE(symlink("real/out.ptx", link.c_str()) == 0);  // relative to the link's folder
  const Result r = run_argv(ptxdsl_binary(), emit_to(link));
  REQUIRE(r.status == 0);
  CHECK(S_ISLNK(stat_of(link, false).st_mode));
  CHECK(read_file(real).find(".entry") != std::string::npos);
  const Result bench = run_argv(ptxdsl_binary(), {"bench", "--host", "--json", link});
  REQUIRE(bench.status == 0);
  CHECK(S_ISLNK(stat_of(link, false).st_mode));
  CHECK(read_file(real).find("\"ptx_generation\"") != std::string::npos);
  // A link to a file not there yet: the file is made where the link points.
  const std::string dangling = scratch.path("new-link.ptx");
  REQUIRE(symlink(scratch.path("real/new.ptx").c_str(), dangling.c_str()) == 0);
  REQUIRE(run_argv(ptxdsl_binary(), emit_to(dangling)).status == 0);
  CHECK(S_ISLNK(stat_of(dangling, false).st_mode));
  CHECK(read_file(scratch.path("real/new.ptx")).find(".entry") != std::string::npos);
  CHECK(scratch.names() == std::vector<std::string>{"link.ptx", "new-link.ptx", "real"});
}

TEST_CASE("a replaced file keeps its mode, and its hard links", "[tools]") {
  const Scratch scratch("output-test");
  for (const mode_t mode : {mode_t{0600}, mode_t{0640}, mode_t{0755}}) {
    CAPTURE(mode);
    const std::string file = scratch.file("out.ptx", kOld);
    REQUIRE(chmod(file.c_str(), mode) == 0);
    REQUIRE(run_argv(ptxdsl_binary(), emit_to(file)).status == 0);
    CHECK((stat_of(file).st_mode & 07777) == mode);
    CHECK(read_file(file).find(".entry") != std::string::npos);
  }
  const std::string json = scratch.file("out.json", kOld);
  REQUIRE(chmod(json.c_str(), 0600) == 0);
  REQUIRE(run_argv(ptxdsl_binary(), {"bench", "--host", "--json", json}).status == 0);
  CHECK((stat_of(json).st_mode & 07777) == 0600);
  CHECK(read_file(json).find("\"ptx_generation\"") != std::string::npos);
  // Two names of one file: both see the new text, and they stay one file.
  const std::string a = scratch.file("a.ptx", kOld), b = scratch.path("b.ptx");
  REQUIRE(link(a.c_str(), b.c_str()) == 0);
  const std::vector<std::pair<std::string, std::vector<std::string>>> writers = {
      {ptxdsl_binary(), emit_to(a)},
      {tool_binary(), {"emit", "scale", "--n", "64", "-o", a}},
      {ptxdsl_binary(), {"bench", "--host", "--json", a}},
  };
  for (const auto& [tool, args] : writers) {
    CAPTURE(args);
    REQUIRE(run_argv(tool, args).status == 0);
    CHECK(stat_of(a).st_ino == stat_of(b).st_ino);
    CHECK(stat_of(a).st_nlink == 2);
    CHECK(read_file(b) != kOld);
    CHECK(read_file(b) == read_file(a));
  }
  CHECK(scratch.names() == std::vector<std::string>{"a.ptx", "b.ptx", "out.json", "out.ptx"});
}

TEST_CASE("a file size limit (EFBIG) leaves the old file whole, for every writer", "[tools]") {
  const Scratch scratch("output-test");
  ptxdsl::test::ChildSetup small;
  small.file_size = 512;  // the PTX and the JSON are longer; what is printed is shorter
  const std::vector<std::pair<std::string, std::vector<std::string>>> writers = {
      {ptxdsl_binary(), emit_to(scratch.path("out.ptx"))},
      {tool_binary(), {"emit", "scale", "--n", "64", "-o", scratch.path("out.ptx")}},
      {ptxdsl_binary(), {"bench", "--host", "--json", scratch.path("out.ptx")}},
  };
  // And with other hard links, where the file is written in place.
  const std::string linked = scratch.path("linked.ptx");
  for (const bool hard_link : {false, true}) {
    for (const auto& [tool, args] : writers) {
      CAPTURE(args, hard_link);
      const std::string file = scratch.file("out.ptx", kOld);
      if (hard_link) REQUIRE(link(file.c_str(), linked.c_str()) == 0);
      const Result r = run_argv(tool, args, small);
      CHECK(r.signal == 0);
      CHECK(r.status == 1);
      CHECK(r.err.find("cannot write '" + file + "': File too large") != std::string::npos);
      CHECK(read_file(file) == kOld);
      CHECK(scratch.names() == (hard_link ? std::vector<std::string>{"linked.ptx", "out.ptx"}
                                          : std::vector<std::string>{"out.ptx"}));
      std::remove(linked.c_str());
    }
  }
}

TEST_CASE("a full disk leaves the old file whole", "[tools]") {
  // A 64 KiB tmpfs in a mount namespace of its own, filled but for a few KiB.
  if (std::system("unshare -m true 2>/dev/null") != 0) {
    PTXDSL_SKIP("no private mount namespace here (unshare -m needs root): ENOSPC untested");
  }
  const Scratch scratch("output-test");
  const std::string script =
      scratch.file("full-disk.sh",
                   "set -e\n"
                   "mount -t tmpfs -o size=64k ptxdsl-test \"$1\"\n"
                   "printf 'the old text\\n' > \"$1/out.ptx\"\n"
                   "head -c 60000 /dev/zero > \"$1/filler\" || true\n"
                   "set +e\n"
                   "\"$2\" emit rms_fwd --width 64 --dtype f32 -o \"$1/out.ptx\" 2> \"$3/err\"\n"
                   "echo $? > \"$3/status\"\n"
                   "cat \"$1/out.ptx\" > \"$3/after\"\n"
                   "ls -A \"$1\" > \"$3/names\"\n");
  const std::string disk = scratch.path("disk");
  REQUIRE(mkdir(disk.c_str(), 0755) == 0);
  const std::string command = "unshare -m sh '" + script + "' '" + disk + "' '" + ptxdsl_binary() +
                              "' '" + scratch.dir() + "'";
  if (std::system(command.c_str()) != 0) {
    PTXDSL_SKIP("tmpfs cannot be mounted in a private mount namespace here: ENOSPC untested");
  }
  CHECK(read_file(scratch.path("status")) == "1\n");
  CHECK(read_file(scratch.path("err")).find("No space left on device") != std::string::npos);
  CHECK(read_file(scratch.path("after")) == kOld);
  CHECK(read_file(scratch.path("names")) == "filler\nout.ptx\n");
}

TEST_CASE("a folder, or a missing one, is refused before the work", "[tools]") {
  const Scratch scratch("output-test");
  REQUIRE(mkdir(scratch.path("adir").c_str(), 0755) == 0);
  const std::string dir = scratch.path("adir"), missing = scratch.path("no/such/x.json");
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const Case cases[] = {
      {{"bench", "--host", "--json", dir}, "cannot write '" + dir + "': Is a directory"},
      {{"bench", "--host", "--json", missing},
       "cannot write '" + missing + "': No such file or directory"},
      {{"tune", "rms_fwd", "--dtype", "f16", "--widths", "1024", "--out", dir},
       "cannot write '" + dir + "': Is a directory"},
      {emit_to(dir), "cannot write '" + dir + "': Is a directory"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const Result r = run_argv(ptxdsl_binary(), c.args);
    CHECK(r.status == 1);
    CHECK(r.err == "ptxdsl: error: " + c.says + "\n");
    CHECK(r.out.empty());  // bench --host measured nothing
  }
  CHECK(scratch.names() == std::vector<std::string>{"adir"});
}

TEST_CASE("SIGINT, SIGTERM and SIGHUP remove the temporary file and end the run", "[tools]") {
  const Scratch scratch("output-test");
  const std::string file = scratch.file("host.json", kOld);
  for (const int signal : {SIGINT, SIGTERM, SIGHUP}) {
    CAPTURE(signal);
    // bench --host measures for a second or more, with its temporary beside the file.
    ptxdsl::test::Child child =
        ptxdsl::test::start_argv(ptxdsl_binary(), {"bench", "--host", "--json", file});
    bool seen = false;
    for (int i = 0; i < 400 && !seen; ++i) {
      for (const std::string& name : scratch.names())
        seen = seen || name.find(".tmp-") != std::string::npos;
      if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    CHECK(seen);
    REQUIRE(kill(child.pid, signal) == 0);
    const Result r = ptxdsl::test::finish(child);
    CHECK(r.signal == signal);
    CHECK(read_file(file) == kOld);
    CHECK(scratch.names() == std::vector<std::string>{"host.json"});
  }
}
