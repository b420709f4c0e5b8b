#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "gpu_support.hpp"
#include "ptxdsl/dsl/executor.hpp"
#include "ptxdsl/kernels/cpu_run.hpp"
#include "ptxdsl/kernels/inputs.hpp"
#include "ptxdsl/kernels/reference.hpp"
#include "ptxdsl/runtime/norms.hpp"

// The same kernels on the same inputs, once on the CPU executor and once on the GPU: the executor
// must compute what the hardware computes. Differences are allowed only where PTX leaves rounding
// to the hardware (ptxas may contract mul+add into fma; approximate functions): f32 within a few
// units in the last place of the tensor's scale, 16-bit outputs within one unit of their format.
using namespace ptxdsl;
using namespace ptxdsl::kernels;

namespace {

constexpr float kEps = 1e-5f;
constexpr std::uint32_t kBatch = 3;

runtime::Direction direction(NormKind kind) {
  return is_backward(kind) ? runtime::Direction::Backward : runtime::Direction::Forward;
}

struct Tensor {
  std::string name;
  DType dtype;
  std::size_t count;
};

// What `kind` writes (the full variant), as the host API's table of tensors says.
std::vector<Tensor> outputs_of(NormKind kind, DType dtype, DType weight_dtype,
                               std::uint32_t width) {
  std::vector<Tensor> out;
  for (const runtime::NormTensor& t : runtime::norm_tensors(is_layer_norm(kind), direction(kind))) {
    if (!t.written) continue;
    const std::string name(arg_name(t.arg));
    switch (t.layout) {
      case runtime::TensorLayout::Rows:
      case runtime::TensorLayout::OutputRows:
        out.push_back({name, dtype, std::size_t{kBatch} * width});
        break;
      case runtime::TensorLayout::Weights:
        out.push_back({name, weight_dtype, width});
        break;
      case runtime::TensorLayout::PerRow:
        out.push_back({name, DType::F32, kBatch});
        break;
      case runtime::TensorLayout::ResidualRows:
      case runtime::TensorLayout::Scales:
      case runtime::TensorLayout::ScaleIn:
        break;  // the residual add is another variant, the quantized output another type
    }
  }
  return out;
}

// One unit in the last place of `d` at `v` (f32: four units, for contraction and approximations).
double allowed(DType d, double v, double scale) {
  switch (d) {
    case DType::F32:
      return 4 * 0x1p-24 * scale;
    case DType::F16:
      return std::max(0x1p-10 * std::fabs(v), 0x1p-24);
    case DType::BF16:
      return std::max(0x1p-7 * std::fabs(v), 0x1p-133);
  }
  return 0;
}

void compare(NormKind kind, DType dtype, std::uint32_t width, runtime::Context& ctx) {
  const DType weight_dtype = dtype;
  INFO(kind_name(kind) << " " << dtype_name(dtype) << " width " << width << " batch " << kBatch);
  NormSpec spec;
  spec.kind = kind;
  spec.dtype = dtype;
  spec.weight_dtype = weight_dtype;
  spec.width = width;
  spec.arch = Arch::Sm90;
  spec.knobs.sm_count = ctx.sm_count();  // the grid the host API picks on this device
  // The vector width the host API picks for rows `width` apart at aligned addresses.
  spec.knobs.vector_elems = vector_elems_for(dtype, weight_dtype, width, 0, 0);
  const BuiltNorm built = build_norm(spec);
  const NormInputs in = make_inputs(spec, kBatch, width, 20261129 + width);

  // Statistics the backward reads: the reference's, identical on both sides.
  std::vector<float> mean(kBatch, 0.0f), rstd(kBatch, 0.0f);
  if (kind == NormKind::LayerNormBwd) {
    const LayerNormFwdRef f =
        layer_norm_fwd_ref(in.x.values, in.w.values, in.b.values, kBatch, width, width, kEps);
    mean = to_f32(f.mean);
    rstd = to_f32(f.rstd);
  } else if (kind == NormKind::RmsNormBwd) {
    rstd = to_f32(rms_norm_fwd_ref(in.x.values, in.w.values, kBatch, width, width, kEps).rstd);
  }

  // CPU executor.
  CpuDevice dev;
  std::map<std::string, ExecutorAddress> cpu;
  const auto put = [&](const char* name, std::span<const std::byte> bytes) {
    if (!bytes.empty()) cpu[name] = dev.upload(bytes, name);
  };
  put("x", in.x.bytes);
  put("w", in.w.bytes);
  put("b", in.b.bytes);
  put("dy", in.dy.bytes);
  put("mean", std::as_bytes(std::span<const float>(mean)));
  put("rstd", std::as_bytes(std::span<const float>(rstd)));
  const std::vector<Tensor> outs = outputs_of(kind, dtype, weight_dtype, width);
  for (const Tensor& o : outs) {
    cpu[o.name] = dev.alloc(o.count * static_cast<std::size_t>(dtype_bytes(o.dtype)), o.name);
  }
  run_norm_on_cpu(built, dev, cpu, kBatch, width, kEps);

  // GPU, through the host API.
  std::map<std::string, runtime::DeviceBuffer<std::byte>> gpu;
  const auto upload = [&](const char* name, std::span<const std::byte> bytes) {
    gpu.emplace(name, runtime::DeviceBuffer<std::byte>(ctx, bytes));
  };
  upload("x", in.x.bytes);
  upload("w", in.w.bytes);
  upload("b", in.b.bytes.empty() ? std::span<const std::byte>(in.w.bytes) : in.b.bytes);
  upload("dy", in.dy.bytes.empty() ? std::span<const std::byte>(in.x.bytes) : in.dy.bytes);
  upload("mean", std::as_bytes(std::span<const float>(mean)));
  upload("rstd", std::as_bytes(std::span<const float>(rstd)));
  for (const Tensor& o : outs) {
    std::vector<std::byte> poison(o.count * static_cast<std::size_t>(dtype_bytes(o.dtype)),
                                  std::byte{0xFF});
    gpu.erase(o.name);
    upload(o.name.c_str(), poison);
  }
  const auto g = [&](const char* name) { return runtime::DeviceView(gpu.at(name)); };
  // Every tensor of the full variant (no residual add, no quantized output), by its name.
  runtime::NormCall call{.direction = direction(kind), .batch = kBatch, .eps = kEps};
  for (const runtime::NormTensor& t : runtime::norm_tensors(is_layer_norm(kind), call.direction)) {
    if (t.layout != runtime::TensorLayout::ResidualRows &&
        t.layout != runtime::TensorLayout::Scales && t.layout != runtime::TensorLayout::ScaleIn) {
      call.*t.view = g(std::string(arg_name(t.arg)).c_str());
    }
  }
  runtime::Norm norm(ctx, {is_layer_norm(kind), dtype, weight_dtype, width});
  norm.call(call);
  ctx.synchronize();

  for (const Tensor& o : outs) {
    INFO("output " << o.name);
    const std::size_t bytes = o.count * static_cast<std::size_t>(dtype_bytes(o.dtype));
    const std::vector<std::byte> cpu_bytes = dev.download<std::byte>(cpu.at(o.name), bytes);
    const std::vector<std::byte> gpu_bytes = gpu.at(o.name).to_host();
    const std::vector<float> c = to_floats(cpu_bytes, o.dtype, o.count);
    const std::vector<float> d = to_floats(gpu_bytes, o.dtype, o.count);
    double scale = 0;
    for (float v : c) scale = std::max(scale, std::fabs(static_cast<double>(v)));
    std::size_t identical = 0, outside = 0, first = 0;
    for (std::size_t i = 0; i < o.count; ++i) {
      const std::size_t at = i * static_cast<std::size_t>(dtype_bytes(o.dtype));
      if (std::equal(cpu_bytes.begin() + at, cpu_bytes.begin() + at + dtype_bytes(o.dtype),
                     gpu_bytes.begin() + at)) {
        ++identical;
        continue;
      }
      const double diff = std::fabs(static_cast<double>(c[i]) - d[i]);
      if (!(diff <= allowed(o.dtype, c[i], scale)) && outside++ == 0) first = i;
    }
    INFO(identical << " of " << o.count << " bit-identical; " << outside
                   << " beyond rounding, first at " << first << ": executor " << c[first]
                   << ", GPU " << d[first]);
    std::printf("executor vs GPU %s %s n=%u %s: %zu/%zu bit-identical\n",
                std::string(kind_name(kind)).c_str(), std::string(dtype_name(dtype)).c_str(), width,
                o.name.c_str(), identical, o.count);
    CHECK(outside == 0);
  }
}

}  // namespace

