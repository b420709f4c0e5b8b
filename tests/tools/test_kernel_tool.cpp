// The kernel tool framework: the registry and its parameters, directly, then the commands of a
// tool built by ptxdsl_add_kernel_tool (tests/tools/scale_kernels.cpp's kernels), run as a user
// runs them. `check --ptx FILE` and `run --trace` of the built-in ptxdsl are here too.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>

#include "ptxdsl/dsl/error.hpp"
#include "ptxdsl/runtime/driver.hpp"
#include "ptxdsl/tool.hpp"
#include "run_binary.hpp"
#include "skip.hpp"

#if !defined(PTXDSL_TEST_TOOL) || !defined(PTXDSL_CLI)
#error "PTXDSL_TEST_TOOL and PTXDSL_CLI must name the test tool and the ptxdsl binary"
#endif

namespace {

using ptxdsl::Error;
using ptxdsl::test::lines;
using ptxdsl::test::read_file;
using ptxdsl::test::Result;
using ptxdsl::test::temp_path;
using namespace ptxdsl::tool;

Result run_tool(const std::string& args) {
  return ptxdsl::test::run_binary(ptxdsl::test::binary_path("PTXDSL_TEST_TOOL", PTXDSL_TEST_TOOL),
                                  args);
}

Result run_ptxdsl(const std::string& args) {
  return ptxdsl::test::run_binary(ptxdsl::test::binary_path("PTXDSL_CLI", PTXDSL_CLI), args);
}

KernelDefinition empty_kernel(std::string name) {
  KernelDefinition d;
  d.name = std::move(name);
  d.build = [](ptxdsl::Module& m, const Params&) {
    ptxdsl::Kernel& k = m.kernel("k");
    k.require_threads(32);
    return Launch{};
  };
  return d;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("the registry refuses definitions it could not serve, naming them", "[tools]") {
  Registry r;
  r.add(empty_kernel("one"));
  CHECK_THAT(message_of([&] { r.add(empty_kernel("one")); }),
             Catch::Contains("kernel 'one' is registered twice"));
  CHECK_THAT(message_of([&] { r.add(empty_kernel("Bad name")); }), Catch::Contains("'Bad name'"));
  KernelDefinition no_build;
  no_build.name = "nobuild";
  CHECK_THAT(message_of([&] { r.add(no_build); }), Catch::Contains("no build function"));
  KernelDefinition reserved = empty_kernel("reserved");
  reserved.params = {Parameter::uint("seed", "a seed", 0, 9)};
  CHECK_THAT(message_of([&] { r.add(reserved); }), Catch::Contains("--seed"));
  KernelDefinition twice = empty_kernel("twice");
  twice.params = {Parameter::uint("n", "", 1, 9), Parameter::uint("n", "", 1, 9)};
  CHECK_THAT(message_of([&] { r.add(twice); }), Catch::Contains("parameter 'n' twice"));
  KernelDefinition bad_default = empty_kernel("bad_default");
  bad_default.params = {Parameter::uint("n", "elements", 1, 9, 10)};
  CHECK_THAT(message_of([&] { r.add(bad_default); }),
             Catch::Contains("its default: --n must be in [1, 9], got 10"));
  KernelDefinition reference_only = empty_kernel("reference_only");
  reference_only.reference = [](const Params&, const RunData&) { return Expected{}; };
  CHECK_THAT(message_of([&] { r.add(reference_only); }), Catch::Contains("no inputs"));
  CHECK(r.kernels().size() == 1);
  CHECK_THAT(message_of([&] { r.find("two"); }),
             Catch::Contains("kernel must be one of one, got 'two'"));
}

TEST_CASE("parameters parse from text, with defaults, and name what is allowed", "[tools]") {
  KernelDefinition d = empty_kernel("k");
  d.params = {Parameter::uint("width", "elements a row", 1, 4096),
              Parameter::dtype("dtype", "x", {ptxdsl::ScalarType::F32, ptxdsl::ScalarType::F16},
                               ptxdsl::ScalarType::F32),
              Parameter::choice("mode", "how", {"fast", "exact"}, "exact")};
  d.archs = {ptxdsl::Arch::Sm90, ptxdsl::Arch::Sm100};
  const Params p = Params::parse(d, {{"width", "512"}, {"dtype", "f16"}});
  CHECK(p.uint("width") == 512);
  CHECK(p.u32("width") == 512);
  CHECK(p.dtype("dtype") == ptxdsl::ScalarType::F16);
  CHECK(p.choice("mode") == "exact");
  CHECK(p.arch() == ptxdsl::Arch::Sm90);
  CHECK(p.ptx_version() == ptxdsl::PtxVersion{7, 8});
  CHECK(p.describe() == "width=512 dtype=f16 mode=exact");
  const Params b = Params::parse(d, {{"width", "1"}}, "sm_100");
  CHECK(b.ptx_version() == ptxdsl::PtxVersion{8, 6});  // sm_100's least
  CHECK_THAT(message_of([&] { (void)p.dtype("width"); }),
             Catch::Contains("is a uint, not a dtype"));
  CHECK_THAT(message_of([&] { (void)p.uint("height"); }), Catch::Contains("no parameter 'height'"));
  struct Case {
    std::map<std::string, std::string> given;
    const char* arch;
    const char* says;
  };
  const Case cases[] = {
      {{}, "", "kernel 'k' needs --width (elements a row, 1 to 4096)"},
      {{{"width", "0"}}, "", "--width must be in [1, 4096], got 0"},
      {{{"width", "-3"}}, "", "--width must be in [1, 4096], got -3"},
      {{{"width", "12x"}}, "", "--width must be an integer in [1, 4096], got '12x'"},
      {{{"width", "99999999999999999999"}}, "", "[1, 4096], got 99999999999999999999"},
      {{{"width", "8"}, {"dtype", "bf16"}}, "", "--dtype must be f32 or f16, got 'bf16'"},
      {{{"width", "8"}, {"mode", "slow"}}, "", "--mode must be fast or exact, got 'slow'"},
      {{{"width", "8"}, {"height", "2"}}, "", "no parameter 'height' (its parameters: width"},
      {{{"width", "8"}}, "sm_80", "--arch must be sm_90 or sm_100 for kernel 'k', got 'sm_80'"},
      {{{"width", "8"}}, "sm_70", "sm_70"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.says);
    CHECK_THAT(message_of([&] { (void)Params::parse(d, c.given, c.arch); }),
               Catch::Contains(c.says));
  }
}

TEST_CASE("a kernel tool lists its kernels, their parameters and defaults", "[tools]") {
  const Result r = run_tool("list");
  REQUIRE(r.status == 0);
  for (const char* s : {"scale", "y = a * x over n elements", "scale_wrong_reference", "fill",
                        "--n N", "1 to 16777216 (default 1000)", "f32, f16, bf16 (default f32)",
                        "(required)", "targets: sm_90, sm_100", "--trace"}) {
    CAPTURE(s);
    CHECK(r.out.find(s) != std::string::npos);
  }
}

TEST_CASE("a kernel tool emits PTX, to a file, and the launch contract", "[tools]") {
  const Result f16 = run_tool("emit scale --n 300 --dtype f16 --arch sm_80");
  REQUIRE(f16.status == 0);
  CHECK(f16.err.empty());
  CHECK(f16.out.rfind("//\n// Generated by ptxdsl\n//\n\n.version 7.8\n.target sm_80\n", 0) == 0);
  CHECK(f16.out.find(".visible .entry scale_f16(") != std::string::npos);
  // --param NAME=VALUE is --NAME VALUE.
  CHECK(run_tool("emit scale --param n=300 --param dtype=f16 --arch sm_80").out == f16.out);

  const std::string file = temp_path("tool-ptx");
  const Result to_file = run_tool("emit scale -o " + file);
  CHECK(to_file.status == 0);
  CHECK(to_file.out.empty());
  CHECK(read_file(file) == run_tool("emit scale").out);
  std::remove(file.c_str());

  const Result j = run_tool("emit scale --n 1000 --dtype bf16 --json");
  REQUIRE(j.status == 0);
  for (const char* s : {"\"kernel\": \"scale\"", "\"params\": {\"n\": 1000, \"dtype\": \"bf16\"}",
                        "\"arch\": \"sm_90\"", "\"entry\": \"scale_bf16\"",
                        // bf16 loads one element at a time: 2-byte aligned
                        "{\"name\": \"x\", \"type\": \"u64\", \"bytes\": 8, \"pointer\": true, "
                        "\"element\": \"bf16\", \"align\": 2}",
                        "{\"name\": \"a\", \"type\": \"f32\", \"bytes\": 4, \"pointer\": false}",
                        "\"block\": [128, 1, 1]", "\"block_required\": true", "\"grid\": [8, 1, 1]",
                        "\"ptx\": \"//\\n// Generated by ptxdsl"}) {
    CAPTURE(s);
    CHECK(j.out.find(s) != std::string::npos);
  }
  // A kernel that launches a block of its own under .maxntid.
  const Result fill = run_tool("emit fill --n 1000 --json");
  REQUIRE(fill.status == 0);
  CHECK(fill.out.find("\"block\": [256, 1, 1]") != std::string::npos);
  CHECK(fill.out.find("\"block_required\": false") != std::string::npos);
  CHECK(fill.out.find("\"grid\": [4, 1, 1]") != std::string::npos);
}

TEST_CASE("a kernel tool refuses bad input in one line, exit 2", "[tools]") {
  struct Case {
    const char* args;
    const char* says;
  };
  const Case cases[] = {
      {"emit", "kernel is required"},
      {"emit nope", "kernel must be one of scale, scale_wrong_reference, fill, got 'nope'"},
      {"emit scale --n 0", "--n must be in [1, 16777216], got 0"},
      {"emit scale --n 16777217", "16777217"},
      {"emit scale --n ten", "'ten'"},
      {"emit scale --dtype f64", "--dtype must be f32, f16 or bf16, got 'f64'"},
      {"emit scale --param n", "--param takes NAME=VALUE, got 'n'"},
      {"emit scale --param width=4", "kernel 'scale' has no parameter 'width'"},
      {"emit scale --n 5 --param n=6", "parameter 'n' is given twice"},
      {"emit scale --arch sm_70", "sm_70"},
      {"emit scale --ptx-version 7.0 --arch sm_100", "--ptx-version must be at least 8.6"},
      {"emit fill", "kernel 'fill' needs --n"},
      {"emit fill --n 4 --dtype f16", "kernel 'fill' has no parameter 'dtype'"},
      {"emit fill --n 4 --arch sm_80", "for kernel 'fill'"},
      {"emit scale --n ''", "--n needs a value"},
      {"run fill --n 4 --cpu", "kernel 'fill' registers no inputs"},
      {"run scale --trace 0", "--trace needs --cpu"},
      {"run scale --cpu --trace 128", "--trace THREAD must be in [0, 127], got 128"},
      {"run scale --cpu --trace 8:0", "--trace CTA must be in [0, 7], got 8"},
      {"run scale --cpu --trace 0 --trace-limit 0", "--trace-limit"},
      {"run scale --cpu --device 0", "--device"},
      {"run scale --cpu --seed x", "--seed"},
      {"check scale --ptx x.ptx", "--ptx FILE assembles the file and takes no kernel"},
      {"frob", "unknown command 'frob': the commands are list, emit, check, run or bench"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const Result r = run_tool(c.args);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find(c.says) != std::string::npos);
  }
}

TEST_CASE("a kernel tool's run --cpu compares with its reference: PASS, or FAIL and exit 1",
          "[tools]") {
  for (const char* args : {"run scale --cpu", "run scale --cpu --dtype f16 --n 3000 --seed 9",
                           "run scale --cpu --param dtype=bf16 --n 1 --arch sm_80"}) {
    CAPTURE(args);
    const Result r = run_tool(args);
    CHECK(r.status == 0);
    CHECK(r.out.find("on CPU executor") != std::string::npos);
    CHECK(r.out.find("\nPASS: max abs err ") != std::string::npos);
  }
  // The same kernel against a reference 1% off: each element is far outside its bound.
  const Result wrong = run_tool("run scale_wrong_reference --cpu");
  CHECK(wrong.status == 1);
  CHECK(wrong.out.find("\nFAIL: max abs err ") != std::string::npos);
  CHECK(std::regex_search(wrong.out, std::regex("worst y\\[[0-9]+\\]: [0-9.]+e\\+0[34] of")));
}

TEST_CASE("run --cpu --trace prints each instruction one thread runs and what it writes",
          "[tools]") {
  const Result r = run_tool("run scale --cpu --n 200 --trace 1:3");
  REQUIRE(r.status == 0);
  // CTA 1, thread 3: element 131, whose value is read, scaled and stored.
  CHECK(r.out.find("mov.u32 %r2, %ctaid.x;    %r2 = 1 (0x00000001)") != std::string::npos);
  CHECK(r.out.find("mov.u32 %r3, %tid.x;    %r3 = 3 (0x00000003)") != std::string::npos);
  CHECK(r.out.find("mad.lo.u32 %r4, %r2, 128, %r3;    %r4 = 131 (0x00000083)") !=
        std::string::npos);
  CHECK(r.out.find("ld.param.f32 %f1, [a];  // a    %f1 = 1.7 (0x3fd9999a)") != std::string::npos);
  CHECK(r.out.find("mul.f32 %f3, %f1, %f2;    %f3 = ") != std::string::npos);
  CHECK(r.out.find("st.global.f32 [%rd6], %f3;") != std::string::npos);
  CHECK(r.out.find("\nPASS: ") != std::string::npos);
  // A thread past n skips the body: the guard shows.
  const Result past = run_tool("run scale --cpu --n 200 --trace 1:100");
  REQUIRE(past.status == 0);
  CHECK(past.out.find("%r4 = 228 (0x000000e4)") != std::string::npos);
  CHECK(past.out.find("st.global") == std::string::npos);
  // Bounded: --trace-limit records, and a line saying the trace stopped there.
  const Result cut = run_tool("run scale --cpu --trace 0 --trace-limit 3");
  REQUIRE(cut.status == 0);
  CHECK(cut.out.find("     2  ld.param.u64 %rd3, [y];") != std::string::npos);
  CHECK(cut.out.find("     3  ") == std::string::npos);
  CHECK(cut.out.find("the trace stops at --trace-limit 3 instructions") != std::string::npos);
  // The norms run as plans of launches: ptxdsl says so rather than tracing one of them.
  const Result norm = run_ptxdsl("run rms_fwd --batch 2 --width 64 --dtype f32 --cpu --trace 0");
  CHECK(norm.status == 2);
  CHECK(norm.err.find("--trace") != std::string::npos);
}

TEST_CASE("run --dump writes every output element beside its reference", "[tools]") {
  const std::string path = temp_path("dump");
  const Result r = run_tool("run scale --cpu --n 5 --dump " + path);
  REQUIRE(r.status == 0);
  const std::string text = read_file(path);
  std::remove(path.c_str());
  CHECK(lines(text) == 7);
  CHECK(text.rfind("# scale n=5", 0) == 0);
  CHECK(text.find("\n# output type index got want\n") != std::string::npos);
  CHECK(std::regex_search(text, std::regex("\ny f32 4 [-0-9.e]+ [-0-9.e]+\n$")));
}

TEST_CASE("tolerances in ulps of a type, and outputs compared in their declared type", "[tools]") {
  CHECK(Tolerance::ulps(ptxdsl::ScalarType::BF16, 2).rel == std::ldexp(2.0, -7));
  CHECK(Tolerance::ulps(ptxdsl::ScalarType::F32, 1).abs == std::ldexp(1.0, -23));
  CHECK(Tolerance::ulps(ptxdsl::ScalarType::E4M3, 3).rel == 0);
  CHECK(default_tolerance(ptxdsl::ScalarType::F16).rel ==
        Tolerance::ulps(ptxdsl::ScalarType::F16, 4).rel);
  // e4m3 bytes through a b32 pointer: run and compared as e4m3 values.
  RunData d;
  d.output("q", 8, ptxdsl::ScalarType::E4M3).output("y", 2);
  ptxdsl::ParamSpec q, y;
  q.name = "q";
  q.pointer = true;
  q.element = ptxdsl::ScalarType::B32;
  y.name = "y";
  y.pointer = true;
  y.element = ptxdsl::ScalarType::F32;
  CHECK(buffer_element(d, q) == ptxdsl::ScalarType::E4M3);
  CHECK(buffer_element(d, y) == ptxdsl::ScalarType::F32);
  // Byte types in and out of a run's buffers: u8/s8 integers, FP8 rounded as cvt.rn.satfinite.
  const std::vector<double> e4m3 =
      from_bytes(to_bytes({1.0, -3.5, 1000.0, 0.0625 + 1.0 / 1024}, ptxdsl::ScalarType::E4M3, "q"),
                 ptxdsl::ScalarType::E4M3);
  CHECK(e4m3 == std::vector<double>{1.0, -3.5, 448.0, 0.0625});
  CHECK(from_bytes(to_bytes({-128, 127}, ptxdsl::ScalarType::S8, "s"), ptxdsl::ScalarType::S8) ==
        std::vector<double>{-128, 127});
  CHECK(message_of([] {
          to_bytes({256}, ptxdsl::ScalarType::U8, "u");
        }).find("u[0] is 256: not a value of u8") != std::string::npos);
}

TEST_CASE("check assembles a kernel, or any PTX file, and reports each entry", "[tools]") {
  const Result k = run_tool("check scale --dtype f16");
  REQUIRE(k.status == 0);
  CHECK(k.out.find("sm_90: OK") != std::string::npos);
  CHECK(std::regex_search(k.out, std::regex("\nscale_f16 +[0-9]+ +0 +0 +0 +0\n")));

  const std::string file = temp_path("check-ptx");
  REQUIRE(run_ptxdsl("emit rms_fwd --width 4096 --dtype bf16 --arch sm_80 -o " + file).status == 0);
  for (const Result& r : {run_ptxdsl("check --ptx " + file), run_tool("check --ptx " + file)}) {
    CHECK(r.status == 0);
    CHECK(r.out.find("sm_80: OK") != std::string::npos);  // the file's .target
    CHECK(r.out.find("rms_fwd_bf16_wbf16_n4096") != std::string::npos);
  }
  // The same registers as `check` of the kernel itself reports.
  const Result built = run_ptxdsl("check rms_fwd --width 4096 --dtype bf16 --arch sm_80");
  CHECK(built.out == run_ptxdsl("check --ptx " + file).out);
  CHECK(run_ptxdsl("check --ptx " + file + " --arch sm_90").out.find("sm_90: OK") !=
        std::string::npos);

  // A broken module: ptxas's log on stderr, then one line naming the failure; exit 1.
  std::string broken = read_file(file);
  broken.replace(broken.find("ret;"), 4, "frobnicate.u32 %r1;");
  {
    std::FILE* out = std::fopen(file.c_str(), "w");
    REQUIRE(out != nullptr);
    std::fputs(broken.c_str(), out);
    std::fclose(out);
  }
  const Result bad = run_ptxdsl("check --ptx " + file);
  CHECK(bad.status == 1);
  CHECK(bad.out.empty());
  CHECK(bad.err.find("frobnicate") != std::string::npos);
  CHECK(bad.err.find("ptxdsl: error: ptxas -arch=sm_80 failed with exit status") !=
        std::string::npos);
  // Not PTX at all: no target to assemble for.
  {
    std::FILE* out = std::fopen(file.c_str(), "w");
    REQUIRE(out != nullptr);
    std::fputs("hello\n", out);
    std::fclose(out);
  }
  const Result text = run_ptxdsl("check --ptx " + file);
  CHECK(text.status == 2);
  CHECK(text.err.find("has no .target line") != std::string::npos);
  std::remove(file.c_str());
  const Result missing = run_ptxdsl("check --ptx /nonexistent-folder/x.ptx");
  CHECK(missing.status == 1);
  CHECK(missing.err.find("cannot read '/nonexistent-folder/x.ptx'") != std::string::npos);
  const Result mixed = run_ptxdsl("check --ptx x.ptx --width 64");
  CHECK(mixed.status == 2);
  CHECK(mixed.err.find("takes no kernel options but --arch, got --width") != std::string::npos);
  // Without --ptx, check still needs a kernel and its shape.
  const Result none = run_ptxdsl("check rms_fwd --dtype f16");
  CHECK(none.status == 2);
  CHECK(none.err.find("--width is required") != std::string::npos);
}

TEST_CASE("a kernel tool's run on a GPU compares with its reference", "[tools][gpu]") {
  if (!ptxdsl::runtime::driver_available()) PTXDSL_SKIP("no CUDA driver");
  for (const char* args :
       {"run scale", "run scale --dtype f16 --n 100000 --seed 4", "run scale --dtype bf16 --n 1"}) {
    CAPTURE(args);
    const Result r = run_tool(args);
    CHECK(r.status == 0);
    CHECK(r.out.find("\nPASS: ") != std::string::npos);
  }
  const Result wrong = run_tool("run scale_wrong_reference");
  CHECK(wrong.status == 1);
  CHECK(wrong.out.find("\nFAIL: ") != std::string::npos);
}
