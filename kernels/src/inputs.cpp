#include "ptxdsl/kernels/inputs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "ptxdsl/dsl/error.hpp"
#include "ptxdsl/dsl/half.hpp"
#include "ptxdsl/kernels/row_blocks.hpp"

namespace ptxdsl::kernels {
namespace {

// splitmix64: a small, portable generator; the same stream everywhere.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1), 53 bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Standard normal, Box–Muller.
  double normal() {
    if (spare_) {
      spare_ = false;
      return saved_;
    }
    double u1 = uniform();
    while (u1 <= 0) u1 = uniform();
    const double u2 = uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    saved_ = r * std::sin(6.283185307179586 * u2);
    spare_ = true;
    return r * std::cos(6.283185307179586 * u2);
  }

 private:
  std::uint64_t state_;
  bool spare_ = false;
  double saved_ = 0;
};

// One independent stream per (seed, tensor).
Random stream(std::uint64_t seed, std::uint64_t tensor) {
  Random r(seed * 0x100000001B3ull + tensor);
  r.next();
  return r;
}

// A tensor of `batch` rows `stride` apart, `width` values a row drawn as offset + scale·N(0, 1)
// (row r from its own stream of `tensor`'s), rounded to `d`; the padding between rows NaN.
HostTensor random_rows(std::uint64_t seed, std::uint64_t tensor, std::uint32_t batch,
                       std::uint32_t width, std::uint32_t stride, double offset, double scale,
                       DType d) {
  const std::size_t count = static_cast<std::size_t>(batch) * stride;
  const auto s = static_cast<std::size_t>(dtype_bytes(d));
  HostTensor t;
  t.dtype = d;
  t.values.assign(count, std::numeric_limits<float>::quiet_NaN());
  t.bytes.resize(count * s);
  // Row r's stream: the tensor's first draw mixed with r, so the values do not depend on how the
  // rows are split between threads.
  const std::uint64_t tensor_bits = stream(seed, tensor).next();
  const auto fill = [&](std::size_t, std::uint32_t first, std::uint32_t rows) {
    std::vector<float> row(stride, std::numeric_limits<float>::quiet_NaN());
    for (std::uint32_t r = first; r < first + rows; ++r) {
      Random rr(tensor_bits ^ (0xD1B54A32D192ED03ull * (std::uint64_t{r} + 1)));
      for (std::uint32_t i = 0; i < width; ++i) {
        row[i] = static_cast<float>(offset + scale * rr.normal());
      }
      const std::size_t at = static_cast<std::size_t>(r) * stride;
      const std::vector<std::byte> bits = from_floats(row, d);
      std::memcpy(t.bytes.data() + at * s, bits.data(), bits.size());
      const std::vector<float> rounded = to_floats(bits, d, stride);
      std::copy(rounded.begin(), rounded.end(), t.values.begin() + static_cast<std::ptrdiff_t>(at));
    }
  };
  for_row_blocks(row_blocks(batch, stride), fill);
  return t;
}

}  // namespace

std::vector<std::byte> from_floats(std::span<const float> values, DType d) {
  std::vector<std::byte> out(values.size() * static_cast<std::size_t>(dtype_bytes(d)));
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (d == DType::F32) {
      std::memcpy(out.data() + 4 * i, &values[i], 4);
    } else {
      const std::uint16_t h =
          d == DType::F16 ? f32_to_f16_bits(values[i]) : f32_to_bf16_bits(values[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

std::vector<float> to_floats(std::span<const std::byte> bytes, DType d, std::size_t count) {
  const auto s = static_cast<std::size_t>(dtype_bytes(d));
  if (bytes.size() < count * s) {
    throw Error(fmt::format("to_floats: {} elements of {} need {} bytes, got {}", count,
                            dtype_name(d), count * s, bytes.size()));
  }
  std::vector<float> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (d == DType::F32) {
      std::memcpy(&out[i], bytes.data() + 4 * i, 4);
    } else {
      std::uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      out[i] = d == DType::F16 ? f16_bits_to_f32(h) : bf16_bits_to_f32(h);
    }
  }
  return out;
}

std::vector<float> to_floats(std::span<const std::byte> bytes, DType d) {
  return to_floats(bytes, d, bytes.size() / static_cast<std::size_t>(dtype_bytes(d)));
}

HostTensor make_tensor(std::span<const float> values, DType d) {
  HostTensor t;
  t.dtype = d;
  t.bytes = from_floats(values, d);
  t.values = to_floats(t.bytes, d, values.size());
  return t;
}

std::vector<float> dense_rows(std::span<const float> strided, std::uint32_t batch,
                              std::uint32_t width, std::uint32_t stride) {
  check_stride(width, stride);
  std::vector<float> out(static_cast<std::size_t>(batch) * width);
  for (std::uint32_t row = 0; row < batch; ++row) {
    for (std::uint32_t i = 0; i < width; ++i) {
      out[static_cast<std::size_t>(row) * width + i] =
          strided[static_cast<std::size_t>(row) * stride + i];
    }
  }
  return out;
}

NormInputs make_inputs(NormKind kind, DType dtype, DType weight_dtype, std::uint32_t batch,
                       std::uint32_t width, std::uint32_t stride, std::uint64_t seed,
                       Residual residual, float weight_offset) {
  check_batch(batch);
  if (width < 1 || width > kMaxWidth) {
    throw Error(fmt::format("width must be in [1, {}], got {}", kMaxWidth, width));
  }
  check_stride(width, stride);
  const bool ln = kind == NormKind::LayerNormFwd || kind == NormKind::LayerNormBwd;
  NormInputs in;
  in.batch = batch;
  in.width = width;
  in.stride = stride;
  in.x = random_rows(seed, 0, batch, width, stride, ln ? -2.3 : 0.0, ln ? 0.5 : 0.3, dtype);
  in.dy = random_rows(seed, 3, batch, width, stride, 0.0, 0.1, dtype);
  std::vector<float> w(width), b;
  Random rw = stream(seed, 1);
  for (float& v : w) {
    v = static_cast<float>((ln ? rw.uniform() : 1.0 + 0.1 * rw.normal()) - weight_offset);
  }
  in.w = make_tensor(w, weight_dtype);
  if (ln) {
    Random rb = stream(seed, 2);
    b.resize(width);
    for (float& v : b) v = static_cast<float>(rb.uniform());
    in.b = make_tensor(b, weight_dtype);
  } else {
    in.b.dtype = weight_dtype;
  }
  const DType rd = residual == Residual::AddF32 ? DType::F32 : dtype;
  in.residual.dtype = rd;
  in.dh.dtype = rd;
  if (residual != Residual::None) {
    in.residual = random_rows(seed, 4, batch, width, stride, 0.0, 0.5, rd);
    in.dh = random_rows(seed, 5, batch, width, stride, 0.0, 0.1, rd);
  }
  return in;
}

std::vector<float> to_f32(std::span<const double> values) {
  return std::vector<float>(values.begin(), values.end());
}

}  // namespace ptxdsl::kernels
