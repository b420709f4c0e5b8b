// C = A·Bᵀ on Hopper's tensor cores (sm_90a): the same product as gemm.cpp (bf16 A m×k and B n×k,
// row-major; f32 sums; bf16 C m×n), persistent and warp-specialized.
//
// A CTA of three warpgroups walks the 128×256 tiles of C (ctaid, ctaid + nctaid, ...; groups of 8
// tile rows so that CTAs running together share their A and B tiles in L2). Warpgroup 0 is the
// producer: one thread issues, for each 64-deep step of k, a TMA copy of A's 128×64 box and B's
// 256×64 box into the next stage of a 4-stage ring (the 128-byte swizzle, zeros past m, n and k),
// the stage's `full` mbarrier counting their bytes. Warpgroups 1 and 2 are consumers: each waits
// for the stage, multiplies its 64 rows of A by B's 256 rows with four wgmma.m64n256k16 straight
// from shared memory, and releases the stage it read one step before (its products complete a
// step later: wgmma.wait_group 1) on the stage's `empty` mbarrier, which the producer waits for
// before refilling it. The producer gives its registers to the consumers (setmaxnreg), which
// hold a 64×256 f32 accumulator each (128 registers a thread) and store it as bf16, rows and
// columns past m and n skipped.
#include <ptxdsl/tool.hpp>

#include <map>
#include <string>

#include "gemm_sizes.hpp"

