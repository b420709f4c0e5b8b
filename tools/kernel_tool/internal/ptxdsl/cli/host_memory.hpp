#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

// How much host memory this process may still take, for the commands that refuse a problem too
// large for it before allocating (an OOM kill says nothing).
namespace ptxdsl::cli {

struct HostMemory {
  std::uint64_t bytes = 0;
  std::string
      limited_by;  // what set it: "free memory (MemAvailable)", "the memory cgroup ...", ...
};

// The least of /proc/meminfo's MemAvailable, what the memory cgroups this process is in leave
// (their limits less their usage, reclaimable page cache counted as free, at every level up to
// the root; cgroup v2 memory.max, v1 memory.limit_in_bytes) and RLIMIT_AS.
HostMemory host_memory_available();

// The cgroup part, from the text of /proc/self/cgroup and /proc/self/mountinfo (the tests give
// their own, over folders of their own): nothing where no level has a limit.
std::optional<HostMemory> cgroup_memory_available(std::string_view proc_self_cgroup,
                                                  std::string_view mountinfo);

}  // namespace ptxdsl::cli
