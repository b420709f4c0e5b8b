// `run`'s host memory check: its estimate bounds the peak a run really holds, it reads the memory
// cgroup's limit (v1 and v2, every level), and sizes past 64 bits are refused, not wrapped.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "ptxdsl/cli/host_memory.hpp"
#include "run_binary.hpp"
#include "scratch.hpp"
#include "skip.hpp"

#ifndef PTXDSL_CLI
#error "PTXDSL_CLI must name the ptxdsl binary"
#endif

namespace {

using ptxdsl::cli::cgroup_memory_available;
using ptxdsl::test::Result;
using ptxdsl::test::run_argv;

std::string ptxdsl_binary() {
  return ptxdsl::test::binary_path("PTXDSL_CLI", PTXDSL_CLI);
}

// A cgroup file system's files, written where the test points the check.
class FakeCgroups {
 public:
  void write(const std::string& path, const std::string& text) const {
    scratch_.file(path.substr(1), text);
  }
  const std::string& root() const { return scratch_.dir(); }

 private:
  ptxdsl::test::Scratch scratch_{"cgroup-test"};
};

constexpr std::uint64_t kMiB = 1 << 20;

}  // namespace

TEST_CASE("the memory cgroup's limit less its use, at the tightest level", "[tools]") {
  const FakeCgroups fake;
  const std::string v2 = fake.root() + "/v2", v1 = fake.root() + "/v1";
  // v2: the parent's limit is the tighter; page cache it may reclaim counts as free.
  fake.write("/v2/user/memory.max", std::to_string(3000 * kMiB) + "\n");
  fake.write("/v2/user/memory.current", std::to_string(1000 * kMiB) + "\n");
  fake.write("/v2/user/memory.stat", "anon 1\ninactive_file " + std::to_string(200 * kMiB) + "\n");
  fake.write("/v2/user/job/memory.max", "max\n");
  fake.write("/v2/user/job/memory.current", std::to_string(500 * kMiB) + "\n");
  const std::string v2_mounts = "40 30 0:37 / " + v2 + " rw,relatime - cgroup2 cgroup2 rw\n";
  const auto m2 = cgroup_memory_available("0::/user/job\n", v2_mounts);
  REQUIRE(m2.has_value());
  CHECK(m2->bytes == 2200 * kMiB);
  CHECK(m2->limited_by.find(v2 + "/user ") != std::string::npos);
  // v1, in a container whose mount's root is its own cgroup; "no limit" is a huge number.
  fake.write("/v1/memory.limit_in_bytes", std::to_string(2900 * kMiB) + "\n");
  fake.write("/v1/memory.usage_in_bytes", std::to_string(100 * kMiB) + "\n");
  fake.write("/v1/memory.stat", "total_inactive_file 0\n");
  const std::string v1_mounts =
      "34 30 0:31 /docker/abc " + v1 + " rw,relatime - cgroup cgroup rw,memory\n";
  const auto m1 = cgroup_memory_available("4:memory:/docker/abc\n1:cpu:/\n", v1_mounts);
  REQUIRE(m1.has_value());
  CHECK(m1->bytes == 2800 * kMiB);
  fake.write("/v1/memory.limit_in_bytes", "9223372036854771712\n");
  CHECK_FALSE(cgroup_memory_available("4:memory:/docker/abc\n", v1_mounts).has_value());
  // Neither mounted, or no memory controller: no cgroup limit.
  CHECK_FALSE(cgroup_memory_available("0::/user/job\n", "").has_value());
  CHECK_FALSE(cgroup_memory_available("", v2_mounts).has_value());
}

