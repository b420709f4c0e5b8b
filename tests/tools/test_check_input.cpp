// `check --ptx FILE` on hostile input: long lines, folders, endless files, bad targets, a program
// that is not ptxas or one that hangs; and a seeded fuzzer over PTX files and ptxas reports. Each
// ends in a table or one clean error, never a crash or a hang.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "run_binary.hpp"
#include "scratch.hpp"

#if !defined(PTXDSL_TEST_TOOL) || !defined(PTXDSL_CLI)
#error "PTXDSL_TEST_TOOL and PTXDSL_CLI must name the test tool and the ptxdsl binary"
#endif

namespace {

using ptxdsl::test::Result;
using ptxdsl::test::run_argv;

std::string ptxdsl_binary() {
  return ptxdsl::test::binary_path("PTXDSL_CLI", PTXDSL_CLI);
}
std::string tool_binary() {
  return ptxdsl::test::binary_path("PTXDSL_TEST_TOOL", PTXDSL_TEST_TOOL);
}

using Scratch = ptxdsl::test::Scratch;

std::string module(const std::string& target, const std::string& entry) {
  return ".version 7.8\n.target " + target + "\n.address_size 64\n\n.visible .entry " + entry +
         "()\n{\n\tret;\n}\n";
}

// A failure is one line of ours at the end of stderr (ptxas's log may come before it).
ptxdsl::test::ChildSetup with_env(std::string assignment) {
  ptxdsl::test::ChildSetup setup;
  setup.environment.push_back(std::move(assignment));
  return setup;
}

bool ends_in_one_error(const Result& r, const std::string& tool = "ptxdsl") {
  if (r.err.empty() || r.err.back() != '\n') return false;
  const std::size_t start = r.err.rfind('\n', r.err.size() - 2);
  const std::string last = r.err.substr(start == std::string::npos ? 0 : start + 1);
  return last.rfind(tool + ": ", 0) == 0;
}

}  // namespace

TEST_CASE("check --ptx takes an entry name 50,000 characters long", "[tools][ptxas]") {
  // ptxas's report names the entry on one line, which overflowed a regex's stack (SIGSEGV).
  const Scratch scratch("check-test");
  const std::string name(50000, 'k');
  const std::string file = scratch.file("long.ptx", module("sm_90", name));
  for (const std::string& tool : {ptxdsl_binary(), tool_binary()}) {
    CAPTURE(tool);
    const Result r = run_argv(tool, {"check", "--ptx", file});
    CHECK(r.status == 0);
    CHECK(r.out.find("sm_90: OK") != std::string::npos);
    CHECK(r.out.find(name) != std::string::npos);
  }
}

TEST_CASE("check --ptx refuses what it cannot read or assemble, in one line", "[tools][ptxas]") {
  const Scratch scratch("check-test");
  const std::string good = scratch.file("good.ptx", module("sm_90", "k"));
  struct Case {
    std::vector<std::string> args;
    int status;
    const char* says;
  };
  const std::string folder = scratch.dir() + "/adir.ptx";
  REQUIRE(mkdir(folder.c_str(), 0755) == 0);
  const std::string nul_target = scratch.file("nul.ptx", module(std::string("sm_9\0\"0", 7), "k"));
  const std::string no_target = scratch.file("none.ptx", "hello\n");
  const Case cases[] = {
      // A folder cannot be read: a run-time failure, as a missing file is.
      {{"check", "--ptx", folder}, 1, "cannot read '"},
      {{"check", "--ptx", folder}, 1, "Is a directory"},
      // An endless input is cut off with a message, not read until the OOM killer comes.
      {{"check", "--ptx", "/dev/zero"}, 1, "cannot read '/dev/zero': it is longer than 256 MiB"},
      // Targets: the command line's are usage errors naming what is allowed.
      {{"check", "--ptx", good, "--arch", "bogus"}, 2, "sm_80, sm_90"},
      {{"check", "--ptx", good, "--arch", "sm_99"}, 2, "knows no target 'sm_99'"},
      {{"check", "--ptx", nul_target}, 2, "has .target 'sm_9\\x00\"0'"},
      {{"check", "--ptx", no_target}, 2, "has no .target line"},
      {{"check", "--ptx", good, "--ptxas-timeout", "0"}, 2, "--ptxas-timeout must be in [1, "},
      {{"check", "rms_fwd", "--width", "64", "--dtype", "f32", "--device", "99999999999999999999"},
       2,
       "--device"},
      {{"emit", "rms_fwd", "--width", "64", "--dtype", "f32", "--device", "99999999999999999999"},
       2,
       "--device"},
      {{"emit", "rms_fwd", "--width", "64", "--dtype", "f32", "--device", "0"}, 2, "preset"},
  };
  for (const Case& c : cases) {
    const Result r = run_argv(ptxdsl_binary(), c.args);
    CAPTURE(c.args, r.err);
    CHECK(r.status == c.status);
    CHECK(r.out.empty());
    CHECK(r.err.find(c.says) != std::string::npos);
    CHECK(ends_in_one_error(r));
    if (c.status == 2) CHECK(ptxdsl::test::lines(r.err) == 1);  // bad input is one line alone
    // No shell stands between us and ptxas, and the memory hint is for commands sized by options.
    CHECK(r.err.find("Unterminated") == std::string::npos);
    CHECK(r.err.find("--batch") == std::string::npos);
  }
}

