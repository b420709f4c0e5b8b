// A spec is planned once: resolve() makes the plan that build() emits, and each batch class of the
// runtime's is planned once.
#include <catch2/catch.hpp>

#include "ptxdsl/kernels/norm.hpp"
#include "spec_of.hpp"

using namespace ptxdsl::kernels;

namespace {

// How many plans `f` makes.
template <class F>
std::uint64_t plans_made(F&& f) {
  const std::uint64_t before = plans_resolved();
  f();
  return plans_resolved() - before;
}

}  // namespace

TEST_CASE("a build plans once, tuned or not", "[plan]") {
  // rms_fwd bf16 1024 takes the H200's tuning table's entry; f16 takes the heuristic's own.
  for (DType dtype : {DType::BF16, DType::F16}) {
    const NormSpec spec = spec_of(NormKind::RmsNormFwd, dtype, 1024);
    BuiltNorm built;
    CHECK(plans_made([&] { built = build_norm(spec); }) == 1u);
    CHECK(built.tuned_by.empty() == (dtype == DType::F16));
    CHECK(built.plan.tuned_by == built.tuned_by);
    // The plan carries its spec: building from it again plans nothing and gives the same kernel.
    CHECK(plans_made([&] { CHECK(build(built.plan).ptx == built.ptx); }) == 0u);
  }
  CHECK(plans_made([] { validate(spec_of(NormKind::LayerNormBwd, DType::F32, 4096)); }) == 1u);
}

TEST_CASE("each batch class is planned once", "[plan]") {
  // Untuned: the spec as given and its small-batch variant.
  const NormSpec bwd = spec_of(NormKind::RmsNormBwd, DType::F16, 4096);
  BatchPlans plans;
  CHECK(plans_made([&] { plans = resolve_batches(bwd); }) == 2u);
  REQUIRE(plans.small.has_value());
  CHECK(plans.small_batch_limit > 0u);
  CHECK(&plans.for_batch(plans.small_batch_limit) == &*plans.small);
  CHECK(&plans.for_batch(plans.small_batch_limit + 1) == &plans.large);
  CHECK(plans.small->spec.knobs.single_launch == true);
  // A knob that fixes the variant, and a backward of dx alone: one class, one plan.
  NormSpec fixed = bwd;
  fixed.knobs.single_launch = false;
  CHECK(plans_made([&] { plans = resolve_batches(fixed); }) == 1u);
  CHECK(!plans.small);
  NormSpec dx = bwd;
  dx.outputs = Outputs::Dx;
  CHECK(plans_made([&] { plans = resolve_batches(dx); }) == 1u);
  CHECK(plans.small_batch_limit == 0u);
  // A row split over a cluster has no small-batch variant: its plan alone.
  CHECK(plans_made([] { resolve_batches(spec_of(NormKind::LayerNormFwd, DType::F16, 131072)); }) ==
        1u);
}
