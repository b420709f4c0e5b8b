#include "ptxdsl/dsl/blocks/row_map.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

namespace ptxdsl {
namespace {

std::optional<Pred> both(Kernel& k, std::optional<Pred> a, std::optional<Pred> b) {
  if (!a) return b;
  if (!b) return a;
  return k.and_(*a, *b);
}

}  // namespace

RowMap RowMap::make(std::uint32_t width, std::uint32_t vec, std::uint32_t threads) {
  if (width == 0) throw Error("row width must be at least 1, got 0");
  if (vec == 0 || vec > 8 || !std::has_single_bit(vec)) {
    throw Error(fmt::format("row vector width must be 1, 2, 4 or 8 elements, got {}", vec));
  }
  if (threads == 0 || threads > 1024) {
    throw Error(fmt::format("threads per row must be in [1, 1024], got {}", threads));
  }
  const std::uint64_t per_chunk = std::uint64_t{threads} * vec;
  const auto chunks = static_cast<std::uint32_t>((width + per_chunk - 1) / per_chunk);
  return {width, vec, threads, chunks};
}

RowMap RowMap::fit(std::uint32_t width, ScalarType dtype, std::uint32_t max_threads) {
  check_element_type(dtype, "a row's element type");
  if (max_threads < 32 || max_threads > 1024 || !std::has_single_bit(max_threads)) {
    throw Error(
        fmt::format("max_threads must be a power of two in [32, 1024], got {}", max_threads));
  }
  const std::uint32_t vec = vector_elems_for(dtype, width);
  const std::uint32_t vectors = (width + vec - 1) / vec;
  return make(width, vec, std::clamp(std::bit_ceil(vectors), 32u, max_threads));
}

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

Values mask_past_width(Kernel& k, const RowLanes& lanes, std::uint32_t j, Values v, float fill) {
  for (std::uint32_t e = 0; e < v.size(); ++e) {
    if (const auto ok = lanes.element_valid(j, e)) v[e] = k.selp<F32>(v[e], fill, *ok);
  }
  return v;
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

Values load_chunk(Kernel& k, const RowMasks& m, GlobalDPtr thread_row, std::uint32_t j,
                  MemHints h) {
  return decode_chunk(k, m, j, issue_chunk(k, m, thread_row, j, h));
}

void store_chunk(Kernel& k, const RowMasks& m, GlobalDPtr thread_row, std::uint32_t j,
                 const Values& v, MemHints h) {
  const RowMap& map = m.lanes().map();
  const ScalarType d = thread_row.dtype;
  const GlobalDPtr q = thread_row + map.chunk_offset(j);
  if (!m.never(j)) store_raw(k, q, encode(k, v, d), m.vector(j), h);
  if (const auto t = m.tail(j)) {
    for (std::uint32_t e = 0; e < map.tail(); ++e) {
      store_raw(k, q + e, encode(k, std::span<const Reg<F32>>(&v[e], 1), d), *t, h);
    }
  }
}

}  // namespace ptxdsl
