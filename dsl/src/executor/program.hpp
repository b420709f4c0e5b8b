#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "../instruction_table.hpp"
#include "ptxdsl/dsl/executor.hpp"
#include "ptxdsl/dsl/ir.hpp"
#include "ptxdsl/dsl/kernel.hpp"

// The executor's private pieces: the decoded program (a flat array of instructions with resolved
// register slots and a handler each), and the state one host thread runs a CTA with.
namespace ptxdsl::detail {

inline constexpr std::uint32_t kLanes = 32;
inline constexpr std::uint32_t kFullMask = 0xFFFFFFFFu;
inline constexpr std::uint32_t kNoSlot = 0xFFFFFFFFu;
inline constexpr std::uint32_t kNoPc = 0xFFFFFFFFu;
inline constexpr std::uint16_t kManyReaders = 0xFFFFu;
inline constexpr std::uint8_t kManyRanks = 0xFFu;
// A `.shared::cluster` address is (rank + 1) << kClusterRankShift plus the offset in that CTA's
// shared memory; one below 2^kClusterRankShift is the accessing CTA's own (a `.shared::cta`
// address names the same byte in both windows).
inline constexpr std::uint32_t kClusterRankShift = 24;
// Kernel parameters' generic addresses (cvta.param): this plus the parameter's offset, far from
// every allocation's slot.
inline constexpr std::uint64_t kParamWindow = 0x100000000000ull;

// One instruction, decoded once: every register operand and immediate is a slot of the warp's
// register file (immediates live in constant slots, filled for all lanes at launch).
struct DInstr {
  Handler fn = nullptr;
  Flow flow = Flow::Normal;
  Op op = Op::Mov;
  ScalarType type = ScalarType::B32;
  ScalarType src_type = ScalarType::B32;
  Rounding rounding = Rounding::None;
  Precision precision = Precision::Exact;
  Cmp cmp = Cmp::Eq;
  MulMode mul = MulMode::None;
  Space space = Space::None;
  ShflMode shfl = ShflMode::Bfly;
  AtomOp atom = AtomOp::Add;
  bool ftz = false;
  bool sat = false;
  bool uniform = false;
  bool guard_negated = false;
  bool aligned = false;  // barrier.cluster .aligned
  std::uint8_t vec = 1;
  std::uint8_t elem_bytes = 0;  // memory element size
  std::uint8_t ndst = 0;
  std::uint8_t nsrc = 0;
  std::uint32_t guard = kNoSlot;
  std::array<std::uint32_t, 4> dst{kNoSlot, kNoSlot, kNoSlot, kNoSlot};
  // Sources in PTX order; for memory, src[0] is the address base (kNoSlot for param space).
  // (mma.sync's ten: A's four registers, B's two, C's four.)
  std::array<std::uint32_t, 10> src{kNoSlot, kNoSlot, kNoSlot, kNoSlot, kNoSlot,
                                    kNoSlot, kNoSlot, kNoSlot, kNoSlot, kNoSlot};
  std::int64_t offset = 0;    // address constant
  std::int64_t offset2 = 0;   // a second one: cp.async.bulk's mbarrier
  std::uint32_t aux = 0;      // branch target; param byte offset; Special; barrier id
  std::uint32_t index = 0;    // in Kernel::instructions()
  std::uint32_t threads = 0;  // bar.sync / bar.arrive: the thread count (0: every thread)
};

// One wgmma.mma_async form, decoded: its shape and types, its registers by slot, and its
// immediates. A DInstr of wgmma names it by `aux` (Program::wgmma), for D may hold 128 registers.
struct WgmmaForm {
  std::uint32_t n = 0, k = 0;
  MmaInput a = MmaInput::F16, b = MmaInput::F16;
  bool a_in_registers = false;
  std::vector<std::uint32_t> d;  // D's N/2 slots
  std::array<std::uint32_t, 4> a_regs{kNoSlot, kNoSlot, kNoSlot, kNoSlot};
  std::uint32_t a_desc = kNoSlot, b_desc = kNoSlot;
  std::uint32_t scale_d = kNoSlot;  // a predicate's slot, or kNoSlot for the immediate
  bool scale_d_imm = true;
  bool negate_a = false, negate_b = false;
  bool transpose_a = false, transpose_b = false;
};

struct SharedRange {
  std::uint32_t begin = 0, end = 0;
  std::string name;
};

struct Program {
  const Kernel* kernel = nullptr;
  std::vector<DInstr> code;
  std::uint32_t slots = 0;        // registers + constants
  std::uint32_t first_const = 0;  // slots [first_const, slots) are constants
  std::vector<std::uint64_t> consts;
  std::array<std::uint32_t, kRegClassCount> class_base{};
  std::vector<SharedRange> shared;  // static arrays, then the dynamic one (end set at launch)
  std::uint32_t static_shared_end = 0;
  bool has_dynamic_shared = false;
  std::uint32_t dynamic_align = 16;
  std::vector<std::uint32_t> param_offsets;
  std::uint32_t param_bytes = 0;
  std::vector<WgmmaForm> wgmma;
  // Some instruction reads shared memory through the async proxy (wgmma's descriptors, a TMA
  // store): generic-proxy writes are tracked for the fence.proxy.async rule.
  bool reads_async_proxy = false;
  RegId reg_of(std::uint32_t slot) const;  // for messages
};

// Builds the program; throws Error naming an instruction the executor cannot run.
Program decode(const Kernel& k);

struct Allocation {
  std::uint64_t base = 0;
  std::uint64_t size = 0;
  std::byte* host = nullptr;
  std::vector<std::byte> owned;
  std::string name;
};

// Each allocation has its own slot of fake device addresses, kAllocationSlot wide and centred on
// its base (the first at kFirstAllocation): an address in the slot is the allocation's (in it, or
// a fault naming it), so an access up to half a slot (2 TiB: any 32-bit index of elements up to
// 512 bytes) off either end of a buffer never lands in another one.
inline constexpr std::uint64_t kFirstAllocation = 0x7F0000000000ull;
inline constexpr std::uint64_t kAllocationSlot = std::uint64_t{1} << 42;

// The allocation whose slot holds `address`, or nullptr; `sorted` is by base.
const Allocation* allocation_of(const std::vector<Allocation*>& sorted, std::uint64_t address);

// A cp.async in flight: the source is read when it is issued, the shared bytes are written when a
// cp.async.wait_group of its thread completes its group.
struct AsyncCopy {
  std::uint32_t lane = 0;
  std::uint32_t group = 0;  // the lane's committed-group count when it was issued
  std::uint32_t shared_address = 0;
  std::uint32_t bytes = 0;
  std::array<std::byte, 16> data{};
};

// An mbarrier's state, kept beside shared memory by its address: the arrivals its phase still
// waits for, the transaction bytes announced and not yet landed (negative while a copy lands
// before its expect_tx), and how many phases have completed (the current phase's parity is
// phase & 1).
struct Mbarrier {
  std::uint32_t count = 0;
  std::uint32_t pending = 0;
  std::int64_t tx = 0;
  std::uint32_t phase = 0;
};

// A cp.async.bulk whose bytes are in shared memory but not yet visible: it completes on mbarrier
// `bar`'s phase `phase`, and its bytes become visible to threads that waited for that phase.
struct BulkCopy {
  std::uint32_t bar = 0;
  std::uint32_t phase = 0;
  std::uint32_t shared_address = 0;
  std::uint32_t bytes = 0;
  std::uint8_t kind = 2;  // kPendingBulk, kPendingStAsync or kPendingRedAsync (its bytes' mark)
};

// A wgmma.mma_async in flight: the commit group it belongs to (the warp's committed-group count
// when it was issued), its instruction, and the registers it will write (D) or still reads (A).
struct WgmmaInFlight {
  std::uint32_t group = 0;
  std::uint32_t instr = 0;  // in Kernel::instructions()
  const WgmmaForm* form = nullptr;
};

struct Warp {
  std::vector<std::uint64_t> regs;  // slot * 32 + lane
  std::vector<std::uint32_t> init;  // per slot: lanes that wrote it
  std::uint32_t index = 0;
  std::uint32_t exists = 0;  // lanes that are threads of the CTA
  std::uint32_t exited = 0;
  std::uint32_t waiting = 0;  // at a barrier
  std::uint32_t active = 0;   // the lanes at `pc`, running together
  std::uint32_t pc = 0;
  std::uint32_t parked_min = kNoPc;               // least pc of the runnable lanes not in `active`
  std::array<std::uint32_t, kLanes> lane_pc{};    // for lanes not in `active`
  std::array<std::uint32_t, kLanes> bar_pc{};     // the bar.sync a waiting lane stopped at
  std::array<std::uint32_t, kLanes> exit_pc{};    // the ret an exited lane ran
  std::vector<AsyncCopy> copies;                  // cp.async in flight, in issue order
  std::array<std::uint32_t, kLanes> committed{};  // cp.async.commit_group count per lane
  // Per lane: 1 + the cluster barrier phase it arrived at and has not waited for yet; 0: none.
  std::array<std::uint32_t, kLanes> cluster_arrival{};
  // Lanes past a barrier.cluster.wait: only they know that every peer CTA has started.
  std::uint32_t cluster_waited = 0;
  // wgmma (sm_90a), kept only for kernels that issue wgmma.mma_async: the products in flight in
  // issue order, the warp's committed groups, how many it issued (a warpgroup's warps must
  // agree), its last wgmma.fence (a warp_instructions stamp; 0: none yet), per slot the stamp of
  // the last write by an instruction and the in-flight products whose D or A it is, and the
  // value a product in flight will give each D register (slot * 32 + lane).
  std::vector<WgmmaInFlight> wgmma;
  std::uint32_t wgmma_groups = 0;
  std::uint32_t wgmma_issued = 0;
  std::uint64_t wgmma_fence = 0;
  std::uint32_t wgmma_busy_slots = 0;  // slots with a nonzero count below
  std::vector<std::uint64_t> written_at;
  std::vector<std::uint16_t> wgmma_d_busy, wgmma_a_busy;
  std::vector<std::uint32_t> wgmma_result;
};

struct Ctx;

// The CTAs of one cluster, run together by one host thread: each warp of each CTA runs until it
// blocks, then the barriers that can release do (bar.sync per CTA, mbarriers, barrier.cluster).
struct Cluster {
  std::vector<Ctx*> ctas;  // by %cluster_ctarank
  Dim3 dims{1, 1, 1};
  Dim3 id{0, 0, 0};         // %clusterid
  std::uint32_t phase = 0;  // barrier.cluster phases completed
  // The race check's clock between CTAs: grows at every cluster barrier and every cluster.
  std::uint32_t epoch = 1;
};

struct LaunchState;

// A named barrier with a thread count (bar.sync / bar.arrive id, count) in its current phase: the
// count its first arrival named, the threads that arrived (waiting or not), and the first
// arrival, for messages.
struct NamedBarrier {
  std::uint32_t count = 0;  // 0: no phase under way
  std::uint32_t arrived = 0;
  std::uint32_t first_warp = 0, first_lane = 0, first_instr = 0;
};
inline constexpr std::uint32_t kNamedBarriers = 16;

// One host thread's CTA: shared memory, warps, and the handlers' view of the launch.
struct Ctx {
  const Program* prog = nullptr;
  const LaunchState* launch = nullptr;
  Dim3 cta{0, 0, 0};
  std::vector<std::byte> shared;
  std::vector<std::uint8_t> shared_init;  // 0xFF where some thread wrote the byte
  // kPendingCpAsync where a cp.async in flight will write the byte, kPendingBulk where a bulk
  // copy's byte waits for its mbarrier phase.
  std::vector<std::uint8_t> shared_pending;
  std::uint32_t copies_in_flight = 0;
  std::map<std::uint32_t, Mbarrier> mbarriers;  // by shared address
  std::vector<BulkCopy> bulk_copies;
  // Race check, per shared byte: the barrier interval (epoch), thread and instruction (index in
  // Kernel::instructions()) of the last write and of the last read (kManyReaders: threads of
  // several warps read it).
  std::vector<std::uint32_t> write_epoch, read_epoch;
  std::vector<std::uint16_t> writer, reader;
  std::vector<std::uint32_t> write_instr, read_instr;
  // ... and, for accesses from several CTAs of a cluster, the cluster's epoch and the accessing
  // CTA's rank (kManyRanks: CTAs of several ranks read it). `epoch` above is then the accessing
  // CTA's.
  std::vector<std::uint32_t> write_cluster_epoch, read_cluster_epoch;
  std::vector<std::uint8_t> write_rank, read_rank;
  std::uint32_t epoch = 1;  // grows at every barrier release and every CTA, never reused
  // The async-proxy rule (where Program::reads_async_proxy): per shared byte, the sequence number
  // of its last generic-proxy write (0: none, or an async-proxy write since) and the writing
  // thread; per thread, the sequence number when it last ran fence.proxy.async.
  std::vector<std::uint32_t> generic_write;
  std::vector<std::uint16_t> generic_writer;
  std::vector<std::uint32_t> proxy_fenced;
  std::uint32_t generic_writes = 0;
  Cluster* cluster = nullptr;
  std::uint32_t rank = 0;  // %cluster_ctarank
  std::vector<SharedRange> shared_ranges;
  std::array<NamedBarrier, kNamedBarriers> named{};
  std::vector<Warp> warps;
  Warp* w = nullptr;
  std::uint64_t* regs = nullptr;  // w->regs
  const Allocation* last_alloc = nullptr;
  std::uint64_t warp_instructions = 0;
  std::uint64_t lane_instructions = 0;
  std::vector<TraceRecord>* trace = nullptr;  // set while the traced CTA runs

