#include "ptxdsl/dsl/blocks/element_io.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ptxdsl {
namespace {

// The element types of one byte: four to a b32 word.
bool is_byte_type(ScalarType t) {
  return t == ScalarType::U8 || t == ScalarType::S8 || t == ScalarType::E4M3 ||
         t == ScalarType::E5M2;
}

template <TypeTag T, Space S>
std::vector<Reg<T>> load_words(Kernel& k, Ptr<S, T> p, std::uint32_t n, std::optional<Pred> pred,
                               MemHints h) {
  std::vector<Reg<T>> out;
  for (std::uint32_t i = 0; i < n;) {
    const std::uint32_t piece = std::min<std::uint32_t>(4, n - i);
    const Ptr<S, T> q = p + static_cast<std::int64_t>(i);
    if (piece == 4) {
      const Vec<T, 4> v = pred ? k.ld_v_if<4>(*pred, q, 0u, h) : k.ld_v<4>(q, h);
      out.insert(out.end(), v.begin(), v.end());
    } else if (piece >= 2) {
      const Vec<T, 2> v = pred ? k.ld_v_if<2>(*pred, q, 0u, h) : k.ld_v<2>(q, h);
      out.insert(out.end(), v.begin(), v.end());
    } else {
      out.push_back(pred ? k.ld_if(*pred, q, 0u, h) : k.ld(q, h));
    }
    i += piece >= 4 ? 4 : piece >= 2 ? 2 : 1;
  }
  return out;
}

template <TypeTag T, Space S>
void store_words(Kernel& k, Ptr<S, T> p, const std::vector<Reg<T>>& v, std::optional<Pred> pred,
                 MemHints h) {
  const auto n = static_cast<std::uint32_t>(v.size());
  for (std::uint32_t i = 0; i < n;) {
    const std::uint32_t piece = n - i >= 4 ? 4 : n - i >= 2 ? 2 : 1;
    const Ptr<S, T> q = p + static_cast<std::int64_t>(i);
    const auto body = [&] {
      if (piece == 4) {
        k.st_v<4>(q, Vec<T, 4>{v[i], v[i + 1], v[i + 2], v[i + 3]}, h);
      } else if (piece == 2) {
        k.st_v<2>(q, Vec<T, 2>{v[i], v[i + 1]}, h);
      } else {
        k.st(q, v[i], h);
      }
    };
    if (pred) {
      k.predicated(*pred, body);
    } else {
      body();
    }
    i += piece;
  }
}

// Shared memory has no .nc or L1 eviction hints.
template <Space S>
MemHints hints_for(MemHints h) {
  return S == Space::Global ? h : kNoHints;
}

// Two bytes of a b16 half (low byte first) as f32: FP8 widens through f16x2, u8/s8 by cvt of the
// low byte and of the half shifted down.
std::array<Reg<F32>, 2> decode_byte_pair(Kernel& k, ScalarType d, Reg<B16> half) {
  if (d == ScalarType::E4M3 || d == ScalarType::E5M2) {
    const Reg<F16x2> wide = d == ScalarType::E4M3 ? k.cvt_unpack(k.bitcast<E4M3x2>(half))
                                                  : k.cvt_unpack(k.bitcast<E5M2x2>(half));
    const std::array<Reg<F16>, 2> h = k.unpack<F16>(wide);
    return {k.cvt<F32>(h[0]), k.cvt<F32>(h[1])};
  }
  const Reg<U16> hi = k.shr(k.bitcast<U16>(half), 8u);
  if (d == ScalarType::S8) return {k.cvt<F32>(k.bitcast<S8>(half)), k.cvt<F32>(k.bitcast<S8>(hi))};
  return {k.cvt<F32>(k.bitcast<U8>(half)), k.cvt<F32>(k.bitcast<U8>(hi))};
}

Values decode_bytes(Kernel& k, const Raw& r) {
  Values out;
  const auto add_pair = [&](Reg<B16> half) {
    const std::array<Reg<F32>, 2> v = decode_byte_pair(k, r.dtype, half);
    out.insert(out.end(), v.begin(), v.end());
  };
  for (Reg<B32> w : r.pairs) {
    const std::array<Reg<B16>, 2> halves = k.unpack<B16>(w);
    add_pair(halves[0]);
    add_pair(halves[1]);
  }
  for (Reg<B16> h : r.halves) add_pair(h);
  for (Reg<B8> b : r.bytes) out.push_back(decode_byte_pair(k, r.dtype, k.bitcast<B16>(b))[0]);
  return out;
}

// Two f32 values as two bytes of a b16 half, the first in the low byte.
Reg<B16> encode_byte_pair(Kernel& k, ScalarType d, Reg<F32> lo, Reg<F32> hi) {
  if (d == ScalarType::E4M3) return k.bitcast<B16>(k.cvt_pack<E4M3x2>(lo, hi));
  if (d == ScalarType::E5M2) return k.bitcast<B16>(k.cvt_pack<E5M2x2>(lo, hi));
  const auto byte = [&](Reg<F32> v) {
    // s8 fills its register sign-extended: keep the byte alone before it is shifted and joined.
    return d == ScalarType::S8 ? k.and_(k.bitcast<U16>(k.cvt<S8>(v, Rounding::Rni, false, true)),
                                        std::uint16_t{0xFF})
                               : k.bitcast<U16>(k.cvt<U8>(v, Rounding::Rni, false, true));
  };
  return k.bitcast<B16>(k.or_(byte(lo), k.shl(byte(hi), 8u)));
}

Raw encode_bytes(Kernel& k, std::span<const Reg<F32>> values, ScalarType d) {
  Raw r;
  r.dtype = d;
  if (values.size() == 1) {
    r.bytes.push_back(k.bitcast<B8>(encode_byte_pair(k, d, values[0], values[0])));
    return r;
  }
  std::vector<Reg<B16>> halves;
  for (std::size_t i = 0; i + 1 < values.size(); i += 2) {
    halves.push_back(encode_byte_pair(k, d, values[i], values[i + 1]));
  }
  if (halves.size() == 1) {
    r.halves = halves;
    return r;
  }
  for (std::size_t i = 0; i + 1 < halves.size(); i += 2) {
    r.pairs.push_back(k.pack(halves[i], halves[i + 1]));
  }
  return r;
}

}  // namespace

