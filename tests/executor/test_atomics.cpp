// atom and red: each operation's value against hand-computed words, in global and shared memory;
// atomics of many warps and CTAs; memcheck and racecheck of atomic accesses.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <vector>

#include "support.hpp"

using namespace ptxdsl;
using Catch::Matchers::Contains;

namespace {

// The old value an atomic returned and the word it left.
struct Outcome {
  std::uint64_t old = 0;
  std::uint64_t now = 0;
  friend bool operator==(const Outcome&, const Outcome&) = default;
};

std::ostream& operator<<(std::ostream& os, const Outcome& o) {
  return os << fmt::format("{{old {:#x}, now {:#x}}}", o.old, o.now);
}

// One thread runs `op` on a word holding `word` (global, or a shared copy written back), with b
// and (cas) c; red is run too and must leave the same word.
template <AtomTag T>
Outcome run(Space space, AtomOp op, std::uint64_t word, std::uint64_t b, std::uint64_t c = 0) {
  Outcome out;
  for (const bool red : {false, true}) {
    if (red && (op == AtomOp::Cas || op == AtomOp::Exch)) continue;
    Module m(Arch::Sm90);
    Kernel& k = m.kernel("atom");
    auto io = k.param_ptr<T>("io");  // the word, b, c, the old value
    const Reg<T> bv = k.ld(io + 1), cv = k.ld(io + 2);
    const auto apply = [&](auto p) {
      if (red) {
        k.red(op, p, bv);
      } else {
        k.st(io + 3, op == AtomOp::Cas ? k.atom_cas(p, bv, cv) : k.atom(op, p, bv));
      }
    };
    if (space == Space::Shared) {
      const SharedPtr<T> s = k.shared_array<T>("word", 1);
      k.st(s, k.ld(io));
      apply(s);
      k.st(io, k.ld(s));
    } else {
      apply(io);
    }
    k.finalize();
    std::vector<std::uint64_t> cells = {word, b, c, 0};
    if constexpr (T::kBytes == 4) {
      std::vector<std::uint32_t> narrow(cells.begin(), cells.end());
      CpuDevice dev;
      dev.launch(k, {1, 1}, {dev.map<std::uint32_t>(narrow, "io")});
      std::copy(narrow.begin(), narrow.end(), cells.begin());
    } else {
      CpuDevice dev;
      dev.launch(k, {1, 1}, {dev.map<std::uint64_t>(cells, "io")});
    }
    if (red) {
      CHECK(cells[0] == out.now);  // red leaves what atom left
    } else {
      out = {cells[3], cells[0]};
    }
  }
  return out;
}

template <AtomTag T>
Outcome both(AtomOp op, std::uint64_t word, std::uint64_t b, std::uint64_t c = 0) {
  const Outcome global = run<T>(Space::Global, op, word, b, c);
  CHECK(run<T>(Space::Shared, op, word, b, c) == global);
  return global;
}

std::uint64_t f64_bits(double v) {
  return std::bit_cast<std::uint64_t>(v);
}

}  // namespace

TEST_CASE("atom and red: integer operations, signed and unsigned, wrapping", "[executor][atom]") {
  CHECK(both<U32>(AtomOp::Add, 0xFFFFFFFFu, 2) == Outcome{0xFFFFFFFFu, 1});
  CHECK(both<S32>(AtomOp::Add, static_cast<std::uint32_t>(-5), 3) ==
        Outcome{static_cast<std::uint32_t>(-5), static_cast<std::uint32_t>(-2)});
  CHECK(both<U64>(AtomOp::Add, 1ull << 40, 7) == Outcome{1ull << 40, (1ull << 40) + 7});
  // min/max compare by the type: 0xFFFFFFFF is the largest u32 and -1 as s32.
  CHECK(both<U32>(AtomOp::Min, 5, 0xFFFFFFFFu) == Outcome{5, 5});
  CHECK(both<S32>(AtomOp::Min, 5, 0xFFFFFFFFu) == Outcome{5, 0xFFFFFFFFu});
  CHECK(both<U32>(AtomOp::Max, 5, 0xFFFFFFFFu) == Outcome{5, 0xFFFFFFFFu});
  CHECK(both<S32>(AtomOp::Max, 5, 0xFFFFFFFFu) == Outcome{5, 5});
  CHECK(both<U64>(AtomOp::Min, 1, ~0ull) == Outcome{1, 1});
  CHECK(both<S64>(AtomOp::Min, 1, ~0ull) == Outcome{1, ~0ull});
  CHECK(both<S64>(AtomOp::Max, ~0ull, 1ull << 62) == Outcome{~0ull, 1ull << 62});
  CHECK(both<B32>(AtomOp::And, 0b1100, 0b1010) == Outcome{0b1100, 0b1000});
  CHECK(both<U32>(AtomOp::Or, 0b1100, 0b1010) == Outcome{0b1100, 0b1110});
  CHECK(both<B64>(AtomOp::Xor, 0xF0000000'0000000Cull, 0xFF000000'0000000Aull) ==
        Outcome{0xF0000000'0000000Cull, 0x0F000000'00000006ull});
  CHECK(both<U32>(AtomOp::Exch, 7, 9) == Outcome{7, 9});
  CHECK(both<U64>(AtomOp::Exch, 1ull << 50, 3) == Outcome{1ull << 50, 3});
  // inc wraps to 0 at b (and above it); dec wraps to b at 0 (and above b).
  CHECK(both<U32>(AtomOp::Inc, 3, 9) == Outcome{3, 4});
  CHECK(both<U32>(AtomOp::Inc, 9, 9) == Outcome{9, 0});
  CHECK(both<U32>(AtomOp::Inc, 12, 9) == Outcome{12, 0});
  CHECK(both<U32>(AtomOp::Dec, 5, 9) == Outcome{5, 4});
  CHECK(both<U32>(AtomOp::Dec, 0, 9) == Outcome{0, 9});
  CHECK(both<U32>(AtomOp::Dec, 12, 9) == Outcome{12, 9});
}