namespace {

using namespace ptxdsl;

constexpr std::uint32_t kTileM = 128, kTileN = 256, kTileK = 64, kStages = 4;
constexpr std::uint32_t kConsumers = 2;  // warpgroups, each 64 rows of the tile
constexpr std::uint32_t kThreads = (1 + kConsumers) * kWarpgroupThreads;
constexpr std::uint32_t kProducerRegisters = 40, kConsumerRegisters = 232;
constexpr std::uint32_t kGroupRows = 8;  // tile rows a group of the walk covers
constexpr std::uint32_t kMmaK = 16;

constexpr SwizzledTile kTileA{.rows = kTileM, .element = ScalarType::BF16};
constexpr SwizzledTile kTileB{.rows = kTileN, .element = ScalarType::BF16};
constexpr std::uint32_t kStageBytes = kTileA.bytes() + kTileB.bytes();

struct Walk {
  std::uint32_t tiles_m, tiles_n;
  std::uint32_t tiles() const { return tiles_m * tiles_n; }
};

// Tile `tile`'s row and column of tiles: the walk goes down a group of kGroupRows tile rows, then
// to the next column, then to the next group.
std::pair<Reg<U32>, Reg<U32>> tile_at(Kernel& k, const Walk& w, Reg<U32> tile) {
  const std::uint32_t group_tiles = kGroupRows * w.tiles_n;
  const Reg<U32> group = k.div(tile, group_tiles);
  const Reg<U32> first = k.mul(group, kGroupRows);
  const Reg<U32> rows = k.min(k.sub(k.mov<U32>(w.tiles_m), first), kGroupRows);
  const Reg<U32> within = k.sub(tile, k.mul(group, group_tiles));
  return {k.add(first, k.rem(within, rows)), k.div(within, rows)};
}

Reg<S32> coord(Kernel& k, Reg<U32> v) {
  return k.bitcast<S32>(v);
}

tool::Launch build(Module& m, const tool::Params& p) {
  const std::uint32_t rows = p.u32("m"), cols = p.u32("n"), depth = p.u32("k");
  const Walk walk{(rows + kTileM - 1) / kTileM, (cols + kTileN - 1) / kTileN};
  const std::uint32_t k_tiles = (depth + kTileK - 1) / kTileK;
  const std::uint32_t ctas = std::min(walk.tiles(), p.u32("ctas"));

  Kernel& k = m.kernel("gemm_sm90");
  k.require_threads(kThreads);
  const TensorMap a_map = k.param_tensor_map("a_map");
  const TensorMap b_map = k.param_tensor_map("b_map");
  const GlobalPtr<BF16> c = k.param_ptr<BF16>("c");
  // The swizzle's pattern runs on shared addresses: the ring starts on a 1024-byte boundary, made
  // so here rather than trusted to the dynamic array's placement.
  const SharedPtr<U8> dynamic = k.shared_dynamic<U8>(
      "ring", kStages * kStageBytes + SwizzledTile::kAlign, SwizzledTile::kAlign);
  const SharedPtr<U8> ring{
      k.and_(k.add(dynamic.base, SwizzledTile::kAlign - 1), ~(SwizzledTile::kAlign - 1)), 0};
  const MbarrierPipeline pipe(k, kStages);
  const Reg<U32> tid = k.tid_x();
  const Warpgroup wg = Warpgroup::of(k, tid);

  k.if_(tid == 0u, [&] {
    // Each consumer warp releases a stage once its products are done reading it.
    pipe.init(k, 1, kConsumers * kWarpgroupThreads / 32);
    k.prefetch_tensormap(a_map);
    k.prefetch_tensormap(b_map);
  });
  k.bar_sync();

  const auto tiles_of_this_cta = [&](const std::function<void(Reg<U32>, Reg<U32>)>& body) {
    k.for_range(k.ctaid_x(), walk.tiles(), k.nctaid_x(), [&](Reg<U32> tile) {
      const auto [tm, tn] = tile_at(k, walk, tile);
      body(tm, tn);
    });
  };

  k.if_else(
      wg.index == 0u,
      [&] {
        k.setmaxnreg_dec(kProducerRegisters);
        k.if_(tid == 0u, [&] {
          const MbarrierPipeline::Position at = pipe.start(k);
          tiles_of_this_cta([&](Reg<U32> tm, Reg<U32> tn) {
            const Reg<S32> row_a = coord(k, k.mul(tm, kTileM));
            const Reg<S32> row_b = coord(k, k.mul(tn, kTileN));
            k.for_range(k.mov<U32>(0u), k_tiles, 1u, [&](Reg<U32> kt) {
              pipe.producer_acquire(k, at);
              const SharedPtr<B64> full = pipe.producer_expect(k, at, kStageBytes);
              const SharedPtr<U8> stage{k.mad(at.stage, kStageBytes, ring.base), 0};
              const Reg<S32> col = coord(k, k.mul(kt, kTileK));
              k.cp_async_bulk_tensor(stage, a_map, {col, row_a}, full);
              k.cp_async_bulk_tensor(stage + kTileA.bytes(), b_map, {col, row_b}, full);
              pipe.advance(k, at);
            });
          });
        });
      },
      [&] {
        k.setmaxnreg_inc(kConsumerRegisters);
        const Reg<U32> consumer = k.sub(wg.index, 1u);
        const Reg<U32> a_rows = k.mul(consumer, SwizzledTile::row_offset(kTileM / kConsumers));
        const MbarrierPipeline::Position at = pipe.start(k);
        const Reg<U32> released = k.mov<U32>(0u);
        const Pred warp_leader = wg.lane == 0u;
        WgmmaAcc<kTileN> acc = k.wgmma_acc<kTileN>();
        tiles_of_this_cta([&](Reg<U32> tm, Reg<U32> tn) {
          k.for_range(k.mov<U32>(0u), k_tiles, 1u, [&](Reg<U32> kt) {
            pipe.consumer_wait(k, at);
            const Reg<U32> stage = k.mad(at.stage, kStageBytes, ring.base);
            const SharedPtr<BF16> a{k.add(stage, a_rows), 0};
            const SharedPtr<BF16> b{k.add(stage, kTileA.bytes()), 0};
            const Reg<PredT> accumulate = k.setp(Cmp::Ne, kt, 0u);
            k.wgmma_fence();
            for (std::uint32_t s = 0; s < kTileK / kMmaK; ++s) {
              const std::uint32_t step = kTileA.k_offset(s * kMmaK) / 2;
              WgmmaOptions o;
              if (s == 0) o.accumulate = accumulate;
              k.wgmma_mma_async<BF16>(acc, k.matrix_descriptor(a + step, SwizzledTile::layout()),
                                      k.matrix_descriptor(b + step, SwizzledTile::layout()), o);
            }
            k.wgmma_commit_group();
            // The step before is done reading its stage: give it back.
            k.wgmma_wait_group(1);
            k.if_(accumulate && warp_leader, [&] { pipe.consumer_release(k, released); });
            k.mov(released, at.stage);
            pipe.advance(k, at);
          });
          k.wgmma_wait_group(0);
          k.if_(warp_leader, [&] { pipe.consumer_release(k, released); });

          // D's fragment: thread t of the group holds rows 16·warp + lane/4 (+ 8), columns
          // 2·(lane % 4) + 8j (+ 1) of its 64 × 256.
          const Reg<U32> row0 = k.add(k.mad(tm, kTileM, k.mul(consumer, kTileM / kConsumers)),
                                      k.add(k.mul(wg.warp, 16u), k.shr(wg.lane, 2u)));
          const Reg<U32> col0 = k.mad(tn, kTileN, k.shl(k.and_(wg.lane, 3u), 1u));
          for (std::uint32_t half = 0; half < 2; ++half) {
            const Reg<U32> row = k.add(row0, half * 8);
            const Pred row_inside = k.setp(Cmp::Lt, row, rows);
            const GlobalPtr<BF16> c_row = k.row(c, k.selp<U32>(row, 0u, row_inside), cols);
            for (std::uint32_t j = 0; j < kTileN / 8; ++j) {
              const Reg<U32> col = k.add(col0, j * 8);
              const Pred inside = row_inside && k.setp(Cmp::Lt, col, cols);
              const Reg<BF16x2> pair =
                  k.cvt_pack<BF16x2>(acc.regs[4 * j + 2 * half], acc.regs[4 * j + 2 * half + 1]);
              k.if_(inside, [&] { k.st(k.index(c_row, col).as<BF16x2>(), pair); });
            }
          }
        });
      });
  return {.grid = Dim3(ctas), .block = {}, .entry = {}};
}

// A and B through tensor maps whose boxes are the stages' tiles.
std::map<std::string, tool::TensorMapArg> tensor_maps(const tool::Params& p) {
  const std::uint64_t rows = p.uint("m"), cols = p.uint("n"), depth = p.uint("k");
  const auto l2 = static_cast<std::uint32_t>(std::stoul(p.choice("l2_promotion")));
  return {{"a_map", {"a", kTileA.map(rows, depth), l2}},
          {"b_map", {"b", kTileB.map(cols, depth), l2}}};
}

}  // namespace

namespace gemm {

tool::KernelDefinition sm90_definition() {
  tool::KernelDefinition d;
  d.name = "gemm_sm90";
  d.description =
      "c = a·bᵀ as gemm, on sm_90a: persistent, warp-specialized, TMA into a 4-stage mbarrier "
      "ring, wgmma m64n256k16";
  d.params = sizes();
  d.params.push_back(tool::Parameter::uint(
      "ctas", "the persistent grid's CTAs at most (an H100 SXM has 132 SMs)", 1, 1u << 16, 132));
  d.params.push_back(tool::Parameter::choice(
      "l2_promotion", "bytes the L2 fetches past each TMA box (the GPU's tensor maps)",
      {"0", "64", "128", "256"}, "256"));
  d.archs = {Arch::Sm90a};
  d.build = [](Module& m, const tool::Params& p) {
    check_sizes(p);
    return build(m, p);
  };
  d.inputs = inputs;
  d.tensor_maps = tensor_maps;
  d.reference = reference;
  d.tolerance = tolerance;
  d.flops = flops;
  return d;
}

}  // namespace gemm
