#include "row_tile.hpp"

#include <utility>

#include "chunk_loop.hpp"

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
  // With full == 0 this is never true: the chunk's elements past the tail are never valid.
  const std::uint32_t full = m.full_lanes(last);
  last_full_ = k.setp(Cmp::Lt, lane, full);
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

void prefetch_chunk(Kernel& k, const RowMasks& m, GlobalDPtr thread_row, std::uint32_t j,
                    PrefetchLevel level) {
  const GlobalDPtr p = thread_row + m.lanes().map().chunk_offset(j);
  const std::optional<Pred> tail = m.tail(j);
  if (m.never(j)) {
    if (tail) k.prefetch_if(*tail, p.p, level);
    return;
  }
  std::optional<Pred> any = m.vector(j);
  if (any && tail) any = k.or_(*any, *tail);
  if (any) {
    k.prefetch_if(*any, p.p, level);
  } else {
    k.prefetch(p.p, level);
  }
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

RowTile::RowTile(const RowMap& map, const std::vector<Place>& places, GlobalDPtr thread_row,
                 std::optional<SharedDPtr> staging, MemHints hints, std::uint32_t loop_group)
    : map_(map),
      places_(places),
      row_(thread_row),
      staging_(staging),
      hints_(hints),
      loop_group_(loop_group) {
  std::uint32_t staged = 0;
  for (Place p : places_) staged_index_.push_back(p == Place::Shared ? staged++ : 0);
  regs_.resize(places_.size());
}

std::vector<int> RowTile::loop_keys() const {
  std::vector<int> keys;
  for (std::uint32_t j = 0; j < places_.size(); ++j) {
    int key = 1 + static_cast<int>(places_[j]);
    if (!map_.complete(j)) key = -1;
    if (places_[j] == Place::Registers) key = 0;
    keys.push_back(key);
  }
  return keys;
}

SharedDPtr RowTile::staged(Kernel& k, SharedDPtr buffer, std::uint32_t j,
                           std::optional<Reg<U32>> shift) const {
  const std::uint32_t per_chunk = map_.threads * map_.vec;
  return shifted(k, buffer, shift, per_chunk) +
         static_cast<std::int64_t>(staged_index_[j]) * per_chunk;
}

namespace {

// `p` with a base register of its own (rewritten each row), and the buffer `elements` further on,
// also in a register of its own.
std::pair<SharedDPtr, SharedDPtr> two_buffers(Kernel& k, SharedDPtr p, std::int64_t elements) {
  const SharedDPtr first{{k.mov<U32>(p.p.base), p.p.offset}, p.dtype};
  const auto bytes = static_cast<std::uint32_t>(elements * dtype_bytes(p.dtype));
  return {first, SharedDPtr{{k.add(first.p.base, bytes), p.p.offset}, p.dtype}};
}

// Moves `p` to the other buffer.
void flip(Kernel& k, const SharedDPtr& p, Reg<U32> bits) {
  k.mov(p.p.base, k.xor_(p.p.base, bits));
}

}  // namespace

void RowTile::stage_async(Kernel& k, std::int64_t buffer_elements) {
  const auto [first, second] = two_buffers(k, *staging_, buffer_elements);
  staging_ = first;
  next_staging_ = second;
  buffer_flip_ = k.xor_(first.p.base, second.p.base);
}

void RowTile::copy_chunks(Kernel& k, const RowMasks& m, GlobalDPtr thread_row, SharedDPtr buffer,
                          Place place, const std::vector<std::uint32_t>& index) const {
  const std::uint32_t per_chunk = map_.threads * map_.vec;
  const std::uint32_t bytes = map_.vec * static_cast<std::uint32_t>(dtype_bytes(row_.dtype));
  std::vector<int> keys = loop_keys();
  for (std::uint32_t j = 0; j < places_.size(); ++j) {
    if (places_[j] != place) keys[j] = 0;
  }
  for_each_chunk(k, keys, loop_group_, [&](std::uint32_t j, std::optional<Reg<U32>> shift) {
    if (places_[j] != place) return;
    const GlobalDPtr from = shifted(k, thread_row, shift, per_chunk) + map_.chunk_offset(j);
    const SharedDPtr to =
        shifted(k, buffer, shift, per_chunk) + static_cast<std::int64_t>(index[j]) * per_chunk;
    // Bytes this lane reads: the whole vector, the tail lane's lone elements, or none (masked
    // lanes and rows: zero-filled, their addresses never touched).
    std::optional<Src<U32>> reads;
    if (const auto v = m.vector(j)) reads = k.selp<U32>(bytes, 0u, *v);
    if (const auto t = m.tail(j)) {
      const std::uint32_t lone = map_.tail() * static_cast<std::uint32_t>(dtype_bytes(row_.dtype));
      reads = k.selp<U32>(lone, reads ? *reads : Src<U32>(bytes), *t);
    }
    // Of the row's hints, the copies take the L2 ones (L1 is not on their way).
    const MemHints l2{.l2_policy = hints_.l2_policy};
    if (reads) {
      k.cp_async_zfill(to.p, from.p, bytes, *reads, l2);
    } else {
      k.cp_async(to.p, from.p, bytes, l2);
    }
  });
}

void RowTile::load(Kernel& k, const RowMasks& m,
                   const std::function<void(std::uint32_t, const Values&)>& first_use,
                   std::optional<ChunkFence> fence) {
  const auto n = static_cast<std::uint32_t>(places_.size());
  const std::uint32_t per_chunk = map_.threads * map_.vec;
  // Chunks that do not stay in registers: staged now, or only summed when asked to.
  std::vector<int> keys = loop_keys();
  for (std::uint32_t j = 0; j < n; ++j) {
    if (places_[j] == Place::Global && !first_use) keys[j] = 0;
  }
  const auto stage = [&](std::uint32_t j, std::optional<Reg<U32>> shift) {
    if (places_[j] == Place::Registers || (places_[j] == Place::Global && !first_use)) return;
    if (next_staging_ && places_[j] == Place::Shared) {
      // Already copied in by cp.async.
      if (first_use) first_use(j, get(k, m, j, shift));
      return;
    }
    const ChunkLoad c = issue_chunk(k, m, shifted(k, row_, shift, per_chunk), j, hints_);
    if (places_[j] == Place::Shared) {
      // The vector as loaded (zeros where masked), then the tail lane's lone elements over it.
      const SharedDPtr s = staged(k, j, shift);
      store_raw(k, s, c.vector ? *c.vector : zero_raw(k, row_.dtype, map_.vec), std::nullopt,
                kNoHints);
      if (const auto t = m.tail(j)) {
        for (std::uint32_t e = 0; e < c.tail.size(); ++e)
          store_raw(k, s + e, c.tail[e], *t, kNoHints);
      }
    }
    if (first_use) first_use(j, decode_chunk(k, m, j, c));
  };
  for_each_chunk(k, keys, loop_group_, stage, fence);
  // Register chunks: every load in flight before the first use (issued earlier when prefetching).
  if (!prefetching_) {
    for (std::uint32_t j = 0; j < n; ++j) {
      if (places_[j] == Place::Registers) regs_[j] = issue_chunk(k, m, row_, j, hints_);
    }
  }
  for (std::uint32_t j = 0; j < n; ++j) {
    if (places_[j] == Place::Registers && first_use) first_use(j, decode_chunk(k, m, j, regs_[j]));
  }
}

void RowTile::use_ring(Kernel& k, SharedDPtr ring, std::int64_t buffer_elements,
                       std::uint32_t rows) {
  std::uint32_t n = 0;
  for (Place p : places_) ring_index_.push_back(p == Place::Registers ? n++ : 0);
  // Both turns start at the first buffer and move on their own.
  const auto [first, second] = two_buffers(k, ring, buffer_elements);
  ring_fill_ = first;
  ring_take_ = SharedDPtr{{k.mov<U32>(first.p.base), first.p.offset}, first.dtype};
  if (rows == 2) {
    ring_flip_ = k.xor_(first.p.base, second.p.base);
    return;
  }
  ring_step_ = static_cast<std::uint32_t>(buffer_elements * dtype_bytes(ring.dtype));
  ring_first_ = k.mov<U32>(first.p.base);
  ring_end_ = k.add(first.p.base, rows * ring_step_);
}

void RowTile::ring_turn(Kernel& k, const SharedDPtr& p) const {
  if (ring_flip_) {
    flip(k, p, *ring_flip_);
    return;
  }
  const Reg<U32> next = k.add(p.p.base, ring_step_);
  k.mov(p.p.base, k.selp<U32>(*ring_first_, next, k.setp(Cmp::Eq, next, *ring_end_)));
}

void RowTile::ring_fill(Kernel& k, const RowMasks& m, GlobalDPtr thread_row) {
  copy_chunks(k, m, thread_row, *ring_fill_, Place::Registers, ring_index_);
  ring_turn(k, *ring_fill_);
}

void RowTile::ring_take(Kernel& k) {
  const std::uint32_t per_chunk = map_.threads * map_.vec;
  const bool first = !prefetching_;
  for (std::uint32_t j = 0; j < places_.size(); ++j) {
    if (places_[j] != Place::Registers) continue;
    // The whole vector: the ring holds zeros where the row's masks kept the copy from reading.
    const SharedDPtr at = *ring_take_ + static_cast<std::int64_t>(ring_index_[j]) * per_chunk;
    ChunkLoad c;
    c.vector = load_raw(k, at, map_.vec, std::nullopt, kNoHints);
    if (first) {
      regs_[j] = c;
    } else {
      assign(k, *regs_[j].vector, *c.vector);
    }
  }
  ring_turn(k, *ring_take_);
  prefetching_ = true;
}

void RowTile::preload(Kernel& k, const RowMasks& m) {
  std::vector<ChunkLoad> loads(places_.size());
  for (std::uint32_t j = 0; j < places_.size(); ++j) {
    if (places_[j] == Place::Registers) loads[j] = issue_chunk(k, m, row_, j, hints_);
  }
  if (next_staging_) copy_staged(k, m, row_, *staging_);
  regs_ = std::move(loads);
  prefetching_ = true;
}

std::vector<ChunkLoad> RowTile::prefetch(Kernel& k, const RowMasks& next,
                                         GlobalDPtr next_row) const {
  std::vector<ChunkLoad> loads(places_.size());
  for (std::uint32_t j = 0; j < places_.size(); ++j) {
    if (places_[j] == Place::Registers) loads[j] = issue_chunk(k, next, next_row, j, hints_);
  }
  if (next_staging_) copy_staged(k, next, next_row, *next_staging_);
  return loads;
}

void RowTile::advance(Kernel& k, const std::vector<ChunkLoad>& next) {
  if (next_staging_) {
    flip(k, *staging_, *buffer_flip_);
    flip(k, *next_staging_, *buffer_flip_);
  }
  for (std::uint32_t j = 0; j < places_.size(); ++j) {
    if (places_[j] != Place::Registers) continue;
    if (regs_[j].vector) assign(k, *regs_[j].vector, *next[j].vector);
    for (std::size_t e = 0; e < regs_[j].tail.size(); ++e)
      assign(k, regs_[j].tail[e], next[j].tail[e]);
  }
}

Values RowTile::get(Kernel& k, const RowMasks& m, std::uint32_t j, std::optional<Reg<U32>> shift) {
  switch (places_[j]) {
    case Place::Registers:
      return decode_chunk(k, m, j, regs_[j]);
    case Place::Shared:
      return decode(k, load_raw(k, staged(k, j, shift), map_.vec, std::nullopt, kNoHints));
    case Place::Global:
      break;
  }
  const GlobalDPtr row = shifted(k, row_, shift, map_.threads * map_.vec);
  return decode_chunk(k, m, j, issue_chunk(k, m, row, j, reread_hints_.value_or(hints_)));
}

namespace {

// This thread's first element in a [slot][chunk][lane][V] layout of `chunks` chunks a slot.
SharedDPtr slot_start(Kernel& k, SharedDPtr base, const Plan& plan, std::uint32_t chunks,
                      Reg<U32> slot, Reg<U32> first_element) {
  const std::uint32_t per_slot = chunks * plan.threads_per_row * plan.vec;
  if (plan.rows_per_cta == 1) return at(k, base, first_element);
  return at(k, base, k.mad(slot, per_slot, first_element));
}

}  // namespace

SharedDPtr staging_for(Kernel& k, SharedDPtr base, const Plan& plan, Reg<U32> slot,
                       Reg<U32> first_element) {
  return slot_start(k, base, plan, plan.staged_chunks(), slot, first_element);
}

SharedDPtr ring_for(Kernel& k, SharedDPtr base, const Plan& plan, Reg<U32> slot,
                    Reg<U32> first_element) {
  return slot_start(k, base, plan, plan.register_chunks(), slot, first_element);
}

std::int64_t ring_slots_elements(const Plan& plan) {
  return static_cast<std::int64_t>(plan.register_chunks()) * plan.threads_per_row * plan.vec *
         plan.rows_per_cta;
}

}  // namespace ptxdsl::kernels::detail