TEST_CASE("the CPU executor computes what the GPU computes", "[gpu][executor]") {
  PTXDSL_REQUIRE_GPU(ctx);
  for (NormKind kind : {NormKind::LayerNormFwd, NormKind::LayerNormBwd, NormKind::RmsNormFwd,
                        NormKind::RmsNormBwd}) {
    for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
      for (std::uint32_t width : {7u, 1000u, 4097u}) compare(kind, dtype, width, ctx);
    }
  }
}

namespace {

// One atomic form on one word: the word before, b and (cas) c; 32-bit types use the low half of
// their 64-bit slot.
struct AtomCase {
  AtomOp op;
  ScalarType type;
  std::uint64_t word, b, c = 0;
};

template <AtomTag T>
void emit_atom_case(Kernel& k, std::size_t i, const AtomCase& a, bool shared, GlobalPtr<U64> words,
                    GlobalPtr<U64> bs, GlobalPtr<U64> cs, GlobalPtr<U64> olds) {
  const GlobalPtr<T> word = (words + static_cast<std::int64_t>(i)).as<T>();
  const Reg<T> b = k.ld((bs + static_cast<std::int64_t>(i)).as<T>());
  const Reg<T> c = k.ld((cs + static_cast<std::int64_t>(i)).as<T>());
  const auto apply = [&](auto p) {
    return a.op == AtomOp::Cas ? k.atom_cas(p, b, c) : k.atom(a.op, p, b);
  };
  Reg<T> old;
  if (shared) {
    const SharedPtr<T> s = k.shared_array<T>("word" + std::to_string(i), 1);
    k.st(s, k.ld(word));
    old = apply(s);
    k.st(word, k.ld(s));
  } else {
    old = apply(word);
  }
  k.st((olds + static_cast<std::int64_t>(i)).as<T>(), old);
}

}  // namespace

