#include <atomic>
#include <chrono>

#include <fmt/format.h>

#include "numeric.hpp"
#include "program.hpp"

// mov (copies, packs, special registers), setp, selp, shfl.sync, cvta.
namespace ptxdsl::detail {
namespace {

void mov_copy(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  each_lane(exec, [&](std::uint32_t l) { d[l] = a[l]; });
}

void mov_pack(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* lo = c.row(in.src[0]);
  const std::uint64_t* hi = c.row(in.src[1]);
  each_lane(exec, [&](std::uint32_t l) { d[l] = (lo[l] & 0xFFFFu) | ((hi[l] & 0xFFFFu) << 16); });
}

void mov_unpack(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* lo = c.row(in.dst[0]);
  std::uint64_t* hi = c.row(in.dst[1]);
  const std::uint64_t* a = c.row(in.src[0]);
  each_lane(exec, [&](std::uint32_t l) {
    const std::uint64_t v = a[l];
    lo[l] = v & 0xFFFFu;
    hi[l] = (v >> 16) & 0xFFFFu;
  });
}

void mov_special(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const LaunchConfig& cfg = c.launch->config;
  const std::uint32_t warp = c.w->index;
  const auto nwarps = static_cast<std::uint32_t>(c.warps.size());
  const Dim3 cl = c.cluster->dims, id = c.cluster->id;
  each_lane(exec, [&](std::uint32_t l) {
    const Dim3 t = c.thread_of(warp, l);
    std::uint64_t v = 0;
    switch (static_cast<Special>(in.aux)) {
      case Special::TidX:
        v = t.x;
        break;
      case Special::TidY:
        v = t.y;
        break;
      case Special::TidZ:
        v = t.z;
        break;
      case Special::NtidX:
        v = cfg.block.x;
        break;
      case Special::NtidY:
        v = cfg.block.y;
        break;
      case Special::NtidZ:
        v = cfg.block.z;
        break;
      case Special::CtaidX:
        v = c.cta.x;
        break;
      case Special::CtaidY:
        v = c.cta.y;
        break;
      case Special::CtaidZ:
        v = c.cta.z;
        break;
      case Special::NctaidX:
        v = cfg.grid.x;
        break;
      case Special::NctaidY:
        v = cfg.grid.y;
        break;
      case Special::NctaidZ:
        v = cfg.grid.z;
        break;
      case Special::LaneId:
        v = l;
        break;
      case Special::WarpId:
        v = warp;
        break;
      case Special::NwarpId:
        v = nwarps;
        break;
      case Special::SmId:
        v = 0;
        break;
      case Special::ClusterCtarank:
        v = c.rank;
        break;
      case Special::ClusterNctarank:
        v = static_cast<std::uint32_t>(cl.count());
        break;
      case Special::ClusteridX:
        v = id.x;
        break;
      case Special::ClusteridY:
        v = id.y;
        break;
      case Special::ClusteridZ:
        v = id.z;
        break;
      case Special::NclusteridX:
        v = cfg.grid.x / cl.x;
        break;
      case Special::NclusteridY:
        v = cfg.grid.y / cl.y;
        break;
      case Special::NclusteridZ:
        v = cfg.grid.z / cl.z;
        break;
      case Special::ClusterCtaidX:
        v = c.cta.x % cl.x;
        break;
      case Special::ClusterCtaidY:
        v = c.cta.y % cl.y;
        break;
      case Special::ClusterCtaidZ:
        v = c.cta.z % cl.z;
        break;
      case Special::ClusterNctaidX:
        v = cl.x;
        break;
      case Special::ClusterNctaidY:
        v = cl.y;
        break;
      case Special::ClusterNctaidZ:
        v = cl.z;
        break;
      // A cycle per warp-instruction of this host thread's CTAs: it grows between two reads.
      case Special::Clock64:
        v = c.warp_instructions;
        break;
      case Special::Globaltimer:
        v = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                           std::chrono::steady_clock::now().time_since_epoch())
                                           .count());
        break;
    }
    d[l] = v;
  });
}

void cvta(Ctx& c, const DInstr& in, std::uint32_t exec) {
  mov_copy(c, in, exec);
}

void selp(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  const std::uint64_t* b = c.row(in.src[1]);
  const std::uint64_t* p = c.row(in.src[2]);
  each_lane(exec, [&](std::uint32_t l) { d[l] = p[l] ? a[l] : b[l]; });
}

