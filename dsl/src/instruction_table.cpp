#include "instruction_table.hpp"

#include <fmt/format.h>

#include <array>

#include "ptxdsl/dsl/kernel.hpp"
#include "validate.hpp"

namespace ptxdsl::detail {

// The executor's semantics of each family (dsl/src/executor/ops_*.cpp): given a form, the handler
// that runs it, or nullptr where the executor does not run that form.
Handler select_mov(const Instr& in);
Handler select_setp(const Instr& in);
Handler select_selp(const Instr& in);
Handler select_cvta(const Instr& in);
Handler select_shfl(const Instr& in);
Handler select_create_policy(const Instr& in);
Handler select_fence(const Instr& in);
Handler select_grid_dependency(const Instr& in);
Handler select_cvt(const Instr& in);
Handler select_cvt_pack(const Instr& in);
Handler select_ld(const Instr& in);
Handler select_st(const Instr& in);
Handler select_atom(const Instr& in);
Handler select_red(const Instr& in);
Handler select_cp_async(const Instr& in);
Handler select_cp_async_commit(const Instr& in);
Handler select_cp_async_wait(const Instr& in);
Handler select_prefetch(const Instr& in);
Handler select_mbarrier_init(const Instr& in);
Handler select_mbarrier_arrive(const Instr& in);
Handler select_mbarrier_expect_tx(const Instr& in);
Handler select_mbarrier_complete_tx(const Instr& in);
Handler select_mbarrier_wait(const Instr& in);
Handler select_fence_mbarrier_init(const Instr& in);
Handler select_cp_async_bulk(const Instr& in);
Handler select_mapa(const Instr& in);
Handler select_barrier_cluster_arrive(const Instr& in);
Handler select_cluster_ordering(const Instr& in);
Handler select_fence_proxy_async(const Instr& in);
Handler select_st_async(const Instr& in);
Handler select_red_async(const Instr& in);
Handler select_popc(const Instr& in);
Handler select_clz(const Instr& in);
Handler select_brev(const Instr& in);
Handler select_bfind(const Instr& in);
Handler select_bfe(const Instr& in);
Handler select_bfi(const Instr& in);
Handler select_prmt(const Instr& in);
Handler select_lop3(const Instr& in);
Handler select_shf(const Instr& in);
Handler select_dp4a(const Instr& in);
Handler select_dp2a(const Instr& in);
Handler select_vote(const Instr& in);
Handler select_match_any(const Instr& in);
Handler select_match_all(const Instr& in);
Handler select_redux(const Instr& in);
Handler select_activemask(const Instr& in);
Handler select_elect(const Instr& in);
Handler select_bar_arrive(const Instr& in);
Handler select_setmaxnreg(const Instr& in);
Handler select_nanosleep(const Instr& in);
Handler select_copysign(const Instr& in);
Handler select_cvt_pair(const Instr& in);
Handler select_mma(const Instr& in);
Handler select_ldmatrix(const Instr& in);
Handler select_stmatrix(const Instr& in);
Handler select_wgmma_fence(const Instr& in);
Handler select_wgmma_commit(const Instr& in);
Handler select_wgmma_wait(const Instr& in);
Handler select_wgmma(const Instr& in);
Handler select_bulk_tensor(const Instr& in);
Handler select_bulk_group(const Instr& in);
// Arithmetic and logic: one handler template per op, over the integer or float types.
template <Op O>
Handler select_int_op(const Instr& in);
template <Op O>
Handler select_float_op(const Instr& in);

namespace {

template <Op O>
Handler select_arith(const Instr& in) {
  return is_float(in.type) ? select_float_op<O>(in) : select_int_op<O>(in);
}

// ---- the operations of atom and red ----

// An atomic operation's spelling, the register types it takes, and whether PTX spells those as
// bit types (.b32/.b64: and, or, xor, exch, cas).
struct AtomForm {
  AtomOp op;
  std::string_view name;
  TypeSet types;
  bool bits = false;
  bool red = true;  // red has it too (all but exch and cas)
};

constexpr TypeSet kAtomBits{ScalarType::B32, ScalarType::B64, ScalarType::U32,
                            ScalarType::U64, ScalarType::S32, ScalarType::S64};
constexpr std::array kAtomForms = {
    AtomForm{AtomOp::Add,
             ".add",
             {ScalarType::U32, ScalarType::S32, ScalarType::U64, ScalarType::F32, ScalarType::F64,
              ScalarType::F16x2, ScalarType::BF16x2}},
    AtomForm{AtomOp::Inc, ".inc", {ScalarType::U32}},
    AtomForm{
        AtomOp::Min, ".min", {ScalarType::U32, ScalarType::S32, ScalarType::U64, ScalarType::S64}},
    AtomForm{
        AtomOp::Max, ".max", {ScalarType::U32, ScalarType::S32, ScalarType::U64, ScalarType::S64}},
    AtomForm{AtomOp::And, ".and", kAtomBits, true},
    AtomForm{AtomOp::Or, ".or", kAtomBits, true},
    AtomForm{AtomOp::Xor, ".xor", kAtomBits, true},
    AtomForm{AtomOp::Exch, ".exch", kAtomBits, true, false},
    AtomForm{AtomOp::Cas, ".cas", kAtomBits, true, false},
    AtomForm{AtomOp::Dec, ".dec", {ScalarType::U32}},
};

constexpr bool atom_forms_follow_ops() {
  for (std::size_t i = 0; i < kAtomForms.size(); ++i) {
    if (static_cast<std::size_t>(kAtomForms[i].op) != i) return false;
  }
  return kAtomForms.size() == static_cast<std::size_t>(AtomOp::Dec) + 1;
}
static_assert(atom_forms_follow_ops(), "one atom form per AtomOp, in AtomOp's order");

const AtomForm& atom_form(AtomOp op) {
  return kAtomForms[static_cast<std::size_t>(op)];
}

std::string type_names(TypeSet types) {
  std::string names;
  for (int t = 0; t <= static_cast<int>(ScalarType::F64); ++t) {
    if (types.has(static_cast<ScalarType>(t))) {
      names +=
          fmt::format("{}.{}", names.empty() ? "" : ", ", ptx_name(static_cast<ScalarType>(t)));
    }
  }
  return names;
}

// The operation, its type, the space, the ordering and (cas) the operand count of atom and red.
std::string check_atom(const Instr& in) {
  const AtomForm& form = atom_form(in.atom);
  const std::string_view spelling = instruction(in.op).spelling;
  if (in.op == Op::Red && !form.red) {
    return fmt::format("red has no {} (atom has it)", form.name);
  }
  if (!form.types.has(in.type)) {
    return fmt::format("{}{} takes the types {}, got .{}", spelling, form.name,
                       type_names(form.types), ptx_name(in.type));
  }
  if (in.space != Space::Global && in.space != Space::Shared && in.space != Space::SharedCluster) {
    return fmt::format("{} works on global and shared memory, got {}", spelling,
                       in.space == Space::Param ? ".param" : "no space");
  }
  const bool red_sem =
      in.sem == MemSem::None || in.sem == MemSem::Relaxed || in.sem == MemSem::Release;
  if (in.op == Op::Red && !red_sem) return "red is .relaxed or .release";
  if (in.sem == MemSem::Sc)
    return "atom is .relaxed, .acquire, .release or .acq_rel (.sc is fence's)";
  const std::size_t sources = in.ops.size() - (in.op == Op::Atom ? 2 : 1);
  const std::size_t want = in.atom == AtomOp::Cas ? 2 : 1;
  if (sources != want) {
    return fmt::format("{}{} takes {} value operand{}, got {}", spelling, form.name, want,
                       want == 1 ? "" : "s", sources);
  }
  return {};
}

// ---- the spellings of modifiers ----

std::string_view rounding_name(Rounding r) {
  static constexpr std::string_view kNames[] = {"",     ".rn",  ".rz",  ".rm", ".rp",
                                                ".rni", ".rzi", ".rmi", ".rpi"};
  return kNames[static_cast<int>(r)];
}

std::string_view cmp_name(Cmp c) {
  static constexpr std::string_view kNames[] = {"eq",  "ne",  "lt",  "le",  "gt",  "ge",
                                                "lo",  "ls",  "hi",  "hs",  "equ", "neu",
                                                "ltu", "leu", "gtu", "geu", "num", "nan"};
  return kNames[static_cast<int>(c)];
}

std::string_view space_name(Space s) {
  static constexpr std::string_view kNames[] = {"", ".global", ".shared", ".param",
                                                ".shared::cluster"};
  return kNames[static_cast<int>(s)];
}

std::string_view cache_name(CacheOp c) {
  static constexpr std::string_view kNames[] = {"",    ".ca", ".cg", ".cs",
                                                ".lu", ".cv", ".wb", ".wt"};
  return kNames[static_cast<int>(c)];
}

std::string_view eviction_name(Eviction e) {
  static constexpr std::string_view kNames[] = {"", ".L1::no_allocate", ".L1::evict_last",
                                                ".L1::evict_first"};
  return kNames[static_cast<int>(e)];
}

std::string_view l2_evict_name(L2Evict e) {
  static constexpr std::string_view kNames[] = {".L2::evict_normal", ".L2::evict_first",
                                                ".L2::evict_last", ".L2::evict_unchanged"};
  return kNames[static_cast<int>(e)];
}

std::string_view prefetch_level_name(PrefetchLevel level) {
  static constexpr std::string_view kNames[] = {".L1", ".L2", ".L2::evict_last",
                                                ".L2::evict_normal"};
  return kNames[static_cast<int>(level)];
}

std::string_view sem_name(MemSem m) {
  static constexpr std::string_view kNames[] = {"",         ".relaxed", ".release",
                                                ".acquire", ".acq_rel", ".sc"};
  return kNames[static_cast<int>(m)];
}

std::string_view scope_name(Scope s) {
  static constexpr std::string_view kNames[] = {".cta", ".cluster", ".gpu", ".sys"};
  return kNames[static_cast<int>(s)];
}

std::string_view shfl_name(ShflMode m) {
  static constexpr std::string_view kNames[] = {".up", ".down", ".bfly", ".idx"};
  return kNames[static_cast<int>(m)];
}

std::string_view mul_name(MulMode m) {
  static constexpr std::string_view kNames[] = {"", ".lo", ".hi", ".wide"};
  return kNames[static_cast<int>(m)];
}

std::string type_suffix(ScalarType t) {
  return fmt::format(".{}", ptx_name(t));
}

// `.sem.scope` of an mbarrier operation, when it has them.
std::string mbarrier_order(const Instr& in) {
  if (in.sem == MemSem::None) return {};
  return std::string(sem_name(in.sem)) + (in.scope == Scope::Cluster ? ".cluster" : ".cta");
}

// The state space an mbarrier operation names: its own CTA's (`.shared::cta`) or a cluster
// address (`.shared::cluster`).
std::string_view mbarrier_space(const Instr& in) {
  return in.space == Space::SharedCluster ? ".shared::cluster" : ".shared::cta";
}

std::string l2_hints(const Instr& in) {
  std::string s = in.l2_cache_hint ? ".L2::cache_hint" : "";
  if (in.l2_prefetch != 0) s += fmt::format(".L2::{}B", in.l2_prefetch);
  return s;
}

// Types as logic instructions spell them: and/or/xor/not/shl take bit types.
ScalarType logic_type(ScalarType t) {
  return t == ScalarType::Pred ? t : bits_type(size_bytes(t));
}

// The arithmetic scheme: `.lo/.hi/.wide`, then `.approx`/`.full` or a rounding, `.ftz`, `.sat`.
std::string math_modifiers(const Instr& in) {
  std::string s(mul_name(in.mul));
  if (is_float(in.type)) {
    if (in.precision == Precision::Approx) {
      s += ".approx";
    } else if (in.precision == Precision::Full) {
      s += ".full";
    } else {
      const bool names_rounding = instruction(in.op).math.prints_rounding;
      s += rounding_name(in.rounding == Rounding::None && names_rounding ? Rounding::Rn
                                                                         : in.rounding);
    }
    if (in.ftz) s += ".ftz";
  }
  if (in.sat) s += ".sat";
  return s + type_suffix(in.type);
}

std::string no_modifiers(const Instr&) {
  return {};
}
std::string move_type_only(const Instr& in) {
  return type_suffix(move_type(in.type));
}
std::string logic_modifiers(const Instr& in) {
  return type_suffix(logic_type(in.type));
}
std::string type_only(const Instr& in) {
  return type_suffix(in.type);
}
std::string ld_st_modifiers(const Instr& in) {
  return std::string(space_name(in.space)) + std::string(cache_name(in.cache)) +
         (in.non_coherent ? ".nc" : "") + std::string(eviction_name(in.eviction)) + l2_hints(in) +
         (in.vec > 1 ? fmt::format(".v{}", in.vec) : "") + type_suffix(storage_type(in.type));
}
std::string atom_modifiers(const Instr& in) {
  const AtomForm& form = atom_form(in.atom);
  const bool packed = in.type == ScalarType::F16x2 || in.type == ScalarType::BF16x2;
  return std::string(sem_name(in.sem)) + std::string(in.scoped ? scope_name(in.scope) : "") +
         std::string(space_name(in.space)) + std::string(form.name) + (packed ? ".noftz" : "") +
         type_suffix(form.bits ? bits_type(size_bytes(in.type)) : in.type);
}
std::string pair_cvt_modifiers(const Instr& in) {
  return std::string(rounding_name(in.rounding)) + (in.sat ? ".satfinite" : "") +
         type_suffix(in.type) + type_suffix(in.src_type);
}
std::string mbarrier_tx_modifiers(const Instr& in) {
  return mbarrier_order(in) + std::string(mbarrier_space(in)) + ".b64";
}
std::string barrier_cluster_modifiers(const Instr& in) {
  return std::string(sem_name(in.sem)) + (in.aligned ? ".aligned" : "");
}

// ---- the forms that need more than sm_80 and PTX 7.0 ----

constexpr Requirement kSm80Ptx71{Arch::Sm80, {7, 1}};
constexpr Requirement kSm80Ptx74{Arch::Sm80, {7, 4}};
constexpr Requirement kSm90Ptx78{Arch::Sm90, {7, 8}};
constexpr Requirement kSm90Ptx80{Arch::Sm90, {8, 0}};
constexpr Requirement kSm90aPtx80{Arch::Sm90a, {8, 0}};
constexpr Requirement kSm90Ptx81{Arch::Sm90, {8, 1}};
// FP8 conversions: sm_90 at PTX 7.8. sm_89 has them too, but only from PTX 8.1 (ptxas), which one
// requirement cannot say beside sm_90's 7.8: sm_89 modules are refused them. FP4 and ue8m0:
// sm_100a at PTX 8.6.
constexpr Requirement kFp8Convert{Arch::Sm90, {7, 8}};
constexpr Requirement kFp4Convert{Arch::Sm100a, {8, 6}};

bool is_bf16_kind(ScalarType t) {
  return t == ScalarType::BF16 || t == ScalarType::BF16x2;
}

// bf16 arithmetic beyond fma came with sm_90.
Requirement bf16_math_needs(const Instr& in) {
  return is_bf16_kind(in.type) ? kSm90Ptx78 : Requirement{};
}

// A cvt touching a narrow float needs what its narrowest format needs.
Requirement narrow_cvt_needs(const Instr& in) {
  const auto needs = [](ScalarType t) -> Requirement {
    if (t == ScalarType::E4M3x2 || t == ScalarType::E5M2x2) return kFp8Convert;
    if (t == ScalarType::E2M1x2 || t == ScalarType::UE8M0x2) return kFp4Convert;
    return {};
  };
  return newest(needs(in.type), needs(in.src_type));
}

// The L1/L2 cache hints came with PTX 7.4; `.shared::cluster` with sm_90.
// bf16 pairs, the cluster scope and another CTA's shared memory came with sm_90.
Requirement atom_needs(const Instr& in) {
  const bool sm90 = in.type == ScalarType::BF16x2 || (in.scoped && in.scope == Scope::Cluster) ||
                    in.space == Space::SharedCluster;
  return sm90 ? kSm90Ptx78 : Requirement{};
}

Requirement ld_st_needs(const Instr& in) {
  Requirement r;
  if (in.eviction != Eviction::None || in.l2_cache_hint || in.l2_prefetch != 0) r = kSm80Ptx74;
  if (in.space == Space::SharedCluster) r = newest(r, kSm90Ptx78);
  return r;
}

// ---- the tensor-core products ----

bool is_integer_mma(const Instr& in) {
  return mma_form(in.mma_a).family == mma_form(MmaInput::S8).family;
}

// `.m16n8k16.row.col.f32.bf16.bf16.f32`: A is row-major and B column-major, the only layouts
// these shapes have.
std::string mma_modifiers(const Instr& in) {
  const std::string acc = type_suffix(in.type);
  return fmt::format(".m16n8k{}.row.col{}{}{}{}{}", mma_form(in.mma_a).k,
                     in.sat ? ".satfinite" : "", acc, mma_form(in.mma_a).name,
                     mma_form(in.mma_b).name, acc);
}

Requirement mma_needs(const Instr& in) {
  return newest(mma_form(in.mma_a).needs, mma_form(in.mma_b).needs);
}

std::string check_mma(const Instr& in) {
  const MmaForm& a = mma_form(in.mma_a);
  const MmaForm& b = mma_form(in.mma_b);
  if (a.family != b.family) {
    return fmt::format(
        "mma.sync multiplies A and B of one family (f16, bf16, tf32, e4m3/e5m2, "
        "s8/u8), got {} and {}",
        a.name, b.name);
  }
  const ScalarType acc = is_integer_mma(in) ? ScalarType::S32 : ScalarType::F32;
  if (in.type != acc) {
    return fmt::format("mma.sync on {} sums into .{}, got .{}", a.name, ptx_name(acc),
                       ptx_name(in.type));
  }
  if (in.sat && !is_integer_mma(in)) return ".satfinite applies to the s8/u8 products only";
  const std::array<std::size_t, 4> regs = {4, 4, 2, 4};
  if (in.ops.size() != regs.size()) return "mma.sync takes {d}, {a}, {b}, {c}";
  for (std::size_t i = 0; i < regs.size(); ++i) {
    if (in.ops[i].kind != Operand::Kind::Vec || in.ops[i].vec.size() != regs[i]) {
      return fmt::format("mma.sync's operand {} is a group of {} registers", "dabc"[i], regs[i]);
    }
  }
  return {};
}

// ldmatrix and stmatrix: 1, 2 or 4 matrices, from rows 16-byte aligned in shared memory.
std::string check_matrix(const Instr& in) {
  const std::string_view name = instruction(in.op).spelling;
  if (in.vec != 1 && in.vec != 2 && in.vec != 4) {
    return fmt::format("{} moves 1, 2 or 4 matrices, got {}", name, in.vec);
  }
  const Operand& addr = in.op == Op::Ldmatrix ? in.ops.at(1) : in.ops.at(0);
  if (addr.offset % 16 != 0) {
    return fmt::format(
        "{}'s row addresses are 16-byte aligned: the constant offset {} is not a "
        "multiple of 16",
        name, addr.offset);
  }
  return {};
}

std::string matrix_modifiers(const Instr& in) {
  return fmt::format(".m8n8.x{}{}.shared.b16", in.vec, in.transpose ? ".trans" : "");
}

// ---- the TMA unit's tensor copies (sm_90, PTX 8.0) ----

// The tensor's dimensions: the coordinates of `[map, {c...}]`.
std::size_t tensor_rank(const Instr& in) {
  for (const Operand& o : in.ops) {
    if (o.kind == Operand::Kind::Addr && !o.vec.empty()) return o.vec.size();
  }
  return 0;
}

std::string bulk_tensor_modifiers(const Instr& in) {
  if (in.op == Op::BulkTensorStore) {
    return fmt::format(".{}d.global.shared::cta.tile.bulk_group", tensor_rank(in));
  }
  return fmt::format(".{}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes{}",
                     tensor_rank(in), in.multicast ? ".multicast::cluster" : "");
}

std::string check_bulk_tensor(const Instr& in) {
  const std::size_t rank = tensor_rank(in);
  if (rank < 1 || rank > 5) {
    return fmt::format("cp.async.bulk.tensor copies 1 to 5 dimensions, got {} coordinates", rank);
  }
  const std::size_t operands = in.op == Op::BulkTensorStore ? 2 : in.multicast ? 4 : 3;
  if (in.ops.size() != operands) {
    return fmt::format("cp.async.bulk.tensor{} takes {} operands, got {}",
                       bulk_tensor_modifiers(in), operands, in.ops.size());
  }
  const Operand& smem = in.op == Op::BulkTensorStore ? in.ops[1] : in.ops[0];
  if (smem.offset % 128 != 0) {
    return fmt::format(
        "cp.async.bulk.tensor's shared-memory box is 128-byte aligned: the constant offset {} is "
        "not a multiple of 128",
        smem.offset);
  }
  return {};
}

// ---- wgmma.mma_async (sm_90a, PTX 8.0) ----

// `.m64n128k16.f32.bf16.bf16`.
std::string wgmma_modifiers(const Instr& in) {
  return fmt::format(".m{}n{}k{}{}{}{}", kWgmmaM, in.mma_n, mma_form(in.mma_a).k,
                     type_suffix(in.type), mma_form(in.mma_a).name, mma_form(in.mma_b).name);
}

// An immediate operand that must be one of two values.
std::string check_wgmma_immediate(const Operand& o, std::string_view name, std::int32_t first,
                                  std::int32_t second) {
  const auto v = static_cast<std::int32_t>(o.imm_bits);
  if (o.kind != Operand::Kind::Imm || (v != first && v != second)) {
    return fmt::format("wgmma.mma_async's {} is the immediate {} or {}", name, first, second);
  }
  return {};
}

// The operands as the ISA lists them: {d} of N/2 f32 registers; A's descriptor (a .b64 register)
// or its four-register fragment; B's descriptor; scale-d (a predicate or 0/1); imm-scale-a and -b
// (1 or -1); imm-trans-a (descriptor A only) and imm-trans-b, for the 16-bit inputs only.
std::string check_wgmma(const Instr& in) {
  const MmaForm& a = mma_form(in.mma_a);
  const MmaForm& b = mma_form(in.mma_b);
  if (!is_wgmma_input(in.mma_a) || !is_wgmma_input(in.mma_b) || a.family != b.family) {
    return fmt::format(
        "wgmma.mma_async multiplies f16, bf16, tf32 or e4m3/e5m2 (A and B of one family), got {} "
        "and {}",
        a.name, b.name);
  }
  if (!is_wgmma_n(in.mma_n)) {
    return fmt::format("wgmma.mma_async's N is a multiple of 8 in [8, {}], got {}", kWgmmaMaxN,
                       in.mma_n);
  }
  const bool a_in_registers = in.ops.size() > 1 && in.ops[1].kind == Operand::Kind::Vec;
  const std::size_t transposes = wgmma_transposes(in.mma_a) ? (a_in_registers ? 1 : 2) : 0;
  if (in.ops.size() != 6 + transposes) {
    return fmt::format("wgmma.mma_async{} takes {} operands, got {}", wgmma_modifiers(in),
                       6 + transposes, in.ops.size());
  }
  if (in.ops[0].kind != Operand::Kind::Vec || in.ops[0].vec.size() != in.mma_n / 2) {
    return fmt::format("wgmma.mma_async's d is a group of N/2 = {} registers", in.mma_n / 2);
  }
  if (a_in_registers && in.ops[1].vec.size() != 4) {
    return "wgmma.mma_async's A fragment is a group of 4 registers";
  }
  for (std::size_t i : {std::size_t{1}, std::size_t{2}}) {
    if (i == 1 && a_in_registers) continue;
    if (in.ops[i].kind != Operand::Kind::Reg || in.ops[i].reg.cls != RegClass::B64) {
      return fmt::format("wgmma.mma_async's {} is a 64-bit matrix descriptor register",
                         i == 1 ? "a-desc" : "b-desc");
    }
  }
  const Operand& scale_d = in.ops[3];
  if (scale_d.kind == Operand::Kind::Imm
          ? scale_d.imm_bits > 1
          : scale_d.kind != Operand::Kind::Reg || scale_d.reg.cls != RegClass::Pred) {
    return "wgmma.mma_async's scale-d is a predicate or the immediate 0 or 1";
  }
  for (const std::string& problem :
       {check_wgmma_immediate(in.ops[4], "imm-scale-a", 1, -1),
        check_wgmma_immediate(in.ops[5], "imm-scale-b", 1, -1),
        transposes >= 1
            ? check_wgmma_immediate(in.ops[6], a_in_registers ? "imm-trans-b" : "imm-trans-a", 0, 1)
            : std::string(),
        transposes == 2 ? check_wgmma_immediate(in.ops[7], "imm-trans-b", 0, 1) : std::string()}) {
    if (!problem.empty()) return problem;
  }
  return {};
}

// ---- the types families take ----

constexpr TypeSet kInts{ScalarType::U16, ScalarType::U32, ScalarType::U64, ScalarType::S32,
                        ScalarType::S64};
constexpr TypeSet kFloats{ScalarType::F16,    ScalarType::BF16, ScalarType::F16x2,
                          ScalarType::BF16x2, ScalarType::F32,  ScalarType::F64};
constexpr TypeSet kF32F64{ScalarType::F32, ScalarType::F64};
constexpr TypeSet kAnyType{ScalarType::Pred,   ScalarType::B16, ScalarType::B32,  ScalarType::B64,
                           ScalarType::U16,    ScalarType::U32, ScalarType::U64,  ScalarType::S32,
                           ScalarType::S64,    ScalarType::F16, ScalarType::BF16, ScalarType::F16x2,
                           ScalarType::BF16x2, ScalarType::F32, ScalarType::F64};
constexpr TypeSet kData{ScalarType::B16, ScalarType::B32,  ScalarType::B64,   ScalarType::U16,
                        ScalarType::U32, ScalarType::U64,  ScalarType::S32,   ScalarType::S64,
                        ScalarType::F16, ScalarType::BF16, ScalarType::F16x2, ScalarType::BF16x2,
                        ScalarType::F32, ScalarType::F64};
// The 8-bit integers and the narrow floats: loaded, stored, moved and converted, never computed on.
// e2m1x2 lives in a .b8 register, which mov and selp do not take.
constexpr TypeSet kNarrow{ScalarType::B8,     ScalarType::U8,     ScalarType::S8,
                          ScalarType::E4M3,   ScalarType::E5M2,   ScalarType::E4M3x2,
                          ScalarType::E5M2x2, ScalarType::E2M1x2, ScalarType::UE8M0,
                          ScalarType::UE8M0x2};
constexpr TypeSet kMovable{ScalarType::B8,     ScalarType::U8,    ScalarType::S8,
                           ScalarType::E4M3,   ScalarType::E5M2,  ScalarType::E4M3x2,
                           ScalarType::E5M2x2, ScalarType::UE8M0, ScalarType::UE8M0x2};
constexpr TypeSet kLogic =
    kInts | TypeSet{ScalarType::B16, ScalarType::B32, ScalarType::B64, ScalarType::Pred};
// ftz on the 32-bit and the IEEE half floats: what most float arithmetic takes.
constexpr TypeSet kFtz{ScalarType::F32, ScalarType::F16, ScalarType::F16x2};
// What atom and red take (each operation a part: kAtomForms).
constexpr TypeSet kAtomTypes{ScalarType::B32,   ScalarType::B64,   ScalarType::U32, ScalarType::U64,
                             ScalarType::S32,   ScalarType::S64,   ScalarType::F32, ScalarType::F64,
                             ScalarType::F16x2, ScalarType::BF16x2};
// Untyped families carry B32, which they do not print.
constexpr TypeSet kUntyped{ScalarType::B32};

// bar.sync / bar.arrive: one of the CTA's 16 barriers, and a thread count in whole warps.
std::string check_barrier(const Instr& in) {
  const std::uint64_t id = in.ops.empty() ? 0 : in.ops[0].imm_bits;
  if (id > 15) return fmt::format("barrier id must be in [0, 15], got {}", id);
  if (in.ops.size() < 2) return {};
  const std::uint64_t threads = in.ops[1].imm_bits;
  if (threads == 0 || threads > kMaxBlockThreads || threads % 32 != 0) {
    return fmt::format("the thread count must be a multiple of 32 in [32, {}], got {}",
                       kMaxBlockThreads, threads);
  }
  return {};
}

// setmaxnreg: a register count the allocator hands out in steps of 8.
std::string check_setmaxnreg(const Instr& in) {
  const std::uint64_t n = in.ops.empty() ? 0 : in.ops[0].imm_bits;
  if (n < 24 || n > 256 || n % 8 != 0) {
    return fmt::format("the register count must be a multiple of 8 in [24, 256], got {}", n);
  }
  return {};
}

// tanh.approx: f32 and the 16-bit floats, single and paired.
constexpr TypeSet kTanhTypes{ScalarType::F32, ScalarType::F16, ScalarType::BF16, ScalarType::F16x2,
                             ScalarType::BF16x2};

// add/sub/mul: one rounding, ftz and sat scheme.
constexpr MathForms kAddSubMul{.rounding = true, .ftz = kFtz, .sat = true, .sat_s32 = true};
constexpr MathForms kMinMax{.ftz = kFtz};

constexpr std::array kTable = {
    InstructionInfo{.op = Op::Mov,
                    .spelling = "mov",
                    .modifiers = move_type_only,
                    .types = kAnyType | kMovable,
                    .operands = Operands::Mov,
                    // The cluster special registers came with sm_90.
                    .form_needs = [](const Instr& in) -> Requirement {
                      const bool cluster = in.ops.size() == 2 &&
                                           in.ops[1].kind == Operand::Kind::Special &&
                                           is_cluster_special(in.ops[1].special);
                      return cluster ? kSm90Ptx78 : Requirement{};
                    },
                    .float16_immediates = true,
                    .semantics = select_mov},
    InstructionInfo{.op = Op::Add,
                    .spelling = "add",
                    .modifiers = math_modifiers,
                    .types = kInts | kFloats,
                    .operands = Operands::DestSources,
                    .form_needs = bf16_math_needs,
                    .check = check_math,
                    .math = kAddSubMul,
                    .semantics = select_arith<Op::Add>},
    InstructionInfo{.op = Op::Sub,
                    .spelling = "sub",
                    .modifiers = math_modifiers,
                    .types = kInts | kFloats,
                    .operands = Operands::DestSources,
                    .form_needs = bf16_math_needs,
                    .check = check_math,
                    .math = kAddSubMul,
                    .semantics = select_arith<Op::Sub>},
    InstructionInfo{.op = Op::Mul,
                    .spelling = "mul",
                    .modifiers = math_modifiers,
                    .types = kInts | kFloats,
                    .operands = Operands::DestSources,
                    .form_needs = bf16_math_needs,
                    .check = check_math,
                    .math = {.rounding = true, .ftz = kFtz, .sat = true},
                    .semantics = select_arith<Op::Mul>},
    InstructionInfo{.op = Op::Mad,
                    .spelling = "mad",
                    .modifiers = math_modifiers,
                    .types = kInts | kFloats,
                    .operands = Operands::DestSources,
                    .check = check_math,
                    .math = {.prints_rounding = true, .ftz = kFtz},
                    .semantics = select_arith<Op::Mad>},
    InstructionInfo{.op = Op::Fma,
                    .spelling = "fma",
                    .modifiers = math_modifiers,
                    .types = kFloats,
                    .operands = Operands::DestSources,
                    .check = check_math,
                    .math = {.rounding = true, .prints_rounding = true, .ftz = kFtz, .sat = true},
                    .semantics = select_arith<Op::Fma>},
    InstructionInfo{.op = Op::Div,
                    .spelling = "div",
                    .modifiers = math_modifiers,
                    .types = kInts | kF32F64,
                    .operands = Operands::DestSources,
                    .check = check_math,
                    .math = {.approx = {ScalarType::F32},
                             .full = true,
                             .rounding = true,
                             .prints_rounding = true,
                             .ftz = kFtz},
                    .semantics = select_arith<Op::Div>},
    InstructionInfo{.op = Op::Rem,
                    .spelling = "rem",
                    .modifiers = math_modifiers,
                    .types = kInts,
                    .operands = Operands::DestSources,
                    .check = check_math,
                    .math = {},
                    .semantics = select_arith<Op::Rem>},
    InstructionInfo{.op = Op::Min,
                    .spelling = "min",
                    .modifiers = math_modifiers,
                    .types = kInts | kFloats,
                    .operands = Operands::DestSources,
                    .check = check_math,
                    .math = kMinMax,
                    .semantics = select_arith<Op::Min>},
    InstructionInfo{.op = Op::Max,
                    .spelling = "max",
                    .modifiers = math_modifiers,
                    .types = kInts | kFloats,
                    .operands = Operands::DestSources,
                    .check = check_math,
                    .math = kMinMax,
                    .semantics = select_arith<Op::Max>},
    InstructionInfo{.op = Op::Abs,
                    .spelling = "abs",
                    .modifiers = math_modifiers,
                    .types = TypeSet{ScalarType::S32, ScalarType::S64} | kFloats,
                    .operands = Operands::DestSources,
                    .check = check_math,
                    .math = kMinMax,
                    .semantics = select_arith<Op::Abs>},
    InstructionInfo{.op = Op::Neg,
                    .spelling = "neg",
                    .modifiers = math_modifiers,
                    .types = TypeSet{ScalarType::S32, ScalarType::S64} | kFloats,
                    .operands = Operands::DestSources,
                    .check = check_math,
                    .math = kMinMax,
                    .semantics = select_arith<Op::Neg>},
    InstructionInfo{.op = Op::And,
                    .spelling = "and",
                    .modifiers = logic_modifiers,
                    .types = kLogic,
                    .operands = Operands::DestSources,
                    .semantics = select_int_op<Op::And>},
    InstructionInfo{.op = Op::Or,
                    .spelling = "or",
                    .modifiers = logic_modifiers,
                    .types = kLogic,
                    .operands = Operands::DestSources,
                    .semantics = select_int_op<Op::Or>},
    InstructionInfo{.op = Op::Xor,
                    .spelling = "xor",
                    .modifiers = logic_modifiers,
                    .types = kLogic,
                    .operands = Operands::DestSources,
                    .semantics = select_int_op<Op::Xor>},
    InstructionInfo{.op = Op::Not,
                    .spelling = "not",
                    .modifiers = logic_modifiers,
                    .types = kLogic,
                    .operands = Operands::DestSources,
                    .semantics = select_int_op<Op::Not>},
    InstructionInfo{.op = Op::Shl,
                    .spelling = "shl",
                    .modifiers = logic_modifiers,
                    .types = kLogic,
                    .operands = Operands::DestSources,
                    .semantics = select_int_op<Op::Shl>},
    // Logical for unsigned and bit types, arithmetic for signed ones: spelled with the type.
    InstructionInfo{.op = Op::Shr,
                    .spelling = "shr",
                    .modifiers = type_only,
                    .types = kLogic,
                    .operands = Operands::DestSources,
                    .semantics = select_int_op<Op::Shr>},
    InstructionInfo{.op = Op::Rcp,
                    .spelling = "rcp",
                    .modifiers = math_modifiers,
                    .types = kF32F64,
                    .operands = Operands::DestSources,
                    .check = check_math,
                    .math = {.approx = kF32F64,
                             .rounding = true,
                             .prints_rounding = true,
                             .ftz = kFtz,
                             .ftz_approx = {ScalarType::F64},
                             .approx_needs_ftz = {ScalarType::F64}},
                    .semantics = select_arith<Op::Rcp>},
    InstructionInfo{.op = Op::Sqrt,
                    .spelling = "sqrt",
                    .modifiers = math_modifiers,
                    .types = kF32F64,
                    .operands = Operands::DestSources,
                    .check = check_math,
                    .math = {.approx = {ScalarType::F32},
                             .rounding = true,
                             .prints_rounding = true,
                             .ftz = kFtz},
                    .semantics = select_arith<Op::Sqrt>},
    InstructionInfo{.op = Op::Rsqrt,
                    .spelling = "rsqrt",
                    .modifiers = math_modifiers,
                    .types = kF32F64,
                    .operands = Operands::DestSources,
                    .check = check_math,
                    .math = {.approx = kF32F64,
                             .approx_only = true,
                             .ftz = kFtz,
                             .ftz_approx = {ScalarType::F64}},
                    .semantics = select_arith<Op::Rsqrt>},
    InstructionInfo{.op = Op::Ex2,
                    .spelling = "ex2",
                    .modifiers = math_modifiers,
                    .types = kFloats,
                    .operands = Operands::DestSources,
                    .form_needs = bf16_math_needs,
                    .check = check_math,
                    .math = {.approx = kFloats,
                             .approx_only = true,
                             .ftz = {ScalarType::F32, ScalarType::BF16, ScalarType::BF16x2},
                             .approx_needs_ftz = {ScalarType::BF16, ScalarType::BF16x2}},
                    .semantics = select_arith<Op::Ex2>},
    InstructionInfo{.op = Op::Lg2,
                    .spelling = "lg2",
                    .modifiers = math_modifiers,
                    .types = {ScalarType::F32},
                    .operands = Operands::DestSources,
                    .check = check_math,
                    .math = {.approx = {ScalarType::F32}, .approx_only = true, .ftz = kFtz},
                    .semantics = select_arith<Op::Lg2>},
    InstructionInfo{.op = Op::Setp,
                    .spelling = "setp",
                    .modifiers =
                        [](const Instr& in) {
                          return fmt::format(".{}{}{}", cmp_name(in.cmp), in.ftz ? ".ftz" : "",
                                             type_suffix(in.type));
                        },
                    .types = kData,
                    .operands = Operands::DestSources,
                    .form_needs =
                        [](const Instr& in) {
                          return in.type == ScalarType::BF16 ? kSm90Ptx78 : Requirement{};
                        },
                    .check = check_setp,
                    .semantics = select_setp},
    InstructionInfo{.op = Op::Selp,
                    .spelling = "selp",
                    .modifiers = move_type_only,
                    .types = kData,
                    .operands = Operands::DestSources,
                    .float16_immediates = true,
                    .semantics = select_selp},
    InstructionInfo{.op = Op::Cvt,
                    .spelling = "cvt",
                    .modifiers =
                        [](const Instr& in) {
                          return std::string(rounding_name(in.rounding)) + (in.ftz ? ".ftz" : "") +
                                 (in.sat ? ".sat" : "") + type_suffix(in.type) +
                                 type_suffix(in.src_type);
                        },
                    .types = kInts | kFloats | TypeSet{ScalarType::U8, ScalarType::S8},
                    .operands = Operands::DestSources,
                    // sm_80 converts bf16 only to and from f32.
                    .form_needs = [](const Instr& in) -> Requirement {
                      if (in.type != ScalarType::BF16 && in.src_type != ScalarType::BF16) return {};
                      if (in.type == ScalarType::F32) return kSm80Ptx71;
                      return in.src_type == ScalarType::F32 ? Requirement{} : kSm90Ptx78;
                    },
                    .check = check_cvt,
                    .semantics = select_cvt},
    // Two f32 values to one 16-bit float, FP8, FP4 or ue8m0 pair: `cvt.rn.f16x2.f32 d, hi, lo`.
    InstructionInfo{.op = Op::CvtPack,
                    .spelling = "cvt",
                    .modifiers = pair_cvt_modifiers,
                    .types = {ScalarType::F16x2, ScalarType::BF16x2, ScalarType::E4M3x2,
                              ScalarType::E5M2x2, ScalarType::E2M1x2, ScalarType::UE8M0x2},
                    .operands = Operands::DestSources,
                    .form_needs = narrow_cvt_needs,
                    .check = check_cvt_pack,
                    .semantics = select_cvt_pack},
    InstructionInfo{
        .op = Op::Cvta,
        .spelling = "cvta",
        .modifiers =
            [](const Instr& in) {
              // cvta.param: a kernel parameter's generic address (PTX 7.7).
              return fmt::format("{}{}{}", in.space == Space::Param ? "" : ".to",
                                 space_name(in.space), type_suffix(in.type));
            },
        .types = {ScalarType::U64},
        .operands = Operands::DestSources,
        .form_needs =
            [](const Instr& in) {
              return in.space == Space::Param ? Requirement{Arch::Sm80, {7, 7}} : Requirement{};
            },
        .semantics = select_cvta},
    InstructionInfo{.op = Op::Ld,
                    .spelling = "ld",
                    .modifiers = ld_st_modifiers,
                    .types = kData | kNarrow,
                    .operands = Operands::Load,
                    .form_needs = ld_st_needs,
                    .check = check_memory,
                    .memory = {.reads = Mem::InstrSpace},
                    .semantics = select_ld},
    InstructionInfo{.op = Op::St,
                    .spelling = "st",
                    .modifiers = ld_st_modifiers,
                    .types = kData | kNarrow,
                    .operands = Operands::Store,
                    .form_needs = ld_st_needs,
                    .check = check_memory,
                    .memory = {.writes = Mem::InstrSpace},
                    .float16_immediates = true,
                    .semantics = select_st},
    InstructionInfo{.op = Op::Atom,
                    .spelling = "atom",
                    .modifiers = atom_modifiers,
                    .types = kAtomTypes,
                    .operands = Operands::AtomResult,
                    .form_needs = atom_needs,
                    .check = check_atom,
                    .memory = {.reads = Mem::InstrSpace, .writes = Mem::InstrSpace},
                    .semantics = select_atom},
    InstructionInfo{.op = Op::Red,
                    .spelling = "red",
                    .modifiers = atom_modifiers,
                    .types = kAtomTypes,
                    .operands = Operands::AtomNoResult,
                    .form_needs = atom_needs,
                    .check = check_atom,
                    .memory = {.reads = Mem::InstrSpace, .writes = Mem::InstrSpace},
                    .semantics = select_red},
    InstructionInfo{
        .op = Op::CpAsync,
        .spelling = "cp.async",
        .modifiers =
            [](const Instr& in) {
              return std::string(cache_name(in.cache)) + ".shared.global" + l2_hints(in);
            },
        .types = kUntyped,
        .operands = Operands::CpAsync,
        .form_needs =
            [](const Instr& in) {
              return in.l2_cache_hint || in.l2_prefetch != 0 ? kSm80Ptx74 : Requirement{};
            },
        .check = check_cp_async,
        .memory = {.reads = Mem::Global, .writes = Mem::Shared},
        .semantics = select_cp_async},
    InstructionInfo{.op = Op::CpAsyncCommit,
                    .spelling = "cp.async.commit_group",
                    .modifiers = no_modifiers,
                    .types = kUntyped,
                    .semantics = select_cp_async_commit},
    InstructionInfo{.op = Op::CpAsyncWait,
                    .spelling = "cp.async.wait_group",
                    .modifiers = no_modifiers,
                    .types = kUntyped,
                    .operands = Operands::Count,
                    .semantics = select_cp_async_wait},
    InstructionInfo{
        .op = Op::CreatePolicy,
        .spelling = "createpolicy.fractional",
        .modifiers =
            [](const Instr& in) {
              return std::string(l2_evict_name(in.l2_primary)) +
                     (in.l2_secondary ? std::string(l2_evict_name(*in.l2_secondary)) : "") + ".b64";
            },
        .types = {ScalarType::B64},
        .operands = Operands::DestSources,
        .least = kSm80Ptx74,
        .semantics = select_create_policy},
    InstructionInfo{.op = Op::Prefetch,
                    .spelling = "prefetch",
                    .modifiers =
                        [](const Instr& in) {
                          return std::string(space_name(in.space)) +
                                 std::string(prefetch_level_name(in.prefetch));
                        },
                    .types = kUntyped,
                    .operands = Operands::Address,
                    .form_needs =
                        [](const Instr& in) {
                          const bool evict = in.prefetch == PrefetchLevel::L2EvictLast ||
                                             in.prefetch == PrefetchLevel::L2EvictNormal;
                          return evict ? kSm80Ptx74 : Requirement{};
                        },
                    .semantics = select_prefetch},
    InstructionInfo{.op = Op::MbarrierInit,
                    .spelling = "mbarrier.init",
                    .modifiers = [](const Instr&) { return std::string(".shared.b64"); },
                    .types = {ScalarType::B64},
                    .operands = Operands::Mbarrier,
                    .memory = {.writes = Mem::Shared},
                    .semantics = select_mbarrier_init},
    // Arrive with the sink `_` is sm_90's (PTX 7.8); its expect_tx form and orderings PTX 8.0's.
    InstructionInfo{.op = Op::MbarrierArrive,
                    .spelling = "mbarrier.arrive",
                    .modifiers =
                        [](const Instr& in) {
                          return fmt::format("{}{}", in.ops.size() > 1 ? ".expect_tx" : "",
                                             mbarrier_tx_modifiers(in));
                        },
                    .types = {ScalarType::B64},
                    .operands = Operands::Mbarrier,
                    .least = kSm90Ptx78,
                    .form_needs =
                        [](const Instr& in) {
                          return in.ops.size() > 1 || in.sem != MemSem::None ? kSm90Ptx80
                                                                             : Requirement{};
                        },
                    .memory = {.reads = Mem::InstrSpace, .writes = Mem::InstrSpace},
                    .semantics = select_mbarrier_arrive},
    InstructionInfo{
        .op = Op::MbarrierWait,
        .spelling = "mbarrier.try_wait.parity",
        .modifiers = [](const Instr& in) { return mbarrier_order(in) + ".shared::cta.b64"; },
        .types = {ScalarType::B64},
        .operands = Operands::MbarrierWait,
        .least = kSm90Ptx78,
        .form_needs =
            [](const Instr& in) { return in.sem != MemSem::None ? kSm90Ptx80 : Requirement{}; },
        .memory = {.reads = Mem::Shared},
        .flow = Flow::MbarWait,
        .semantics = select_mbarrier_wait},
    InstructionInfo{.op = Op::FenceMbarrierInit,
                    .spelling = "fence.mbarrier_init.release.cluster",
                    .modifiers = no_modifiers,
                    .types = kUntyped,
                    .least = kSm90Ptx80,
                    .semantics = select_fence_mbarrier_init},
    InstructionInfo{
        .op = Op::Fence,
        .spelling = "fence",
        .modifiers =
            [](const Instr& in) {
              return std::string(sem_name(in.sem)) + std::string(scope_name(in.scope));
            },
        .types = kUntyped,
        .form_needs =
            [](const Instr& in) { return in.scope == Scope::Cluster ? kSm90Ptx78 : Requirement{}; },
        .check = [](const Instr& in) -> std::string {
          return in.sem == MemSem::Sc || in.sem == MemSem::AcqRel ? ""
                                                                  : "a fence is .sc or .acq_rel";
        },
        .semantics = select_fence},
    InstructionInfo{.op = Op::CpAsyncBulk,
                    .spelling = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
                    .modifiers = no_modifiers,
                    .types = kUntyped,
                    .operands = Operands::BulkCopy,
                    .least = kSm90Ptx80,
                    .memory = {.reads = Mem::Global, .writes = Mem::Shared},
                    .semantics = select_cp_async_bulk},
    InstructionInfo{.op = Op::Mapa,
                    .spelling = "mapa",
                    .modifiers =
                        [](const Instr& in) {
                          return std::string(space_name(in.space)) + type_suffix(in.type);
                        },
                    .types = {ScalarType::U32},
                    .operands = Operands::DestSources,
                    .least = kSm90Ptx78,
                    .semantics = select_mapa},
    InstructionInfo{
        .op = Op::BarClusterArrive,
        .spelling = "barrier.cluster.arrive",
        .modifiers = barrier_cluster_modifiers,
        .types = kUntyped,
        .least = kSm90Ptx78,
        .form_needs =
            [](const Instr& in) { return in.sem != MemSem::None ? kSm90Ptx80 : Requirement{}; },
        .semantics = select_barrier_cluster_arrive},
    InstructionInfo{
        .op = Op::BarClusterWait,
        .spelling = "barrier.cluster.wait",
        .modifiers = barrier_cluster_modifiers,
        .types = kUntyped,
        .least = kSm90Ptx78,
        .form_needs =
            [](const Instr& in) { return in.sem != MemSem::None ? kSm90Ptx80 : Requirement{}; },
        .flow = Flow::ClusterWait,
        .semantics = select_cluster_ordering},
    InstructionInfo{.op = Op::FenceProxyAsync,
                    .spelling = "fence.proxy.async",
                    .modifiers = [](const Instr&) { return std::string(".shared::cta"); },
                    .types = kUntyped,
                    .least = kSm90Ptx80,
                    .semantics = select_fence_proxy_async},
    InstructionInfo{.op = Op::MbarrierExpectTx,
                    .spelling = "mbarrier.expect_tx",
                    .modifiers = mbarrier_tx_modifiers,
                    .types = {ScalarType::B64},
                    .operands = Operands::TxCount,
                    .least = kSm90Ptx80,
                    .memory = {.reads = Mem::InstrSpace, .writes = Mem::InstrSpace},
                    .semantics = select_mbarrier_expect_tx},
    InstructionInfo{.op = Op::MbarrierCompleteTx,
                    .spelling = "mbarrier.complete_tx",
                    .modifiers = mbarrier_tx_modifiers,
                    .types = {ScalarType::B64},
                    .operands = Operands::TxCount,
                    .least = kSm90Ptx80,
                    .memory = {.reads = Mem::InstrSpace, .writes = Mem::InstrSpace},
                    .semantics = select_mbarrier_complete_tx},
    InstructionInfo{.op = Op::StAsync,
                    .spelling = "st.async",
                    .modifiers =
                        [](const Instr& in) {
                          return fmt::format(".shared::cluster.mbarrier::complete_tx::bytes{}",
                                             type_suffix(in.type));
                        },
                    .types = kData,
                    .operands = Operands::AsyncRemote,
                    .least = kSm90Ptx81,
                    .memory = {.writes = Mem::SharedCluster},
                    .semantics = select_st_async},
    InstructionInfo{.op = Op::RedAsync,
                    .spelling = "red.async.relaxed.cluster",
                    .modifiers =
                        [](const Instr& in) {
                          return fmt::format(".shared::cluster.mbarrier::complete_tx::bytes.add{}",
                                             type_suffix(in.type));
                        },
                    .types = kData,
                    .operands = Operands::AsyncRemote,
                    .least = kSm90Ptx81,
                    .memory = {.reads = Mem::SharedCluster, .writes = Mem::SharedCluster},
                    .semantics = select_red_async},
    InstructionInfo{.op = Op::GridDepLaunch,
                    .spelling = "griddepcontrol.launch_dependents",
                    .modifiers = no_modifiers,
                    .types = kUntyped,
                    .least = kSm90Ptx78,
                    .semantics = select_grid_dependency},
    InstructionInfo{.op = Op::GridDepWait,
                    .spelling = "griddepcontrol.wait",
                    .modifiers = no_modifiers,
                    .types = kUntyped,
                    .least = kSm90Ptx78,
                    .semantics = select_grid_dependency},
    InstructionInfo{.op = Op::Popc,
                    .spelling = "popc",
                    .modifiers = type_only,
                    .types = {ScalarType::B32, ScalarType::B64},
                    .operands = Operands::DestSources,
                    .semantics = select_popc},
    InstructionInfo{.op = Op::Clz,
                    .spelling = "clz",
                    .modifiers = type_only,
                    .types = {ScalarType::B32, ScalarType::B64},
                    .operands = Operands::DestSources,
                    .semantics = select_clz},
    InstructionInfo{.op = Op::Brev,
                    .spelling = "brev",
                    .modifiers = type_only,
                    .types = {ScalarType::B32, ScalarType::B64},
                    .operands = Operands::DestSources,
                    .semantics = select_brev},
    InstructionInfo{.op = Op::Bfind,
                    .spelling = "bfind",
                    .modifiers =
                        [](const Instr& in) {
                          return (in.shift_amount ? ".shiftamt" : "") + type_suffix(in.type);
                        },
                    .types = {ScalarType::U32, ScalarType::S32, ScalarType::U64, ScalarType::S64},
                    .operands = Operands::DestSources,
                    .semantics = select_bfind},
    InstructionInfo{.op = Op::Bfe,
                    .spelling = "bfe",
                    .modifiers = type_only,
                    .types = {ScalarType::U32, ScalarType::S32, ScalarType::U64, ScalarType::S64},
                    .operands = Operands::DestSources,
                    .semantics = select_bfe},
    InstructionInfo{.op = Op::Bfi,
                    .spelling = "bfi",
                    .modifiers = type_only,
                    .types = {ScalarType::B32, ScalarType::B64},
                    .operands = Operands::DestSources,
                    .semantics = select_bfi},
    InstructionInfo{.op = Op::Prmt,
                    .spelling = "prmt",
                    .modifiers = type_only,
                    .types = {ScalarType::B32},
                    .operands = Operands::DestSources,
                    .semantics = select_prmt},
    InstructionInfo{.op = Op::Lop3,
                    .spelling = "lop3",
                    .modifiers = type_only,
                    .types = {ScalarType::B32},
                    .operands = Operands::DestSources,
                    .semantics = select_lop3},
    InstructionInfo{.op = Op::Shf,
                    .spelling = "shf",
                    .modifiers =
                        [](const Instr& in) {
                          static constexpr std::string_view kModes[] = {".l.wrap", ".l.clamp",
                                                                        ".r.wrap", ".r.clamp"};
                          return std::string(kModes[static_cast<int>(in.funnel)]) +
                                 type_suffix(in.type);
                        },
                    .types = {ScalarType::B32},
                    .operands = Operands::DestSources,
                    .semantics = select_shf},
    // dp4a.atype.btype: the types of a and b (u32 or s32); d and c are s32 unless both are u32.
    InstructionInfo{
        .op = Op::Dp4a,
        .spelling = "dp4a",
        .modifiers =
            [](const Instr& in) { return type_suffix(in.type) + type_suffix(in.src_type); },
        .types = {ScalarType::U32, ScalarType::S32},
        .operands = Operands::DestSources,
        .semantics = select_dp4a},
    InstructionInfo{.op = Op::Dp2a,
                    .spelling = "dp2a",
                    .modifiers =
                        [](const Instr& in) {
                          return (in.high_half ? ".hi" : ".lo") + type_suffix(in.type) +
                                 type_suffix(in.src_type);
                        },
                    .types = {ScalarType::U32, ScalarType::S32},
                    .operands = Operands::DestSources,
                    .semantics = select_dp2a},
    // vote.sync.ballot gives a .b32 mask; .all, .any and .uni a .pred.
    InstructionInfo{
        .op = Op::Vote,
        .spelling = "vote.sync",
        .modifiers =
            [](const Instr& in) {
              static constexpr std::string_view kModes[] = {".all", ".any", ".uni", ".ballot"};
              return std::string(kModes[static_cast<int>(in.vote)]) + type_suffix(in.type);
            },
        .types = {ScalarType::Pred, ScalarType::B32},
        .operands = Operands::DestSources,
        .check = [](const Instr& in) -> std::string {
          const bool ballot = in.vote == VoteMode::Ballot;
          if (ballot == (in.type == ScalarType::B32)) return {};
          return "vote.sync.ballot gives a .b32 mask; .all, .any and .uni a .pred";
        },
        .warp_collective = true,
        .semantics = select_vote},
    InstructionInfo{.op = Op::MatchAny,
                    .spelling = "match.any.sync",
                    .modifiers = type_only,
                    .types = {ScalarType::B32, ScalarType::B64},
                    .operands = Operands::DestSources,
                    .warp_collective = true,
                    .semantics = select_match_any},
    InstructionInfo{.op = Op::MatchAll,
                    .spelling = "match.all.sync",
                    .modifiers = type_only,
                    .types = {ScalarType::B32, ScalarType::B64},
                    .operands = Operands::DestPair,
                    .warp_collective = true,
                    .semantics = select_match_all},
    InstructionInfo{.op = Op::Redux,
                    .spelling = "redux.sync",
                    .modifiers =
                        [](const Instr& in) {
                          static constexpr std::string_view kOps[] = {".add", ".min", ".max",
                                                                      ".and", ".or",  ".xor"};
                          return std::string(kOps[static_cast<int>(in.redux)]) +
                                 type_suffix(in.type);
                        },
                    .types = {ScalarType::U32, ScalarType::S32, ScalarType::B32},
                    .operands = Operands::DestSources,
                    .check = [](const Instr& in) -> std::string {
                      const bool bitwise = in.redux == ReduxOp::And || in.redux == ReduxOp::Or ||
                                           in.redux == ReduxOp::Xor;
                      if (bitwise == (in.type == ScalarType::B32)) return {};
                      return "redux.sync takes .and, .or and .xor on .b32, .add, .min and .max on "
                             ".u32 and .s32";
                    },
                    .warp_collective = true,
                    .semantics = select_redux},
    InstructionInfo{.op = Op::Activemask,
                    .spelling = "activemask",
                    .modifiers = type_only,
                    .types = {ScalarType::B32},
                    .operands = Operands::DestSources,
                    .semantics = select_activemask},
    InstructionInfo{.op = Op::Elect,
                    .spelling = "elect.sync",
                    .modifiers = no_modifiers,
                    .types = kUntyped,
                    .operands = Operands::DestPair,
                    .least = kSm90Ptx80,
                    .warp_collective = true,
                    .semantics = select_elect},
    InstructionInfo{.op = Op::BarArrive,
                    .spelling = "bar.arrive",
                    .modifiers = no_modifiers,
                    .types = kUntyped,
                    .operands = Operands::Barrier,
                    .check = check_barrier,
                    .semantics = select_bar_arrive},
    InstructionInfo{.op = Op::Setmaxnreg,
                    .spelling = "setmaxnreg",
                    .modifiers =
                        [](const Instr& in) {
                          return std::string(in.grow ? ".inc" : ".dec") + ".sync.aligned.u32";
                        },
                    .types = {ScalarType::U32},
                    .operands = Operands::Count,
                    .least = kSm90aPtx80,
                    .check = check_setmaxnreg,
                    .semantics = select_setmaxnreg},
    InstructionInfo{.op = Op::Nanosleep,
                    .spelling = "nanosleep",
                    .modifiers = type_only,
                    .types = {ScalarType::U32},
                    .operands = Operands::Sources,
                    .semantics = select_nanosleep},
    // tanh.approx: f32, f16 and f16x2 on sm_75 (PTX 7.0), bf16 and bf16x2 on sm_90 (PTX 7.8).
    InstructionInfo{.op = Op::Tanh,
                    .spelling = "tanh",
                    .modifiers = math_modifiers,
                    .types = kTanhTypes,
                    .operands = Operands::DestSources,
                    .form_needs = bf16_math_needs,
                    .check = check_math,
                    .math = {.approx = kTanhTypes, .approx_only = true},
                    .semantics = select_float_op<Op::Tanh>},
    InstructionInfo{.op = Op::Sin,
                    .spelling = "sin",
                    .modifiers = math_modifiers,
                    .types = {ScalarType::F32},
                    .operands = Operands::DestSources,
                    .check = check_math,
                    .math = {.approx = {ScalarType::F32}, .approx_only = true, .ftz = kFtz},
                    .semantics = select_float_op<Op::Sin>},
    InstructionInfo{.op = Op::Cos,
                    .spelling = "cos",
                    .modifiers = math_modifiers,
                    .types = {ScalarType::F32},
                    .operands = Operands::DestSources,
                    .check = check_math,
                    .math = {.approx = {ScalarType::F32}, .approx_only = true, .ftz = kFtz},
                    .semantics = select_float_op<Op::Cos>},
    InstructionInfo{.op = Op::Copysign,
                    .spelling = "copysign",
                    .modifiers = type_only,
                    .types = kF32F64,
                    .operands = Operands::DestSources,
                    .semantics = select_copysign},
    InstructionInfo{
        .op = Op::CvtPair,
        .spelling = "cvt",
        .modifiers = pair_cvt_modifiers,
        .types = {ScalarType::F16x2, ScalarType::BF16x2, ScalarType::E4M3x2, ScalarType::E5M2x2},
        .operands = Operands::DestSources,
        .form_needs = narrow_cvt_needs,
        .check = check_cvt_pair,
        .semantics = select_cvt_pair},
    InstructionInfo{.op = Op::Mma,
                    .spelling = "mma.sync.aligned",
                    .modifiers = mma_modifiers,
                    .types = {ScalarType::F32, ScalarType::S32},
                    .operands = Operands::Fragments,
                    .form_needs = mma_needs,
                    .check = check_mma,
                    .warp_collective = true,
                    .semantics = select_mma},
    InstructionInfo{.op = Op::Ldmatrix,
                    .spelling = "ldmatrix.sync.aligned",
                    .modifiers = matrix_modifiers,
                    .types = {ScalarType::B16},
                    .operands = Operands::Load,
                    .check = check_matrix,
                    .memory = {.reads = Mem::Shared},
                    .warp_collective = true,
                    .semantics = select_ldmatrix},
    InstructionInfo{.op = Op::Stmatrix,
                    .spelling = "stmatrix.sync.aligned",
                    .modifiers = matrix_modifiers,
                    .types = {ScalarType::B16},
                    .operands = Operands::Store,
                    .least = kSm90Ptx78,
                    .check = check_matrix,
                    .memory = {.writes = Mem::Shared},
                    .warp_collective = true,
                    .semantics = select_stmatrix},
    InstructionInfo{.op = Op::WgmmaFence,
                    .spelling = "wgmma.fence.sync.aligned",
                    .modifiers = no_modifiers,
                    .types = kUntyped,
                    .least = kSm90aPtx80,
                    .warp_collective = true,
                    .semantics = select_wgmma_fence},
    InstructionInfo{.op = Op::WgmmaCommit,
                    .spelling = "wgmma.commit_group.sync.aligned",
                    .modifiers = no_modifiers,
                    .types = kUntyped,
                    .least = kSm90aPtx80,
                    .warp_collective = true,
                    .semantics = select_wgmma_commit},
    InstructionInfo{.op = Op::WgmmaWait,
                    .spelling = "wgmma.wait_group.sync.aligned",
                    .modifiers = no_modifiers,
                    .types = kUntyped,
                    .operands = Operands::Count,
                    .least = kSm90aPtx80,
                    .warp_collective = true,
                    .semantics = select_wgmma_wait},
    InstructionInfo{.op = Op::WgmmaMma,
                    .spelling = "wgmma.mma_async.sync.aligned",
                    .modifiers = wgmma_modifiers,
                    .types = {ScalarType::F32},
                    .operands = Operands::Wgmma,
                    .least = kSm90aPtx80,
                    .check = check_wgmma,
                    .memory = {.reads = Mem::Shared},
                    .warp_collective = true,
                    .semantics = select_wgmma},
    InstructionInfo{.op = Op::BulkTensorLoad,
                    .spelling = "cp.async.bulk.tensor",
                    .modifiers = bulk_tensor_modifiers,
                    .types = kUntyped,
                    .operands = Operands::TensorCopy,
                    .least = kSm90Ptx80,
                    .check = check_bulk_tensor,
                    .memory = {.reads = Mem::Global, .writes = Mem::SharedCluster},
                    .semantics = select_bulk_tensor},
    InstructionInfo{.op = Op::BulkTensorStore,
                    .spelling = "cp.async.bulk.tensor",
                    .modifiers = bulk_tensor_modifiers,
                    .types = kUntyped,
                    .operands = Operands::TensorCopy,
                    .least = kSm90Ptx80,
                    .check = check_bulk_tensor,
                    .memory = {.reads = Mem::Shared, .writes = Mem::Global},
                    .semantics = select_bulk_tensor},
    InstructionInfo{.op = Op::BulkCommit,
                    .spelling = "cp.async.bulk.commit_group",
                    .modifiers = no_modifiers,
                    .types = kUntyped,
                    .least = kSm90Ptx80,
                    .semantics = select_bulk_group},
    InstructionInfo{
        .op = Op::BulkWait,
        .spelling = "cp.async.bulk.wait_group",
        .modifiers = [](const Instr& in) { return std::string(in.bulk_read ? ".read" : ""); },
        .types = kUntyped,
        .operands = Operands::Count,
        .least = kSm90Ptx80,
        .semantics = select_bulk_group},
    InstructionInfo{.op = Op::PrefetchTensormap,
                    .spelling = "prefetch.tensormap",
                    .modifiers = no_modifiers,
                    .types = kUntyped,
                    .operands = Operands::Address,
                    .least = kSm90Ptx80,
                    .semantics = select_bulk_group},
    InstructionInfo{
        .op = Op::Shfl,
        .spelling = "shfl.sync",
        .modifiers =
            [](const Instr& in) { return std::string(shfl_name(in.shfl)) + type_suffix(in.type); },
        .types = {ScalarType::B32},
        .operands = Operands::DestSources,
        .warp_collective = true,
        .semantics = select_shfl},
    InstructionInfo{.op = Op::Bar,
                    .spelling = "bar.sync",
                    .modifiers = no_modifiers,
                    .types = kUntyped,
                    .operands = Operands::Barrier,
                    .check = check_barrier,
                    .flow = Flow::Bar},
    InstructionInfo{
        .op = Op::Bra,
        .spelling = "bra",
        .modifiers = [](const Instr& in) { return std::string(in.uniform ? ".uni" : ""); },
        .types = kUntyped,
        .operands = Operands::Branch,
        .flow = Flow::Bra},
    InstructionInfo{.op = Op::Label,
                    .spelling = "",
                    .modifiers = no_modifiers,
                    .types = kUntyped,
                    .operands = Operands::Label},
    InstructionInfo{.op = Op::Ret,
                    .spelling = "ret",
                    .modifiers = no_modifiers,
                    .types = kUntyped,
                    .flow = Flow::Ret},
};

// One row per Op, in the enum's order: `instruction(op)` is an index.
constexpr bool rows_follow_ops() {
  for (std::size_t i = 0; i < kTable.size(); ++i) {
    if (static_cast<std::size_t>(kTable[i].op) != i || kTable[i].modifiers == nullptr) {
      return false;
    }
  }
  return kTable.size() == static_cast<std::size_t>(Op::Ret) + 1;
}
static_assert(rows_follow_ops(), "the instruction table has one row per Op, in Op's order");

}  // namespace

const InstructionInfo& instruction(Op op) {
  return kTable[static_cast<std::size_t>(op)];
}

std::string mnemonic_of(const Instr& in) {
  const InstructionInfo& row = instruction(in.op);
  return std::string(row.spelling) + row.modifiers(in);
}

}  // namespace ptxdsl::detail
