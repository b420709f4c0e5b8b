#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "ptxdsl/dsl/arch.hpp"
#include "ptxdsl/dsl/ir.hpp"

// Every PTX instruction family, described once: its spelling and modifiers, the types and operands
// it takes, the oldest target and PTX version it needs, the memory it touches and the executor
// function that gives its semantics. The emitter, the validator, the executor's decoder and the
// misuse checks read this table; adding a family is a row, its semantics and its tests.
namespace ptxdsl::detail {

struct Ctx;
struct DInstr;
// Runs one instruction for the lanes in `exec` (active and guard true, never 0).
using Handler = void (*)(Ctx&, const DInstr&, std::uint32_t exec);

// How the executor's scheduler treats an instruction. Normal: run its handler and go on.
// MbarWait: mbarrier.try_wait.parity, which the executor lets block (as a try_wait may, until its
// time limit) until the phase completes, so that a thread never spins on another warp.
// ClusterWait: barrier.cluster.wait, blocking until every thread of the cluster has arrived.
enum class Flow : std::uint8_t { Normal, Bra, Bar, MbarWait, ClusterWait, Ret };

// The oldest target and PTX version an instruction form needs.
struct Requirement {
  Arch arch = Arch::Sm80;
  PtxVersion version{7, 0};
  friend bool operator==(const Requirement&, const Requirement&) = default;
};
// Both requirements at once: the target that provides both (an `a` target over its base), the
// newer PTX version.
inline Requirement newest(Requirement a, Requirement b) {
  const Arch arch = arch_provides(a.arch, b.arch) ? a.arch : b.arch;
  return {arch, a.version < b.version ? b.version : a.version};
}

// How the decoder reads a family's operands (PTX order: destinations first, then sources).
enum class Operands : std::uint8_t {
  None,          // fences, commits, ret
  Count,         // one immediate: a group count, a register count
  Branch,        // a label
  Label,         // a label definition; not an instruction
  DestSources,   // d, a{, b{, c}}: registers or immediates
  Mov,           // d, a; also packs d, {a, b}, unpacks {d, e}, a and special registers
  Load,          // d or {d...}, [a]
  Store,         // [a], b or {b...}
  AtomResult,    // d, [a], b{, c}
  AtomNoResult,  // [a], b
  CpAsync,       // [dst], [src], cp-size{, src-size}{, policy}
  Address,       // [a]
  Mbarrier,      // [bar]{, value}
  MbarrierWait,  // p, [bar], parity
  BulkCopy,      // [dst], [src], size, [bar]
  TxCount,       // [bar], tx-count
  AsyncRemote,   // [a], b, [bar]
  DestPair,      // d|p, a...: two destinations joined by `|` (match.all, elect), then sources
  Barrier,       // a barrier id{, thread count}: immediates
  Sources,       // a{, b...}: registers or immediates, nothing written
  Fragments,     // {d...}, {a...}, {b...}, {c...}: mma's register groups
  Wgmma,         // {d...}, a-desc|{a...}, b-desc, scale-d, imm-scale-a, imm-scale-b{, imm-trans...}
  TensorCopy,    // [dst], [map, {c...}], [bar]{, mask} (load); [map, {c...}], [src] (store)
};

// Whether an operand list starts with a register the instruction writes.
constexpr bool writes_first_operand(Operands o) {
  return o == Operands::DestSources || o == Operands::DestPair || o == Operands::Mov ||
         o == Operands::Load || o == Operands::AtomResult || o == Operands::MbarrierWait ||
         o == Operands::Fragments || o == Operands::Wgmma;
}

// A set of instruction types (the `.type` suffix a family may carry).
struct TypeSet {
  std::uint32_t bits = 0;
  constexpr TypeSet() = default;
  constexpr TypeSet(std::initializer_list<ScalarType> types) {
    for (ScalarType t : types) bits |= 1u << static_cast<unsigned>(t);
  }
  constexpr bool has(ScalarType t) const { return (bits >> static_cast<unsigned>(t)) & 1u; }
  constexpr TypeSet operator|(TypeSet o) const {
    TypeSet s;
    s.bits = bits | o.bits;
    return s;
  }
};

// The state space a family reads or writes: none, its instruction's own `.space`, or a fixed one.
enum class Mem : std::uint8_t { None, InstrSpace, Global, Shared, SharedCluster };
struct MemoryEffect {
  Mem reads = Mem::None;
  Mem writes = Mem::None;
};

// The modifier rules of the arithmetic families (add, mul, fma, rcp, ex2...), one scheme for all.
struct MathForms {
  TypeSet approx{};              // types with an `.approx` form
  bool approx_only = false;      // rsqrt, ex2, lg2: no exact form
  bool full = false;             // div.full.f32
  bool rounding = false;         // takes .rn/.rz/.rm/.rp
  bool prints_rounding = false;  // the exact float form must name its rounding (.rn by default)
  TypeSet ftz{};                 // types with `.ftz`
  TypeSet ftz_approx{};          // types with `.ftz` in their `.approx` form only
  TypeSet approx_needs_ftz{};    // types whose `.approx` form exists only with `.ftz`
  bool sat = false;              // `.sat` on f32 and f16
  bool sat_s32 = false;          // `.sat` on s32
};

struct InstructionInfo {
  Op op = Op::Mov;
  std::string_view spelling{};                       // the mnemonic before its modifiers
  std::string (*modifiers)(const Instr&) = nullptr;  // what follows the spelling: `.rn.ftz.f32`
  TypeSet types{};                                   // the types `Instr::type` may be
  Operands operands = Operands::None;
  Requirement least{};                                // what every form needs
  Requirement (*form_needs)(const Instr&) = nullptr;  // a form's needs beyond `least`
  std::string (*check)(const Instr&) = nullptr;       // modifier and operand rules
  MathForms math{};
  MemoryEffect memory{};
  bool warp_collective = false;     // every lane of its mask executes it together
  bool float16_immediates = false;  // moves 16-bit float bits as immediates (arithmetic cannot)
  Flow flow = Flow::Normal;
  Handler (*semantics)(const Instr&) = nullptr;  // the executor's handler of a form; nullptr: none
};

// One mma.sync input type: its spelling, the K of its shape (which fixes the element's bits: a
// lane's four A registers hold 16·K/32 elements), the family it pairs within (A and B of one
// product share a family), and the oldest target and PTX version that multiply it.
struct MmaForm {
  MmaInput input;
  std::string_view name;
  std::uint32_t k;
  int family;
  Requirement needs;
  constexpr std::uint32_t element_bits() const { return 256 / k; }
};
inline constexpr Requirement kFp8Mma{Arch::Sm89, {8, 4}};
inline constexpr MmaForm kMmaForms[] = {
    {MmaInput::F16, ".f16", 16, 0, {}},        {MmaInput::BF16, ".bf16", 16, 1, {}},
    {MmaInput::TF32, ".tf32", 8, 2, {}},       {MmaInput::E4M3, ".e4m3", 32, 3, kFp8Mma},
    {MmaInput::E5M2, ".e5m2", 32, 3, kFp8Mma}, {MmaInput::S8, ".s8", 32, 4, {}},
    {MmaInput::U8, ".u8", 32, 4, {}},
};
constexpr const MmaForm& mma_form(MmaInput t) {
  return kMmaForms[static_cast<std::size_t>(t)];
}
constexpr bool mma_forms_follow_inputs() {
  std::size_t i = 0;
  for (const MmaForm& f : kMmaForms) {
    if (static_cast<std::size_t>(f.input) != i++) return false;
  }
  return i == static_cast<std::size_t>(MmaInput::U8) + 1;
}
static_assert(mma_forms_follow_inputs(), "one mma form per MmaInput, in MmaInput's order");

// wgmma.mma_async's shapes: m64nNkK, N a multiple of 8 in [8, 256], K the input type's
// (mma_form(t).k: 16 for f16/bf16, 8 for tf32, 32 for FP8), f32 sums. The 8-bit integers are not
// among its inputs here.
inline constexpr std::uint32_t kWgmmaM = 64;
inline constexpr std::uint32_t kWgmmaMaxN = 256;
constexpr bool is_wgmma_n(std::uint32_t n) {
  return n >= 8 && n <= kWgmmaMaxN && n % 8 == 0;
}
constexpr bool is_wgmma_input(MmaInput t) {
  return t == MmaInput::F16 || t == MmaInput::BF16 || t == MmaInput::TF32 || t == MmaInput::E4M3 ||
         t == MmaInput::E5M2;
}
// Only the 16-bit inputs may be read MN-major (imm-trans-a/b), and only from shared memory.
constexpr bool wgmma_transposes(MmaInput t) {
  return t == MmaInput::F16 || t == MmaInput::BF16;
}

// The row of `op`.
const InstructionInfo& instruction(Op op);

// The form's spelling: `ld.global.nc.v4.f32`.
std::string mnemonic_of(const Instr& in);

}  // namespace ptxdsl::detail