void check_element_type(ScalarType t, std::string_view what) {
  if (t == ScalarType::F32 || t == ScalarType::F16 || t == ScalarType::BF16 || is_byte_type(t)) {
    return;
  }
  throw Error(
      fmt::format("{} must be f32, f16, bf16, u8, s8, e4m3 or e5m2, got {}", what, ptx_name(t)));
}

GlobalDPtr param_dptr(Kernel& k, std::string_view name, ScalarType d) {
  check_element_type(d, fmt::format("kernel '{}', parameter '{}'", k.name(), name));
  switch (d) {
    case ScalarType::F16:
      return {k.param_ptr<F16>(name).as<B32>(), d};
    case ScalarType::BF16:
      return {k.param_ptr<BF16>(name).as<B32>(), d};
    case ScalarType::U8:
      return {k.param_ptr<U8>(name).as<B32>(), d};
    case ScalarType::S8:
      return {k.param_ptr<S8>(name).as<B32>(), d};
    case ScalarType::E4M3:
      return {k.param_ptr<E4M3>(name).as<B32>(), d};
    case ScalarType::E5M2:
      return {k.param_ptr<E5M2>(name).as<B32>(), d};
    default:
      return {k.param_ptr<F32>(name).as<B32>(), d};
  }
}

// The address arithmetic of p's element size, through a pointer of that size.
template <Space S, class F>
DPtr<S> by_element_size(DPtr<S> p, F f) {
  switch (size_bytes(p.dtype)) {
    case 1:
      return {f(p.p.template as<B8>()).template as<B32>(), p.dtype};
    case 2:
      return {f(p.p.template as<B16>()).template as<B32>(), p.dtype};
    default:
      return {f(p.p.template as<F32>()).template as<B32>(), p.dtype};
  }
}

