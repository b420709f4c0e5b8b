// The backward's dw (and db) by partial rows (WeightGrads::PartialRows): each thread adds dy·x̂
// (and dy) of every row it walks into accumulators over its own columns, and the CTA leaves them
// as one f32 partial row in the workspace, which the column-reduce launch sums.
#include <algorithm>

#include "weight_grads.hpp"

namespace ptxdsl::kernels::detail {
namespace {

// One accumulator (dw or db) over this thread's columns. Each chunk lives where the plan put it:
// f32 registers, shared memory, or the CTA's partial row in the workspace; only the owning thread
// ever touches it, so none of them needs a barrier.
class Accumulator {
 public:
  Accumulator(Kernel& k, const Plan& plan, const RowMasks& columns, GlobalDPtr row_start,
              GlobalDPtr partial_row, std::optional<SharedPtr<F32>> shared)
      : plan_(plan),
        columns_(columns),
        row_start_(row_start),
        partial_row_(partial_row),
        shared_(shared) {
    std::uint32_t staged = 0;
    regs_.resize(plan.chunks);
    for (std::uint32_t j = 0; j < plan.chunks; ++j) {
      shared_index_.push_back(plan.accum[j] == Place::Shared ? staged++ : 0);
      Values z;
      for (std::uint32_t e = 0; e < plan.vec; ++e) z.push_back(k.mov<F32>(0.0f));
      if (plan.accum[j] == Place::Registers) {
        regs_[j] = z;
      } else {
        put(k, j, z);
      }
    }
  }

  GlobalDPtr row_start() const { return row_start_; }

  // acc[j] += a·b, or += a; `shift` as for_each_chunk passes it.
  void add(Kernel& k, std::uint32_t j, const Values& a, const Values* b,
           std::optional<Reg<U32>> shift) {
    if (plan_.accum[j] == Place::Registers) {
      for (std::uint32_t e = 0; e < plan_.vec; ++e) {
        if (b) {
          k.fma(regs_[j][e], a[e], (*b)[e], regs_[j][e]);
        } else {
          k.add(regs_[j][e], regs_[j][e], a[e]);
        }
      }
      return;
    }
    Values v = get(k, j, shift);
    for (std::uint32_t e = 0; e < plan_.vec; ++e)
      v[e] = b ? k.fma(a[e], (*b)[e], v[e]) : k.add(v[e], a[e]);
    put(k, j, v, shift);
  }

  // The CTA's partial row from this thread's register and shared chunks (workspace chunks are
  // already there).
  void write_out(Kernel& k, ChunkFence fence) {
    std::vector<int> keys;
    for (std::uint32_t j = 0; j < plan_.chunks; ++j) {
      keys.push_back(plan_.accum[j] == Place::Shared && columns_.lanes().map().complete(j) ? 1
                                                                                           : -1);
    }
    const std::uint32_t per = per_chunk();
    const RowLanes& lanes = columns_.lanes();
    const bool by_warp = warp_blocked_columns(plan_) > 0;
    for_each_chunk(
        k, keys, plan_.loop_group,
        [&](std::uint32_t j, std::optional<Reg<U32>> shift) {
          if (plan_.accum[j] == Place::Global) return;
          if (by_warp && lanes.map().complete(j)) {
            // The lane's halves at 4·lane and 128 + 4·lane of its warp's 256 floats. Made here,
            // chunk by chunk: an address held from the start costs a spill (32768 wide, sm_80).
            const Reg<U32> in_warp = k.and_(lanes.lane(), 31u);
            const Reg<U32> piece = k.sub(lanes.first_element(), k.shl(in_warp, 2u));
            const GlobalDPtr q =
                shifted(k, at(k, row_start_, piece), shift, per) + lanes.map().chunk_offset(j);
            const Values v = get(k, j, shift);
            for (std::uint32_t half = 0; half < 2; ++half) {
              Raw r;
              r.f32.assign(v.begin() + 4 * half, v.begin() + 4 * half + 4);
              store_raw(k, q + 128 * half, r, std::nullopt, kNoHints);
            }
            return;
          }
          store_chunk(k, columns_, shifted(k, partial_row_, shift, per), j, get(k, j, shift),
                      kNoHints);
        },
        fence);
  }