TEST_CASE("atom.cas: stores where the word equals the compare value, else leaves it",
          "[executor][atom]") {
  CHECK(both<U32>(AtomOp::Cas, 7, 7, 42) == Outcome{7, 42});
  CHECK(both<U32>(AtomOp::Cas, 8, 7, 42) == Outcome{8, 8});
  CHECK(both<B64>(AtomOp::Cas, 1ull << 32, 1ull << 32, 3) == Outcome{1ull << 32, 3});
  CHECK(both<U64>(AtomOp::Cas, 1ull << 32, 0, 3) == Outcome{1ull << 32, 1ull << 32});
}

TEST_CASE(
    "atom and red add on floats: f32 flushes subnormals in global memory only, f64 and the pairs "
    "keep them",
    "[executor][atom]") {
  using test::bits;
  CHECK(both<F32>(AtomOp::Add, bits(1.5f), bits(2.25f)) == Outcome{bits(1.5f), bits(3.75f)});
  // 2^-149 + 2^-149: in global memory subnormal inputs count as zero; shared memory keeps them.
  CHECK(run<F32>(Space::Global, AtomOp::Add, 1, 1) == Outcome{1, 0});
  CHECK(run<F32>(Space::Shared, AtomOp::Add, 1, 1) == Outcome{1, 2});
  CHECK(run<F32>(Space::Shared, AtomOp::Add, 0x80000003u, 1) == Outcome{0x80000003u, 0x80000002u});
  CHECK(both<F64>(AtomOp::Add, f64_bits(0.1), f64_bits(0.2)) ==
        Outcome{f64_bits(0.1), f64_bits(0.1 + 0.2)});
  CHECK(both<F64>(AtomOp::Add, 1, 1) == Outcome{1, 2});
  // f16x2, per half: low 2^-24 + 2^-24 = 2^-23 (subnormals kept), high 65504 + 65504 = inf.
  CHECK(both<F16x2>(AtomOp::Add, 0x7BFF0001u, 0x7BFF0001u) == Outcome{0x7BFF0001u, 0x7C000002u});
  // low 1.0 + 0.5 = 1.5, high -2.0 + 0.5 = -1.5.
  CHECK(both<F16x2>(AtomOp::Add, 0xC0003C00u, 0x38003800u) == Outcome{0xC0003C00u, 0xBE003E00u});
  // bf16x2: low 1 + 2^-8 is a tie between 1 and 1 + 2^-7: to even, 1; high 1 + 1 = 2.
  CHECK(both<BF16x2>(AtomOp::Add, 0x3F803F80u, 0x3F803B80u) == Outcome{0x3F803F80u, 0x40003F80u});
  // low 1 + 3 * 2^-8 rounds up to 1 + 2^-6 (0x3F82).
  CHECK(both<BF16x2>(AtomOp::Add, 0x00003F80u, 0x00003C40u) == Outcome{0x00003F80u, 0x3F82});
}