  std::uint64_t* row(std::uint32_t slot) { return regs + std::size_t{slot} * kLanes; }
  Dim3 thread_of(std::uint32_t warp, std::uint32_t lane) const;
};

struct LaunchState {
  const Kernel* kernel = nullptr;
  LaunchConfig config;
  ExecOptions options;
  std::vector<std::byte> params;
  const std::vector<Allocation*>* allocations = nullptr;  // sorted by base
  std::uint32_t shared_bytes = 0;
  Dim3 cluster{1, 1, 1};  // the CTAs of one cluster
};

// The one place memory faults and other run-time errors are worded: kernel, instruction, thread.
[[noreturn]] void fault(const Ctx& c, const DInstr& in, std::uint32_t lane,
                        const std::string& what);
std::string describe_slot(const Program& p, std::uint32_t slot);
// `instruction #12 'st.shared.f32 [%r8], %f19;'`: instruction `index` of the kernel, as faults
// name it.
std::string describe_instr(const Ctx& c, std::uint32_t index);

// Global memory: the host bytes of [address, address + bytes), checked for bounds and alignment.
std::byte* global_bytes(Ctx& c, const DInstr& in, std::uint32_t lane, std::uint64_t address,
                        std::uint32_t bytes, bool write);
// Where global `address` is, for a fault: relative to the allocation whose slot holds it
// (`offset 4 of allocation 'x' [0x7f0000000000, +400)`, `12 bytes past the end of ...`).
std::string where_global(const Ctx& c, std::uint64_t address, std::uint32_t bytes);
// The same without the alignment check (cp.async sources of any src-size).
std::byte* global_span(Ctx& c, const DInstr& in, std::uint32_t lane, std::uint64_t address,
                       std::uint32_t bytes, bool write);

inline constexpr std::uint8_t kPendingCpAsync = 1;
inline constexpr std::uint8_t kPendingBulk = 2;
// A peer's st.async / red.async whose bytes wait for their mbarrier phase (red.async may add to
// bytes another red.async in flight updates).
inline constexpr std::uint8_t kPendingStAsync = 3;
inline constexpr std::uint8_t kPendingRedAsync = 4;

// Shared memory: the declared array holding [address, address + bytes), which must be aligned to
// `align` (default: bytes); faults otherwise.
const SharedRange& shared_range(Ctx& c, const DInstr& in, std::uint32_t lane, std::int64_t address,
                                std::uint32_t bytes, bool write, std::uint32_t align = 0);
// A thread may touch bytes a copy in flight will write only after waiting for it; `owner` holds
// them (c itself, or a peer of its cluster).
void check_not_in_flight(Ctx& c, const Ctx& owner, const DInstr& in, std::uint32_t lane,
                         const SharedRange& range, std::size_t offset, std::uint32_t bytes,
                         bool write);
inline void check_not_in_flight(Ctx& c, const DInstr& in, std::uint32_t lane,
                                const SharedRange& range, std::size_t offset, std::uint32_t bytes,
                                bool write) {
  check_not_in_flight(c, c, in, lane, range, offset, bytes, write);
}
// The bytes [address, +bytes) of `owner`'s shared memory (c's own, or a peer's) as thread `lane`
// of c reads or writes them: bounds, alignment, copies in flight, the race check, and for reads
// that some thread wrote them. An atomic read-modify-write (`atomic`) reads and writes; it races
// with unordered plain accesses, never with other atomics.
std::byte* shared_bytes(Ctx& c, Ctx& owner, const DInstr& in, std::uint32_t lane,
                        std::int64_t address, std::uint32_t bytes, bool write, bool atomic = false);

// A `.shared::cluster` address resolved: the CTA whose shared memory it is, and the offset there.
struct ClusterAddress {
  Ctx* owner = nullptr;
  std::uint32_t offset = 0;
};
// Faults on an address naming no CTA of the cluster, or a CTA whose threads have all exited.
ClusterAddress resolve_cluster(Ctx& c, const DInstr& in, std::uint32_t lane, std::uint32_t address);
// "CTA rank 2 (CTA (5, 0, 0))", for messages about a peer's shared memory.
std::string describe_rank(const Ctx& c);

// The mbarrier at `address` of `owner`'s shared memory; faults when none was initialized there.
Mbarrier& find_mbarrier(Ctx& c, Ctx& owner, const DInstr& in, std::uint32_t lane,
                        std::uint32_t address);
// Completes the phase when every arrival has come and every announced byte has landed.
void complete_if_done(Mbarrier& m);

// mbarrier.try_wait.parity of `lane`: has the phase it names completed? Faults on a barrier never
// initialized or a parity other than 0 and 1.
bool mbarrier_phase_done(Ctx& c, const DInstr& in, std::uint32_t lane);
// The mbarrier a waiting lane waits on, in words, for a deadlock's message.
std::string describe_mbarrier_wait(Ctx& c, const DInstr& in, std::uint32_t lane);

// An `.aligned` instruction: every live thread of the warp must execute it together.
void check_aligned(Ctx& c, const DInstr& in, std::uint32_t exec);

// Runs the CTAs of `cluster` (cluster.ctas[r] is CTA ctas[r]) to completion, together.
void run_cluster(Cluster& cluster, const std::vector<Dim3>& ctas);
void prepare_ctx(Ctx& c, const Program& p, const LaunchState& launch);

template <class F>
inline void each_lane(std::uint32_t mask, F&& f) {
  if (mask == kFullMask) {
    for (std::uint32_t l = 0; l < kLanes; ++l) f(l);
    return;
  }
  while (mask != 0) {
    const auto l = static_cast<std::uint32_t>(std::countr_zero(mask));
    mask &= mask - 1;
    f(l);
  }
}

// The async proxy (ops_memory.cpp): an async-proxy write of [address, +bytes) (a bulk or tensor
// copy landing), and an async-proxy read by thread `lane`, which faults where a generic-proxy write
// is not yet ordered before it by a fence.proxy.async of the writer or the reader.
void note_async_proxy_write(Ctx& c, std::uint32_t address, std::uint32_t bytes);
void check_async_proxy_read(Ctx& c, const DInstr& in, std::uint32_t lane, std::uint32_t address,
                            std::uint32_t bytes);

// wgmma (ops_wgmma.cpp): faults when `in` touches a register a wgmma.mma_async in flight writes or
// reads (it must wait for it first); records the registers `in` wrote, for wgmma.fence's rule.
void check_wgmma_registers(Ctx& c, const DInstr& in, std::uint32_t exec);
void note_register_writes(Ctx& c, const DInstr& in);
// At a CTA's end: every warp of each warpgroup issued as many wgmma.mma_async.
void check_warpgroups_agree(Ctx& c);
void reset_wgmma(Warp& w, const Program& p);

// Where a `.shared::cluster` ld/st finds its handler (ops_cluster.cpp).
Handler select_ld_cluster(const Instr& in);
Handler select_st_cluster(const Instr& in);

}  // namespace ptxdsl::detail