TEST_CASE("check says when the program it ran is not ptxas, or does not finish", "[tools]") {
  const Scratch scratch("check-test");
  const std::string file = scratch.file("k.ptx", module("sm_90", "k"));
  // A program that prints no ptxas report did not assemble anything.
  const Result silent =
      run_argv(ptxdsl_binary(), {"check", "--ptx", file}, with_env("PTXDSL_PTXAS=/bin/true"));
  CHECK(silent.status == 1);
  CHECK(silent.out.empty());
  CHECK(silent.err.find("'/bin/true' exited 0 but printed no ptxas report") != std::string::npos);
  // One that hangs is killed at --ptxas-timeout.
  const std::string hang = scratch.file("hang.sh", "#!/bin/sh\nexec sleep 60\n", 0755);
  const auto start = std::chrono::steady_clock::now();
  const Result slow = run_argv(ptxdsl_binary(), {"check", "--ptx", file, "--ptxas-timeout", "1"},
                               with_env("PTXDSL_PTXAS=" + hang));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(slow.status == 1);
  CHECK(slow.err.find("did not finish within 1 s and was killed (--ptxas-timeout)") !=
        std::string::npos);
  CHECK(seconds < 30);
  const Result kernel = run_argv(tool_binary(), {"check", "scale", "--ptxas-timeout", "1"},
                                 with_env("PTXDSL_PTXAS=" + hang));
  CHECK(kernel.status == 1);
  CHECK(kernel.err.find("did not finish within 1 s") != std::string::npos);
}

TEST_CASE("options that would be ignored are refused", "[tools]") {
  struct Case {
    std::string tool;
    std::vector<std::string> args;
    const char* says;
  };
  const Case cases[] = {
      {ptxdsl_binary(),
       {"emit", "rms_fwd", "--width", "64", "--dtype", "f32", "--batch", "5"},
       "--json"},
      {tool_binary(), {"run", "scale", "--cpu", "--trace-limit", "5"}, "--trace"},
      {ptxdsl_binary(), {"tune", "--widths", ","}, "--widths: item 1 of ',' is empty"},
      {ptxdsl_binary(), {"tune", "--widths", "1024,"}, "--widths: item 2 of '1024,' is empty"},
      {ptxdsl_binary(),
       {"tune", "--dtype", "f16,,bf16"},
       "--dtype: item 2 of 'f16,,bf16' is empty"},
  };
  for (const Case& c : cases) {
    const Result r = run_argv(c.tool, c.args);
    CAPTURE(c.args, r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find(c.says) != std::string::npos);
  }
}

