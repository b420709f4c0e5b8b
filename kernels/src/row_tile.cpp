#include "row_tile.hpp"

namespace ptxdsl::kernels::detail {
namespace {

std::optional<Pred> both(Kernel& k, std::optional<Pred> a, std::optional<Pred> b) {
  if (!a) return b;
  if (!b) return a;
  return k.and_(*a, *b);
}

}  // namespace

RowLanes::RowLanes(Kernel& k, const RowMap& m, Reg<U32> lane) : map_(m), lane_(lane) {
  first_ = m.vec == 1 ? lane : k.mul(lane, m.vec);
  const std::uint32_t last = m.chunks - 1;
  if (m.complete(last)) return;
  const std::uint32_t full = m.full_lanes(last);
  if (full > 0) last_full_ = k.setp(Cmp::Lt, lane, full);
  if (m.tail() > 0) {
    last_tail_ = k.setp(Cmp::Eq, lane, full);
    last_any_ = k.setp(Cmp::Le, lane, full);
  }
}

std::optional<Pred> RowLanes::element_valid(std::uint32_t j, std::uint32_t e) const {
  if (map_.complete(j)) return std::nullopt;
  return e < map_.tail() ? last_any_ : last_full_;
}

RowMasks::RowMasks(Kernel& k, const RowLanes& lanes, std::optional<Pred> row_ok)
    : lanes_(&lanes), row_ok_(row_ok) {
  if (lanes.last_full_) last_vector_ = both(k, row_ok, lanes.last_full_);
  if (lanes.last_tail_) last_tail_ = both(k, row_ok, lanes.last_tail_);
}

std::optional<Pred> RowMasks::vector(std::uint32_t j) const {
  return lanes_->map().complete(j) ? row_ok_ : last_vector_;
}

bool RowMasks::never(std::uint32_t j) const {
  return !lanes_->map().complete(j) && lanes_->map().full_lanes(j) == 0;
}

std::optional<Pred> RowMasks::tail(std::uint32_t j) const {
  return lanes_->map().complete(j) ? std::nullopt : last_tail_;
}

ChunkLoad issue_chunk(Kernel& k, const RowMasks& m, GlobalDPtr thread_row, std::uint32_t j,
                      MemHints h) {
  const RowMap& map = m.lanes().map();
  const GlobalDPtr p = thread_row + map.chunk_offset(j);
  ChunkLoad c;
  if (!m.never(j)) c.vector = load_raw(k, p, map.vec, m.vector(j), h);
  if (const auto t = m.tail(j)) {
    for (std::uint32_t e = 0; e < map.tail(); ++e) c.tail.push_back(load_raw(k, p + e, 1, *t, h));
  }
  return c;
}

Values decode_chunk(Kernel& k, const RowMasks& m, std::uint32_t j, const ChunkLoad& c) {
  const RowMap& map = m.lanes().map();
  Values v;
  if (c.vector) {
    v = decode(k, *c.vector);
  } else {
    for (std::uint32_t e = 0; e < map.vec; ++e) v.push_back(k.mov<F32>(0.0f));
  }
  // The lane holding the width's end took its first elements one by one; every other lane's tail
  // load yielded nothing.
  if (const auto t = m.tail(j)) {
    for (std::uint32_t e = 0; e < c.tail.size(); ++e) {
      const Reg<F32> lone = decode(k, c.tail[e])[0];
      v[e] = c.vector ? k.selp<F32>(lone, v[e], *t) : lone;
    }
  }
  return v;
}

void store_chunk(Kernel& k, const RowMasks& m, GlobalDPtr thread_row, std::uint32_t j,
                 const Values& v, MemHints h) {
  const RowMap& map = m.lanes().map();
  const DType d = thread_row.dtype;
  const GlobalDPtr q = thread_row + map.chunk_offset(j);
  if (!m.never(j)) store_raw(k, q, encode(k, v, d), m.vector(j), h);
  if (const auto t = m.tail(j)) {
    for (std::uint32_t e = 0; e < map.tail(); ++e) {
      store_raw(k, q + e, encode(k, std::span<const Reg<F32>>(&v[e], 1), d), *t, h);
    }
  }
}

RowTile::RowTile(const std::vector<Place>& places, GlobalDPtr thread_row,
                 std::optional<SharedDPtr> staging, MemHints hints)
    : places_(places), row_(thread_row), staging_(staging), hints_(hints) {
  std::uint32_t staged = 0;
  for (Place p : places_) staged_index_.push_back(p == Place::Shared ? staged++ : 0);
  regs_.resize(places_.size());
}

void RowTile::load(Kernel& k, const RowMasks& m,
                   const std::function<void(std::uint32_t, const Values&)>& first_use) {
  const RowMap& map = m.lanes().map();
  const auto n = static_cast<std::uint32_t>(places_.size());
  const auto use = [&](std::uint32_t j, const Values& v) {
    if (first_use) first_use(j, v);
  };
  // Chunks that do not stay in registers, a few at a time so their registers are reused.
  std::vector<std::uint32_t> batch;
  const auto flush = [&] {
    std::vector<ChunkLoad> loads;
    for (std::uint32_t j : batch) loads.push_back(issue_chunk(k, m, row_, j, hints_));
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const std::uint32_t j = batch[i];
      if (places_[j] == Place::Shared) {
        const SharedDPtr s =
            *staging_ + static_cast<std::int64_t>(staged_index_[j]) * map.threads * map.vec;
        store_raw(k, s, *loads[i].vector, std::nullopt, kNoHints);
      }
      if (first_use) use(j, decode_chunk(k, m, j, loads[i]));
    }
    batch.clear();
  };
  for (std::uint32_t j = 0; j < n; ++j) {
    if (places_[j] == Place::Registers) continue;
    if (places_[j] == Place::Global && !first_use) continue;
    batch.push_back(j);
    if (batch.size() == 4) flush();
  }
  flush();
  std::vector<std::pair<std::uint32_t, ChunkLoad>> loads;
  for (std::uint32_t j = 0; j < n; ++j) {
    if (places_[j] == Place::Registers) loads.emplace_back(j, issue_chunk(k, m, row_, j, hints_));
  }
  for (const auto& [j, c] : loads) {
    regs_[j] = decode_chunk(k, m, j, c);
    use(j, regs_[j]);
  }
}

Values RowTile::get(Kernel& k, const RowMasks& m, std::uint32_t j) {
  const RowMap& map = m.lanes().map();
  switch (places_[j]) {
    case Place::Registers:
      return regs_[j];
    case Place::Shared: {
      const SharedDPtr s =
          *staging_ + static_cast<std::int64_t>(staged_index_[j]) * map.threads * map.vec;
      return decode(k, load_raw(k, s, map.vec, std::nullopt, kNoHints));
    }
    case Place::Global:
      break;
  }
  return decode_chunk(k, m, j, issue_chunk(k, m, row_, j, hints_));
}

SharedDPtr staging_for(Kernel& k, SharedDPtr base, const Plan& plan, Reg<U32> slot,
                       Reg<U32> first_element) {
  const std::uint32_t per_slot = plan.staged_chunks() * plan.threads_per_row * plan.vec;
  if (plan.rows_per_cta == 1) return at(k, base, first_element);
  return at(k, base, k.mad(slot, per_slot, first_element));
}

}  // namespace ptxdsl::kernels::detail