// ---- setp ----
template <class T>
bool compare_int(Cmp cmp, T a, T b) {
  using U = std::make_unsigned_t<T>;
  const U ua = static_cast<U>(a), ub = static_cast<U>(b);
  switch (cmp) {
    case Cmp::Eq:
    case Cmp::Equ:
      return a == b;
    case Cmp::Ne:
    case Cmp::Neu:
      return a != b;
    case Cmp::Lt:
    case Cmp::Ltu:
      return a < b;
    case Cmp::Le:
    case Cmp::Leu:
      return a <= b;
    case Cmp::Gt:
    case Cmp::Gtu:
      return a > b;
    case Cmp::Ge:
    case Cmp::Geu:
      return a >= b;
    case Cmp::Lo:
      return ua < ub;
    case Cmp::Ls:
      return ua <= ub;
    case Cmp::Hi:
      return ua > ub;
    case Cmp::Hs:
      return ua >= ub;
    case Cmp::Num:
      return true;
    case Cmp::Nan:
      return false;
  }
  return false;
}

bool compare_float(Cmp cmp, double a, double b) {
  const bool unordered = std::isnan(a) || std::isnan(b);
  switch (cmp) {
    case Cmp::Eq:
      return !unordered && a == b;
    case Cmp::Ne:
      return !unordered && a != b;
    case Cmp::Lt:
      return !unordered && a < b;
    case Cmp::Le:
      return !unordered && a <= b;
    case Cmp::Gt:
      return !unordered && a > b;
    case Cmp::Ge:
      return !unordered && a >= b;
    case Cmp::Equ:
      return unordered || a == b;
    case Cmp::Neu:
      return unordered || a != b;
    case Cmp::Ltu:
      return unordered || a < b;
    case Cmp::Leu:
      return unordered || a <= b;
    case Cmp::Gtu:
      return unordered || a > b;
    case Cmp::Geu:
      return unordered || a >= b;
    case Cmp::Num:
      return !unordered;
    case Cmp::Nan:
      return unordered;
    // lo/ls/hi/hs are integer comparisons; ptxas rejects them on floats.
    case Cmp::Lo:
      return !unordered && a < b;
    case Cmp::Ls:
      return !unordered && a <= b;
    case Cmp::Hi:
      return !unordered && a > b;
    case Cmp::Hs:
      return !unordered && a >= b;
  }
  return false;
}

template <class T>
void setp_int(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  const std::uint64_t* b = c.row(in.src[1]);
  const Cmp cmp = in.cmp;
  each_lane(exec, [&](std::uint32_t l) {
    d[l] = compare_int<T>(cmp, static_cast<T>(a[l]), static_cast<T>(b[l])) ? 1 : 0;
  });
}

void setp_f32(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  const std::uint64_t* b = c.row(in.src[1]);
  const Cmp cmp = in.cmp;
  const bool ftz = in.ftz;
  each_lane(exec, [&](std::uint32_t l) {
    double x = f32_of(a[l]), y = f32_of(b[l]);
    if (ftz) {
      x = flush(x, kF32);
      y = flush(y, kF32);
    }
    d[l] = compare_float(cmp, x, y) ? 1 : 0;
  });
}

template <Fmt F>
void setp_float(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  const std::uint64_t* b = c.row(in.src[1]);
  each_lane(exec, [&](std::uint32_t l) {
    double x = decode(F, a[l]), y = decode(F, b[l]);
    if (in.ftz) {
      x = flush(x, format_of(F));
      y = flush(y, format_of(F));
    }
    d[l] = compare_float(in.cmp, x, y) ? 1 : 0;
  });
}

// ---- shfl.sync ----
void shfl(Ctx& c, const DInstr& in, std::uint32_t exec) {
  const std::uint32_t first = static_cast<std::uint32_t>(std::countr_zero(exec));
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  const std::uint64_t* b = c.row(in.src[1]);
  const std::uint64_t* cc = c.row(in.src[2]);
  const std::uint64_t* mm = c.row(in.src[3]);
  const auto member = static_cast<std::uint32_t>(mm[first]);
  const Warp& w = *c.w;
  if ((exec & ~member) != 0) {
    fault(c, in, static_cast<std::uint32_t>(std::countr_zero(exec & ~member)),
          fmt::format("executes shfl.sync but is not in its member mask {:#010x}", member));
  }
  const std::uint32_t missing = member & w.exists & ~w.exited & ~exec;
  if (missing != 0) {
    const auto lane = static_cast<std::uint32_t>(std::countr_zero(missing));
    fault(c, in, first,
          fmt::format("shfl.sync with member mask {:#010x}, but lane {} of the warp is not "
                      "executing it with this thread (divergent, waiting, or guard false)",
                      member, lane));
  }
  std::uint64_t value[kLanes];
  for (std::uint32_t l = 0; l < kLanes; ++l) value[l] = a[l];
  each_lane(exec, [&](std::uint32_t lane) {
    if (static_cast<std::uint32_t>(mm[lane]) != member) {
      fault(c, in, lane,
            fmt::format("member mask {:#x} differs from lane {}'s {:#x}",
                        static_cast<std::uint32_t>(mm[lane]), first, member));
    }
    const auto bval = static_cast<std::uint32_t>(b[lane]) & 0x1Fu;
    const auto cv = static_cast<std::uint32_t>(cc[lane]);
    const std::uint32_t clamp = cv & 0x1Fu;
    const std::uint32_t segmask = (cv >> 8) & 0x1Fu;
    const std::uint32_t max_lane = (lane & segmask) | (clamp & ~segmask);
    const std::uint32_t min_lane = lane & segmask;
    std::int64_t j = 0;
    bool in_range = false;
    switch (in.shfl) {
      case ShflMode::Up:
        j = static_cast<std::int64_t>(lane) - bval;
        in_range = j >= static_cast<std::int64_t>(max_lane);
        break;
      case ShflMode::Down:
        j = static_cast<std::int64_t>(lane) + bval;
        in_range = j <= static_cast<std::int64_t>(max_lane);
        break;
      case ShflMode::Bfly:
        j = lane ^ bval;
        in_range = j <= static_cast<std::int64_t>(max_lane);
        break;
      case ShflMode::Idx:
        j = min_lane | (bval & ~segmask);
        in_range = j <= static_cast<std::int64_t>(max_lane);
        break;
    }
    if (!in_range) j = lane;
    const auto src = static_cast<std::uint32_t>(j);
    if (((exec >> src) & 1u) == 0) {
      fault(c, in, lane,
            fmt::format("shfl.sync reads lane {}, which does not execute this shfl.sync (exited, "
                        "inactive, or not a thread of the CTA): its value is undefined",
                        src));
    }
    d[lane] = value[src];
  });
}

