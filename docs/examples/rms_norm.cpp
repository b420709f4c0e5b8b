// RMS norm forward and backward through ptxdsl's host API, built as a program outside the project
// builds it (find_package(ptxdsl)): 1151 rows of 8192 f16 values, compared with the float64
// reference. It calls through Norm::call and NormCall, the one call shape of both norms and both
// directions (layer_norm.cpp uses the typed forward and backward, which convert to it).
//
//   rms_norm_example [batch] [width]
//
// Exit status: 0 within bounds, 1 no CUDA driver (or another error), 2 outside the bounds.
#include <cstdio>
#include <string>

#include <ptxdsl/runtime/norms.hpp>

#include "example_check.hpp"

int main(int argc, char** argv) {
  using namespace ptxdsl;
  using namespace ptxdsl::runtime;
  const std::uint32_t batch = argc > 1 ? static_cast<std::uint32_t>(std::stoul(argv[1])) : 1151;
  const std::uint32_t width = argc > 2 ? static_cast<std::uint32_t>(std::stoul(argv[2])) : 8192;

  std::string why;
  if (!driver_available(&why)) {
    std::fprintf(stderr, "%s\n", why.c_str());
    return 1;
  }
  try {
    Context ctx(0);
    const DType f16 = DType::F16;
    const kernels::NormInputs in =
        kernels::make_inputs(kernels::NormKind::RmsNormFwd, f16, f16, batch, width, width, 42);

    DeviceBuffer<std::byte> x = example::to_device(ctx, in.x), w = example::to_device(ctx, in.w),
                            dy = example::to_device(ctx, in.dy);
    DeviceBuffer<std::byte> y(ctx, x.bytes()), dx(ctx, x.bytes()), dw(ctx, w.bytes());
    DeviceBuffer<float> rstd(ctx, batch);

    Norm rms(ctx, NormType{.layer = false, .dtype = f16, .weight_dtype = f16, .width = width});
    rms.prepare();
    Stream stream(ctx);
    Event start(ctx), middle(ctx), stop(ctx);
    start.record(stream);
    rms.call({.direction = Direction::Forward,
              .x = x,
              .w = w,
              .y = y,
              .rstd = rstd,
              .batch = batch,
              .eps = 1e-5f,
              .stream = stream});
    middle.record(stream);
    rms.call({.direction = Direction::Backward,
              .x = x,
              .w = w,
              .rstd = rstd,
              .dy = dy,
              .dx = dx,
              .dw = dw,
              .batch = batch,
              .stream = stream});
    stop.record(stream);
    stop.synchronize();

    const auto fwd = kernels::rms_norm_fwd_ref(in.x.values, in.w.values, batch, width, width, 1e-5);
    const auto bwd = kernels::rms_norm_bwd_ref(in.x.values, in.w.values, in.dy.values, batch, width,
                                               width, 1e-5);
    std::printf("RMS norm f16, batch %u, width %u, on %s: forward %.3f ms, backward %.3f ms\n",
                batch, width, ctx.info().name.c_str(), middle.elapsed_ms_since(start),
                stop.elapsed_ms_since(middle));
    bool ok = example::report("y", example::to_host(y, f16), fwd.y, true);
    ok &= example::report("dx", example::to_host(dx, f16), bwd.dx, true);
    ok &= example::report("dw", example::to_host(dw, f16), bwd.dw, false);
    std::printf("%s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
