#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

#include "support.hpp"

using namespace ptxdsl;
using Catch::Matchers::Contains;

TEST_CASE("ld/st global: scalar, v2, v4, 16-bit elements, cache hints", "[executor][memory]") {
  Module m;
  Kernel& k = m.kernel("copy");
  auto x = k.param_ptr<F32>("x");
  auto y = k.param_ptr<F32>("y");
  auto h = k.param_ptr<F16>("h");
  auto hy = k.param_ptr<F16>("hy");
  Reg<U32> t = k.tid_x();
  auto v = k.ld_v<4>(k.index(x, k.mul(t, 4u)), kNcNoAllocate);
  k.st_v<4>(k.index(y, k.mul(t, 4u)), Vec<F32, 4>{v[3], v[2], v[1], v[0]}, kStreaming);
  auto pair = k.ld_v<2>(k.index(x, k.mul(t, 2u)) + 64, kNc);
  k.st_v<2>(k.index(y, k.mul(t, 2u)) + 64, pair);
  k.st(k.index(y, t) + 96, k.ld(k.index(x, t) + 96, MemHints{.cache = CacheOp::Cg}));
  k.st(k.index(hy, t), k.ld(k.index(h, t)));
  k.finalize();
  std::vector<float> host(128);
  std::iota(host.begin(), host.end(), 0.0f);
  std::vector<std::uint16_t> halves(16);
  for (std::size_t i = 0; i < halves.size(); ++i)
    halves[i] = f32_to_f16_bits(static_cast<float>(i) / 4);
  std::vector<float> out(128, -1.0f);
  std::vector<std::uint16_t> hout(16, 0);
  CpuDevice dev;
  dev.launch(k, {1, 16},
             {dev.upload<float>(host, "x"), dev.map<float>(out, "y"),
              dev.upload<std::uint16_t>(halves, "h"), dev.map<std::uint16_t>(hout, "hy")});
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 4; ++j) CHECK(out[i * 4 + j] == host[i * 4 + 3 - j]);
  }
  for (int i = 64; i < 112; ++i) CHECK(out[i] == host[i]);
  CHECK(hout == halves);
}

TEST_CASE("L2 cache policies and prefetch sizes are hints: values move as without them",
          "[executor][memory]") {
  Module m;
  Kernel& k = m.kernel("copy");
  auto x = k.param_ptr<F32>("x");
  auto y = k.param_ptr<F32>("y");
  Reg<U32> t = k.tid_x();
  const Reg<B64> keep = k.create_policy(L2Evict::Last);
  const Reg<B64> drop = k.create_policy(L2Evict::First, 0.5f, L2Evict::Unchanged);
  auto v = k.ld_v<4>(k.index(x, k.mul(t, 4u)),
                     MemHints{.nc = true, .l2_policy = keep, .l2_prefetch = 256});
  k.st_v<4>(k.index(y, k.mul(t, 4u)), Vec<F32, 4>{v[1], v[0], v[3], v[2]},
            MemHints{.l2_policy = drop});
  k.st(k.index(y, t) + 64, k.ld(k.index(x, t) + 64, MemHints{.l2_prefetch = 64}),
       MemHints{.cache = CacheOp::Cs, .l2_policy = keep});
  // Prefetches, into every level, change nothing either.
  k.prefetch(k.index(x, t) + 64, PrefetchLevel::L1);
  k.prefetch(k.index(y, t), PrefetchLevel::L2);
  k.prefetch_if(k.setp(Cmp::Lt, t, 8u), k.index(x, t) + 80, PrefetchLevel::L2EvictLast);
  k.finalize();
  std::vector<float> host(96);
  std::iota(host.begin(), host.end(), 1.0f);
  std::vector<float> out(96, -1.0f);
  CpuDevice dev;
  dev.launch(k, {1, 16}, {dev.upload<float>(host, "x"), dev.map<float>(out, "y")});
  for (int i = 0; i < 16; ++i) {
    CHECK(out[i * 4] == host[i * 4 + 1]);
    CHECK(out[i * 4 + 1] == host[i * 4]);
    CHECK(out[i * 4 + 2] == host[i * 4 + 3]);
    CHECK(out[i * 4 + 3] == host[i * 4 + 2]);
    CHECK(out[64 + i] == host[64 + i]);
  }
}

