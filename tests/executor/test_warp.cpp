// The warp collectives over the member lanes, against values worked out by hand.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "support.hpp"

using namespace ptxdsl;
using Catch::Matchers::Contains;

namespace {

// Runs a one-warp kernel (`threads` lanes) whose first parameter is a u32 `out`, one element a
// thread, and returns it.
std::vector<std::uint32_t> run_warp(Kernel& k, std::uint32_t threads = 32) {
  k.finalize();
  std::vector<std::uint32_t> out(threads, 0xDEADBEEFu);
  CpuDevice dev;
  dev.launch(k, {1, threads}, {dev.map<std::uint32_t>(out, "out")});
  return out;
}

Reg<U32> as_u32(Kernel& k, Pred p) {
  return k.selp<U32>(1u, 0u, p);
}

}  // namespace

TEST_CASE("vote.sync all/any/uni/ballot over the member lanes", "[executor][warp]") {
  Module m;
  Kernel& k = m.kernel("vote");
  auto out = k.param_ptr<U32>("out");
  const Reg<U32> t = k.tid_x();
  const Pred odd = k.setp(Cmp::Ne, k.and_(t, 1u), 0u);
  const Pred small = k.setp(Cmp::Lt, t, 40u);  // true in every lane of a 32-lane warp
  // bit 0: all(small), 1: any(odd), 2: all(odd), 3: uni(small), 4: uni(odd); high half: ballot.
  Reg<U32> bits = as_u32(k, k.vote_all(small));
  bits = k.or_(bits, k.shl(as_u32(k, k.vote_any(odd)), 1u));
  bits = k.or_(bits, k.shl(as_u32(k, k.vote_all(odd)), 2u));
  bits = k.or_(bits, k.shl(as_u32(k, k.vote_uni(small)), 3u));
  bits = k.or_(bits, k.shl(as_u32(k, k.vote_uni(odd)), 4u));
  k.st(k.index(out, t), bits);
  k.st(k.index(out, k.add(t, 32u)), k.bitcast<U32>(k.vote_ballot(odd)));
  k.finalize();
  std::vector<std::uint32_t> got(64, 0);
  CpuDevice dev;
  dev.launch(k, {1, 32}, {dev.map<std::uint32_t>(got, "out")});
  for (std::uint32_t i = 0; i < 32; ++i) {
    INFO("lane " << i);
    CHECK(got[i] == (1u | 2u | 8u));
    CHECK(got[32 + i] == 0xAAAAAAAAu);
  }
}

TEST_CASE("vote.sync with a partial member mask inside a branch", "[executor][warp]") {
  Module m;
  Kernel& k = m.kernel("vote_half");
  auto out = k.param_ptr<U32>("out");
  const Reg<U32> t = k.tid_x();
  k.if_(k.setp(Cmp::Lt, t, 16u), [&] {
    const Pred big = k.setp(Cmp::Ge, t, 12u);
    k.st(k.index(out, t), k.bitcast<U32>(k.vote_ballot(big, 0x0000FFFFu)));
  });
  const auto got = run_warp(k);
  for (std::uint32_t i = 0; i < 16; ++i) CHECK(got[i] == 0x0000F000u);
  for (std::uint32_t i = 16; i < 32; ++i) CHECK(got[i] == 0xDEADBEEFu);
}

TEST_CASE("a collective whose member lane is not there faults, naming it", "[executor][warp]") {
  Module m;
  Kernel& k = m.kernel("vote_missing");
  auto out = k.param_ptr<U32>("out");
  const Reg<U32> t = k.tid_x();
  k.if_(k.setp(Cmp::Lt, t, 16u),
        [&] { k.st(k.index(out, t), k.bitcast<U32>(k.vote_ballot(k.setp(Cmp::Eq, t, 0u)))); });
  CHECK_THROWS_WITH(run_warp(k), Contains("vote.sync.ballot.b32 with member mask 0xffffffff") &&
                                     Contains("lane 16 of the warp is not executing it"));
}

TEST_CASE("a lane outside the member mask, or masks that differ, fault", "[executor][warp]") {
  {
    Module m;
    Kernel& k = m.kernel("outside");
    auto out = k.param_ptr<U32>("out");
    const Reg<U32> t = k.tid_x();
    k.st(k.index(out, t), k.redux(ReduxOp::Add, t, 0x0000FFFFu));
    CHECK_THROWS_WITH(run_warp(k), Contains("thread (16, 0, 0)") &&
                                       Contains("executes redux.sync.add.u32 but is not in its "
                                                "member mask 0x0000ffff"));
  }
  {
    Module m;
    Kernel& k = m.kernel("differ");
    auto out = k.param_ptr<U32>("out");
    const Reg<U32> t = k.tid_x();
    const Reg<B32> mask = k.bitcast<B32>(k.or_(k.mov<U32>(0x7FFFFFFFu), k.shl(t, 31u)));
    k.st(k.index(out, t), k.bitcast<U32>(k.match_any(t, mask)));
    CHECK_THROWS_WITH(run_warp(k), Contains("member mask 0xffffffff differs from lane 0's "
                                            "0x7fffffff"));
  }
}

