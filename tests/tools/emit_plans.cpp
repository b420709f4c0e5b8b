// `ptxdsl emit` run in-process (the commands without main()), its plans counted: a spec is planned
// once, with knobs, a tuning table's entry or neither; --json plans the runtime's small-batch
// class beside it.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "cli.hpp"
#include "ptxdsl/kernels/plan.hpp"
#include "scratch.hpp"

namespace {

// The plans one command line makes; it must succeed.
std::uint64_t plans_of(std::vector<std::string> args) {
  args.insert(args.begin(), "ptxdsl");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  const ptxdsl::cli::ToolInfo info{.name = "ptxdsl", .description = "", .version = ""};
  const std::uint64_t before = ptxdsl::kernels::plans_resolved();
  const int status =
      ptxdsl::cli::run_app(static_cast<int>(argv.size()), argv.data(), info, [](CLI::App& app) {
        std::vector<ptxdsl::cli::Registered> commands;
        commands.push_back(ptxdsl::cli::add_emit(app));
        return commands;
      });
  REQUIRE(status == 0);
  return ptxdsl::kernels::plans_resolved() - before;
}

}  // namespace

TEST_CASE("ptxdsl emit plans its spec once", "[cli][plan]") {
  const ptxdsl::test::Scratch dir("emit-plans");
  const std::string ptx = dir.path("norm.ptx");
  // rms_fwd bf16 1024 takes the H200's tuning table's entry (plan_test.cpp); the others the
  // heuristic's own.
  for (const char* kernel : {"ln_fwd", "ln_bwd", "rms_fwd", "rms_bwd"}) {
    for (const char* dtype : {"bf16", "f32"}) {
      INFO(kernel << " " << dtype);
      CHECK(plans_of({"emit", kernel, "--width", "1024", "--dtype", dtype, "-o", ptx}) == 1u);
    }
  }
  CHECK(plans_of({"emit", "ln_bwd", "--width", "4096", "--dtype", "f16", "--row-order", "tickets",
                  "-o", ptx}) == 1u);
  CHECK(plans_of({"emit", "rms_fwd", "--width", "131072", "--dtype", "bf16", "--device", "h100",
                  "-o", ptx}) == 1u);
  // The launch contract also says up to which batch the runtime takes the small-batch variant:
  // that class's plan once more.
  CHECK(plans_of({"emit", "rms_bwd", "--width", "4096", "--dtype", "f16", "--json", "-o", ptx}) ==
        2u);
}