  // This thread's columns of every chunk, as f32, into `merge`: a buffer of the row's columns at
  // this thread's first element.
  void write_shared(Kernel& k, SharedDPtr merge, ChunkFence fence) {
    std::vector<int> keys;
    for (std::uint32_t j = 0; j < plan_.chunks; ++j) {
      // Register chunks unrolled without a fence: they load nothing ptxas could hoist.
      keys.push_back(plan_.accum[j] == Place::Shared ? 1 : 0);
    }
    const std::uint32_t per = per_chunk();
    for_each_chunk(
        k, keys, plan_.loop_group,
        [&](std::uint32_t j, std::optional<Reg<U32>> shift) {
          Raw r;
          r.f32 = get(k, j, shift);
          store_raw(k, shifted(k, merge, shift, per) + columns_.lanes().map().chunk_offset(j), r,
                    std::nullopt, kNoHints);
        },
        fence);
  }

 private:
  std::uint32_t per_chunk() const { return plan_.threads_per_row * plan_.vec; }
  SharedDPtr shared_chunk(Kernel& k, std::uint32_t j, std::optional<Reg<U32>> shift) const {
    const SharedDPtr base =
        shifted(k, SharedDPtr{shared_->as<B32>(), ScalarType::F32}, shift, per_chunk());
    return base + static_cast<std::int64_t>(shared_index_[j]) * per_chunk();
  }
  Values get(Kernel& k, std::uint32_t j, std::optional<Reg<U32>> shift = std::nullopt) {
    switch (plan_.accum[j]) {
      case Place::Registers:
        return regs_[j];
      case Place::Shared:
        return decode(k, load_raw(k, shared_chunk(k, j, shift), plan_.vec, std::nullopt, kNoHints));
      case Place::Global:
        break;
    }
    const GlobalDPtr row = shifted(k, partial_row_, shift, per_chunk());
    return decode_chunk(k, columns_, j, issue_chunk(k, columns_, row, j, kNoHints));
  }
  void put(Kernel& k, std::uint32_t j, const Values& v,
           std::optional<Reg<U32>> shift = std::nullopt) {
    if (plan_.accum[j] == Place::Shared) {
      Raw r;
      r.f32 = v;
      store_raw(k, shared_chunk(k, j, shift), r, std::nullopt, kNoHints);
    } else {
      store_chunk(k, columns_, shifted(k, partial_row_, shift, per_chunk()), j, v, kNoHints);
    }
  }