TEST_CASE("shared-memory atomics of many warps are each one indivisible step, with no race",
          "[executor][atom]") {
  Module m;
  Kernel& k = m.kernel("counts");
  auto out = k.param_ptr<U32>("out");
  const SharedPtr<U32> bins = k.shared_array<U32>("bins", 5);  // 4 bins and a ticket counter
  const Reg<U32> t = k.tid_x();
  k.if_(k.setp(Cmp::Lt, t, 5u), [&] { k.st(k.index(bins, t), 0u); });
  k.bar_sync();
  // No barrier between the warps' atomics: they do not race.
  k.red(AtomOp::Add, k.index(bins, k.and_(t, 3u)), k.add(t, 1u));
  const Reg<U32> ticket = k.atom(AtomOp::Inc, bins + 4, 0xFFFFFFFFu);
  k.bar_sync();
  k.if_(k.setp(Cmp::Lt, t, 4u),
        [&] { k.red(AtomOp::Add, k.index(out, t), k.ld(k.index(bins, t))); });
  k.red(AtomOp::Max, out + 4, ticket);
  k.red(AtomOp::Add, out + 5, ticket);
  k.finalize();
  for (unsigned threads : {1u, 3u}) {
    std::vector<std::uint32_t> o(6, 0);
    CpuDevice dev;
    ExecOptions opt;
    opt.threads = threads;
    dev.launch(k, {6, 256}, {dev.map<std::uint32_t>(o, "out")}, opt);
    // Bin j sums t + 1 over t = 4i + j, i in [0, 64): 64 (j + 1) + 4 (0 + 1 + ... + 63).
    for (std::uint32_t j = 0; j < 4; ++j) CHECK(o[j] == 6 * (64 * (j + 1) + 4 * 2016));
    // Each CTA's tickets are 0 ... 255, each once.
    CHECK(o[4] == 255);
    CHECK(o[5] == 6 * 32640);
  }
}

namespace {

std::string launch_error(const std::function<void(Kernel&)>& body, std::uint32_t threads) {
  Module m;
  Kernel& k = m.kernel("faulty");
  body(k);
  k.finalize();
  CpuDevice dev;
  const ExecutorAddress x = dev.alloc(256, "x", 0);
  try {
    dev.launch(k, {1, threads}, {x});
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("memcheck: atomics on misaligned addresses and racing plain accesses",
          "[executor][memcheck][atom]") {
  const std::string global = launch_error(
      [](Kernel& k) {
        auto x = k.param_ptr<U16>("x");
        k.red(AtomOp::Add, k.index(x, k.mov<U32>(1u)).as<U32>(), 1u);
      },
      1);
  CHECK_THAT(global, Contains("misaligned global write of 4 bytes"));
  CHECK_THAT(global, Contains("(offset 2 of allocation 'x' [0x"));
  CHECK_THAT(global, Contains("red.global.add.u32"));
  const std::string shared = launch_error(
      [](Kernel& k) {
        (void)k.param_ptr<U32>("x");
        const SharedPtr<U32> s = k.shared_array<U32>("s", 8);
        k.st(s + 1, 0u);
        k.st(s + 2, 0u);
        (void)k.atom(AtomOp::Exch, (s + 1).as<U64>(), std::uint64_t{5});
      },
      1);
  CHECK_THAT(shared, Contains("misaligned shared write of 8 bytes at 0x4 ('faulty_s' + 4)"));
  CHECK_THAT(shared, Contains("atom.shared.exch.b64"));
  // Warp 1's atomic follows warp 0's plain store with no barrier between.
  const std::string race = launch_error(
      [](Kernel& k) {
        (void)k.param_ptr<U32>("x");
        const SharedPtr<U32> s = k.shared_array<U32>("s", 1);
        const Reg<U32> t = k.tid_x();
        k.if_(k.setp(Cmp::Eq, t, 0u), [&] { k.st(s, 0u); });
        k.if_(k.setp(Cmp::Eq, t, 32u), [&] { k.red(AtomOp::Add, s, 1u); });
      },
      64);
  CHECK_THAT(race, Contains("shared memory race at 0x0 ('faulty_s' + 0)"));
  CHECK_THAT(race, Contains("this write follows a write by thread (0, 0, 0) of warp 0"));
}

TEST_CASE("atomics on a peer's shared memory: every CTA of a cluster adds into rank 0's",
          "[executor][atom][cluster]") {
  Module m(Arch::Sm90);
  Kernel& k = m.kernel("cluster_counts");
  k.require_threads(64);
  k.require_cluster({4, 1, 1});
  auto out = k.param_ptr<U32>("out");
  const SharedPtr<U32> counter = k.shared_array<U32>("counter", 2);
  const Reg<U32> tid = k.tid_x(), rank = k.cluster_ctarank();
  k.if_(k.setp(Cmp::Lt, tid, 2u), [&] { k.st(k.index(counter, tid), 0u); });
  k.cluster_sync();
  // Every thread of the cluster adds 1 into rank 0's first word and takes a ticket from its second.
  k.red(AtomOp::Add, k.mapa(counter, 0u), 1u, {MemSem::Relaxed, Scope::Cluster});
  const Reg<U32> ticket = k.atom(AtomOp::Inc, k.mapa(counter + 1, 0u), 0xFFFFFFFFu);
  k.red(AtomOp::Max, out + 1, ticket);
  k.cluster_sync();
  k.if_(k.setp(Cmp::Eq, k.add(tid, rank), 0u), [&] { k.st(out, k.ld(counter)); });
  k.finalize();
  std::vector<std::uint32_t> o = {0, 0};
  CpuDevice dev;
  dev.launch(k, {8, 64}, {dev.map<std::uint32_t>(o, "out")});
  CHECK(o[0] == 4 * 64);  // the last of the two clusters wrote it: each counts its own
  CHECK(o[1] == 4 * 64 - 1);
}