namespace {

// Random bytes in the shapes that break parsers: long runs, NULs, quotes, huge numbers, cut
// lines, and the report's and PTX's own words.
class Fuzz {
 public:
  explicit Fuzz(std::uint64_t seed) : rng_(seed) {}
  std::size_t pick(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_);
  }
  std::string words(const std::vector<std::string>& vocabulary, std::size_t count,
                    std::size_t longest_run) {
    std::string s;
    for (std::size_t i = 0; i < count; ++i) {
      switch (pick(5)) {
        case 0:
          s += std::string(1 + pick(longest_run), "k'0\n \"\\"[pick(7)]);
          break;
        case 1:
          s += static_cast<char>(pick(256));
          break;
        case 2:
          for (std::size_t d = 1 + pick(25); d > 0; --d) s += static_cast<char>('0' + pick(10));
          break;
        default:
          s += vocabulary[pick(vocabulary.size())];
          break;
      }
    }
    if (!s.empty() && pick(3) == 0) s.resize(pick(s.size()));
    return s;
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace

TEST_CASE("fuzzed PTX files and ptxas reports give a report or one clean error", "[tools][ptxas]") {
  const Scratch scratch("check-test");
  Fuzz fuzz(5151);
  const std::vector<std::string> ptx_words = {".version 7.8\n",
                                              ".target ",
                                              "sm_90",
                                              "sm_80",
                                              "sm_90a",
                                              "\n",
                                              ".address_size 64\n",
                                              ".visible .entry ",
                                              "k",
                                              "()\n{\n\tret;\n}\n",
                                              "{",
                                              "}",
                                              ";",
                                              "// comment\n",
                                              ".reg .b32 %r<4>;\n",
                                              ".target sm_90, debug\n"};
  const std::vector<std::string> report_words = {"ptxas info    : ",
                                                 "Compiling entry function '",
                                                 "' for 'sm_90'\n",
                                                 "Used ",
                                                 " registers",
                                                 ", ",
                                                 " bytes smem",
                                                 " bytes stack frame, ",
                                                 " bytes spill stores, ",
                                                 " bytes spill loads",
                                                 "\n",
                                                 "ptxas info    : 0 bytes gmem\n",
                                                 "Function properties for k\n",
                                                 "'"};
  const std::string report = scratch.dir() + "/report.txt";
  const std::string fake = scratch.file("fake-ptxas.sh", "#!/bin/sh\ncat '" + report + "'\n", 0755);
  const auto start = std::chrono::steady_clock::now();
  int files = 0;
  // At least 10 files (5 of them reports), then more while 6 seconds last, up to 40: a few
  // seconds of CI, and never fewer files on a loaded machine.
  while (files < 10 ||
         (std::chrono::steady_clock::now() - start < std::chrono::seconds(6) && files < 40)) {
    const bool real_ptxas = files % 2 == 0;
    std::string ptx = real_ptxas ? module(fuzz.pick(4) == 0 ? "sm_80" : "sm_90", "k") : "";
    ptx += fuzz.words(ptx_words, 1 + fuzz.pick(30), files % 5 == 0 ? 100000 : 40);
    const std::string file = scratch.file("fuzz.ptx", ptx);
    std::vector<std::string> args = {"check", "--ptx", file};
    if (fuzz.pick(3) == 0) args.insert(args.end(), {"--arch", fuzz.pick(2) ? "sm_90" : "sm_x"});
    ptxdsl::test::ChildSetup setup;
    if (!real_ptxas) {
      scratch.file("report.txt", fuzz.words(report_words, 1 + fuzz.pick(60), 2000));
      setup = with_env("PTXDSL_PTXAS=" + fake);
    }
    const Result r = run_argv(ptxdsl_binary(), args, setup);
    CAPTURE(files, ptx.substr(0, 300), r.err.substr(0, 500));
    REQUIRE(r.signal == 0);
    REQUIRE((r.status == 0 || r.status == 1 || r.status == 2));
    if (r.status == 0) {
      CHECK(r.out.find(": OK\n") != std::string::npos);
    } else {
      CHECK(ends_in_one_error(r));
    }
    ++files;
  }
}
