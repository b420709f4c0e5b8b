#pragma once

#include <cstdint>

#include "ptxdsl/dsl/kernel.hpp"

// A warpgroup: 4 consecutive warps (128 threads, warps 4g ... 4g + 3), the unit wgmma.mma_async
// computes with and warp-specialized kernels give roles (a producer group, consumer groups) to.
namespace ptxdsl {

inline constexpr std::uint32_t kWarpgroupThreads = 128;

struct Warpgroup {
  Reg<U32> index;   // which warpgroup of the CTA: tid / 128
  Reg<U32> thread;  // the thread within it: tid % 128
  Reg<U32> warp;    // the warp within it: 0-3
  Reg<U32> lane;    // the lane within the warp

  // The warpgroup of thread `tid` (a linear thread index).
  static Warpgroup of(Kernel& k, Reg<U32> tid) {
    const Reg<U32> thread = k.and_(tid, kWarpgroupThreads - 1);
    return {k.shr(tid, 7u), thread, k.shr(thread, 5u), k.and_(tid, 31u)};
  }
};

}  // namespace ptxdsl
