#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "numeric.hpp"
#include "program.hpp"
#include "ptxdsl/dsl/emit.hpp"

// How a CTA runs: each warp's lanes carry their own pc; the lanes at the least pc run together
// (min-pc scheduling), which reconverges every structured branch at its join point. A warp runs
// until all its lanes have exited or wait at a barrier; when every warp of the CTA is there, the
// barrier releases, or, when some threads exited instead, the launch fails naming them.
namespace ptxdsl::detail {
namespace {

void recompute_parked(Warp& w) {
  std::uint32_t parked = w.exists & ~w.exited & ~w.waiting & ~w.active;
  std::uint32_t least = kNoPc;
  each_lane(parked, [&](std::uint32_t l) { least = std::min(least, w.lane_pc[l]); });
  w.parked_min = least;
}

// Picks the least-pc group of runnable lanes; false when none can run.
bool schedule(Warp& w) {
  const std::uint32_t runnable = w.exists & ~w.exited & ~w.waiting;
  if (runnable == 0) return false;
  std::uint32_t least = kNoPc;
  each_lane(runnable, [&](std::uint32_t l) { least = std::min(least, w.lane_pc[l]); });
  std::uint32_t group = 0;
  each_lane(runnable, [&](std::uint32_t l) {
    if (w.lane_pc[l] == least) group |= 1u << l;
  });
  w.active = group;
  w.pc = least;
  recompute_parked(w);
  return true;
}

void park(Warp& w) {
  each_lane(w.active, [&](std::uint32_t l) { w.lane_pc[l] = w.pc; });
  w.active = 0;
}

// Moves the running group to `next`, merging with lanes parked there.
inline void advance(Warp& w, std::uint32_t next) {
  w.pc = next;
  if (next < w.parked_min) return;
  if (next > w.parked_min) {
    park(w);
    return;
  }
  const std::uint32_t parked = w.exists & ~w.exited & ~w.waiting & ~w.active;
  each_lane(parked, [&](std::uint32_t l) {
    if (w.lane_pc[l] == next) w.active |= 1u << l;
  });
  recompute_parked(w);
}

std::string format_value(ScalarType t, RegClass cls, std::uint64_t v) {
  switch (cls) {
    case RegClass::Pred:
      return v ? "true" : "false";
    case RegClass::F32:
      return fmt::format("{} ({:#010x})", f32_of(v), v);
    case RegClass::F64:
      return fmt::format("{} ({:#018x})", f64_of(v), v);
    case RegClass::B8:
      return fmt::format("{:#04x}", v);
    case RegClass::B16:
      if (t == ScalarType::F16)
        return fmt::format("{} ({:#06x})", f16_bits_to_f32(static_cast<std::uint16_t>(v)), v);
      if (t == ScalarType::BF16)
        return fmt::format("{} ({:#06x})", bf16_bits_to_f32(static_cast<std::uint16_t>(v)), v);
      return fmt::format("{} ({:#06x})", v, v);
    case RegClass::B32:
      if (t == ScalarType::S32)
        return fmt::format("{} ({:#010x})", static_cast<std::int32_t>(v), v);
      return fmt::format("{} ({:#010x})", v, v);
    case RegClass::B64:
      if (t == ScalarType::S64)
        return fmt::format("{} ({:#018x})", static_cast<std::int64_t>(v), v);
      return fmt::format("{} ({:#018x})", v, v);
  }
  return fmt::format("{:#x}", v);
}

void record_trace(Ctx& c, const DInstr& in, std::uint32_t lane, bool executed) {
  auto& out = *c.trace;
  if (out.size() >= c.launch->options.trace_target.max_records) return;
  const Instr& src = c.prog->kernel->instructions()[in.index];
  TraceRecord r;
  r.index = in.index;
  r.instr = format_instr(*c.prog->kernel, src);
  r.executed = executed;
  if (executed) {
    for (std::uint32_t i = 0; i < in.ndst; ++i) {
      const RegId id = c.prog->reg_of(in.dst[i]);
      ScalarType t = in.type;
      if (in.op == Op::Setp) t = ScalarType::Pred;
      if (in.op == Op::Mul && in.mul == MulMode::Wide)
        t = in.type == ScalarType::S32 ? ScalarType::S64 : ScalarType::U64;
      r.writes.emplace_back(register_name(id), format_value(t, id.cls, c.row(in.dst[i])[lane]));
    }
  }
  out.push_back(std::move(r));
}

}  // namespace

Dim3 Ctx::thread_of(std::uint32_t warp, std::uint32_t lane) const {
  const Dim3 b = launch->config.block;
  const std::uint32_t t = warp * kLanes + lane;
  return Dim3{t % b.x, (t / b.x) % b.y, t / (b.x * b.y)};
}

std::string describe_instr(const Ctx& c, std::uint32_t index) {
  const Kernel& k = *c.prog->kernel;
  return fmt::format("instruction #{} '{}'", index, format_instr(k, k.instructions()[index]));
}

void fault(const Ctx& c, const DInstr& in, std::uint32_t lane, const std::string& what) {
  const Dim3 t = c.thread_of(c.w ? c.w->index : 0, lane);
  throw Error(fmt::format("kernel '{}', {}, thread ({}, {}, {}) of CTA ({}, {}, {}): {}",
                          c.prog->kernel->name(), describe_instr(c, in.index), t.x, t.y, t.z,
                          c.cta.x, c.cta.y, c.cta.z, what));
}

void prepare_ctx(Ctx& c, const Program& p, const LaunchState& launch) {
  c.prog = &p;
  c.launch = &launch;
  const std::uint64_t threads = launch.config.block.count();
  const std::size_t nwarps = (threads + kLanes - 1) / kLanes;
  c.warps.resize(nwarps);
  for (std::size_t i = 0; i < nwarps; ++i) {
    Warp& w = c.warps[i];
    w.index = static_cast<std::uint32_t>(i);
    w.regs.assign(std::size_t{p.slots} * kLanes, 0);
    w.init.assign(p.slots, 0);
    for (std::uint32_t s = p.first_const; s < p.slots; ++s) {
      std::fill_n(w.regs.begin() + std::size_t{s} * kLanes, kLanes, p.consts[s - p.first_const]);
    }
    const std::uint64_t left = threads - i * kLanes;
    w.exists = left >= kLanes ? kFullMask : ((1u << left) - 1u);
  }
  c.shared.assign(launch.shared_bytes, std::byte{0});
  c.shared_init.assign(launch.shared_bytes, 0);
  c.shared_pending.assign(launch.shared_bytes, 0);
  if (launch.options.check_shared_races) {
    c.write_epoch.assign(launch.shared_bytes, 0);
    c.read_epoch.assign(launch.shared_bytes, 0);
    c.writer.assign(launch.shared_bytes, 0);
    c.reader.assign(launch.shared_bytes, 0);
    c.write_instr.assign(launch.shared_bytes, 0);
    c.read_instr.assign(launch.shared_bytes, 0);
    c.write_cluster_epoch.assign(launch.shared_bytes, 0);
    c.read_cluster_epoch.assign(launch.shared_bytes, 0);
    c.write_rank.assign(launch.shared_bytes, 0);
    c.read_rank.assign(launch.shared_bytes, 0);
  }
  if (p.reads_async_proxy) {
    c.generic_write.assign(launch.shared_bytes, 0);
    c.generic_writer.assign(launch.shared_bytes, 0);
    c.proxy_fenced.assign(nwarps * kLanes, 0);
  }
  c.shared_ranges = p.shared;
  if (p.has_dynamic_shared) {
    c.shared_ranges.back().end = c.shared_ranges.back().begin + launch.config.dynamic_shared_bytes;
  }
}

namespace {

void check_sources(Ctx& c, const DInstr& in, std::uint32_t exec) {
  for (std::uint32_t i = 0; i < in.nsrc; ++i) {
    const std::uint32_t s = in.src[i];
    const std::uint32_t missing = exec & ~c.w->init[s];
    if (missing != 0) {
      fault(c, in, static_cast<std::uint32_t>(std::countr_zero(missing)),
            fmt::format("reads register {}, which this thread never wrote",
                        describe_slot(*c.prog, s)));
    }
  }
}

// Lanes `lanes` of the running warp join the current phase of the named barrier `in` names
// (waiting at bar.sync, or going on after bar.arrive). The phase completes, as on the GPU, the
// moment its count of threads has arrived: every thread waiting at it goes on.
void join_named_barrier(Ctx& c, const DInstr& in, std::uint32_t lanes) {
  NamedBarrier& b = c.named[in.aux];
  const auto first = static_cast<std::uint32_t>(std::countr_zero(lanes));
  if (b.count == 0) {
    b = NamedBarrier{in.threads, 0, c.w->index, first, in.index};
  } else if (b.count != in.threads) {
    const Dim3 t = c.thread_of(b.first_warp, b.first_lane);
    fault(c, in, first,
          fmt::format("arrives at barrier {} with a thread count of {}, but thread ({}, {}, {}) "
                      "arrived at it with {} in this phase (instruction #{}): the arrivals of one "
                      "phase must name the same count",
                      in.aux, in.threads, t.x, t.y, t.z, b.count, b.first_instr));
  }
  b.arrived += static_cast<std::uint32_t>(std::popcount(lanes));
  if (b.arrived > b.count) {
    fault(c, in, first,
          fmt::format("{} threads arrive at barrier {} in one phase, more than its count {}",
                      b.arrived, in.aux, b.count));
  }
  if (b.arrived < b.count) return;
  for (Warp& w : c.warps) {
    each_lane(w.waiting, [&](std::uint32_t l) {
      const DInstr& at = c.prog->code[w.bar_pc[l]];
      if (at.flow != Flow::Bar || at.threads == 0 || at.aux != in.aux) return;
      w.lane_pc[l] = w.bar_pc[l] + 1;
      w.waiting &= ~(1u << l);
    });
  }
  recompute_parked(*c.w);
  b = NamedBarrier{};
  ++c.epoch;
}

// bar.arrive: the executing threads count towards the phase and go on.
void bar_arrive(Ctx& c, const DInstr& in, std::uint32_t exec) {
  join_named_barrier(c, in, exec);
}

// Lanes `blocked` of the running group wait at this instruction; the rest go on.
void wait_or_go_on(Warp& w, std::uint32_t blocked) {
  each_lane(blocked, [&](std::uint32_t l) { w.bar_pc[l] = w.pc; });
  w.waiting |= blocked;
  w.active &= ~blocked;
  if (w.active != 0) advance(w, w.pc + 1);
}

void run_warp(Ctx& c, Warp& w) {
  c.w = &w;
  c.regs = w.regs.data();
  const DInstr* code = c.prog->code.data();
  const ExecOptions& opt = c.launch->options;
  const bool check_regs = opt.check_uninitialized_registers;
  const std::uint64_t limit = opt.max_warp_instructions;
  std::uint32_t trace_lane_bit = 0;
  if (c.trace != nullptr) {
    const Dim3 t = opt.trace_target.thread;
    const Dim3 b = c.launch->config.block;
    const std::uint64_t linear = t.x + std::uint64_t{t.y} * b.x + std::uint64_t{t.z} * b.x * b.y;
    if (linear / kLanes == w.index) trace_lane_bit = 1u << (linear % kLanes);
  }
  for (;;) {
    if (w.active == 0 && !schedule(w)) return;
    const DInstr& in = code[w.pc];
    const std::uint32_t active = w.active;
    std::uint32_t exec = active;
    if (in.guard != kNoSlot) {
      if (check_regs && (active & ~w.init[in.guard]) != 0) {
        fault(c, in, static_cast<std::uint32_t>(std::countr_zero(active & ~w.init[in.guard])),
              fmt::format("guard {} was never written by this thread",
                          describe_slot(*c.prog, in.guard)));
      }
      const std::uint64_t* g = c.row(in.guard);
      std::uint32_t m = 0;
      for (std::uint32_t l = 0; l < kLanes; ++l) m |= static_cast<std::uint32_t>(g[l] != 0) << l;
      exec &= in.guard_negated ? ~m : m;
    }
    if (++c.warp_instructions > limit) {
      fault(c, in, static_cast<std::uint32_t>(std::countr_zero(active)),
            fmt::format("the launch ran past ExecOptions::max_warp_instructions ({}): does the "
                        "kernel loop forever?",
                        limit));
    }
    c.lane_instructions += static_cast<std::uint32_t>(std::popcount(exec));
    switch (in.flow) {
      case Flow::Normal:
        if (exec != 0) {
          if (w.wgmma_busy_slots != 0 && in.op != Op::WgmmaMma) {
            check_wgmma_registers(c, in, exec);
          }
          if (check_regs) check_sources(c, in, exec);
          in.fn(c, in, exec);
          for (std::uint32_t i = 0; i < in.ndst; ++i) w.init[in.dst[i]] |= exec;
          if (!w.written_at.empty()) note_register_writes(c, in);
        }
        advance(w, w.pc + 1);
        break;
      case Flow::Bra:
        if (in.uniform && exec != 0 && exec != active) {
          fault(c, in, static_cast<std::uint32_t>(std::countr_zero(active & ~exec)),
                "bra.uni taken by some threads of the warp and not others");
        }
        if (exec == active) {
          advance(w, in.aux);
        } else if (exec == 0) {
          advance(w, w.pc + 1);
        } else {
          each_lane(active,
                    [&](std::uint32_t l) { w.lane_pc[l] = (exec >> l) & 1u ? in.aux : w.pc + 1; });
          w.active = 0;
        }
        break;
      case Flow::Ret:
        each_lane(exec, [&](std::uint32_t l) { w.exit_pc[l] = w.pc; });
        w.exited |= exec;
        w.active &= ~exec;
        if (w.active != 0) advance(w, w.pc + 1);
        break;
      case Flow::Bar:
        each_lane(exec, [&](std::uint32_t l) { w.bar_pc[l] = w.pc; });
        w.waiting |= exec;
        w.active &= ~exec;
        if (in.threads != 0 && exec != 0) join_named_barrier(c, in, exec);
        if (w.active != 0) advance(w, w.pc + 1);
        break;
      case Flow::ClusterWait: {
        // Lanes whose arrival's phase has completed go on; the others wait (release_cluster).
        if (in.aligned) check_aligned(c, in, exec);
        std::uint32_t done = 0;
        each_lane(exec, [&](std::uint32_t l) {
          if (w.cluster_arrival[l] == 0) {
            fault(c, in, l,
                  "waits at barrier.cluster.wait without a barrier.cluster.arrive since its last "
                  "wait");
          }
          if (w.cluster_arrival[l] <= c.cluster->phase) {
            w.cluster_arrival[l] = 0;
            done |= 1u << l;
          }
        });
        w.cluster_waited |= done;
        wait_or_go_on(w, exec & ~done);
        break;
      }
      case Flow::MbarWait: {
        // Lanes whose phase has completed go on; the others wait for it (wake_cta).
        std::uint32_t done = 0;
        if (exec != 0 && check_regs) check_sources(c, in, exec);
        each_lane(exec, [&](std::uint32_t l) {
          if (mbarrier_phase_done(c, in, l)) done |= 1u << l;
        });
        if (done != 0) {
          in.fn(c, in, done);
          w.init[in.dst[0]] |= done;
        }
        wait_or_go_on(w, exec & ~done);
        break;
      }
    }
    if ((active & trace_lane_bit) != 0) {
      record_trace(c, in, static_cast<std::uint32_t>(std::countr_zero(trace_lane_bit)),
                   (exec & trace_lane_bit) != 0);
    }
  }
}

enum class Wake { Done, Progress, Blocked };

// Every warp of the CTA is blocked: wake the mbarrier waiters whose phase has completed, release
// a bar.sync every thread has reached (failing when some exited instead, or wait at another
// barrier), or say that the CTA is done or waits for something only its cluster can release.
Wake wake_cta(Ctx& c) {
  const Program& p = *c.prog;
  // A named barrier that completed released threads of warps that had already stopped.
  for (const Warp& w : c.warps) {
    if ((w.exists & ~w.exited & ~w.waiting) != 0) return Wake::Progress;
  }
  std::uint64_t waiting = 0, exited = 0;
  const Warp* first_waiting = nullptr;
  const Warp* first_exited = nullptr;
  for (const Warp& w : c.warps) {
    waiting += static_cast<std::uint32_t>(std::popcount(w.waiting));
    exited += static_cast<std::uint32_t>(std::popcount(w.exited));
    if (w.waiting && !first_waiting) first_waiting = &w;
    if (w.exited && !first_exited) first_exited = &w;
  }
  if (waiting == 0) return Wake::Done;  // every thread exited
  const auto lane0 = [](std::uint32_t m) {
    return static_cast<std::uint32_t>(std::countr_zero(m));
  };
  // Threads waiting on an mbarrier whose phase has completed run their try_wait again, now
  // successfully; others wait for an mbarrier or the cluster barrier, which a peer may release.
  bool woke = false, blocked = false;
  for (Warp& w : c.warps) {
    c.w = &w;
    c.regs = w.regs.data();
    each_lane(w.waiting, [&](std::uint32_t l) {
      const DInstr& in = p.code[w.bar_pc[l]];
      if (in.flow == Flow::ClusterWait) {
        blocked = true;
      } else if (in.flow == Flow::MbarWait) {
        if (mbarrier_phase_done(c, in, l)) {
          w.lane_pc[l] = w.bar_pc[l];
          w.waiting &= ~(1u << l);
          woke = true;
        } else {
          blocked = true;
        }
      }
    });
  }
  if (woke) return Wake::Progress;
  if (blocked) return Wake::Blocked;
  // A named barrier with a count completes as its threads arrive: one still waited at never will.
  for (Warp& w : c.warps) {
    each_lane(w.waiting, [&](std::uint32_t l) {
      const DInstr& at = p.code[w.bar_pc[l]];
      if (at.flow != Flow::Bar || at.threads == 0) return;
      c.w = &w;
      fault(c, at, l,
            fmt::format("waits at barrier {} for {} threads, but {} arrived, and every other "
                        "thread waits elsewhere or has exited: the CTA deadlocks",
                        at.aux, at.threads, c.named[at.aux].arrived));
    });
  }
  const std::uint32_t wl = lane0(first_waiting->waiting);
  const DInstr& bar = p.code[first_waiting->bar_pc[wl]];
  c.w = const_cast<Warp*>(first_waiting);
  if (exited != 0) {
    const std::uint32_t el = lane0(first_exited->exited);
    const Dim3 t = c.thread_of(first_exited->index, el);
    fault(c, bar, wl,
          fmt::format(
              "waits at the barrier, but {} of the CTA's {} threads exited without reaching "
              "it (first: thread ({}, {}, {}), at instruction #{}): a barrier every thread "
              "must reach",
              exited, waiting + exited, t.x, t.y, t.z, p.code[first_exited->exit_pc[el]].index));
  }
  for (Warp& w : c.warps) {
    each_lane(w.waiting, [&](std::uint32_t l) {
      const DInstr& other = p.code[w.bar_pc[l]];
      if (other.aux != bar.aux) {
        const Dim3 t = c.thread_of(w.index, l);
        fault(c, bar, wl,
              fmt::format("waits at barrier {} while thread ({}, {}, {}) waits at barrier {} "
                          "(instruction #{}): the CTA deadlocks",
                          bar.aux, t.x, t.y, t.z, other.aux, other.index));
      }
    });
  }
  for (Warp& w : c.warps) {
    each_lane(w.waiting, [&](std::uint32_t l) { w.lane_pc[l] = w.bar_pc[l] + 1; });
    w.waiting = 0;
  }
  ++c.epoch;
  return Wake::Progress;
}

// The first live thread of the cluster that has not arrived at the current cluster barrier
// phase, as (CTA, warp, lane); {nullptr} when every one has.
struct Straggler {
  Ctx* c = nullptr;
  Warp* w = nullptr;
  std::uint32_t lane = 0;
};
Straggler first_not_arrived(Cluster& cl) {
  for (Ctx* c : cl.ctas) {
    for (Warp& w : c->warps) {
      const std::uint32_t live = w.exists & ~w.exited;
      for (std::uint32_t l = 0; l < kLanes; ++l) {
        if (((live >> l) & 1u) != 0 && w.cluster_arrival[l] != cl.phase + 1) return {c, &w, l};
      }
    }
  }
  return {};
}

// Every CTA is blocked: completes the cluster barrier's phase when every live thread of the
// cluster has arrived, and wakes its waiters.
bool release_cluster(Cluster& cl) {
  bool any = false;
  for (Ctx* c : cl.ctas) {
    for (Warp& w : c->warps) {
      each_lane(w.waiting, [&](std::uint32_t l) {
        any = any || c->prog->code[w.bar_pc[l]].flow == Flow::ClusterWait;
      });
    }
  }
  if (!any || first_not_arrived(cl).c != nullptr) return false;
  ++cl.phase;
  ++cl.epoch;
  for (Ctx* c : cl.ctas) {
    ++c->epoch;
    for (Warp& w : c->warps) {
      each_lane(w.waiting, [&](std::uint32_t l) {
        if (c->prog->code[w.bar_pc[l]].flow != Flow::ClusterWait) return;
        w.lane_pc[l] = w.bar_pc[l];
        w.waiting &= ~(1u << l);
      });
    }
  }
  return true;
}

// Nothing in the cluster can go on: name a thread that waits for what can never happen.
[[noreturn]] void deadlock(Cluster& cl) {
  const bool one = cl.ctas.size() == 1;
  for (Ctx* c : cl.ctas) {
    for (Warp& w : c->warps) {
      c->w = &w;
      c->regs = w.regs.data();
      for (std::uint32_t l = 0; l < kLanes; ++l) {
        if (((w.waiting >> l) & 1u) == 0) continue;
        const DInstr& in = c->prog->code[w.bar_pc[l]];
        if (in.flow == Flow::MbarWait) {
          fault(*c, in, l,
                describe_mbarrier_wait(*c, in, l) +
                    fmt::format(", and no thread of the {} can arrive or copy any more (each "
                                "waits or has exited): the {} deadlocks",
                                one ? "CTA" : "cluster", one ? "CTA" : "cluster"));
        }
        if (in.flow == Flow::ClusterWait) {
          const Straggler s = first_not_arrived(cl);
          const Dim3 t = s.c->thread_of(s.w->index, s.lane);
          const std::uint32_t at = s.c->prog->code[s.w->bar_pc[s.lane]].index;
          fault(*c, in, l,
                fmt::format("waits at barrier.cluster.wait, but thread ({}, {}, {}) of CTA ({}, "
                            "{}, {}) has not arrived and waits at instruction #{}: the cluster "
                            "deadlocks",
                            t.x, t.y, t.z, s.c->cta.x, s.c->cta.y, s.c->cta.z, at));
        }
      }
    }
  }
  throw Error("the CPU executor's cluster scheduler found no thread to blame for a deadlock");
}

void reset_cta(Ctx& c, Dim3 cta) {
  c.cta = cta;
  ++c.epoch;
  const Program& p = *c.prog;
  if (c.launch->options.check_uninitialized_shared && !c.shared_init.empty()) {
    std::memset(c.shared_init.data(), 0, c.shared_init.size());
  }
  for (Warp& w : c.warps) {
    std::fill(w.init.begin(), w.init.begin() + p.first_const, 0u);
    std::fill(w.init.begin() + p.first_const, w.init.end(), kFullMask);
    w.exited = 0;
    w.waiting = 0;
    w.active = 0;
    w.pc = 0;
    w.parked_min = kNoPc;
    w.lane_pc.fill(0);
    w.copies.clear();
    w.committed.fill(0);
    w.cluster_arrival.fill(0);
    w.cluster_waited = 0;
    reset_wgmma(w, p);
  }
  c.mbarriers.clear();
  c.bulk_copies.clear();
  std::fill(c.generic_write.begin(), c.generic_write.end(), 0u);
  std::fill(c.proxy_fenced.begin(), c.proxy_fenced.end(), 0u);
  c.named.fill(NamedBarrier{});
  // Copies a previous CTA never waited for are dropped with it.
  if (c.copies_in_flight > 0) {
    std::fill(c.shared_pending.begin(), c.shared_pending.end(), std::uint8_t{0});
    c.copies_in_flight = 0;
  }
}

}  // namespace

void check_aligned(Ctx& c, const DInstr& in, std::uint32_t exec) {
  const std::uint32_t live = c.w->exists & ~c.w->exited;
  if (exec != live) {
    fault(c, in, static_cast<std::uint32_t>(std::countr_zero(live & ~exec)),
          "does not execute this .aligned instruction with the other threads of its warp (they "
          "diverged, or a guard is false for some): use the unaligned form in divergent code");
  }
}

Handler select_bar_arrive(const Instr&) {
  return &bar_arrive;
}

void run_cluster(Cluster& cl, const std::vector<Dim3>& ctas) {
  ++cl.epoch;
  cl.phase = 0;
  for (std::size_t r = 0; r < cl.ctas.size(); ++r) reset_cta(*cl.ctas[r], ctas[r]);
  for (;;) {
    for (Ctx* c : cl.ctas) {
      for (Warp& w : c->warps) run_warp(*c, w);
    }
    bool progress = false, done = true;
    for (Ctx* c : cl.ctas) {
      const Wake wake = wake_cta(*c);
      progress = progress || wake == Wake::Progress;
      done = done && wake == Wake::Done;
    }
    if (done) {
      for (Ctx* c : cl.ctas) check_warpgroups_agree(*c);
      return;
    }
    if (!progress && !release_cluster(cl)) deadlock(cl);
  }
}

}  // namespace ptxdsl::detail
