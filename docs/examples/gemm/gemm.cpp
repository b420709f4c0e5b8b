// C = A·Bᵀ on tensor cores, the sm_80 way: bf16 A (m×k, row-major) and B (n×k, row-major, as
// `torch.matmul(a, b.T)` takes them), f32 sums, bf16 C (m×n, row-major). A kernel tool built by
// ptxdsl_add_kernel_tool (docs/dsl.md, "Write your own kernel"); m, n and k are its parameters,
// multiples of 8.
//
// A CTA computes a 128×128 tile of C with 8 warps, 2 along m by 4 along n, each a 64×32 tile: 4×4
// mma.sync.m16n8k16 products a 16-deep step of k. k advances 32 at a time through a ring of 3
// shared-memory stages that cp.async fills two tiles ahead of the one the warps multiply; the
// ldmatrix loads of the fragments read 16-byte chunks whose position in their 64-byte row is
// XORed with bits 1-2 of the row (a swizzle), so that the 8 rows one ldmatrix reads fall in 8
// different bank groups. Rows and columns past m, n or k are copied in as zeros (cp.async's
// zero fill) and never stored.
#include <array>
#include <cmath>
#include <ptxdsl/tool.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gemm_sizes.hpp"

namespace {

using namespace ptxdsl;

constexpr std::uint32_t kTileM = 128, kTileN = 128, kTileK = 32, kStages = 3;
constexpr std::uint32_t kWarpsM = 2, kWarpsN = 4, kThreads = 32 * kWarpsM * kWarpsN;
constexpr std::uint32_t kWarpM = kTileM / kWarpsM, kWarpN = kTileN / kWarpsN;  // 64×32
constexpr std::uint32_t kMmaM = 16, kMmaN = 8, kMmaK = 16;
constexpr std::uint32_t kFragsM = kWarpM / kMmaM, kFragsN = kWarpN / kMmaN;  // 4×4
constexpr std::uint32_t kRowBytes = kTileK * 2;                              // 64: 4 chunks
constexpr std::uint32_t kChunkElems = 8;                                     // 16 bytes of bf16
constexpr std::uint32_t kStageBytes = kTileM * kRowBytes;                    // one operand's tile
constexpr std::uint32_t kChunksPerThread = kTileM * (kRowBytes / 16) / kThreads;  // 2

// The swizzled byte offset of 16-byte chunk `chunk` of row `row` in a stage's tile.
Reg<U32> swizzled(Kernel& k, Reg<U32> row, Reg<U32> chunk) {
  const Reg<U32> x = k.and_(k.shr(row, 1u), 3u);
  return k.add(k.mul(row, kRowBytes), k.shl(k.xor_(chunk, x), 4u));
}

// One operand (A or B): its tiles' ring in shared memory and this thread's part of filling it.
struct Operand {
  SharedPtr<U8> ring;       // kStages tiles of kTileM rows × kRowBytes
  GlobalPtr<BF16> matrix;   // rows × k, row-major
  std::uint32_t rows = 0;   // m or n
  std::uint32_t depth = 0;  // k
  // The thread's chunks: their row in the tile, their swizzled offset in a stage.
  std::array<Reg<U32>, kChunksPerThread> row{}, offset{};
  std::array<Pred, kChunksPerThread> row_inside{};
  std::array<GlobalPtr<BF16>, kChunksPerThread> row_start{};
  Reg<U32> column{};  // the chunk's first column in a k tile