TEST_CASE("run refuses a run its memory cgroup's limit would end in an OOM kill", "[tools]") {
  // A cgroup of our own below this process's (v1 or v2), where the machine lets root make one.
  std::string folder;
  {
    std::ifstream cgroup("/proc/self/cgroup"), mounts("/proc/self/mountinfo");
    std::string line, v1_path, v2_path;
    while (std::getline(cgroup, line)) {
      const auto first = line.find(':'), second = line.find(':', first + 1);
      const std::string controllers = line.substr(first + 1, second - first - 1);
      if ((',' + controllers + ',').find(",memory,") != std::string::npos) {
        v1_path = line.substr(second + 1);
      }
      if (line.rfind("0::", 0) == 0) v2_path = line.substr(3);
    }
    while (std::getline(mounts, line) && folder.empty()) {
      std::istringstream f(line);
      std::string id, parent, dev, root, point, rest;
      f >> id >> parent >> dev >> root >> point;
      const bool v1 = line.find(" - cgroup ") != std::string::npos &&
                      line.find(",memory") != std::string::npos && !v1_path.empty();
      const bool v2 = line.find(" - cgroup2 ") != std::string::npos && !v2_path.empty() &&
                      std::ifstream(point + v2_path + "/memory.max").good();
      if (!v1 && !v2) continue;
      std::string below = v1 ? v1_path : v2_path;
      if (root != "/") below = below.rfind(root, 0) == 0 ? below.substr(root.size()) : "";
      folder = point + below;
    }
  }
  const std::string mine = folder + "/ptxdsl-test-" + std::to_string(getpid());
  if (folder.empty() || mkdir(mine.c_str(), 0755) != 0) {
    PTXDSL_SKIP("no memory cgroup can be made here (needs root and a writable cgroupfs)");
  }
  const bool v1 = std::ifstream(mine + "/memory.limit_in_bytes").good();
  const std::string limit = mine + (v1 ? "/memory.limit_in_bytes" : "/memory.max");
  // cgroup v2 gives a child a limit only where its parent enables the controller for children.
  if (!std::ifstream(limit).good()) {
    rmdir(mine.c_str());
    PTXDSL_SKIP("the cgroup made here has no memory limit to set (" << limit << ")");
  }
  std::ofstream(limit) << (300 * kMiB) << "\n";
  ptxdsl::test::ChildSetup inside;
  inside.cgroup_procs = mine + "/cgroup.procs";
  // About 390 MiB at its peak: without the cgroup's limit in the check, the OOM killer ends it.
  const Result r = run_argv(
      ptxdsl_binary(),
      {"run", "rms_fwd", "--cpu", "--dtype", "f32", "--width", "8192", "--batch", "1024"}, inside);
  rmdir(mine.c_str());
  CAPTURE(r.err);
  CHECK(r.status == 1);
  CHECK(r.err.find("is available (limited by the memory cgroup " + mine) != std::string::npos);
}

TEST_CASE("run's memory estimate bounds the peak the run holds", "[tools][executor][slow]") {
  // The estimate is read from the refusal under a small address-space limit, then the run is
  // measured without one.
#if defined(__SANITIZE_ADDRESS__)
  // An AddressSanitizer binary reserves terabytes of address space and doubles its peak: neither
  // the limit nor the peak says anything about the estimate there.
  PTXDSL_SKIP("the binaries run under AddressSanitizer");
#endif
  const std::vector<std::vector<std::string>> cases = {
      {"rms_fwd", "--dtype", "f32", "--width", "8192", "--batch", "512"},
      {"ln_bwd", "--dtype", "bf16", "--width", "1001", "--stride", "1008", "--batch", "2048"},
      {"ln_fwd", "--dtype", "f16", "--width", "2048", "--batch", "1024", "--residual", "add"},
      {"rms_bwd", "--dtype", "f32", "--width", "4096", "--batch", "512", "--residual", "add"},
  };
  for (std::vector<std::string> args : cases) {
    args.insert(args.begin(), "run");
    args.push_back("--cpu");
    CAPTURE(args);
    ptxdsl::test::ChildSetup limited;
    limited.address_space = 48 * kMiB;
    const Result refused = run_argv(ptxdsl_binary(), args, limited);
    std::smatch m;
    REQUIRE(std::regex_search(refused.err, m, std::regex("needs about ([0-9]+) MiB")));
    const std::uint64_t estimate = std::stoull(m[1].str()) * kMiB;
    const Result ran = run_argv(ptxdsl_binary(), args);
    CAPTURE(ran.err, ran.max_rss_bytes >> 20, estimate >> 20);
    REQUIRE(ran.status == 0);
    CHECK(ran.max_rss_bytes <= estimate);
    // And not far above it: an estimate that refuses runs that fit is of no use either.
    CHECK(estimate < ran.max_rss_bytes + ran.max_rss_bytes / 2 + 64 * kMiB);
  }
}

TEST_CASE("run refuses sizes whose memory does not fit 64 bits, as bad input", "[tools]") {
  const Result r =
      run_argv(ptxdsl_binary(), {"run", "rms_fwd", "--cpu", "--dtype", "f32", "--width", "64",
                                 "--batch", "1073741824", "--stride", "429496728"});
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("need more host memory than 2^64 bytes") != std::string::npos);
  CHECK(r.err.find("bad_alloc") == std::string::npos);
}
