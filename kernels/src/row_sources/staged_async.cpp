#include "cp_async.hpp"

// Staged chunks copied a row ahead (prefetch_rows 1 with staged chunks): cp.async copies the
// next row into the second of two staging buffers during this row's work, and the two swap at
// its end. The row loop commits each row's copies as one group and waits for the current row's
// before its load pass.
namespace ptxdsl::kernels::detail {
namespace {

class StagedAsync final : public RowSource {
 public:
  StagedAsync(Kernel& k, ChunkSet chunks, SharedDPtr staging, std::int64_t buffer_elements)
      : RowSource(std::move(chunks)) {
    const auto [first, second] = two_buffers(k, staging, buffer_elements);
    current_ = first;
    next_ = second;
    flip_ = k.xor_(first.p.base, second.p.base);
  }
  // The chunks are in by then; the pass only reads them for a first use (and without one its
  // loop stays empty).
  bool in_load_pass(bool) const override { return true; }
  void load_chunk(Kernel& k, const RowMasks& m, GlobalDPtr row, std::uint32_t j,
                  std::optional<Reg<U32>> shift, const FirstUse& use) override {
    if (use) use(j, get(k, m, row, j, shift));
  }
  void after_load_pass(Kernel&, const RowMasks&, GlobalDPtr, const FirstUse&) override {}
  Values get(Kernel& k, const RowMasks&, GlobalDPtr, std::uint32_t j,
             std::optional<Reg<U32>> shift) override {
    return read_staged(k, chunks_, current_, j, shift);
  }
  // The first row into the current buffer, later ones into the other.
  void fetch(Kernel& k, const RowMasks& m, GlobalDPtr row) override {
    copy_chunks(k, chunks_, m, row, started_ ? next_ : current_);
    started_ = true;
  }
  void advance(Kernel& k) override {
    flip(k, current_, flip_);
    flip(k, next_, flip_);
  }
  bool copies() const override { return true; }

 private:
  SharedDPtr current_, next_;
  Reg<U32> flip_;  // the bits that turn either base address into the other
  bool started_ = false;
};

}  // namespace

std::unique_ptr<RowSource> staged_async(Kernel& k, ChunkSet chunks, SharedDPtr staging,
                                        std::int64_t buffer_elements) {
  return std::make_unique<StagedAsync>(k, std::move(chunks), staging, buffer_elements);
}

}  // namespace ptxdsl::kernels::detail