  // Copies k tile `tile` into stage `stage` (zeros past the matrix's rows and depth).
  void load(Kernel& k, Reg<U32> tile, Reg<U32> stage) const {
    const Reg<U32> first = k.mad(tile, kTileK, column);
    const Pred column_inside = k.setp(Cmp::Lt, first, depth);
    const Reg<U32> stage_base = k.mad(stage, kStageBytes, ring.base);
    for (std::uint32_t i = 0; i < kChunksPerThread; ++i) {
      const Pred inside = k.and_(row_inside[i], column_inside);
      // A chunk outside reads nothing (source size 0) from an address that stays in the matrix.
      const GlobalPtr<BF16> src = k.index(row_start[i], k.selp<U32>(first, 0u, inside));
      const SharedPtr<BF16> dst{k.add(stage_base, offset[i]), 0};
      k.cp_async_zfill(dst, src, 16, k.selp<U32>(16u, 0u, inside));
    }
  }
};

Operand operand(Kernel& k, const char* name, std::uint32_t rows, std::uint32_t depth,
                Reg<U32> tile_row0, Reg<U32> tid) {
  Operand o;
  o.ring = k.shared_array<U8>(std::string(name) + "_ring", kStages * kStageBytes, 128);
  o.matrix = k.param_ptr<BF16>(name);
  o.rows = rows;
  o.depth = depth;
  const Reg<U32> chunk = k.and_(tid, 3u);
  o.column = k.mul(chunk, kChunkElems);
  for (std::uint32_t i = 0; i < kChunksPerThread; ++i) {
    o.row[i] = k.shr(k.add(tid, i * kThreads), 2u);
    o.offset[i] = swizzled(k, o.row[i], chunk);
    const Reg<U32> global_row = k.add(tile_row0, o.row[i]);
    o.row_inside[i] = k.setp(Cmp::Lt, global_row, rows);
    o.row_start[i] = k.row(o.matrix, k.selp<U32>(global_row, 0u, o.row_inside[i]), depth);
  }
  return o;
}

tool::Launch build(Module& m, const tool::Params& p) {
  const std::uint32_t rows = p.u32("m"), cols = p.u32("n"), depth = p.u32("k");
  Kernel& k = m.kernel("gemm");
  k.require_threads(kThreads);
  const Reg<U32> tid = k.tid_x(), lane = k.and_(tid, 31u), warp = k.shr(tid, 5u);
  const Reg<U32> warp_m = k.rem(warp, kWarpsM), warp_n = k.div(warp, kWarpsM);
  const Reg<U32> m0 = k.mul(k.special(Special::CtaidY), kTileM);
  const Reg<U32> n0 = k.mul(k.ctaid_x(), kTileN);
  const Operand a = operand(k, "a", rows, depth, m0, tid);
  const Operand b = operand(k, "b", cols, depth, n0, tid);
  const GlobalPtr<BF16> c = k.param_ptr<BF16>("c");

  // ldmatrix addresses: lane 8i + r names row r of matrix i. A's four matrices are rows 0-7 and
  // 8-15 (i & 1) of columns 0-7 and 8-15 (i >> 1) of a 16×16 block; B's are rows (n) 0-7 and 8-15
  // (i >> 1) of columns (k) 0-7 and 8-15 (i & 1). A 16-row block starts on a multiple of 16 rows,
  // so its swizzle is r's alone.
  const Reg<U32> matrix = k.shr(lane, 3u), r = k.and_(lane, 7u);
  const Reg<U32> x = k.and_(k.shr(r, 1u), 3u);
  std::array<Reg<U32>, kTileK / kMmaK> a_lane{}, b_lane{};
  for (std::uint32_t step = 0; step < kTileK / kMmaK; ++step) {
    const std::uint32_t chunk0 = step * kMmaK / kChunkElems;
    const Reg<U32> a_row = k.add(k.mul(warp_m, kWarpM), k.mad(k.and_(matrix, 1u), 8u, r));
    const Reg<U32> a_chunk = k.xor_(k.add(k.shr(matrix, 1u), chunk0), x);
    a_lane[step] = k.add(k.mul(a_row, kRowBytes), k.shl(a_chunk, 4u));
    const Reg<U32> b_row = k.add(k.mul(warp_n, kWarpN), k.mad(k.shr(matrix, 1u), 8u, r));
    const Reg<U32> b_chunk = k.xor_(k.add(k.and_(matrix, 1u), chunk0), x);
    b_lane[step] = k.add(k.mul(b_row, kRowBytes), k.shl(b_chunk, 4u));
  }

  std::array<std::array<MmaAcc<F32>, kFragsN>, kFragsM> acc{};
  for (auto& row : acc) {
    for (MmaAcc<F32>& f : row) f = k.mma_zero<F32>();
  }

  const std::uint32_t tiles = (depth + kTileK - 1) / kTileK;
  for (std::uint32_t s = 0; s + 1 < kStages; ++s) {
    if (s < tiles) {
      const Reg<U32> tile = k.mov<U32>(s);
      a.load(k, tile, tile);
      b.load(k, tile, tile);
    }
    k.cp_async_commit();
  }
  k.for_range(k.mov<U32>(0u), tiles, 1u, [&](Reg<U32> tile) {
    // Tile `tile` has landed for every thread, and every warp is done with the stage the next
    // copy overwrites (the one it multiplied last trip).
    k.cp_async_wait(kStages - 2);
    k.bar_sync();
    const Reg<U32> ahead = k.add(tile, kStages - 1);
    k.if_(k.setp(Cmp::Lt, ahead, tiles), [&] {
      const Reg<U32> stage = k.rem(ahead, kStages);
      a.load(k, ahead, stage);
      b.load(k, ahead, stage);
    });
    k.cp_async_commit();
    const Reg<U32> stage_offset = k.mul(k.rem(tile, kStages), kStageBytes);
    const Reg<U32> a_stage = k.add(a.ring.base, stage_offset);
    const Reg<U32> b_stage = k.add(b.ring.base, stage_offset);
    for (std::uint32_t step = 0; step < kTileK / kMmaK; ++step) {
      const SharedPtr<BF16> a_at{k.add(a_stage, a_lane[step]), 0};
      const SharedPtr<BF16> b_at{k.add(b_stage, b_lane[step]), 0};
      std::array<MmaA<BF16>, kFragsM> fa{};
      for (std::uint32_t i = 0; i < kFragsM; ++i) {
        fa[i].regs = k.ldmatrix<4>(a_at + i * kMmaM * kRowBytes / 2);
      }
      std::array<MmaB<BF16>, kFragsN> fb{};
      for (std::uint32_t j = 0; j < kFragsN; j += 2) {
        const Vec<B32, 4> two = k.ldmatrix<4>(b_at + j * kMmaN * kRowBytes / 2);
        fb[j].regs = {two[0], two[1]};
        fb[j + 1].regs = {two[2], two[3]};
      }
      for (std::uint32_t i = 0; i < kFragsM; ++i) {
        for (std::uint32_t j = 0; j < kFragsN; ++j) k.mma_accumulate(acc[i][j], fa[i], fb[j]);
      }
    }
  });

  // D's fragment: lane 4g + q holds rows g and g + 8, columns 2q and 2q + 1, of each 16×8 block.
  const Reg<U32> g = k.shr(lane, 2u), q = k.and_(lane, 3u);
  const Reg<U32> row0 = k.add(k.add(m0, k.mul(warp_m, kWarpM)), g);
  const Reg<U32> col0 = k.add(k.add(n0, k.mul(warp_n, kWarpN)), k.shl(q, 1u));
  for (std::uint32_t i = 0; i < kFragsM; ++i) {
    for (std::uint32_t half = 0; half < 2; ++half) {
      const Reg<U32> row = k.add(row0, i * kMmaM + half * 8);
      const Pred row_inside = k.setp(Cmp::Lt, row, rows);
      const GlobalPtr<BF16> c_row = k.row(c, k.selp<U32>(row, 0u, row_inside), cols);
      for (std::uint32_t j = 0; j < kFragsN; ++j) {
        const Reg<U32> col = k.add(col0, j * kMmaN);
        const Pred inside = k.and_(row_inside, k.setp(Cmp::Lt, col, cols));
        const Reg<BF16x2> pair =
            k.cvt_pack<BF16x2>(acc[i][j].regs[2 * half], acc[i][j].regs[2 * half + 1]);
        k.if_(inside, [&] { k.st(k.index(c_row, col).as<BF16x2>(), pair); });
      }
    }
  }
  return {.grid = Dim3((cols + kTileN - 1) / kTileN, (rows + kTileM - 1) / kTileM),
          .block = {},
          .entry = {}};
}

}  // namespace

void ptxdsl::tool::register_kernels(Registry& registry) {
  KernelDefinition d;
  d.name = "gemm";
  d.description = "c = a·bᵀ: bf16 a (m×k) and b (n×k), f32 sums, bf16 c (m×n); mma.sync, sm_80";
  d.params = gemm::sizes();
  d.archs = {Arch::Sm80, Arch::Sm89, Arch::Sm90, Arch::Sm90a, Arch::Sm100, Arch::Sm100a};
  d.build = [](Module& m, const tool::Params& p) {
    gemm::check_sizes(p);
    return build(m, p);
  };
  d.inputs = gemm::inputs;
  d.reference = gemm::reference;
  d.tolerance = gemm::tolerance;
  d.flops = gemm::flops;
  registry.add(std::move(d));
  registry.add(gemm::sm90_definition());
}
