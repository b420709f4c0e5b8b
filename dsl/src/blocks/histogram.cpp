#include "ptxdsl/dsl/blocks/histogram.hpp"

#include <fmt/format.h>

#include "ptxdsl/dsl/error.hpp"

namespace ptxdsl {

namespace {

// The static shared memory a CTA may declare.
constexpr std::uint32_t kMaxBins = 48 * 1024 / 4;

}  // namespace

BlockHistogram::BlockHistogram(Kernel& k, std::uint32_t bins, std::uint32_t block, Reg<U32> tid,
                               std::string_view name)
    : bins_(bins), block_(block), tid_(tid) {
  if (bins == 0 || bins > kMaxBins) {
    throw Error(fmt::format("kernel '{}': BlockHistogram: bins must be in [1, {}], got {}",
                            k.name(), kMaxBins, bins));
  }
  if (block == 0 || block > 1024) {
    throw Error(fmt::format("kernel '{}': BlockHistogram: block must be in [1, 1024], got {}",
                            k.name(), block));
  }
  shared_ = k.shared_array<U32>(name, bins);
  each_bin(k, [&](Reg<U32> bin) { k.st(k.index(shared_, bin), 0u); });
  k.bar_sync();
}

void BlockHistogram::each_bin(Kernel& k, const std::function<void(Reg<U32>)>& body) const {
  if (bins_ <= block_) {
    k.if_(k.setp(Cmp::Lt, tid_, bins_), [&] { body(tid_); });
    return;
  }
  k.for_range(tid_, bins_, block_, body);
}

void BlockHistogram::count(Kernel& k, Reg<U32> key) const {
  const Pred in_range = k.setp(Cmp::Lt, key, bins_);
  const SharedPtr<U32> bin = k.index(shared_, key);
  k.predicated(in_range, [&] { k.red(AtomOp::Add, bin, 1u); });
}

void BlockHistogram::count_if(Kernel& k, Pred p, Reg<U32> key) const {
  // A key past the bins is moved to the bin count itself: one compare then covers both.
  count(k, k.selp<U32>(key, bins_, p));
}

void BlockHistogram::flush(Kernel& k, GlobalPtr<U32> counts) const {
  k.bar_sync();
  each_bin(k, [&](Reg<U32> bin) {
    const Reg<U32> n = k.ld(k.index(shared_, bin));
    const Pred seen = k.setp(Cmp::Ne, n, 0u);
    const GlobalPtr<U32> to = k.index(counts, bin);
    k.predicated(seen, [&] { k.red(AtomOp::Add, to, n); });
  });
}

}  // namespace ptxdsl
