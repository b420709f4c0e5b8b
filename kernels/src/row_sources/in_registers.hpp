#pragma once

#include <vector>

#include "row_source.hpp"

// What the register sources share: chunks held as loaded, 16-bit rows packed two to a b32
// register (half the registers of f32 values) and decoded again by each pass. They differ in when
// and how a row's chunks arrive.
namespace ptxdsl::kernels::detail {

class InRegisters : public RowSource {
 public:
  explicit InRegisters(ChunkSet chunks) : RowSource(std::move(chunks)) {
    regs_.resize(chunks_.map().chunks);
  }
  bool in_load_pass(bool) const override { return false; }
  void load_chunk(Kernel&, const RowMasks&, GlobalDPtr, std::uint32_t, std::optional<Reg<U32>>,
                  const FirstUse&) override {}
  // Every load in flight before the first use.
  void after_load_pass(Kernel& k, const RowMasks& m, GlobalDPtr row, const FirstUse& use) override {
    issue(k, m, row);
    if (!use) return;
    for (std::uint32_t j : chunks_.held()) use(j, decode_chunk(k, m, j, regs_[j]));
  }
  Values get(Kernel& k, const RowMasks& m, GlobalDPtr, std::uint32_t j,
             std::optional<Reg<U32>>) override {
    return decode_chunk(k, m, j, regs_[j]);
  }

 protected:
  // The row's loads where they issue in its own load pass (sources with rows ahead: none).
  virtual void issue(Kernel&, const RowMasks&, GlobalDPtr) {}
  // The row's loads of the held chunks, indexed by chunk.
  std::vector<ChunkLoad> load_row(Kernel& k, const RowMasks& m, GlobalDPtr row) const {
    std::vector<ChunkLoad> loads(chunks_.map().chunks);
    for (std::uint32_t j : chunks_.held()) loads[j] = issue_chunk(k, m, row, j, chunks_.hints());
    return loads;
  }
  std::vector<ChunkLoad> regs_;  // per chunk of the row: the current row's, as loaded
};

}  // namespace ptxdsl::kernels::detail
