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

RowMap RowMap::make(std::uint32_t width, std::uint32_t vec, std::uint32_t threads,
                    std::uint32_t short_width) {
  if (width == 0) throw Error("row width must be at least 1, got 0");
  if (vec == 0 || vec > 8 || !std::has_single_bit(vec)) {
    throw Error(fmt::format("row vector width must be 1, 2, 4 or 8 elements, got {}", vec));
  }
  if (threads == 0 || threads > 1024) {
    throw Error(fmt::format("threads per row must be in [1, 1024], got {}", threads));
  }
  if (short_width > 0 && (short_width >= width || width % vec != 0)) {
    throw Error(fmt::format(
        "a row's short end must be in [1, {}] and the other slices whole vectors of {}: got "
        "short_width {} of width {}",
        width - 1, vec, short_width, width));
  }
  const std::uint64_t per_chunk = std::uint64_t{threads} * vec;
  const auto chunks = static_cast<std::uint32_t>((width + per_chunk - 1) / per_chunk);
  return {width, vec, threads, chunks, short_width};
}

std::uint32_t RowMap::full_lanes(std::uint32_t j, std::uint32_t row_width) const {
  const std::int64_t lanes = std::int64_t{row_width / vec} - std::int64_t{j} * threads;
  return static_cast<std::uint32_t>(std::clamp<std::int64_t>(lanes, 0, threads));
}

RowMap RowMap::fit(std::uint32_t width, ScalarType dtype, std::uint32_t max_threads) {
  return fit(width, dtype, max_threads, RowLayout{});
}

RowMap RowMap::fit(std::uint32_t width, ScalarType dtype, std::uint32_t max_threads,
                   const RowLayout& layout) {
  check_element_type(dtype, "a row's element type");
  if (max_threads < 32 || max_threads > 1024 || !std::has_single_bit(max_threads)) {
    throw Error(
        fmt::format("max_threads must be a power of two in [32, 1024], got {}", max_threads));
  }
  const std::uint32_t stride = layout.stride_for(width, 1);
  const std::uint64_t offset_bytes = std::uint64_t{layout.offset} * size_bytes(dtype);
  const std::uint32_t vec =
      std::min(vector_elems_for(dtype, width), vector_elems_for(dtype, stride, offset_bytes));
  const std::uint32_t vectors = (width + vec - 1) / vec;
  return make(width, vec, std::clamp(std::bit_ceil(vectors), 32u, max_threads));
}

std::uint32_t RowLayout::stride_for(std::uint32_t width, std::uint32_t vec) const {
  const std::uint32_t rows_apart = stride == 0 ? width : stride;
  if (std::uint64_t{offset} + width > rows_apart) {
    throw Error(fmt::format("a row of {} elements at offset {} does not fit in a stride of {}",
                            width, offset, rows_apart));
  }
  // Packed rows are the map's own business (RowMap::make may take a width no vector divides).
  const bool packed = stride == 0 && offset == 0;
  if (!packed && (rows_apart % vec != 0 || offset % vec != 0)) {
    throw Error(fmt::format(
        "the row stride ({}) and offset ({}) must be multiples of the vector width {} (RowMap::fit "
        "with the layout picks one)",
        rows_apart, offset, vec));
  }
  return rows_apart;
}

std::vector<RowMap::TailPiece> RowMap::tail_pieces() const {
  std::vector<TailPiece> pieces;
  std::uint32_t offset = 0;
  for (std::uint32_t count = 4; count >= 1; count /= 2) {
    if ((tail() & count) == 0) continue;
    pieces.push_back({offset, count});
    offset += count;
  }
  return pieces;
}

RowLanes::RowLanes(Kernel& k, const RowMap& m, Reg<U32> lane, std::optional<Pred> short_row)
    : map_(m), lane_(lane) {
  if (m.short_width > 0 && !short_row) {
    throw Error(fmt::format(
        "a row map with a short end (short_width {}) needs the predicate of the CTAs whose row "
        "ends there",
        m.short_width));
  }
  first_ = m.vec == 1 ? lane : k.mul(lane, m.vec);
  full_.resize(m.chunks);
  tail_.resize(m.chunks);
  any_.resize(m.chunks);
  for (std::uint32_t j = 0; j < m.chunks; ++j) {
    if (m.complete(j)) continue;
    // With no full lane this is never true: the chunk's elements past the tail are never valid.
    const std::uint32_t whole = m.full_lanes(j, m.width);
    const std::uint32_t part = m.short_width > 0 ? m.full_lanes(j, m.short_width) : whole;
    full_[j] = part == whole ? k.setp(Cmp::Lt, lane, whole)
                             : k.setp(Cmp::Lt, lane, k.selp<U32>(part, whole, *short_row));
  }
  if (m.tail() > 0) {
    const std::uint32_t j = m.tail_chunk();
    const std::uint32_t at = m.full_lanes(j, m.common_width());
    if (m.short_width > 0) {
      tail_[j] = k.and_(k.setp(Cmp::Eq, lane, at), *short_row);
      any_[j] = k.or_(*full_[j], *tail_[j]);
    } else {
      tail_[j] = k.setp(Cmp::Eq, lane, at);
      any_[j] = k.setp(Cmp::Le, lane, at);
    }
  }
}

std::optional<Pred> RowLanes::element_valid(std::uint32_t j, std::uint32_t e) const {
  if (map_.complete(j)) return std::nullopt;
  return e < map_.tail() && tail_[j] ? any_[j] : full_[j];
}

RowMasks::RowMasks(Kernel& k, const RowLanes& lanes, std::optional<Pred> row_ok)
    : lanes_(&lanes), row_ok_(row_ok) {
  vector_.resize(lanes.full_.size());
  tail_.resize(lanes.full_.size());
  for (std::size_t j = 0; j < lanes.full_.size(); ++j) {
    if (lanes.full_[j]) vector_[j] = both(k, row_ok, lanes.full_[j]);
    if (lanes.tail_[j]) tail_[j] = both(k, row_ok, lanes.tail_[j]);
  }
}

std::optional<Pred> RowMasks::vector(std::uint32_t j) const {
  return lanes_->map().complete(j) ? row_ok_ : vector_[j];
}

bool RowMasks::never(std::uint32_t j) const {
  return !lanes_->map().complete(j) && lanes_->map().full_lanes(j) == 0;
}

std::optional<Pred> RowMasks::tail(std::uint32_t j) const {
  return lanes_->map().complete(j) ? std::nullopt : tail_[j];
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
    for (const RowMap::TailPiece piece : map.tail_pieces()) {
      c.tail.push_back(load_raw(k, p + piece.offset, piece.count, *t, h));
    }
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
  // The lane holding the width's end took its first elements in pieces; every other lane's tail
  // loads yielded nothing.
  if (const auto t = m.tail(j)) {
    const std::vector<RowMap::TailPiece> pieces = map.tail_pieces();
    for (std::size_t i = 0; i < c.tail.size(); ++i) {
      const Values lone = decode(k, c.tail[i]);
      for (std::uint32_t e = 0; e < pieces[i].count; ++e) {
        Reg<F32>& at = v[pieces[i].offset + e];
        at = c.vector ? k.selp<F32>(lone[e], at, *t) : lone[e];
      }
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
    for (const RowMap::TailPiece piece : map.tail_pieces()) {
      const std::span<const Reg<F32>> values(&v[piece.offset], piece.count);
      store_raw(k, q + piece.offset, encode(k, values, d), *t, h);
    }
  }
}

}  // namespace ptxdsl