TEST_CASE("collectives in a partial warp take its threads only", "[executor][warp]") {
  Module m;
  Kernel& k = m.kernel("partial");
  auto out = k.param_ptr<U32>("out");
  const Reg<U32> t = k.tid_x();
  const Reg<U32> sum = k.redux(ReduxOp::Add, t);
  const Reg<U32> all = as_u32(k, k.vote_all(k.setp(Cmp::Lt, t, 20u)));
  const Reg<U32> lanes = k.bitcast<U32>(k.match_all(k.mov<U32>(3u)).lanes);
  k.st(k.index(out, t), k.add(k.mul(sum, 2u), all));
  k.st(k.index(out, k.add(t, 20u)), lanes);
  k.finalize();
  std::vector<std::uint32_t> got(40, 0);
  CpuDevice dev;
  dev.launch(k, {1, 20}, {dev.map<std::uint32_t>(got, "out")});
  for (std::uint32_t i = 0; i < 20; ++i) {
    INFO("lane " << i);
    CHECK(got[i] == 190u * 2 + 1);
    CHECK(got[20 + i] == 0x000FFFFFu);
  }
}

TEST_CASE("match.any.sync and match.all.sync", "[executor][warp]") {
  Module m;
  Kernel& k = m.kernel("match");
  auto out = k.param_ptr<U32>("out");
  const Reg<U32> t = k.tid_x();
  const Reg<U32> key = k.and_(t, 3u);  // four groups: lanes t mod 4
  k.st(k.index(out, t), k.bitcast<U32>(k.match_any(key)));
  const auto all_same = k.match_all(k.mov<U64>(7ull));
  const auto all_key = k.match_all(key);
  const Reg<U32> flags = k.or_(as_u32(k, all_same.equal), k.shl(as_u32(k, all_key.equal), 1u));
  k.st(k.index(out, k.add(t, 32u)), k.bitcast<U32>(all_same.lanes));
  k.st(k.index(out, k.add(t, 64u)), k.bitcast<U32>(all_key.lanes));
  k.st(k.index(out, k.add(t, 96u)), flags);
  k.finalize();
  std::vector<std::uint32_t> got(128, 0);
  CpuDevice dev;
  dev.launch(k, {1, 32}, {dev.map<std::uint32_t>(got, "out")});
  for (std::uint32_t i = 0; i < 32; ++i) {
    INFO("lane " << i);
    CHECK(got[i] == 0x11111111u << (i & 3u));
    CHECK(got[32 + i] == 0xFFFFFFFFu);
    CHECK(got[64 + i] == 0);
    CHECK(got[96 + i] == 1);
  }
}

TEST_CASE("redux.sync add/min/max/and/or/xor, signed and unsigned", "[executor][warp]") {
  Module m;
  Kernel& k = m.kernel("redux");
  auto out = k.param_ptr<U32>("out");
  const Reg<U32> t = k.tid_x();
  const Reg<S32> s = k.sub(k.bitcast<S32>(t), 5);  // -5 .. 26
  const Reg<U32> u = k.add(t, 0xFFFFFFF0u);        // wraps past 15
  const Reg<U32> results[] = {
      k.redux(ReduxOp::Add, t),
      k.bitcast<U32>(k.redux(ReduxOp::Min, s)),
      k.bitcast<U32>(k.redux(ReduxOp::Max, s)),
      k.redux(ReduxOp::Min, u),
      k.redux(ReduxOp::Max, u),
      k.redux(ReduxOp::And, k.or_(t, 0x100u)),
      k.redux(ReduxOp::Or, k.shl(k.mov<U32>(1u), t)),
      k.redux(ReduxOp::Xor, t),
  };
  for (std::uint32_t j = 0; j < 8; ++j) k.st(k.index(out, k.add(t, 32u * j)), results[j]);
  k.finalize();
  std::vector<std::uint32_t> got(256, 0);
  CpuDevice dev;
  dev.launch(k, {1, 32}, {dev.map<std::uint32_t>(got, "out")});
  const std::uint32_t want[] = {
      496, static_cast<std::uint32_t>(-5), 26, 0, 0xFFFFFFFFu, 0x100u, 0xFFFFFFFFu, 0};
  for (std::uint32_t j = 0; j < 8; ++j) {
    for (std::uint32_t i = 0; i < 32; ++i) {
      INFO("result " << j << ", lane " << i);
      CHECK(got[32 * j + i] == want[j]);
    }
  }
}

TEST_CASE("activemask and elect.sync", "[executor][warp]") {
  Module m(Arch::Sm90, {8, 0});
  Kernel& k = m.kernel("elect");
  auto out = k.param_ptr<U32>("out");
  const Reg<U32> t = k.tid_x();
  k.if_(k.setp(Cmp::Ge, t, 5u), [&] {
    const Reg<B32> active = k.activemask();
    const auto e = k.elect_sync(0xFFFFFFE0u);
    const Reg<U32> v = k.add(k.shl(e.leader, 8u), as_u32(k, e.is_leader));
    k.st(k.index(out, t), k.xor_(k.bitcast<U32>(active), v));
  });
  const auto got = run_warp(k);
  for (std::uint32_t i = 0; i < 32; ++i) {
    INFO("lane " << i);
    if (i < 5) {
      CHECK(got[i] == 0xDEADBEEFu);
    } else {
      CHECK(got[i] == (0xFFFFFFE0u ^ ((5u << 8) + (i == 5 ? 1u : 0u))));
    }
  }
}