TEST_CASE("shared memory: static and dynamic arrays, across warps with bar.sync",
          "[executor][memory]") {
  for (bool dynamic : {false, true}) {
    Module m;
    Kernel& k = m.kernel("rotate");
    auto out = k.param_ptr<U32>("out");
    Reg<U32> t = k.tid_x();
    SharedPtr<U32> s =
        dynamic ? k.shared_dynamic<U32>("s", 256 * 4) : k.shared_array<U32>("s", 256);
    k.st(k.index(s, t), k.mul(t, 3u));
    k.bar_sync();
    Reg<U32> next = k.and_(k.add(t, 1u), 255u);
    k.st(k.index(out, t), k.ld(k.index(s, next)));
    k.finalize();
    std::vector<std::uint32_t> host(256);
    CpuDevice dev;
    dev.launch(k, {1, 256, dynamic ? 1024u : 0u}, {dev.map<std::uint32_t>(host, "out")});
    for (std::uint32_t i = 0; i < 256; ++i) CHECK(host[i] == ((i + 1) % 256) * 3);
  }
}

TEST_CASE("parameters of every scalar type", "[executor][memory]") {
  Module m;
  Kernel& k = m.kernel("params");
  auto out = k.param_ptr<U64>("out");
  auto a = k.param<U32>("a");
  auto b = k.param<S32>("b");
  auto c = k.param<U64>("c");
  auto d = k.param<F32>("d");
  auto e = k.param<F64>("e");
  auto f = k.param<U16>("f");
  k.st(out.as<U32>(), a);
  k.st(out.as<S32>() + 2, b);
  k.st(out + 2, c);
  k.st(out.as<F32>() + 6, d);
  k.st(out.as<F64>() + 4, e);
  k.st(out.as<U16>() + 20, f);
  k.finalize();
  std::vector<std::uint64_t> host(6, 0);
  CpuDevice dev;
  dev.launch(k, {1, 1},
             {dev.map<std::uint64_t>(host, "out"), 7u, -3, std::uint64_t{1} << 40, 2.5f, 0.125,
              std::uint16_t{99}});
  CHECK(static_cast<std::uint32_t>(host[0]) == 7);
  CHECK(static_cast<std::int32_t>(host[1]) == -3);
  CHECK(host[2] == std::uint64_t{1} << 40);
  CHECK(test::f32(host[3]) == 2.5f);
  CHECK(test::f64(host[4]) == 0.125);
  CHECK((host[5] & 0xFFFF) == 99);
}

TEST_CASE("atom and red add.f32", "[executor][memory]") {
  Module m;
  Kernel& k = m.kernel("atomics");
  auto sum = k.param_ptr<F32>("sum");
  auto old = k.param_ptr<F32>("old");
  Reg<U32> t = k.tid_x();
  k.st(k.index(old, t), k.atom_add(sum, 1.0f));
  k.red_add(sum + 1, k.mov<F32>(0.5f));
  k.finalize();
  for (unsigned threads : {1u, 2u}) {
    std::vector<float> s = {0.0f, 0.0f}, o(128 * 4, -1.0f);
    CpuDevice dev;
    ExecOptions opt;
    opt.threads = threads;
    const ExecutorAddress ds = dev.map<float>(s, "sum"), dold = dev.map<float>(o, "old");
    for (std::uint32_t cta = 0; cta < 4; ++cta)
      dev.launch(k, {1, 128}, {ds, dold + cta * 512}, opt);
    CHECK(s[0] == 512.0f);
    CHECK(s[1] == 256.0f);
    std::sort(o.begin(), o.end());
    for (int i = 0; i < 512; ++i) CHECK(o[i] == static_cast<float>(i));
  }
}

TEST_CASE("atom add.u32 hands out every ticket once, across CTAs on host threads",
          "[executor][memory]") {
  Module m;
  Kernel& k = m.kernel("tickets");
  auto counter = k.param_ptr<U32>("counter");
  auto taken = k.param_ptr<U32>("taken");
  // Each thread takes two tickets and marks them; a fence between them changes nothing here.
  for (int i = 0; i < 2; ++i) {
    const Reg<U32> ticket = k.atom_add(counter, 1u);
    k.fence_gpu();
    k.st(k.index(taken, ticket), k.add(k.tid_x(), 1u));
  }
  k.finalize();
  for (unsigned threads : {1u, 3u}) {
    std::vector<std::uint32_t> c = {0}, t(6 * 64 * 2, 0);
    CpuDevice dev;
    ExecOptions opt;
    opt.threads = threads;
    dev.launch(k, {6, 64},
               {dev.map<std::uint32_t>(c, "counter"), dev.map<std::uint32_t>(t, "taken")}, opt);
    CHECK(c[0] == 6 * 64 * 2);
    CHECK(std::count(t.begin(), t.end(), 0u) == 0);
  }
}