  const Plan& plan_;
  const RowMasks& columns_;
  GlobalDPtr row_start_;
  GlobalDPtr partial_row_;
  std::optional<SharedPtr<F32>> shared_;
  std::vector<std::uint32_t> shared_index_;
  std::vector<Values> regs_;
};

// Sums the R row slots' accumulators in slot order through shared memory, then writes the CTA's
// partial row: column c by thread c, c + block, ...
// Each row slot's accumulators into the merge region, in column order: accumulator a's slot r at
// (a·R + r)·span floats.
void write_row_slots(Kernel& k, const Plan& plan, const CtaLayout& cta, const RowLanes& lanes,
                     SharedPtr<F32> merge, std::vector<Accumulator>& accs, ChunkFence fence) {
  const std::uint32_t span = plan.row_span();
  const SharedPtr<F32> slot_start = k.index(merge, k.mad(cta.slot, span, lanes.first_element()));
  for (std::size_t a = 0; a < accs.size(); ++a) {
    const SharedPtr<F32> mine =
        slot_start + static_cast<std::int64_t>(a * plan.rows_per_cta * span);
    accs[a].write_shared(k, SharedDPtr{mine.as<B32>(), ScalarType::F32}, fence);
  }
}

void merge_row_slots(Kernel& k, const Plan& plan, const CtaLayout& cta, const RowLanes& lanes,
                     SharedPtr<F32> merge, std::vector<Accumulator>& accs, ChunkFence fence) {
  const std::uint32_t span = plan.row_span();
  const std::uint32_t R = plan.rows_per_cta;
  write_row_slots(k, plan, cta, lanes, merge, accs, fence);
  k.bar_sync(0);
  const std::uint32_t block = plan.block();
  const SharedPtr<F32> column = k.index(merge, cta.tid);
  for (std::size_t a = 0; a < accs.size(); ++a) {
    const GlobalPtr<F32> out = k.index(accs[a].row_start().p.as<F32>(), cta.tid);
    for (std::uint32_t first = 0; first < plan.width; first += block) {
      const auto column_sum = [&] {
        Reg<F32> sum = k.ld(column + static_cast<std::int64_t>(a * R * span + first));
        for (std::uint32_t r = 1; r < R; ++r) {
          sum =
              k.add(sum, k.ld(column + static_cast<std::int64_t>(a * R * span + r * span + first)));
        }
        k.st(out + first, sum);
      };
      if (first + block <= plan.width) {
        column_sum();
      } else {
        k.if_(k.setp(Cmp::Lt, cta.tid, plan.width - first), column_sum);
      }
    }
  }
}

// The partial rows of a cluster's CTAs added up on chip into the cluster's (partial_cluster): each
// CTA puts its row slots' accumulators into its merge region (as merge_row_slots lays them out);
// after a cluster barrier CTA r adds up columns r·block + tid, + C·block, ... over the C regions
// and their R slots in rank and slot order, so dw and db keep a fixed order, and writes them; a
// second barrier keeps every region until its peers have read it.
void merge_over_cluster(Kernel& k, const Plan& plan, const CtaLayout& cta, const RowLanes& lanes,
                        SharedPtr<F32> merge, std::vector<Accumulator>& accs, ChunkFence fence) {
  const std::uint32_t span = plan.row_span();
  const std::uint32_t R = plan.rows_per_cta;
  // The merge region is the staging buffers' or the ring's bytes (SharedLayout): every copy into
  // them has landed and every thread is past its reads of the last row before any writes there.
  k.cp_async_wait(0);
  k.bar_sync(0);
  write_row_slots(k, plan, cta, lanes, merge, accs, fence);
  k.barrier_cluster_arrive();
  k.barrier_cluster_wait();
  const std::uint32_t C = plan.partial_cluster;
  const std::uint32_t block = plan.block();
  const Reg<U32> first = k.mad(k.cluster_ctarank(), block, cta.tid);
  k.for_range(first, plan.width, C * block, [&](Reg<U32> column) {
    const SharedPtr<F32> at_column = k.index(merge, column);
    for (std::size_t a = 0; a < accs.size(); ++a) {
      std::optional<Reg<F32>> sum;
      for (std::uint32_t q = 0; q < C; ++q) {
        for (std::uint32_t r = 0; r < R; ++r) {
          const Reg<F32> v =
              k.ld(k.mapa(at_column + static_cast<std::int64_t>((a * R + r) * span), q));
          sum = sum ? k.add(*sum, v) : v;
        }
      }
      k.st(k.index(accs[a].row_start().p.as<F32>(), column), *sum);
    }
  });
  k.barrier_cluster_arrive();
  k.barrier_cluster_wait();
}

class PartialRowSums final : public WeightGradSums {
 public:
  PartialRowSums(const NormSpec& spec, const Plan& plan) : spec_(spec), plan_(plan) {}
  std::string_view entry_step() const override { return ""; }
  void declare(Kernel& k) override {
    partials_.push_back(param_dptr(k, NormArg::PartialDw, DType::F32));
    if (has_bias(spec_)) partials_.push_back(param_dptr(k, NormArg::PartialDb, DType::F32));
  }
  // Accumulators start at zero wherever they live.
  void start(Kernel& k, const BackwardRows& rows) override {
    rows_.emplace(rows);
    const SharedLayout& layout = rows.layout;
    for (std::uint32_t a = 0; a < partials_.size(); ++a) {
      const GlobalDPtr row_start = row_of(k, partials_[a], rows.cta_id, partial_pitch(spec_.width));
      std::optional<SharedPtr<F32>> shared;
      if (layout.accumulator_bytes > 0) {
        shared = k.index(region(layout.accumulators.offset + a * layout.accumulator_bytes),
                         rows.lanes.first_element());
      }
      accs_.emplace_back(k, plan_, rows.columns, row_start, at(k, row_start, rows.first_column),
                         shared);
    }
  }
  // Register accumulators cannot loop; fence them unless their data is in registers too.
  std::vector<int> pass_keys(std::vector<int> keys) const override {
    for (std::uint32_t j = 0; j < plan_.chunks; ++j) {
      if (keys[j] > 0 && plan_.accum[j] == Place::Registers) keys[j] = -1;
      if (keys[j] > 0) keys[j] = keys[j] * 4 + 1 + static_cast<int>(plan_.accum[j]);
    }
    return keys;
  }
  void add(Kernel& k, std::uint32_t j, const Values& dy, const Values& xhat,
           std::optional<Reg<U32>> shift) override {
    accs_[0].add(k, j, dy, &xhat, shift);                          // dw += dy·x̂
    if (accs_.size() > 1) accs_[1].add(k, j, dy, nullptr, shift);  // db += dy
  }
  // The reduce launch may start once every CTA is here (it waits by griddepcontrol.wait); several
  // row slots merge into one partial row (under deterministic portable each writes its own), else
  // each thread writes its columns.
  void finish(Kernel& k, const RowInputs&, ChunkFence fence) override {
    if (plan_.overlap_reduce) k.griddep_launch_dependents();
    if (plan_.partial_cluster > 1) {
      merge_over_cluster(k, plan_, rows_->cta, rows_->lanes, region(rows_->layout.merge.offset),
                         accs_, fence);
      return;
    }
    if (plan_.rows_per_cta > 1 && !plan_.portable.on()) {
      merge_row_slots(k, plan_, rows_->cta, rows_->lanes, region(rows_->layout.merge.offset), accs_,
                      fence);
      return;
    }
    for (Accumulator& acc : accs_) acc.write_out(k, fence);
  }
  void size_grid(GridRule&) const override {}