GlobalDPtr row_of(Kernel& k, GlobalDPtr p, Reg<U32> row, Src<U32> stride) {
  return by_element_size(p, [&](auto q) { return k.row(q, row, stride); });
}

GlobalDPtr at(Kernel& k, GlobalDPtr p, Reg<U32> index) {
  return by_element_size(p, [&](auto q) { return k.index(q, index); });
}

SharedDPtr at(Kernel& k, SharedDPtr p, Reg<U32> index) {
  return by_element_size(p, [&](auto q) { return k.index(q, index); });
}

template <Space S>
Raw load_raw(Kernel& k, DPtr<S> p, std::uint32_t n, std::optional<Pred> pred, MemHints h) {
  Raw r;
  r.dtype = p.dtype;
  h = hints_for<S>(h);
  if (p.dtype == ScalarType::F32) {
    r.f32 = load_words(k, p.p.template as<F32>(), n, pred, h);
  } else if (is_byte_type(p.dtype)) {
    if (n >= 4) {
      r.pairs = load_words(k, p.p, n / 4, pred, h);
    } else if (n == 2) {
      const Ptr<S, B16> q = p.p.template as<B16>();
      r.halves.push_back(pred ? k.ld_if(*pred, q, 0u, h) : k.ld(q, h));
    } else {
      const Ptr<S, B8> q = p.p.template as<B8>();
      r.bytes.push_back(pred ? k.ld_if(*pred, q, 0u, h) : k.ld(q, h));
    }
  } else if (n == 1) {
    const Ptr<S, B16> q = p.p.template as<B16>();
    r.halves.push_back(pred ? k.ld_if(*pred, q, 0u, h) : k.ld(q, h));
  } else {
    r.pairs = load_words(k, p.p, n / 2, pred, h);
  }
  return r;
}

template <Space S>
void store_raw(Kernel& k, DPtr<S> p, const Raw& r, std::optional<Pred> pred, MemHints h) {
  h = hints_for<S>(h);
  if (!r.f32.empty()) store_words(k, p.p.template as<F32>(), r.f32, pred, h);
  if (!r.pairs.empty()) store_words(k, p.p, r.pairs, pred, h);
  if (!r.halves.empty()) store_words(k, p.p.template as<B16>(), r.halves, pred, h);
  if (!r.bytes.empty()) store_words(k, p.p.template as<B8>(), r.bytes, pred, h);
}

template Raw load_raw(Kernel&, DPtr<Space::Global>, std::uint32_t, std::optional<Pred>, MemHints);
template Raw load_raw(Kernel&, DPtr<Space::Shared>, std::uint32_t, std::optional<Pred>, MemHints);
template void store_raw(Kernel&, DPtr<Space::Global>, const Raw&, std::optional<Pred>, MemHints);
template void store_raw(Kernel&, DPtr<Space::Shared>, const Raw&, std::optional<Pred>, MemHints);

template <Space S>
Values load_values(Kernel& k, DPtr<S> p, std::uint32_t n, std::optional<Pred> pred, MemHints h) {
  return decode(k, load_raw(k, p, n, pred, h));
}

template <Space S>
void store_values(Kernel& k, DPtr<S> p, std::span<const Reg<F32>> values, std::optional<Pred> pred,
                  MemHints h) {
  store_raw(k, p, encode(k, values, p.dtype), pred, h);
}

template Values load_values(Kernel&, DPtr<Space::Global>, std::uint32_t, std::optional<Pred>,
                            MemHints);
template Values load_values(Kernel&, DPtr<Space::Shared>, std::uint32_t, std::optional<Pred>,
                            MemHints);
template void store_values(Kernel&, DPtr<Space::Global>, std::span<const Reg<F32>>,
                           std::optional<Pred>, MemHints);