TEST_CASE("atom inc.u32 counts up to its limit, then starts again at 0", "[executor][memory]") {
  Module m;
  Kernel& k = m.kernel("wrapping");
  auto counter = k.param_ptr<U32>("counter");
  auto seen = k.param_ptr<F32>("seen");
  const Reg<U32> old = k.reg<U32>();
  k.atom_inc(old, counter, 9u);
  k.red_add(k.index(seen, old), 1.0f);
  k.finalize();
  for (unsigned threads : {1u, 3u}) {
    std::vector<std::uint32_t> c = {0};
    std::vector<float> s(10, 0.0f);
    CpuDevice dev;
    ExecOptions opt;
    opt.threads = threads;
    dev.launch(k, {6, 64}, {dev.map<std::uint32_t>(c, "counter"), dev.map<float>(s, "seen")}, opt);
    // 384 increments through 0..9: 38 rounds and 4 more.
    CHECK(c[0] == 4u);
    for (std::uint32_t v = 0; v < 10; ++v) CHECK(s[v] == (v < 4 ? 39.0f : 38.0f));
  }
}

namespace {

std::string launch_error(const std::function<void(Kernel&)>& body, std::uint32_t threads,
                         std::size_t floats, std::uint32_t dynamic = 0) {
  Module m;
  Kernel& k = m.kernel("faulty");
  body(k);
  k.finalize();
  CpuDevice dev;
  const ExecutorAddress x = dev.alloc(floats * 4, "x", 0);
  try {
    dev.launch(k, {2, threads, dynamic}, {x});
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("memcheck: out-of-bounds global accesses are caught and named", "[executor][memcheck]") {
  const std::string read = launch_error(
      [](Kernel& k) {
        auto x = k.param_ptr<F32>("x");
        Reg<U32> i = k.mad(k.ctaid_x(), 64u, k.tid_x());
        k.st(k.index(x, i), k.add(k.ld(k.index(x, i)), 1.0f));
      },
      64, 100);
  CHECK_THAT(read, Contains("kernel 'faulty'"));
  CHECK_THAT(read, Contains("ld.global.f32"));
  CHECK_THAT(read, Contains("thread (36, 0, 0) of CTA (1, 0, 0)"));
  CHECK_THAT(read, Contains("out-of-bounds global read of 4 bytes"));
  CHECK_THAT(read, Contains("0 bytes past the end of allocation 'x'"));
  const std::string write = launch_error(
      [](Kernel& k) {
        auto x = k.param_ptr<F32>("x");
        k.st(k.index(x, k.tid_x()) - 1, k.mov<F32>(1.0f));
      },
      32, 32);
  CHECK_THAT(write, Contains("out-of-bounds global write of 4 bytes"));
  CHECK_THAT(write, Contains("4 bytes before the start of allocation 'x'"));
  CHECK_THAT(write, Contains("thread (0, 0, 0) of CTA (0, 0, 0)"));
  // A prefetch is checked as a load: kernels mask theirs as they mask their loads.
  const std::string prefetch = launch_error(
      [](Kernel& k) {
        auto x = k.param_ptr<F32>("x");
        k.prefetch(k.index(x, k.tid_x()) + 16, PrefetchLevel::L1);
      },
      32, 40);
  CHECK_THAT(prefetch, Contains("prefetch.global.L1"));
  CHECK_THAT(prefetch, Contains("out-of-bounds global read of 1 byte at"));
  CHECK_THAT(prefetch, Contains("thread (24, 0, 0) of CTA (0, 0, 0)"));
  CHECK(launch_error(
            [](Kernel& k) {
              auto x = k.param_ptr<F32>("x");
              k.prefetch_if(k.setp(Cmp::Lt, k.tid_x(), 24u), k.index(x, k.tid_x()) + 16,
                            PrefetchLevel::L2);
            },
            32, 40) == "(no error)");
}

// Each allocation owns a wide range of addresses: an access far past one buffer faults naming it,
// never reading the next (once 1 MiB + 512 bytes past a 400-byte 'x' was the start of 'y').
TEST_CASE("memcheck: an access far off a buffer never lands in another one",
          "[executor][memcheck]") {
  Module m;
  Kernel& k = m.kernel("far");
  const GlobalPtr<F32> x = k.param_ptr<F32>("x");
  const Reg<U64> offset = k.param<U64>("offset");
  k.st(x, k.ld(GlobalPtr<F32>{k.add(x.base, offset), 0}));
  k.finalize();
  CpuDevice dev;
  const ExecutorAddress a = dev.alloc(400, "x", 0);
  const ExecutorAddress b = dev.alloc(400, "y", 0);
  const auto error = [&](ExecutorAddress p, std::uint64_t off) {
    try {
      dev.launch(k, {1, 1}, {p, off});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  for (const std::uint64_t past : {std::uint64_t{1} << 20, std::uint64_t{1} << 26,
                                   std::uint64_t{1} << 30, std::uint64_t{1} << 40}) {
    INFO("past the end by " << past);
    for (const std::uint64_t skew : {0, 4, 116, 512}) {
      CHECK_THAT(error(a, 400 + past + skew),
                 Contains(fmt::format("{} bytes past the end of allocation 'x'", past + skew)));
    }
    CHECK_THAT(error(b, 0 - past),
               Contains(fmt::format("{} bytes before the start of allocation 'y'", past)));
  }
  CHECK(error(a, 396) == "(no error)");
  CHECK(error(b, 0) == "(no error)");
}

TEST_CASE("memcheck: misaligned vector and scalar accesses", "[executor][memcheck]") {
  const std::string v4 = launch_error(
      [](Kernel& k) {
        auto x = k.param_ptr<F32>("x");
        auto v = k.ld_v<4>(k.index(x, k.mov<U32>(1u)));
        k.st(x, v[0]);
      },
      1, 64);
  CHECK_THAT(v4, Contains("misaligned global read of 16 bytes"));
  CHECK_THAT(v4, Contains("(offset 4 of allocation 'x' [0x"));
  CHECK_THAT(v4, Contains("ld.global.v4.f32"));
  const std::string scalar = launch_error(
      [](Kernel& k) {
        auto x = k.param_ptr<U16>("x");
        k.st(k.index(x, k.mov<U32>(1u)).as<F32>(), k.mov<F32>(1.0f));
      },
      1, 64);
  CHECK_THAT(scalar, Contains("misaligned global write of 4 bytes"));
  CHECK_THAT(scalar, Contains("(offset 2 of allocation 'x' [0x"));
  CHECK_THAT(scalar, Contains("it must be 4-byte aligned"));
}

TEST_CASE("memcheck: shared memory bounds and reads of bytes no thread wrote",
          "[executor][memcheck]") {
  const std::string unwritten = launch_error(
      [](Kernel& k) {
        auto x = k.param_ptr<F32>("x");
        SharedPtr<F32> s = k.shared_array<F32>("s", 64);
        Reg<U32> t = k.tid_x();
        k.st(k.index(s, t), k.mov<F32>(1.0f));
        k.bar_sync();
        k.st(k.index(x, t), k.ld(k.index(s, k.add(t, 1u))));
      },
      32, 64);
  CHECK_THAT(
      unwritten,
      Contains("reads shared memory at 0x80 ('faulty_s' + 128) that no thread of the CTA wrote"));
  CHECK_THAT(unwritten, Contains("thread (31, 0, 0)"));
  CHECK_THAT(unwritten, Contains("if another thread writes it, a bar.sync is missing between that "
                                 "write and this read"));
  const std::string outside = launch_error(
      [](Kernel& k) {
        SharedPtr<F32> s = k.shared_array<F32>("s", 32);
        k.st(k.index(s, k.add(k.tid_x(), 8u)), k.mov<F32>(1.0f));
        (void)k.param_ptr<F32>("x");
      },
      32, 64);
  CHECK_THAT(outside, Contains("out-of-bounds shared write of 4 bytes at 0x80"));
  CHECK_THAT(outside, Contains("'faulty_s' [0x0, 0x80)"));
  const std::string dyn = launch_error(
      [](Kernel& k) {
        SharedPtr<F32> s = k.shared_dynamic<F32>("d", 64);
        k.st(k.index(s, k.tid_x()), k.mov<F32>(1.0f));
        (void)k.param_ptr<F32>("x");
      },
      32, 64, 64);
  CHECK_THAT(dyn, Contains("out-of-bounds shared write"));
  CHECK_THAT(dyn, Contains("thread (16, 0, 0)"));
  // Beside a dynamic array a static one takes a whole 128-byte line; what it did not declare
  // stays out of bounds, and the dynamic array starts on the next line.
  const std::string padding = launch_error(
      [](Kernel& k) {
        SharedPtr<F32> s = k.shared_array<F32>("s", 4);
        (void)k.shared_dynamic<F32>("d", 64);
        k.st(k.index(s, k.add(k.tid_x(), 3u)), k.mov<F32>(1.0f));
        (void)k.param_ptr<F32>("x");
      },
      2, 64, 64);
  CHECK_THAT(padding, Contains("out-of-bounds shared write of 4 bytes at 0x10"));
  CHECK_THAT(padding, Contains("'faulty_s' [0x0, 0x10)"));
  CHECK_THAT(padding, Contains("'faulty_d' [0x80,"));
  const std::string misaligned = launch_error(
      [](Kernel& k) {
        SharedPtr<F32> s = k.shared_array<F32>("s", 64);
        k.st_v<2>(k.index(s, k.mov<U32>(1u)), Vec<F32, 2>{k.mov<F32>(1.0f), k.mov<F32>(2.0f)});
        (void)k.param_ptr<F32>("x");
      },
      1, 64);
  CHECK_THAT(misaligned, Contains("misaligned shared write of 8 bytes at 0x4 ('faulty_s' + 4)"));
}

TEST_CASE("memcheck: a barrier some threads never reach, an uninitialized register",
          "[executor][memcheck]") {
  const std::string barrier = launch_error(
      [](Kernel& k) {
        (void)k.param_ptr<F32>("x");
        k.if_(k.setp(Cmp::Ge, k.tid_x(), 40u), [&] { k.ret(); });
        k.bar_sync();
      },
      64, 1);
  CHECK_THAT(barrier, Contains("bar.sync"));
  CHECK_THAT(barrier, Contains("24 of the CTA's 64 threads exited without reaching it"));
  CHECK_THAT(barrier, Contains("first: thread (40, 0, 0)"));
  const std::string reg = launch_error(
      [](Kernel& k) {
        auto x = k.param_ptr<F32>("x");
        Reg<F32> never = k.reg<F32>("acc");
        k.st(x, k.add(never, 1.0f));
      },
      1, 1);
  CHECK_THAT(reg, Contains("reads register %f1 (acc), which this thread never wrote"));
  CHECK_THAT(reg, Contains("add.f32"));
}

TEST_CASE("launch checks: arguments against the contract, block shape, finalize",
          "[executor][launch]") {
  Module m;
  Kernel& k = m.kernel("checked");
  auto x = k.param_ptr<F32>("x");
  auto n = k.param<U32>("n");
  k.require_threads(64);
  k.st(x, k.cvt<F32>(n));
  CpuDevice dev;
  const ExecutorAddress p = dev.alloc(4, "x");
  CHECK_THROWS_WITH(dev.launch(k, {1, 64}, {p, 1u}), Contains("finalize"));
  k.finalize();
  CHECK_NOTHROW(dev.launch(k, {1, 64}, {p, 1u}));
  CHECK_THROWS_WITH(dev.launch(k, {1, 64}, {p}), Contains("takes 2 arguments (x, n), got 1"));
  CHECK_THROWS_WITH(dev.launch(k, {1, 64}, {p, 1}),
                    Contains("argument 1 ('n'): expected u32, got s32"));
  CHECK_THROWS_WITH(dev.launch(k, {1, 64}, {1u, 1u}),
                    Contains("expected a device pointer to f32, got u32"));
  CHECK_THROWS_WITH(dev.launch(k, {1, 32}, {p, 1u}), Contains(".reqntid"));
  CHECK_THROWS_WITH(dev.launch(k, {0, 64}, {p, 1u}), Contains("grid must be at least 1"));
  const auto named = args_by_name(k, {{"n", 5u}, {"x", p}});
  dev.launch(k, {1, 64}, named);
  CHECK(dev.download<float>(p, 1)[0] == 5.0f);
  CHECK_THROWS_WITH(args_by_name(k, {{"x", p}}), Contains("no argument named 'n'"));
  CHECK_THROWS_WITH(args_by_name(k, {{"x", p}, {"n", 1u}, {"eps", 1.0f}}),
                    Contains("no parameter 'eps'"));
  CHECK_THROWS_WITH(dev.free(ExecutorAddress{12}), Contains("not an address"));
}

TEST_CASE("racecheck: shared memory touched by two warps with no barrier between",
          "[executor][memcheck]") {
  const std::string war = launch_error(
      [](Kernel& k) {
        auto x = k.param_ptr<F32>("x");
        SharedPtr<F32> s = k.shared_array<F32>("s", 64);
        Reg<U32> t = k.tid_x();
        k.st(k.index(s, t), k.mov<F32>(1.0f));
        k.bar_sync();
        Reg<F32> v = k.ld_if(k.setp(Cmp::Lt, t, 32u), k.index(s, k.add(t, 32u)), 0.0f);
        k.st(k.index(s, t), v);  // warp 1 overwrites what warp 0 just read: no barrier
        k.st(k.index(x, t), v);
      },
      64, 128);
  CHECK_THAT(war, Contains("shared memory race at 0x80 ('faulty_s' + 128)"));
  CHECK_THAT(war, Contains("this write follows a read by thread (0, 0, 0) of warp 0"));
  // Both accesses are named: this one (the write) first, the earlier read in the problem.
  CHECK_THAT(war, Contains("'st.shared.f32 [%r"));
  CHECK_THAT(war, Contains("of warp 0 (at instruction #"));
  CHECK_THAT(war, Contains("'@%p1 ld.shared.f32 %f"));
  CHECK_THAT(war, Contains("thread (32, 0, 0)"));
  const std::string raw = launch_error(
      [](Kernel& k) {
        auto x = k.param_ptr<F32>("x");
        SharedPtr<F32> s = k.shared_array<F32>("s", 64);
        Reg<U32> t = k.tid_x();
        k.st(k.index(s, t), k.cvt<F32>(t));
        k.st(k.index(x, t), k.ld(k.index(s, k.xor_(t, 32u))));  // no barrier before the read
      },
      64, 128);
  // Warp 0 runs first, so its read finds bytes warp 1 has not written yet: still caught, and the
  // message says what is missing.
  CHECK_THAT(
      raw,
      Contains("reads shared memory at 0x80 ('faulty_s' + 128) that no thread of the CTA wrote"));
  CHECK_THAT(raw, Contains("a bar.sync is missing between that write and this read"));
  const std::string reuse = launch_error(
      [](Kernel& k) {
        auto x = k.param_ptr<F32>("x");
        SharedPtr<F32> scratch = k.shared_array<F32>("scratch", 8);
        Reg<U32> t = k.tid_x();
        Reg<F32> a = block_reduce_sum(k, k.cvt<F32>(t), 128, t, scratch);
        Reg<F32> b = block_reduce_sum(k, a, 128, t, scratch);  // scratch reused with no barrier
        k.st(k.index(x, t), b);
      },
      128, 256);
  CHECK_THAT(reuse, Contains("shared memory race"));
  CHECK_THAT(reuse, Contains("this read follows a write by thread (0, 0, 0) of warp 0 (at "
                             "instruction #"));
  CHECK_THAT(reuse, Contains("st.shared.f32 [%r"));
  const std::string waw = launch_error(
      [](Kernel& k) {
        (void)k.param_ptr<F32>("x");
        SharedPtr<U32> s = k.shared_array<U32>("flag", 1);
        k.st(s, k.tid_x());
      },
      64, 1);
  CHECK_THAT(waw, Contains("this write follows a write by thread (31, 0, 0) of warp 0 (at "
                           "instruction #"));
  // Lanes of one warp are ordered: exchanging through shared memory needs no barrier.
  const std::string warp = launch_error(
      [](Kernel& k) {
        auto x = k.param_ptr<F32>("x");
        SharedPtr<F32> s = k.shared_array<F32>("s", 64);
        Reg<U32> t = k.tid_x();
        k.st(k.index(s, t), k.cvt<F32>(t));
        k.st(k.index(x, t), k.ld(k.index(s, k.xor_(t, 1u))));
      },
      64, 128);
  CHECK(warp == "(no error)");
}

TEST_CASE("cp.async: copies land at wait_group, zero-filled past src-size", "[executor][memory]") {
  // 32 threads of one warp, two rows of 4 f32 each: row r goes to buffer r. Lane l reads the first
  // (l % 5) * 4 bytes of its 16 (lanes ≡ 0 mod 5 read nothing, and their source lies past the
  // allocation). The second row is still in flight when the first is read (wait_group 1).
  Module m;
  Kernel& k = m.kernel("staged");
  auto x = k.param_ptr<F32>("x");
  auto y = k.param_ptr<F32>("y");
  const SharedPtr<F32> s = k.shared_array<F32>("s", 2 * 32 * 4);
  const Reg<U32> t = k.tid_x();
  const Reg<U32> reads = k.mul(k.rem(t, 5u), 4u);
  const SharedPtr<F32> mine = k.index(s, k.mul(t, 4u));
  for (std::uint32_t row = 0; row < 2; ++row) {
    // Nothing-reading lanes point past the end of x.
    const Reg<U32> column = k.selp<U32>(k.mul(t, 4u), 1000u, k.setp(Cmp::Ne, reads, 0u));
    k.cp_async_zfill(mine + row * 128, k.index(x + row * 128, column), 16, reads);
    k.cp_async_commit();
  }
  k.cp_async_wait(1);
  const Vec<F32, 4> first = k.ld_v<4>(mine);
  k.st_v<4>(k.index(y, k.mul(t, 4u)), first);
  k.cp_async_wait(0);
  const Vec<F32, 4> second = k.ld_v<4>(mine + 128);
  k.st_v<4>(k.index(y, k.mul(t, 4u)) + 128, second);
  k.finalize();
  std::vector<float> host(256), out(256, -1.0f);
  std::iota(host.begin(), host.end(), 1.0f);
  CpuDevice dev;
  dev.launch(k, {1, 32}, {dev.upload<float>(host, "x"), dev.map<float>(out, "y")});
  for (std::uint32_t row = 0; row < 2; ++row) {
    for (std::uint32_t l = 0; l < 32; ++l) {
      for (std::uint32_t e = 0; e < 4; ++e) {
        const std::size_t i = row * 128 + l * 4 + e;
        INFO("row " << row << " lane " << l << " element " << e);
        CHECK(out[i] == (e < l % 5 ? host[i] : 0.0f));
      }
    }
  }
}

TEST_CASE("memcheck: cp.async read before its wait, out-of-bounds and misaligned sources",
          "[executor][memcheck]") {
  const std::string early = launch_error(
      [](Kernel& k) {
        auto x = k.param_ptr<F32>("x");
        const SharedPtr<F32> s = k.shared_array<F32>("s", 128);
        const SharedPtr<F32> mine = k.index(s, k.mul(k.tid_x(), 4u));
        k.cp_async(mine, k.index(x, k.mul(k.tid_x(), 4u)), 16);
        k.cp_async_commit();
        k.cp_async_wait(1);  // the newest group may still be in flight
        k.st(x, k.ld(mine));
      },
      32, 128);
  CHECK_THAT(early, Contains("ld.shared.f32"));
  CHECK_THAT(early, Contains("reads shared memory at 0x0 ('faulty_s' + 0) that a cp.async in "
                             "flight will write: wait for its group first"));
  const std::string outside = launch_error(
      [](Kernel& k) {
        auto x = k.param_ptr<F32>("x");
        const SharedPtr<F32> s = k.shared_array<F32>("s", 128);
        k.cp_async_zfill(k.index(s, k.mul(k.tid_x(), 4u)), k.index(x, k.mul(k.tid_x(), 4u)), 16,
                         8u);
        k.cp_async_commit();
        k.cp_async_wait(0);
      },
      32, 60);
  CHECK_THAT(outside, Contains("cp.async.cg.shared.global"));
  CHECK_THAT(outside, Contains("out-of-bounds global read of 8 bytes"));
  CHECK_THAT(outside, Contains("thread (15, 0, 0)"));
  const std::string misaligned = launch_error(
      [](Kernel& k) {
        auto x = k.param_ptr<F32>("x");
        const SharedPtr<F32> s = k.shared_array<F32>("s", 128);
        k.cp_async(s, k.index(x, k.mov<U32>(2u)), 16);
      },
      1, 64);
  CHECK_THAT(misaligned, Contains("misaligned cp.async source"));
  CHECK_THAT(misaligned, Contains("of allocation 'x' [0x"));
  CHECK_THAT(misaligned, Contains("it must be 16-byte aligned"));
}
