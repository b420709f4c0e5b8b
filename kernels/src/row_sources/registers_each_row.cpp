#include "in_registers.hpp"

// Register chunks loaded in the row's own iteration: the plain holding, where no row loads ahead.
namespace ptxdsl::kernels::detail {
namespace {

class RegistersEachRow final : public InRegisters {
 public:
  using InRegisters::InRegisters;
  void fetch(Kernel&, const RowMasks&, GlobalDPtr) override {}
  void advance(Kernel&) override {}
  bool copies() const override { return false; }

 private:
  void issue(Kernel& k, const RowMasks& m, GlobalDPtr row) override { regs_ = load_row(k, m, row); }
};

}  // namespace

std::unique_ptr<RowSource> registers_each_row(ChunkSet chunks) {
  return std::make_unique<RegistersEachRow>(std::move(chunks));
}

}  // namespace ptxdsl::kernels::detail
