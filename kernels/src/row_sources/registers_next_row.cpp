#include "in_registers.hpp"

// Register chunks with the next row's loads in flight (prefetch_rows 1): a second set of
// registers receives them during this row's work and becomes the current set at its end.
namespace ptxdsl::kernels::detail {
namespace {

class RegistersNextRow final : public InRegisters {
 public:
  using InRegisters::InRegisters;
  // The first row's loads are the current set itself; later ones land in the second.
  void fetch(Kernel& k, const RowMasks& m, GlobalDPtr row) override {
    std::vector<ChunkLoad> loads = load_row(k, m, row);
    if (started_) {
      next_ = std::move(loads);
      return;
    }
    regs_ = std::move(loads);
    started_ = true;
  }
  void advance(Kernel& k) override {
    for (std::uint32_t j : chunks_.held()) {
      if (regs_[j].vector) assign(k, *regs_[j].vector, *next_[j].vector);
      for (std::size_t e = 0; e < regs_[j].tail.size(); ++e)
        assign(k, regs_[j].tail[e], next_[j].tail[e]);
    }
  }
  bool copies() const override { return false; }

 private:
  bool started_ = false;
  std::vector<ChunkLoad> next_;
};

}  // namespace

std::unique_ptr<RowSource> registers_next_row(ChunkSet chunks) {
  return std::make_unique<RegistersNextRow>(std::move(chunks));
}

}  // namespace ptxdsl::kernels::detail
