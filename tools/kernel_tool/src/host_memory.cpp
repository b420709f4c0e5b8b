#include "ptxdsl/cli/host_memory.hpp"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

namespace ptxdsl::cli {
namespace {

std::string read_small_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<std::uint64_t> parse_bytes(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  std::uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

// `key`'s value in a memory.stat file ("key value" lines), or 0.
std::uint64_t stat_value(const std::string& path, std::string_view key) {
  std::istringstream lines(read_small_file(path));
  std::string name;
  std::uint64_t value = 0;
  while (lines >> name >> value) {
    if (name == key) return value;
  }
  return 0;
}

std::vector<std::string_view> split(std::string_view text, char by) {
  std::vector<std::string_view> parts;
  for (std::size_t at = 0;;) {
    const std::size_t end = text.find(by, at);
    parts.push_back(text.substr(at, end == std::string_view::npos ? end : end - at));
    if (end == std::string_view::npos) return parts;
    at = end + 1;
  }
}

// A version of the cgroup interface: where it is and what its files are called.
struct CgroupFiles {
  bool v2;
  const char* limit;  // "max" or a huge number: none
  const char* usage;
  const char* reclaimable;  // memory.stat's inactive page cache, which the kernel frees first
};
constexpr CgroupFiles kV2 = {true, "memory.max", "memory.current", "inactive_file"};
constexpr CgroupFiles kV1 = {false, "memory.limit_in_bytes", "memory.usage_in_bytes",
                             "total_inactive_file"};
// v1 writes "no limit" as the largest page-aligned signed 64-bit number.
constexpr std::uint64_t kV1NoLimit = std::uint64_t{1} << 62;

// The folder this process's cgroup of `files` is, through the mount of its hierarchy (whose root
// may itself be a cgroup below the hierarchy's, in a container).
std::optional<std::string> cgroup_folder(const CgroupFiles& files,
                                         std::string_view proc_self_cgroup,
                                         std::string_view mountinfo, std::string& mount_point) {
  std::optional<std::string> path;
  for (std::string_view line : split(proc_self_cgroup, '\n')) {
    const std::vector<std::string_view> f = split(line, ':');
    if (f.size() < 3) continue;
    const std::vector<std::string_view> controllers = split(f[1], ',');
    const bool memory =
        std::find(controllers.begin(), controllers.end(), "memory") != controllers.end();
    if (files.v2 ? f[0] == "0" && f[1].empty() : memory) {
      // The path may hold ':' itself.
      path = std::string(line.substr(f[0].size() + f[1].size() + 2));
    }
  }
  if (!path) return std::nullopt;
  for (std::string_view line : split(mountinfo, '\n')) {
    const std::size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    const std::vector<std::string_view> before = split(line.substr(0, dash), ' ');
    const std::vector<std::string_view> after = split(line.substr(dash + 3), ' ');
    if (before.size() < 5 || after.size() < 3) continue;
    const std::vector<std::string_view> options = split(after[2], ',');
    const bool match = files.v2 ? after[0] == "cgroup2"
                                : after[0] == "cgroup" && std::find(options.begin(), options.end(),
                                                                    "memory") != options.end();
    if (!match) continue;
    const std::string_view root = before[3];
    mount_point = std::string(before[4]);
    std::string below = *path;
    if (root != "/") {
      below = below.starts_with(root) ? below.substr(root.size()) : std::string();
    }
    if (!below.empty() && below.back() == '/') below.pop_back();
    return mount_point + below;
  }
  return std::nullopt;
}

std::optional<HostMemory> cgroup_available(const CgroupFiles& files,
                                           std::string_view proc_self_cgroup,
                                           std::string_view mountinfo) {
  std::string mount_point;
  const std::optional<std::string> folder =
      cgroup_folder(files, proc_self_cgroup, mountinfo, mount_point);
  if (!folder) return std::nullopt;
  std::optional<HostMemory> least;
  for (std::string dir = *folder;;) {
    const std::string limit_text = read_small_file(dir + "/" + files.limit);
    const std::optional<std::uint64_t> limit = parse_bytes(limit_text);
    if (limit && (files.v2 || *limit < kV1NoLimit)) {
      const std::uint64_t usage = parse_bytes(read_small_file(dir + "/" + files.usage)).value_or(0);
      const std::uint64_t cache = stat_value(dir + "/memory.stat", files.reclaimable);
      const std::uint64_t held = usage - std::min(usage, cache);
      const std::uint64_t left = *limit - std::min(*limit, held);
      if (!least || left < least->bytes) {
        least = HostMemory{left, fmt::format("the memory cgroup {} ({} of {} MiB in use)", dir,
                                             held >> 20, *limit >> 20)};
      }
    }
    if (dir.size() <= mount_point.size()) break;
    dir = dir.substr(0, dir.rfind('/'));
    if (dir.size() < mount_point.size()) break;
  }
  return least;
}

}  // namespace

std::optional<HostMemory> cgroup_memory_available(std::string_view proc_self_cgroup,
                                                  std::string_view mountinfo) {
  std::optional<HostMemory> least;
  for (const CgroupFiles* files : {&kV2, &kV1}) {
    const std::optional<HostMemory> m = cgroup_available(*files, proc_self_cgroup, mountinfo);
    if (m && (!least || m->bytes < least->bytes)) least = m;
  }
  return least;
}

HostMemory host_memory_available() {
  HostMemory m{std::numeric_limits<std::uint64_t>::max(), "nothing"};
  std::istringstream meminfo(read_small_file("/proc/meminfo"));
  for (std::string line; std::getline(meminfo, line);) {
    std::istringstream fields(line);
    std::string key;
    std::uint64_t kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:")
      m = {kib * 1024, "free memory (MemAvailable)"};
  }
  if (m.limited_by == "nothing") {
    const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0)
      m = {static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page), "free memory"};
  }
  const std::optional<HostMemory> cgroup = cgroup_memory_available(
      read_small_file("/proc/self/cgroup"), read_small_file("/proc/self/mountinfo"));
  if (cgroup && cgroup->bytes < m.bytes) m = *cgroup;
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      limit.rlim_cur < m.bytes) {
    m = {limit.rlim_cur, "the address-space limit (ulimit -v)"};
  }
  return m;
}

}  // namespace ptxdsl::cli