TEST_CASE("the CPU executor's atomics compute what the GPU's do", "[gpu][executor][atom]") {
  PTXDSL_REQUIRE_GPU(ctx);
  using S = ScalarType;
  const std::vector<AtomCase> cases = {
      {AtomOp::Add, S::U32, 0xFFFFFFFFu, 2},
      {AtomOp::Add, S::S32, 0xFFFFFFFBu, 3},
      {AtomOp::Add, S::U64, 1ull << 40, 7},
      {AtomOp::Add, S::F32, 0x3FC00000u, 0x40100000u},  // 1.5 + 2.25
      {AtomOp::Add, S::F32, 1, 1},                      // subnormals flushed
      {AtomOp::Add, S::F64, 0x3FB999999999999Aull, 0x3FC999999999999Aull},
      {AtomOp::Add, S::F64, 1, 1},  // subnormals kept
      {AtomOp::Add, S::F16x2, 0x7BFF0001u, 0x7BFF0001u},
      {AtomOp::Add, S::F16x2, 0xC0003C00u, 0x38003800u},
      {AtomOp::Add, S::BF16x2, 0x3F803F80u, 0x3F803B80u},  // a tie to even
      {AtomOp::Add, S::BF16x2, 0x00003F80u, 0x00003C40u},
      {AtomOp::Min, S::U32, 5, 0xFFFFFFFFu},
      {AtomOp::Min, S::S32, 5, 0xFFFFFFFFu},
      {AtomOp::Max, S::U32, 5, 0xFFFFFFFFu},
      {AtomOp::Max, S::S32, 5, 0xFFFFFFFFu},
      {AtomOp::Min, S::S64, 1, ~0ull},
      {AtomOp::Max, S::U64, 1, ~0ull},
      {AtomOp::And, S::B32, 0b1100, 0b1010},
      {AtomOp::Or, S::U32, 0b1100, 0b1010},
      {AtomOp::Xor, S::B64, 0xF0000000'0000000Cull, 0xFF000000'0000000Aull},
      {AtomOp::Exch, S::U32, 7, 9},
      {AtomOp::Exch, S::U64, 1ull << 50, 3},
      {AtomOp::Cas, S::U32, 7, 7, 42},
      {AtomOp::Cas, S::U32, 8, 7, 42},
      {AtomOp::Cas, S::B64, 1ull << 32, 1ull << 32, 3},
      {AtomOp::Inc, S::U32, 3, 9},
      {AtomOp::Inc, S::U32, 9, 9},
      {AtomOp::Inc, S::U32, 12, 9},
      {AtomOp::Dec, S::U32, 5, 9},
      {AtomOp::Dec, S::U32, 0, 9},
      {AtomOp::Dec, S::U32, 12, 9},
  };
  for (const bool shared : {false, true}) {
    INFO((shared ? "shared" : "global") << " memory");
    Module m(Arch::Sm90);
    Kernel& k = m.kernel("atoms");
    k.require_threads(1);
    const auto words = k.param_ptr<U64>("words");
    const auto bs = k.param_ptr<U64>("bs");
    const auto cs = k.param_ptr<U64>("cs");
    const auto olds = k.param_ptr<U64>("olds");
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const AtomCase& a = cases[i];
      switch (a.type) {
        case S::U32:
          emit_atom_case<U32>(k, i, a, shared, words, bs, cs, olds);
          break;
        case S::S32:
          emit_atom_case<S32>(k, i, a, shared, words, bs, cs, olds);
          break;
        case S::B32:
          emit_atom_case<B32>(k, i, a, shared, words, bs, cs, olds);
          break;
        case S::U64:
          emit_atom_case<U64>(k, i, a, shared, words, bs, cs, olds);
          break;
        case S::S64:
          emit_atom_case<S64>(k, i, a, shared, words, bs, cs, olds);
          break;
        case S::B64:
          emit_atom_case<B64>(k, i, a, shared, words, bs, cs, olds);
          break;
        case S::F32:
          emit_atom_case<F32>(k, i, a, shared, words, bs, cs, olds);
          break;
        case S::F64:
          emit_atom_case<F64>(k, i, a, shared, words, bs, cs, olds);
          break;
        case S::F16x2:
          emit_atom_case<F16x2>(k, i, a, shared, words, bs, cs, olds);
          break;
        default:
          emit_atom_case<BF16x2>(k, i, a, shared, words, bs, cs, olds);
          break;
      }
    }
    k.finalize();
    std::vector<std::uint64_t> w, b, c;
    for (const AtomCase& a : cases) {
      w.push_back(a.word);
      b.push_back(a.b);
      c.push_back(a.c);
    }
    // The executor's words and old values.
    std::vector<std::uint64_t> cpu_w = w, cpu_old(cases.size(), 0);
    CpuDevice dev;
    dev.launch(k, {1, 1},
               {dev.map<std::uint64_t>(cpu_w, "words"), dev.upload<std::uint64_t>(b, "bs"),
                dev.upload<std::uint64_t>(c, "cs"), dev.map<std::uint64_t>(cpu_old, "olds")});
    // The GPU's.
    const runtime::Function fn(runtime::ModuleCache::global().get(ctx, m.emit(), "atoms"),
                               k.contract());
    runtime::DeviceBuffer<std::uint64_t> dw(ctx, std::span<const std::uint64_t>(w));
    runtime::DeviceBuffer<std::uint64_t> db(ctx, std::span<const std::uint64_t>(b));
    runtime::DeviceBuffer<std::uint64_t> dc(ctx, std::span<const std::uint64_t>(c));
    runtime::DeviceBuffer<std::uint64_t> dold(ctx, std::span<const std::uint64_t>(cpu_old));
    runtime::Stream s(ctx);
    runtime::launch(fn, 1, 1, 0, s, dw, db, dc, dold);
    s.synchronize();
    const std::vector<std::uint64_t> gpu_w = dw.to_host(), gpu_old = dold.to_host();
    for (std::size_t i = 0; i < cases.size(); ++i) {
      INFO("case " << i << ": " << ptx_name(cases[i].type) << ", word " << std::hex << cases[i].word
                   << ", b " << cases[i].b);
      CHECK(cpu_w[i] == gpu_w[i]);
      CHECK(cpu_old[i] == gpu_old[i]);
    }
  }
}
