#include <catch2/catch.hpp>

#include <cstdio>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "gpu_support.hpp"
#include "ptxdsl/dsl/executor.hpp"
#include "ptxdsl/kernels/cpu_run.hpp"
#include "ptxdsl/kernels/inputs.hpp"
#include "ptxdsl/kernels/reference.hpp"
#include "ptxdsl/runtime/norms.hpp"

// `deterministic portable` (docs/kernels.md): dw and db depend on the batch, the width, the dtypes
// and the inputs alone. The GPU's backward, planned for the GPU it runs on, must write the very
// bytes the executor writes for an A100's plan (108 SMs, sm_80, other CTAs and vectors).
using namespace ptxdsl;
using namespace ptxdsl::kernels;

namespace {

constexpr float kEps = 1e-5f;

struct PortableCase {
  NormKind kind;
  DType dtype, weight_dtype;
  std::uint32_t width, batch;
};

void compare_portable(const PortableCase& c, runtime::Context& ctx) {
  const bool layer = c.kind == NormKind::LayerNormBwd;
  INFO(kind_name(c.kind) << " " << dtype_name(c.dtype) << "/" << dtype_name(c.weight_dtype)
                         << " width " << c.width << " batch " << c.batch);
  NormSpec spec;
  spec.kind = c.kind;
  spec.dtype = c.dtype;
  spec.weight_dtype = c.weight_dtype;
  spec.width = c.width;
  spec.arch = Arch::Sm80;
  spec.ptx_version = default_ptx_version(Arch::Sm80);
  spec.device = device_preset("a100");
  spec.knobs.deterministic = Determinism::Portable;
  // Vectors as the runtime's launch takes them for this row stride (rows of 7 f32 allow none).
  spec.knobs.vector_elems = vector_elems_for(c.dtype, c.weight_dtype, c.width, 0, 0);
  const BuiltNorm built = build_norm(spec);
  const NormInputs in = make_inputs(spec, c.batch, c.width, 20261207 + c.width + c.batch);
  std::vector<float> mean(c.batch, 0.0f), rstd;
  if (layer) {
    const LayerNormFwdRef f =
        layer_norm_fwd_ref(in.x.values, in.w.values, in.b.values, c.batch, c.width, c.width, kEps);
    mean = to_f32(f.mean);
    rstd = to_f32(f.rstd);
  } else {
    rstd = to_f32(rms_norm_fwd_ref(in.x.values, in.w.values, c.batch, c.width, c.width, kEps).rstd);
  }
  const std::size_t rows_bytes = std::size_t{c.batch} * c.width * dtype_bytes(c.dtype);
  const std::size_t weight_bytes = std::size_t{c.width} * dtype_bytes(c.weight_dtype);
  const std::vector<std::string> grads =
      layer ? std::vector<std::string>{"dw", "db"} : std::vector<std::string>{"dw"};

  CpuDevice dev;
  std::map<std::string, ExecutorAddress> cpu;
  const auto put = [&](const char* name, std::span<const std::byte> bytes) {
    cpu[name] = dev.upload(bytes, name);
  };
  put("x", in.x.bytes);
  put("w", in.w.bytes);
  put("dy", in.dy.bytes);
  put("rstd", std::as_bytes(std::span<const float>(rstd)));
  if (layer) put("mean", std::as_bytes(std::span<const float>(mean)));
  cpu["dx"] = dev.alloc(rows_bytes, "dx");
  for (const std::string& g : grads) cpu[g] = dev.alloc(weight_bytes, g);
  run_norm_on_cpu(built, dev, cpu, c.batch, c.width, kEps);

  std::map<std::string, runtime::DeviceBuffer<std::byte>> gpu;
  const auto upload = [&](const std::string& name, std::span<const std::byte> bytes) {
    gpu.emplace(name, runtime::DeviceBuffer<std::byte>(ctx, bytes));
  };
  upload("x", in.x.bytes);
  upload("w", in.w.bytes);
  upload("dy", in.dy.bytes);
  upload("rstd", std::as_bytes(std::span<const float>(rstd)));
  upload("mean", std::as_bytes(std::span<const float>(mean)));
  upload("dx", std::vector<std::byte>(rows_bytes, std::byte{0xFF}));
  for (const std::string& g : grads)
    upload(g, std::vector<std::byte>(weight_bytes, std::byte{0xFF}));
  const auto view = [&](const char* name) { return runtime::DeviceView(gpu.at(name)); };
  runtime::NormCall call{.direction = runtime::Direction::Backward, .batch = c.batch, .eps = kEps};
  call.dy = view("dy");
  call.x = view("x");
  call.w = view("w");
  call.rstd = view("rstd");
  call.dx = view("dx");
  call.dw = view("dw");
  if (layer) {
    call.mean = view("mean");
    call.db = view("db");
  }
  runtime::NormOptions options;
  options.backward_knobs = NormKnobs{};
  options.backward_knobs->deterministic = Determinism::Portable;
  runtime::Norm norm(ctx, {layer, c.dtype, c.weight_dtype, c.width}, options);
  norm.call(call);
  ctx.synchronize();

  for (const std::string& g : grads) {
    INFO("output " << g);
    const std::vector<std::byte> want = dev.download<std::byte>(cpu.at(g), weight_bytes);
    const std::vector<std::byte> got = gpu.at(g).to_host();
    std::size_t equal = 0;
    for (std::size_t i = 0; i < weight_bytes; ++i) equal += want[i] == got[i];
    std::printf("portable %s %s/%s n=%u batch %u %s: %zu/%zu bytes equal\n",
                std::string(kind_name(c.kind)).c_str(), std::string(dtype_name(c.dtype)).c_str(),
                std::string(dtype_name(c.weight_dtype)).c_str(), c.width, c.batch, g.c_str(), equal,
                weight_bytes);
    CHECK(equal == weight_bytes);
  }
}

}  // namespace

TEST_CASE(
    "portable deterministic dw and db: the GPU writes the executor's bytes for an A100's plan",
    "[gpu][executor]") {
  PTXDSL_REQUIRE_GPU(ctx);
  const std::vector<PortableCase> cases = {
      {NormKind::RmsNormBwd, DType::F32, DType::F32, 7, 3000},
      {NormKind::LayerNormBwd, DType::F16, DType::F16, 264, 300},
      {NormKind::RmsNormBwd, DType::BF16, DType::F32, 1151, 300},
      {NormKind::LayerNormBwd, DType::BF16, DType::F32, 4096, 512},
      {NormKind::RmsNormBwd, DType::F16, DType::F16, 18001, 20},
      {NormKind::LayerNormBwd, DType::F32, DType::F32, 9001, 20},
  };
  for (const PortableCase& c : cases) compare_portable(c, ctx);
}
