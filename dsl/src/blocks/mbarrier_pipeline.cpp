#include "ptxdsl/dsl/blocks/mbarrier_pipeline.hpp"

#include <fmt/format.h>

#include <string>

#include "ptxdsl/dsl/error.hpp"

namespace ptxdsl {

MbarrierPipeline::MbarrierPipeline(Kernel& k, std::uint32_t stages, std::string_view name)
    : stages_(stages) {
  if (stages < 1 || stages > 32) {
    throw Error(fmt::format("an mbarrier pipeline's stages must be in [1, 32], got {}", stages));
  }
  full_ = k.shared_array<B64>(std::string(name) + "_full", stages, 8);
  empty_ = k.shared_array<B64>(std::string(name) + "_empty", stages, 8);
}

void MbarrierPipeline::init(Kernel& k, std::uint32_t producer_arrivals,
                            std::uint32_t consumer_arrivals) const {
  for (std::uint32_t s = 0; s < stages_; ++s) {
    k.mbarrier_init(full_ + s, producer_arrivals);
    k.mbarrier_init(empty_ + s, consumer_arrivals);
  }
  k.fence_mbarrier_init();
}

MbarrierPipeline::Position MbarrierPipeline::start(Kernel& k) const {
  return {k.mov<U32>(0u), k.mov<U32>(0u)};
}

void MbarrierPipeline::advance(Kernel& k, const Position& at) const {
  k.add(at.stage, at.stage, 1u);
  const Pred wrapped = k.setp(Cmp::Eq, at.stage, stages_);
  k.predicated(wrapped, [&] {
    k.mov(at.stage, 0u);
    k.add(at.wraps, at.wraps, 1u);
  });
}

SharedPtr<B64> MbarrierPipeline::full(Kernel& k, Reg<U32> stage) const {
  return k.index(full_, stage);
}

SharedPtr<B64> MbarrierPipeline::empty(Kernel& k, Reg<U32> stage) const {
  return k.index(empty_, stage);
}

void MbarrierPipeline::producer_acquire(Kernel& k, const Position& at) const {
  // The pass before this one released the stage in the phase of the other parity.
  k.mbarrier_wait(empty(k, at.stage), k.xor_(k.and_(at.wraps, 1u), 1u));
}

SharedPtr<B64> MbarrierPipeline::producer_expect(Kernel& k, const Position& at,
                                                 std::uint32_t bytes) const {
  const SharedPtr<B64> bar = full(k, at.stage);
  k.mbarrier_arrive_expect_tx(bar, bytes);
  return bar;
}

void MbarrierPipeline::consumer_wait(Kernel& k, const Position& at) const {
  k.mbarrier_wait(full(k, at.stage), k.and_(at.wraps, 1u));
}

void MbarrierPipeline::consumer_release(Kernel& k, Reg<U32> stage) const {
  k.mbarrier_arrive(empty(k, stage));
}

}  // namespace ptxdsl
