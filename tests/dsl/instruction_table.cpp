// The instruction table's own rules: one row per opcode, and the columns that the emitter, the
// validator and the executor's decoder rely on agree with each other.
#include <string>

#include "../../dsl/src/instruction_table.hpp"
#include "support.hpp"

using namespace ptxdsl;
using namespace ptxdsl::detail;
using Catch::Matchers::Contains;

namespace {

constexpr int kOps = static_cast<int>(Op::Ret) + 1;

}  // namespace

TEST_CASE("the instruction table has a complete row for every opcode", "[dsl][table]") {
  for (int i = 0; i < kOps; ++i) {
    const auto op = static_cast<Op>(i);
    const InstructionInfo& row = instruction(op);
    INFO("opcode " << i << " '" << row.spelling << "'");
    CHECK(row.op == op);
    CHECK(row.modifiers != nullptr);
    CHECK(row.types.bits != 0);
    if (op == Op::Label) continue;
    CHECK_FALSE(row.spelling.empty());
    // The scheduler runs branches, barriers and ret; every other family names its semantics.
    const bool scheduled = row.flow == Flow::Bra || row.flow == Flow::Bar || row.flow == Flow::Ret;
    CHECK((row.semantics != nullptr) != scheduled);
    // A family that touches memory takes an address.
    const bool touches_memory = row.memory.reads != Mem::None || row.memory.writes != Mem::None;
    if (touches_memory) {
      CHECK(row.operands != Operands::None);
      CHECK(row.operands != Operands::DestSources);
    }
    // What a form needs is never older than what the family needs.
    CHECK(newest(row.least, Requirement{}) == row.least);
  }
}

TEST_CASE("a target too old names the instruction, the target and the one needed", "[dsl][table]") {
  for (const auto& [arch, version] :
       {std::pair{Arch::Sm80, PtxVersion{7, 8}}, std::pair{Arch::Sm90, PtxVersion{7, 8}}}) {
    Module m(arch, version);
    Kernel& k = m.kernel("k");
    const std::string expected = arch == Arch::Sm80
                                     ? "needs sm_90 or newer; the module targets sm_80"
                                     : "needs PTX 8.0 or newer; the module is PTX 7.8";
    INFO(arch_name(arch));
    if (arch == Arch::Sm80) {
      CHECK_THAT(test::error_of([&] { k.griddep_wait(); }),
                 Contains("instruction 'griddepcontrol.wait'") && Contains(expected));
    }
    CHECK_THAT(test::error_of([&] { k.fence_proxy_async(); }),
               Contains("instruction 'fence.proxy.async.shared::cta'") && Contains(expected));
  }
}
