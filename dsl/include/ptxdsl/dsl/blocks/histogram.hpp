#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "ptxdsl/dsl/kernel.hpp"

// A block-wide histogram of u32 keys: the CTA counts into `bins` u32 counters in shared memory
// with shared-memory atomics (cheap, and contended only within the CTA), then adds its counts to
// the global ones with one `red.global.add.u32` per bin it saw: one global reduction a CTA.
namespace ptxdsl {

class BlockHistogram {
 public:
  // Declares the shared bins (`name`, bins · 4 bytes) and zeroes them: every thread of the
  // CTA's `block` threads (`tid` in [0, block)) runs this, then a bar.sync. bins in [1, 12288]
  // (48 KiB, the static shared memory a CTA may declare).
  BlockHistogram(Kernel& k, std::uint32_t bins, std::uint32_t block, Reg<U32> tid,
                 std::string_view name = "histogram");

  // `red.shared.add.u32 [bins + key], 1` where key < bins (and `p`, when given); a key at or past
  // the bin count is not counted.
  void count(Kernel& k, Reg<U32> key) const;
  void count_if(Kernel& k, Pred p, Reg<U32> key) const;

  // bar.sync, then this CTA's counts added to `counts` (bins u32 in global memory): thread t
  // adds bins t, t + block, ..., each with one red.global.add.u32 where its count is not 0.
  void flush(Kernel& k, GlobalPtr<U32> counts) const;

  std::uint32_t bins() const { return bins_; }
  SharedPtr<U32> shared() const { return shared_; }

 private:
  // Runs `body(bin)` for bins tid, tid + block, ... below the bin count.
  void each_bin(Kernel& k, const std::function<void(Reg<U32>)>& body) const;

  std::uint32_t bins_;
  std::uint32_t block_;
  Reg<U32> tid_;
  SharedPtr<U32> shared_;
};

}  // namespace ptxdsl