template void store_values(Kernel&, DPtr<Space::Shared>, std::span<const Reg<F32>>,
                           std::optional<Pred>, MemHints);

void assign(Kernel& k, const Raw& to, const Raw& from) {
  if (to.f32.size() != from.f32.size() || to.pairs.size() != from.pairs.size() ||
      to.halves.size() != from.halves.size() || to.bytes.size() != from.bytes.size()) {
    throw Error("assign: raw element groups differ in shape");
  }
  for (std::size_t i = 0; i < to.f32.size(); ++i) k.mov(to.f32[i], from.f32[i]);
  for (std::size_t i = 0; i < to.pairs.size(); ++i) k.mov(to.pairs[i], from.pairs[i]);
  for (std::size_t i = 0; i < to.halves.size(); ++i) k.mov(to.halves[i], from.halves[i]);
  for (std::size_t i = 0; i < to.bytes.size(); ++i) k.mov(to.bytes[i], from.bytes[i]);
}

Raw zero_raw(Kernel& k, ScalarType d, std::uint32_t n) {
  Raw r;
  r.dtype = d;
  if (is_byte_type(d)) {
    if (n == 1) r.bytes.push_back(k.mov<B8>(0u));
    if (n == 2) r.halves.push_back(k.mov<B16>(0u));
    for (std::uint32_t i = 0; n >= 4 && i < n / 4; ++i) r.pairs.push_back(k.mov<B32>(0u));
    return r;
  }
  for (std::uint32_t i = 0; i < n; ++i) {
    if (d == ScalarType::F32) r.f32.push_back(k.mov<F32>(0.0f));
  }
  if (d != ScalarType::F32 && n == 1) r.halves.push_back(k.mov<B16>(0u));
  if (d != ScalarType::F32 && n > 1) {
    for (std::uint32_t i = 0; i < n / 2; ++i) r.pairs.push_back(k.mov<B32>(0u));
  }
  return r;
}

Values decode(Kernel& k, const Raw& r) {
  if (r.dtype == ScalarType::F32) return r.f32;
  if (is_byte_type(r.dtype)) return decode_bytes(k, r);
  Values out;
  if (r.dtype == ScalarType::F16) {
    for (Reg<B32> w : r.pairs) {
      const auto h = k.unpack<F16>(w);
      out.push_back(k.cvt<F32>(h[0]));
      out.push_back(k.cvt<F32>(h[1]));
    }
    for (Reg<B16> h : r.halves) out.push_back(k.cvt<F32>(k.bitcast<F16>(h)));
  } else {
    for (Reg<B32> w : r.pairs) {
      out.push_back(k.bitcast<F32>(k.shl(w, 16u)));
      out.push_back(k.bitcast<F32>(k.and_(w, 0xFFFF0000u)));
    }
    for (Reg<B16> h : r.halves) out.push_back(k.bitcast<F32>(k.pack(k.mov<B16>(0u), h)));
  }
  return out;
}

Raw encode(Kernel& k, std::span<const Reg<F32>> values, ScalarType d) {
  Raw r;
  r.dtype = d;
  if (is_byte_type(d)) return encode_bytes(k, values, d);
  if (d == ScalarType::F32) {
    r.f32.assign(values.begin(), values.end());
    return r;
  }
  if (values.size() == 1) {
    r.halves.push_back(d == ScalarType::F16 ? k.bitcast<B16>(k.cvt<F16>(values[0]))
                                            : k.bitcast<B16>(k.cvt<BF16>(values[0])));
    return r;
  }
  for (std::size_t i = 0; i + 1 < values.size(); i += 2) {
    r.pairs.push_back(d == ScalarType::F16
                          ? k.bitcast<B32>(k.cvt_pack<F16x2>(values[i], values[i + 1]))
                          : k.bitcast<B32>(k.cvt_pack<BF16x2>(values[i], values[i + 1])));
  }
  return r;
}

}  // namespace ptxdsl
