#include "cp_async.hpp"
#include "in_registers.hpp"

// Register chunks that arrive through a ring of shared buffers (prefetch_rows 2 to 4): cp.async
// copies each row ahead into the buffer whose turn it is, and a row moves from the oldest filled
// buffer into the registers when the previous one is done. The row loop fills `rows` rows, takes
// one, then per row fills one, works, takes one; it waits for a buffer's group before taking it.
namespace ptxdsl::kernels::detail {
namespace {

class RegistersFromRing final : public InRegisters {
 public:
  RegistersFromRing(Kernel& k, ChunkSet chunks, SharedDPtr ring, std::int64_t buffer_elements,
                    std::uint32_t rows)
      : InRegisters(std::move(chunks)) {
    // Both turns start at the first buffer and move on their own.
    const auto [first, second] = two_buffers(k, ring, buffer_elements);
    fill_ = first;
    take_ = SharedDPtr{{k.mov<U32>(first.p.base), first.p.offset}, first.dtype};
    if (rows == 2) {
      flip_ = k.xor_(first.p.base, second.p.base);
      return;
    }
    step_ = static_cast<std::uint32_t>(buffer_elements * size_bytes(ring.dtype));
    first_ = k.mov<U32>(first.p.base);
    end_ = k.add(first.p.base, rows * step_);
  }
  void fetch(Kernel& k, const RowMasks& m, GlobalDPtr row) override {
    copy_chunks(k, chunks_, m, row, *fill_);
    turn(k, *fill_);
  }
  // The whole vector: the ring holds zeros where the row's masks kept the copy from reading. The
  // first row taken becomes the registers themselves.
  void advance(Kernel& k) override {
    const RowMap& map = chunks_.map();
    for (std::uint32_t j : chunks_.held()) {
      const SharedDPtr at = chunks_.in_buffer(k, *take_, j, std::nullopt);
      ChunkLoad c;
      c.vector = load_raw(k, at, map.vec, std::nullopt, kNoHints);
      if (taken_) {
        assign(k, *regs_[j].vector, *c.vector);
      } else {
        regs_[j] = c;
      }
    }
    turn(k, *take_);
    taken_ = true;
  }
  bool copies() const override { return true; }

 private:
  // Two buffers swap by XOR with flip_; more go round: one buffer on (step_ bytes), back to
  // first_ at end_.
  void turn(Kernel& k, const SharedDPtr& p) const {
    if (flip_) {
      flip(k, p, *flip_);
      return;
    }
    const Reg<U32> next = k.add(p.p.base, step_);
    k.mov(p.p.base, k.selp<U32>(*first_, next, k.setp(Cmp::Eq, next, *end_)));
  }

  std::optional<SharedDPtr> fill_, take_;  // the buffer to fill next and the one to take next
  std::optional<Reg<U32>> flip_, first_, end_;
  std::uint32_t step_ = 0;
  bool taken_ = false;
};

}  // namespace

std::unique_ptr<RowSource> registers_from_ring(Kernel& k, ChunkSet chunks, SharedDPtr ring,
                                               std::int64_t buffer_elements, std::uint32_t rows) {
  return std::make_unique<RegistersFromRing>(k, std::move(chunks), ring, buffer_elements, rows);
}

}  // namespace ptxdsl::kernels::detail
