#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptxdsl/dsl/types.hpp"

// The one intermediate form every consumer reads: the text emitter, the runtime (through the text),
// and the CPU executor. An instruction is data: opcode, types, modifiers, operands.
namespace ptxdsl {

enum class Op : std::uint8_t {
  Mov,
  Add,
  Sub,
  Mul,
  Mad,
  Fma,
  Div,
  Rem,
  Min,
  Max,
  Abs,
  Neg,
  And,
  Or,
  Xor,
  Not,
  Shl,
  Shr,
  Rcp,
  Sqrt,
  Rsqrt,
  Ex2,
  Lg2,
  Setp,
  Selp,
  Cvt,
  CvtPack,  // cvt.rn.f16x2.f32 d, hi, lo
  Cvta,     // cvta.to.global.u64
  Ld,
  St,
  // atom{.sem}{.scope}.space.op.type d, [a], b{, c}; red the same without d (AtomOp: the op).
  Atom,
  Red,
  CpAsync,            // cp.async.{ca,cg}.shared.global [dst], [src], cp-size{, src-size}
  CpAsyncCommit,      // cp.async.commit_group
  CpAsyncWait,        // cp.async.wait_group N
  CreatePolicy,       // createpolicy.fractional.L2::<primary>{.L2::<secondary>}.b64 d, fraction
  Prefetch,           // prefetch.global.{L1, L2, L2::evict_last, L2::evict_normal} [a]
  MbarrierInit,       // mbarrier.init.shared.b64 [bar], count
  MbarrierArrive,     // mbarrier.arrive{.expect_tx}.shared::cta.b64 _, [bar]{, tx}
  MbarrierWait,       // mbarrier.try_wait.parity.shared::cta.b64 p, [bar], parity
  FenceMbarrierInit,  // fence.mbarrier_init.release.cluster
  Fence,              // fence.{sc, acq_rel}.{cta, cluster, gpu, sys}
  CpAsyncBulk,  // cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [d], [s], n,
                // [bar]
  // Thread-block clusters (sm_90): distributed shared memory and the cluster barrier.
  Mapa,                // mapa.shared::cluster.u32 d, a, rank
  BarClusterArrive,    // barrier.cluster.arrive{.release, .relaxed}{.aligned}
  BarClusterWait,      // barrier.cluster.wait{.acquire}{.aligned}
  FenceProxyAsync,     // fence.proxy.async.shared::cta
  MbarrierExpectTx,    // mbarrier.expect_tx.relaxed.cluster.shared::cta.b64 [bar], tx
  MbarrierCompleteTx,  // mbarrier.complete_tx.relaxed.cluster.{shared::cta, shared::cluster}.b64
  StAsync,             // st.async.shared::cluster.mbarrier::complete_tx::bytes.T [a], v, [bar]
  RedAsync,       // red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.T
  GridDepLaunch,  // griddepcontrol.launch_dependents
  GridDepWait,    // griddepcontrol.wait
  // Bits: counts, reversal, fields, byte permutes, three-input logic, funnel shifts, dot products.
  Popc,   // popc.b32 d, a (d: u32)
  Clz,    // clz.b32 d, a (d: u32)
  Brev,   // brev.b32 d, a
  Bfind,  // bfind{.shiftamt}.u32 d, a (d: u32)
  Bfe,    // bfe.u32 d, a, pos, len
  Bfi,    // bfi.b32 d, bits, base, pos, len
  Prmt,   // prmt.b32 d, a, b, selector
  Lop3,   // lop3.b32 d, a, b, c, lut
  Shf,    // shf.{l,r}.{wrap,clamp}.b32 d, lo, hi, n
  Dp4a,   // dp4a.atype.btype d, a, b, c
  Dp2a,   // dp2a.{lo,hi}.atype.btype d, a, b, c
  // Warp collectives: votes, matches, reductions, the active mask and leader election.
  Vote,        // vote.sync.{all,any,uni}.pred d, a, member; vote.sync.ballot.b32 d, a, member
  MatchAny,    // match.any.sync.b32 d, a, member
  MatchAll,    // match.all.sync.b32 d|p, a, member
  Redux,       // redux.sync.{add,min,max}.u32 / .{and,or,xor}.b32 d, a, member
  Activemask,  // activemask.b32 d
  Elect,       // elect.sync d|p, member
  // Scheduling: named barriers' arrivals, register reallocation, sleeps.
  BarArrive,   // bar.arrive id, threads
  Setmaxnreg,  // setmaxnreg.{inc,dec}.sync.aligned.u32 n
  Nanosleep,   // nanosleep.u32 t
  // Approximate transcendentals and the sign copy.
  Tanh,      // tanh.approx.f32 d, a (also f16, bf16 and their pairs)
  Sin,       // sin.approx{.ftz}.f32 d, a
  Cos,       // cos.approx{.ftz}.f32 d, a
  Copysign,  // copysign.f32 d, a, b: b's magnitude with a's sign
  // Narrow floats: one packed pair to another (`cvt.rn.f16x2.e4m3x2 d, a`,
  // `cvt.rn.satfinite.e4m3x2.f16x2 d, a`, `cvt.rn.bf16x2.ue8m0x2 d, a`).
  CvtPair,
  // Tensor cores, one warp: matrix products on register fragments, and the 8x8 matrices of 16-bit
  // elements moved between shared memory and fragments.
  Mma,  // mma.sync.aligned.m16n8kK.row.col{.satfinite}.dtype.atype.btype.ctype {d}, {a}, {b}, {c}
  Ldmatrix,  // ldmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16 {d...}, [row]
  Stmatrix,  // stmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16 [row], {a...}
  // Warpgroup products' ordering (sm_90a): registers before them, their groups, waiting for them.
  WgmmaFence,   // wgmma.fence.sync.aligned
  WgmmaCommit,  // wgmma.commit_group.sync.aligned
  WgmmaWait,    // wgmma.wait_group.sync.aligned N
  // wgmma.mma_async.sync.aligned.m64nNkK.f32.atype.btype {d...}, a-desc|{a...}, b-desc, scale-d,
  //   imm-scale-a, imm-scale-b{, imm-trans-a}{, imm-trans-b}: a warpgroup's D = A·B (+ D).
  WgmmaMma,
  // The TMA unit's tensor copies (sm_90, PTX 8.0) through a tensor map (a 128-byte kernel
  // parameter): a box of a 1-5-D tensor into shared memory, completing bytes on an mbarrier
  // (`.multicast::cluster`: into the same offset of each CTA a 16-bit mask names), or out of
  // shared memory into the tensor (a bulk group); their groups; prefetching the map.
  // cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes
  //   {.multicast::cluster} [dst], [map, {c...}], [bar]{, mask}
  BulkTensorLoad,
  BulkTensorStore,    // cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group [map, {c}], [s]
  BulkCommit,         // cp.async.bulk.commit_group
  BulkWait,           // cp.async.bulk.wait_group{.read} N
  PrefetchTensormap,  // prefetch.tensormap [map]
  Shfl,
  Bar,
  Bra,
  Label,  // a label definition; not an instruction in the PTX sense
  Ret,
};

// The arrivals an mbarrier phase counts, and the bytes one bulk copy (or expect_tx) may move.
inline constexpr std::uint32_t kMbarrierMaxCount = (1u << 20) - 1;
inline constexpr std::uint32_t kBulkCopyMaxBytes = (1u << 20) - 16;

enum class Rounding : std::uint8_t { None, Rn, Rz, Rm, Rp, Rni, Rzi, Rmi, Rpi };
enum class Cmp : std::uint8_t {
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  Lo,
  Ls,
  Hi,
  Hs,
  Equ,
  Neu,
  Ltu,
  Leu,
  Gtu,
  Geu,
  Num,
  Nan
};
enum class MulMode : std::uint8_t { None, Lo, Hi, Wide };
// SharedCluster: `.shared::cluster`, the shared memory of any CTA of the cluster (mapa's result).
enum class Space : std::uint8_t { None, Global, Shared, Param, SharedCluster };
// The memory-ordering qualifier of barrier.cluster, mbarrier, atom, red and fence; None prints
// nothing (the instruction's default: arrive releases, wait acquires, atom and red are relaxed).
// AcqRel: atom and fence; Sc: fence only.
enum class MemSem : std::uint8_t { None, Relaxed, Release, Acquire, AcqRel, Sc };
// The threads an ordering reaches. An mbarrier wait takes its CTA (the default) or the whole
// cluster, whose st.async and remote arrivals it then acquires; atom, red and fence take any.
enum class Scope : std::uint8_t { Cta, Cluster, Gpu, Sys };
enum class CacheOp : std::uint8_t { None, Ca, Cg, Cs, Lu, Cv, Wb, Wt };
enum class Eviction : std::uint8_t { None, L1NoAllocate, L1EvictLast, L1EvictFirst };
// L2 eviction priorities of a cache policy (createpolicy).
enum class L2Evict : std::uint8_t { Normal, First, Last, Unchanged };
enum class ShflMode : std::uint8_t { Up, Down, Bfly, Idx };
// Where `prefetch` brings a line: L1, L2, or L2 with an eviction priority (sm_80, PTX 7.4).
enum class PrefetchLevel : std::uint8_t { L1, L2, L2EvictLast, L2EvictNormal };
// shf: the high 32 bits of {hi, lo} << n (Left) or the low 32 bits of {hi, lo} >> n (Right); n
// taken mod 32 (Wrap) or capped at 32 (Clamp).
enum class Funnel : std::uint8_t { LeftWrap, LeftClamp, RightWrap, RightClamp };
// vote.sync: whether a predicate holds in all, any, or all-or-none (uni) of the member lanes, or
// the mask of the lanes where it holds (ballot).
enum class VoteMode : std::uint8_t { All, Any, Uni, Ballot };
// redux.sync's operation: add, min and max on u32/s32 values, and, or and xor on b32 bits.
enum class ReduxOp : std::uint8_t { Add, Min, Max, And, Or, Xor };
// The element type of an mma.sync's A and B fragments; it fixes the shape: f16 and bf16
// m16n8k16, tf32 m16n8k8, the FP8 and 8-bit integer types m16n8k32.
enum class MmaInput : std::uint8_t { F16, BF16, TF32, E4M3, E5M2, S8, U8 };
// The operation of atom and red: *a = op(old, b). Inc: old >= b ? 0 : old + 1; Dec: old == 0 ||
// old > b ? b : old - 1; Exch: b; Cas (atom only): old == b ? c : old.
enum class AtomOp : std::uint8_t { Add, Inc, Min, Max, And, Or, Xor, Exch, Cas, Dec };
enum class Special : std::uint8_t {
  TidX,
  TidY,
  TidZ,
  NtidX,
  NtidY,
  NtidZ,
  CtaidX,
  CtaidY,
  CtaidZ,
  NctaidX,
  NctaidY,
  NctaidZ,
  LaneId,
  WarpId,
  NwarpId,
  SmId,
  // Clusters (sm_90): the CTA's rank in its cluster and the cluster's size, the cluster's index in
  // the grid and the grid's size in clusters, the CTA's index in its cluster and the cluster's
  // shape.
  ClusterCtarank,
  ClusterNctarank,
  ClusteridX,
  ClusteridY,
  ClusteridZ,
  NclusteridX,
  NclusteridY,
  NclusteridZ,
  ClusterCtaidX,
  ClusterCtaidY,
  ClusterCtaidZ,
  ClusterNctaidX,
  ClusterNctaidY,
  ClusterNctaidZ,
  // 64-bit timers: the SM's cycle counter and the GPU's nanosecond clock.
  Clock64,
  Globaltimer,
};

constexpr bool is_cluster_special(Special s) {
  return static_cast<int>(s) >= static_cast<int>(Special::ClusterCtarank) &&
         static_cast<int>(s) <= static_cast<int>(Special::ClusterNctaidZ);
}
// The special registers `mov.u64` reads; the others are 32-bit.
constexpr bool is_64bit_special(Special s) {
  return s == Special::Clock64 || s == Special::Globaltimer;
}

// The CTAs a cluster may hold: 16, the non-portable maximum of sm_90 and sm_100 (8 is the portable
// one every launch accepts; more needs the launch's opt-in, which the runtime makes).
inline constexpr std::uint32_t kMaxClusterCtas = 16;

// Precision choice for rcp/sqrt/div: exact IEEE forms take a rounding mode; approximate ones do
// not.
enum class Precision : std::uint8_t { Exact, Approx, Full };

struct RegId {
  RegClass cls = RegClass::B32;
  std::uint32_t index = 0;  // 1-based within the class, as PTX prints `%r1`
  friend bool operator==(const RegId&, const RegId&) = default;
};

struct Operand {
  enum class Kind : std::uint8_t { Reg, Vec, Imm, Addr, Label, Special, Symbol };
  Kind kind = Kind::Reg;
  RegId reg{};                            // Reg; Addr base when has_base
  std::vector<RegId> vec;                 // Vec: `{%f1, %f2}`; Addr: a tensor's coordinates
  ScalarType imm_type = ScalarType::B32;  // Imm: how the bits print
  std::uint64_t imm_bits = 0;
  std::string symbol;       // Addr symbol base, Symbol, Label name
  bool has_base = false;    // Addr: register base, else symbol base
  std::int64_t offset = 0;  // Addr
  Special special = Special::TidX;
};

struct Instr {
  Op op = Op::Mov;
  ScalarType type = ScalarType::B32;      // the instruction type suffix
  ScalarType src_type = ScalarType::B32;  // cvt's source type; setp's compare type is `type`
  Rounding rounding = Rounding::None;
  Precision precision = Precision::Exact;
  bool ftz = false;
  bool sat = false;
  MulMode mul = MulMode::None;
  Cmp cmp = Cmp::Eq;
  Space space = Space::None;
  CacheOp cache = CacheOp::None;
  Eviction eviction = Eviction::None;
  bool non_coherent = false;      // ld.global.nc
  bool l2_cache_hint = false;     // ld/st .L2::cache_hint: the policy register is the last operand
  std::uint16_t l2_prefetch = 0;  // ld .L2::64B, .L2::128B, .L2::256B (0: none)
  L2Evict l2_primary = L2Evict::Normal;        // createpolicy
  std::optional<L2Evict> l2_secondary;         // createpolicy: First or Unchanged
  PrefetchLevel prefetch = PrefetchLevel::L1;  // prefetch
  int vec = 1;                                 // 1, 2 or 4
  ShflMode shfl = ShflMode::Bfly;
  AtomOp atom = AtomOp::Add;
  Funnel funnel = Funnel::LeftWrap;  // shf
  bool shift_amount = false;         // bfind.shiftamt
  bool high_half = false;            // dp2a.hi
  VoteMode vote = VoteMode::All;     // vote.sync
  ReduxOp redux = ReduxOp::Add;      // redux.sync
  bool grow = false;                 // setmaxnreg.inc (else .dec)
  MmaInput mma_a = MmaInput::F16;    // mma.sync: A's element type
  MmaInput mma_b = MmaInput::F16;    // mma.sync: B's element type
  std::uint16_t mma_n = 0;           // wgmma.mma_async: N, D's columns
  bool multicast = false;            // cp.async.bulk.tensor .multicast::cluster
  bool bulk_read = false;            // cp.async.bulk.wait_group.read
  bool transpose = false;            // ldmatrix.trans, stmatrix.trans
  bool uniform = false;              // bra.uni
  MemSem sem = MemSem::None;         // barrier.cluster, mbarrier waits, atom, red, fence
  Scope scope = Scope::Cta;          // mbarrier waits, fence; atom and red where `scoped`
  bool scoped = false;               // atom, red: print `.scope` (none: .gpu)
  bool aligned = false;              // barrier.cluster .aligned
  std::vector<Operand> ops;          // destinations first, then sources, as PTX writes them
  // Guard predicate: `@%p1` / `@!%p1`.
  bool guarded = false;
  bool guard_negated = false;
  RegId guard{};
  std::string comment;  // debug register name of the destination
};

}  // namespace ptxdsl
