#include "../chunk_loop.hpp"
#include "row_source.hpp"

// Chunks staged in dynamic shared memory in the storage dtype: the row's load pass loads them and
// stores them to this thread's staging slots, and each later pass reloads them from there. Each
// thread reads back only what it wrote, so staging needs no barrier.
namespace ptxdsl::kernels::detail {
namespace {

class Staged final : public RowSource {
 public:
  Staged(ChunkSet chunks, SharedDPtr staging) : RowSource(std::move(chunks)), staging_(staging) {}
  bool in_load_pass(bool) const override { return true; }
  // The vector as loaded (zeros where masked), then the tail lane's lone elements over it.
  void load_chunk(Kernel& k, const RowMasks& m, GlobalDPtr row, std::uint32_t j,
                  std::optional<Reg<U32>> shift, const FirstUse& use) override {
    const RowMap& map = chunks_.map();
    const ChunkLoad c =
        issue_chunk(k, m, shifted(k, row, shift, chunks_.per_chunk()), j, chunks_.hints());
    const SharedDPtr s = chunks_.in_buffer(k, staging_, j, shift);
    store_raw(k, s, c.vector ? *c.vector : zero_raw(k, row.dtype, map.vec), std::nullopt, kNoHints);
    if (const auto t = m.tail(j)) {
      const std::vector<RowMap::TailPiece> pieces = map.tail_pieces();
      for (std::size_t i = 0; i < c.tail.size(); ++i)
        store_raw(k, s + pieces[i].offset, c.tail[i], *t, kNoHints);
    }
    if (use) use(j, decode_chunk(k, m, j, c));
  }
  void after_load_pass(Kernel&, const RowMasks&, GlobalDPtr, const FirstUse&) override {}
  Values get(Kernel& k, const RowMasks&, GlobalDPtr, std::uint32_t j,
             std::optional<Reg<U32>> shift) override {
    return read_staged(k, chunks_, staging_, j, shift);
  }
  void fetch(Kernel&, const RowMasks&, GlobalDPtr) override {}
  void advance(Kernel&) override {}
  bool copies() const override { return false; }

 private:
  SharedDPtr staging_;
};

}  // namespace

Values read_staged(Kernel& k, const ChunkSet& chunks, SharedDPtr buffer, std::uint32_t j,
                   std::optional<Reg<U32>> shift) {
  return decode(k, load_raw(k, chunks.in_buffer(k, buffer, j, shift), chunks.map().vec,
                            std::nullopt, kNoHints));
}

std::unique_ptr<RowSource> staged(ChunkSet chunks, SharedDPtr staging) {
  return std::make_unique<Staged>(std::move(chunks), staging);
}

}  // namespace ptxdsl::kernels::detail
