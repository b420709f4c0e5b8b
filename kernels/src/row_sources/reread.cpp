#include "../chunk_loop.hpp"
#include "row_source.hpp"

// Chunks kept nowhere: each pass reads them from global memory (L2) again, the first read with
// the row's hints and the later ones with reread_with's (L1 and L2 priorities for rows read
// again).
namespace ptxdsl::kernels::detail {
namespace {

class Reread final : public RowSource {
 public:
  using RowSource::RowSource;
  // Without a first use the load pass has nothing to read them for.
  bool in_load_pass(bool first_use) const override { return first_use; }
  void load_chunk(Kernel& k, const RowMasks& m, GlobalDPtr row, std::uint32_t j,
                  std::optional<Reg<U32>> shift, const FirstUse& use) override {
    use(j, read(k, m, row, j, shift, chunks_.hints()));
  }
  void after_load_pass(Kernel&, const RowMasks&, GlobalDPtr, const FirstUse&) override {}
  Values get(Kernel& k, const RowMasks& m, GlobalDPtr row, std::uint32_t j,
             std::optional<Reg<U32>> shift) override {
    return read(k, m, row, j, shift, rereads_.value_or(chunks_.hints()));
  }
  void fetch(Kernel&, const RowMasks&, GlobalDPtr) override {}
  void advance(Kernel&) override {}
  bool copies() const override { return false; }
  void reread_with(MemHints h) override { rereads_ = h; }

 private:
  Values read(Kernel& k, const RowMasks& m, GlobalDPtr row, std::uint32_t j,
              std::optional<Reg<U32>> shift, MemHints h) const {
    const GlobalDPtr at = shifted(k, row, shift, chunks_.per_chunk());
    return decode_chunk(k, m, j, issue_chunk(k, m, at, j, h));
  }
  std::optional<MemHints> rereads_;
};

}  // namespace

std::unique_ptr<RowSource> reread(ChunkSet chunks) {
  return std::make_unique<Reread>(std::move(chunks));
}

}  // namespace ptxdsl::kernels::detail
