#include "ptxdsl/dsl/blocks/element_io.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ptxdsl {
namespace {

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

}  // namespace

void check_element_type(ScalarType t, std::string_view what) {
  if (t == ScalarType::F32 || t == ScalarType::F16 || t == ScalarType::BF16) return;
  throw Error(fmt::format("{} must be f32, f16 or bf16, got {}", what, ptx_name(t)));
}

GlobalDPtr param_dptr(Kernel& k, std::string_view name, ScalarType d) {
  check_element_type(d, fmt::format("kernel '{}', parameter '{}'", k.name(), name));
  if (d == ScalarType::F16) return {k.param_ptr<F16>(name).as<B32>(), d};
  if (d == ScalarType::BF16) return {k.param_ptr<BF16>(name).as<B32>(), d};
  return {k.param_ptr<F32>(name).as<B32>(), d};
}

GlobalDPtr row_of(Kernel& k, GlobalDPtr p, Reg<U32> row, Src<U32> stride) {
  if (p.dtype == ScalarType::F32) return {k.row(p.p.as<F32>(), row, stride).as<B32>(), p.dtype};
  return {k.row(p.p.as<B16>(), row, stride).as<B32>(), p.dtype};
}

GlobalDPtr at(Kernel& k, GlobalDPtr p, Reg<U32> index) {
  if (p.dtype == ScalarType::F32) return {k.index(p.p.as<F32>(), index).as<B32>(), p.dtype};
  return {k.index(p.p.as<B16>(), index).as<B32>(), p.dtype};
}

SharedDPtr at(Kernel& k, SharedDPtr p, Reg<U32> index) {
  if (p.dtype == ScalarType::F32) return {k.index(p.p.as<F32>(), index).as<B32>(), p.dtype};
  return {k.index(p.p.as<B16>(), index).as<B32>(), p.dtype};
}

template <Space S>
Raw load_raw(Kernel& k, DPtr<S> p, std::uint32_t n, std::optional<Pred> pred, MemHints h) {
  Raw r;
  r.dtype = p.dtype;
  h = hints_for<S>(h);
  if (p.dtype == ScalarType::F32) {
    r.f32 = load_words(k, p.p.template as<F32>(), n, pred, h);
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
      to.halves.size() != from.halves.size()) {
    throw Error("assign: raw element groups differ in shape");
  }
  for (std::size_t i = 0; i < to.f32.size(); ++i) k.mov(to.f32[i], from.f32[i]);
  for (std::size_t i = 0; i < to.pairs.size(); ++i) k.mov(to.pairs[i], from.pairs[i]);
  for (std::size_t i = 0; i < to.halves.size(); ++i) k.mov(to.halves[i], from.halves[i]);
}

Raw zero_raw(Kernel& k, ScalarType d, std::uint32_t n) {
  Raw r;
  r.dtype = d;
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
