#pragma once

#include <cstdint>
#include <string_view>

#include "ptxdsl/dsl/kernel.hpp"

// A ring of `stages` shared-memory buffers between producer threads (TMA copies in) and consumer
// threads (wgmma reads out), each stage handed over by two mbarriers: `full` completes when the
// producer has arrived and its copies' bytes have landed (the stage holds data), `empty` when
// every consumer has arrived (the stage may be overwritten). Each side walks the ring with its own
// Position: the stage, and how many times it has wrapped, whose parity is the phase a wait names.
namespace ptxdsl {

class MbarrierPipeline {
 public:
  // Where one side is in the ring: registers that `advance` updates in place (loop-carried).
  struct Position {
    Reg<U32> stage;
    Reg<U32> wraps;
  };

  // Declares the 2 × `stages` mbarriers, static shared arrays named `name`_full and `name`_empty.
  MbarrierPipeline(Kernel& k, std::uint32_t stages, std::string_view name = "pipeline");

  // One thread: every stage's full barrier awaits `producer_arrivals` arrivals (and the bytes
  // they announce), its empty one `consumer_arrivals`; then fence.mbarrier_init. A barrier of
  // every thread that uses the pipeline must follow before its first use.
  void init(Kernel& k, std::uint32_t producer_arrivals, std::uint32_t consumer_arrivals) const;

  // Stage 0 of the first pass.
  Position start(Kernel& k) const;
  // The next stage; past the last, stage 0 of the next pass.
  void advance(Kernel& k, const Position& at) const;

  SharedPtr<B64> full(Kernel& k, Reg<U32> stage) const;
  SharedPtr<B64> empty(Kernel& k, Reg<U32> stage) const;

  // Producer: waits until the consumers have released the stage in the pass before (the first
  // pass waits for nothing: the phase before the barrier's first counts as complete).
  void producer_acquire(Kernel& k, const Position& at) const;
  // Producer: arrives on the stage's full barrier announcing `bytes` of copies that complete on
  // it; the returned barrier is the one the copies name.
  SharedPtr<B64> producer_expect(Kernel& k, const Position& at, std::uint32_t bytes) const;
  // Consumer: waits until the stage's data has landed.
  void consumer_wait(Kernel& k, const Position& at) const;
  // Consumer: one arrival on the stage's empty barrier (of `consumer_arrivals`).
  void consumer_release(Kernel& k, Reg<U32> stage) const;

  std::uint32_t stages() const { return stages_; }

 private:
  std::uint32_t stages_;
  SharedPtr<B64> full_;
  SharedPtr<B64> empty_;
};

}  // namespace ptxdsl