 private:
  SharedPtr<F32> region(std::uint32_t byte_offset) const {
    return SharedPtr<F32>{rows_->dynamic->base, rows_->dynamic->offset + byte_offset};
  }
  const NormSpec& spec_;
  const Plan& plan_;
  std::vector<GlobalDPtr> partials_;
  std::optional<BackwardRows> rows_;
  std::vector<Accumulator> accs_;
};

}  // namespace

std::unique_ptr<WeightGradSums> partial_row_sums(const NormSpec& spec, const Plan& plan) {
  return std::make_unique<PartialRowSums>(spec, plan);
}

std::uint32_t partial_pitch(std::uint32_t width) {
  return (width + 3) / 4 * 4;
}

std::uint32_t warp_blocked_columns(const Plan& plan) {
  // A cluster's slices, and the partial rows a cluster sums, write their columns in order: the
  // reduce maps the whole row one way.
  if (plan.cluster_ctas > 1 || plan.partial_cluster > 1) return 0;
  const bool whole_warps = plan.vec == 8 && plan.threads_per_row % 32 == 0;
  const bool one_writer =
      plan.weight_grads == WeightGrads::PartialRows && plan.rows_per_cta == 1 &&
      std::find(plan.accum.begin(), plan.accum.end(), Place::Global) == plan.accum.end();
  if (!whole_warps || !one_writer) return 0;
  const std::uint32_t chunk = plan.threads_per_row * plan.vec;
  return plan.width / chunk * chunk;
}

Reg<U32> partial_column(Kernel& k, Reg<U32> position, std::uint32_t blocked, std::uint32_t width) {
  if (blocked == 0) return position;
  // Position 4·lane + e of a block is column 8·lane + e; 128 + 4·lane + e is 8·lane + 4 + e.
  const Reg<U32> in_block = k.and_(position, 255u);
  const Reg<U32> lane_first = k.shl(k.shr(k.and_(in_block, 127u), 2u), 3u);
  const Reg<U32> half = k.shl(k.shr(in_block, 7u), 2u);
  const Reg<U32> column =
      k.add(k.and_(position, ~255u), k.add(lane_first, k.add(half, k.and_(in_block, 3u))));
  if (blocked >= width) return column;
  return k.selp(column, position, k.setp(Cmp::Lt, position, blocked));
}

}  // namespace ptxdsl::kernels::detail