// An opaque policy: a hint to the GPU's L2, nothing to the values the executor computes.
void create_policy(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* fraction = c.row(in.src[0]);
  each_lane(exec, [&](std::uint32_t l) { d[l] = (std::uint64_t{1} << 63) | fraction[l]; });
}

// The executor runs one launch to its end before the next: a grid's dependents never start early,
// and a wait finds its prior grid complete.
void grid_dependency(Ctx&, const DInstr&, std::uint32_t) {}

// nanosleep: a hint to the scheduler; the executor's threads never spin on a clock.
void nanosleep(Ctx&, const DInstr&, std::uint32_t) {}

// setmaxnreg: registers are the executor's to give; only the warp's convergence is checked.
void setmaxnreg(Ctx& c, const DInstr& in, std::uint32_t exec) {
  check_aligned(c, in, exec);
}

// fence at any scope: CTAs may run on several host threads, whose atomics it orders (within a
// cluster, one host thread runs every warp in some interleaving, already sequentially consistent).
void fence(Ctx&, const DInstr&, std::uint32_t) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace

// The semantics the instruction table names.
Handler select_nanosleep(const Instr&) {
  return &nanosleep;
}
Handler select_setmaxnreg(const Instr&) {
  return &setmaxnreg;
}
Handler select_grid_dependency(const Instr&) {
  return &grid_dependency;
}
Handler select_fence(const Instr&) {
  return &fence;
}
Handler select_create_policy(const Instr&) {
  return &create_policy;
}
Handler select_mov(const Instr& in) {
  if (in.ops.at(0).kind == Operand::Kind::Vec) return &mov_unpack;
  if (in.ops.at(1).kind == Operand::Kind::Vec) return &mov_pack;
  if (in.ops.at(1).kind == Operand::Kind::Special) return &mov_special;
  return &mov_copy;
}
// cvta.param: a parameter's offset to its generic address.
void cvta_param(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  each_lane(exec, [&](std::uint32_t l) { d[l] = a[l] + kParamWindow; });
}

Handler select_cvta(const Instr& in) {
  if (in.space == Space::Param) return &cvta_param;
  return &cvta;
}
Handler select_selp(const Instr&) {
  return &selp;
}
Handler select_shfl(const Instr&) {
  return &shfl;
}
Handler select_setp(const Instr& in) {
  switch (in.type) {
    case ScalarType::B16:
    case ScalarType::U16:
      return &setp_int<std::uint16_t>;
    case ScalarType::B32:
    case ScalarType::U32:
      return &setp_int<std::uint32_t>;
    case ScalarType::S32:
      return &setp_int<std::int32_t>;
    case ScalarType::B64:
    case ScalarType::U64:
      return &setp_int<std::uint64_t>;
    case ScalarType::S64:
      return &setp_int<std::int64_t>;
    case ScalarType::F32:
      return &setp_f32;
    case ScalarType::F64:
      return &setp_float<Fmt::F64>;
    case ScalarType::F16:
      return &setp_float<Fmt::F16>;
    case ScalarType::BF16:
      return &setp_float<Fmt::BF16>;
    default:
      return nullptr;  // f16x2 compares give two predicates; the DSL has one
  }
}

}  // namespace ptxdsl::detail
