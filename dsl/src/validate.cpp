#include "validate.hpp"

#include <fmt/format.h>

namespace ptxdsl::detail {
namespace {

bool is_f16_kind(ScalarType t) {
  return t == ScalarType::F16 || t == ScalarType::F16x2;
}
bool is_bf16_kind(ScalarType t) {
  return t == ScalarType::BF16 || t == ScalarType::BF16x2;
}
bool is_16bit_float(ScalarType t) {
  return is_f16_kind(t) || is_bf16_kind(t);
}

bool is_float_rounding(Rounding r) {
  return r == Rounding::Rn || r == Rounding::Rz || r == Rounding::Rm || r == Rounding::Rp;
}
bool is_integer_rounding(Rounding r) {
  return r == Rounding::Rni || r == Rounding::Rzi || r == Rounding::Rmi || r == Rounding::Rpi;
}

bool is_add_sub_mul(Op op) {
  return op == Op::Add || op == Op::Sub || op == Op::Mul;
}

std::string check_integer_math(const Instr& in) {
  if (in.precision != Precision::Exact || in.rounding != Rounding::None) {
    return "rounding modes and .approx/.full apply to floating-point types only";
  }
  if (in.ftz) return ".ftz applies to floating-point types only";
  if (in.sat && !((in.op == Op::Add || in.op == Op::Sub) && in.type == ScalarType::S32)) {
    return ".sat applies to add.s32 and sub.s32 among the integer forms";
  }
  return {};
}

bool approx_allowed(const Instr& in) {
  const ScalarType t = in.type;
  switch (in.op) {
    case Op::Div:
    case Op::Sqrt:
    case Op::Lg2:
      return t == ScalarType::F32;
    case Op::Rcp:
    case Op::Rsqrt:
      return t == ScalarType::F32 || t == ScalarType::F64;
    case Op::Ex2:
      return true;
    default:
      return false;
  }
}

bool ftz_allowed(const Instr& in) {
  const ScalarType t = in.type;
  if (t == ScalarType::F32) return true;
  if (is_f16_kind(t)) return in.op != Op::Ex2;
  if (is_bf16_kind(t)) return in.op == Op::Ex2;
  return t == ScalarType::F64 && (in.op == Op::Rcp || in.op == Op::Rsqrt) &&
         in.precision == Precision::Approx;
}

std::string check_float_math(const Instr& in) {
  const ScalarType t = in.type;
  const bool approx_only = in.op == Op::Rsqrt || in.op == Op::Ex2 || in.op == Op::Lg2;
  if (is_integer_rounding(in.rounding)) {
    return "integer rounding modes (.rni, .rzi, .rmi, .rpi) apply to cvt only";
  }
  if (in.precision != Precision::Exact && in.rounding != Rounding::None) {
    return "choose .approx/.full or a rounding mode, not both";
  }
  if (in.precision == Precision::Approx && !approx_allowed(in)) return "has no .approx form";
  if (in.precision == Precision::Full && !(in.op == Op::Div && t == ScalarType::F32)) {
    return ".full exists for div.f32 only";
  }
  if (approx_only && in.precision != Precision::Approx) {
    return "has only the .approx form (MathMode kApprox)";
  }
  if (in.rounding != Rounding::None) {
    const bool takes_rounding = is_add_sub_mul(in.op) || in.op == Op::Fma || in.op == Op::Div ||
                                in.op == Op::Rcp || in.op == Op::Sqrt;
    if (!takes_rounding) return "takes no rounding mode";
    if (is_16bit_float(t) && in.rounding != Rounding::Rn) {
      return "the 16-bit float forms round to nearest (.rn) only";
    }
  }
  if (in.ftz && !ftz_allowed(in)) return ".ftz does not apply to this form";
  if (!in.ftz && is_bf16_kind(t) && in.op == Op::Ex2) {
    return "ex2.approx on bf16 needs .ftz (MathMode kApproxFtz)";
  }
  if (!in.ftz && t == ScalarType::F64 && in.op == Op::Rcp && in.precision == Precision::Approx) {
    return "rcp.approx.f64 needs .ftz (MathMode kApproxFtz)";
  }
  if (in.sat) {
    const bool sat_ok =
        (t == ScalarType::F32 || is_f16_kind(t)) && (is_add_sub_mul(in.op) || in.op == Op::Fma);
    if (!sat_ok) return ".sat applies to add, sub, mul and fma on f32 and f16 only";
  }
  return {};
}

std::string check_setp(const Instr& in) {
  const ScalarType t = in.type;
  const auto c = static_cast<int>(in.cmp);
  const bool ordered = c <= static_cast<int>(Cmp::Ge);
  const bool unsigned_only =
      in.cmp == Cmp::Lo || in.cmp == Cmp::Ls || in.cmp == Cmp::Hi || in.cmp == Cmp::Hs;
  if (is_bits(t)) {
    if (in.cmp != Cmp::Eq && in.cmp != Cmp::Ne) return "bit types compare with eq and ne only";
  } else if (is_signed_int(t)) {
    if (!ordered) return "signed integers compare with eq, ne, lt, le, gt and ge";
  } else if (is_unsigned_int(t)) {
    if (!ordered && !unsigned_only) {
      return "unsigned integers compare with eq, ne, lt, le, gt, ge, lo, ls, hi and hs";
    }
  } else if (unsigned_only) {
    return "floats compare with eq, ne, lt, le, gt, ge, equ, neu, ltu, leu, gtu, geu, num and nan";
  }
  if (in.ftz && t != ScalarType::F32 && t != ScalarType::F16) {
    return ".ftz applies to setp on f32 and f16 only";
  }
  return {};
}

std::string check_cvt(const Instr& in) {
  const ScalarType to = in.type, from = in.src_type;
  const Rounding r = in.rounding;
  if (is_float(to) && is_float(from)) {
    if (to == from) {
      if (r != Rounding::None && !is_integer_rounding(r)) {
        return "a cvt between equal float types rounds to an integer (.rni, .rzi, .rmi, .rpi) or "
               "not at all";
      }
    } else if (size_bytes(to) > size_bytes(from)) {
      if (r != Rounding::None) return "a widening float cvt is exact and takes no rounding mode";
    } else if (size_bytes(to) < size_bytes(from)) {
      if (!is_float_rounding(r)) return "a narrowing float cvt needs .rn, .rz, .rm or .rp";
    } else if (r != Rounding::None && !is_float_rounding(r)) {
      return "a cvt between f16 and bf16 rounds with .rn, .rz, .rm or .rp";
    }
  } else if (is_float(to)) {
    if (!is_float_rounding(r)) return "an integer-to-float cvt needs .rn, .rz, .rm or .rp";
  } else if (is_float(from)) {
    if (!is_integer_rounding(r)) return "a float-to-integer cvt needs .rni, .rzi, .rmi or .rpi";
  } else if (r != Rounding::None) {
    return "an integer-to-integer cvt takes no rounding mode";
  }
  if (in.ftz && to != ScalarType::F32 && from != ScalarType::F32) {
    return ".ftz applies to cvt with an f32 source or destination only";
  }
  return {};
}

std::string check_memory(const Instr& in) {
  if (in.op == Op::Ld && (in.cache == CacheOp::Wb || in.cache == CacheOp::Wt)) {
    return "loads take the cache operators .ca, .cg, .cs, .lu and .cv";
  }
  if (in.op == Op::St &&
      (in.cache == CacheOp::Ca || in.cache == CacheOp::Lu || in.cache == CacheOp::Cv)) {
    return "stores take the cache operators .wb, .cg, .cs and .wt";
  }
  if (in.cache != CacheOp::None && in.eviction != Eviction::None) {
    return "a cache operator and an L1 eviction priority do not combine";
  }
  if (in.eviction != Eviction::None && in.space != Space::Global) {
    return "L1 eviction priorities apply to global memory only";
  }
  if ((in.l2_cache_hint || in.l2_prefetch != 0) && in.space != Space::Global) {
    return "L2 cache hints apply to global memory only";
  }
  if (in.l2_prefetch != 0 && in.op != Op::Ld) return "an L2 prefetch size applies to loads only";
  if (in.l2_prefetch != 0 && in.l2_prefetch != 64 && in.l2_prefetch != 128 &&
      in.l2_prefetch != 256) {
    return fmt::format("the L2 prefetch size must be 64, 128 or 256 bytes, got {}", in.l2_prefetch);
  }
  const int bytes = in.vec * size_bytes(in.type);
  if (bytes > 16) return fmt::format("one access moves at most 16 bytes, got {}", bytes);
  return {};
}

// 16-bit float values have no immediate form in arithmetic; only data movement takes their bits.
std::string check_immediates(const Instr& in) {
  if (!is_16bit_float(in.type) || in.op == Op::Mov || in.op == Op::Selp || in.op == Op::St) {
    return {};
  }
  for (const Operand& o : in.ops) {
    if (o.kind == Operand::Kind::Imm) {
      return "16-bit float immediates are not operands of arithmetic in PTX; mov the value into a "
             "register first";
    }
  }
  return {};
}

std::string check_form(const Instr& in) {
  if (std::string p = check_immediates(in); !p.empty()) return p;
  if (is_math_op(in.op)) return is_float(in.type) ? check_float_math(in) : check_integer_math(in);
  switch (in.op) {
    case Op::Setp:
      return check_setp(in);
    case Op::Cvt:
      return check_cvt(in);
    case Op::CvtPack:
      if (in.rounding != Rounding::Rn && in.rounding != Rounding::Rz) {
        return "a cvt to a 16-bit float pair rounds with .rn or .rz";
      }
      return {};
    case Op::Ld:
    case Op::St:
      return check_memory(in);
    case Op::CpAsync:
      if (in.cache == CacheOp::Cg && in.ops.size() > 2 && in.ops[2].imm_bits != 16) {
        return "cp.async.cg copies 16 bytes only; narrower copies take .ca";
      }
      if (in.l2_prefetch != 0 && in.l2_prefetch != 64 && in.l2_prefetch != 128 &&
          in.l2_prefetch != 256) {
        return fmt::format("the L2 prefetch size must be 64, 128 or 256 bytes, got {}",
                           in.l2_prefetch);
      }
      return {};
    default:
      return {};
  }
}

struct Requirement {
  Arch arch = Arch::Sm80;
  PtxVersion version{7, 0};
};

// Clusters came with sm_90 and PTX 7.8; the memory-ordering qualifiers, the async proxy fence and
// the transaction-count mbarrier operations with PTX 8.0; st.async and red.async with PTX 8.1.
// sm_80 (the default Requirement) where the form is not a cluster one.
Requirement cluster_requirement(const Instr& in) {
  switch (in.op) {
    case Op::Mov:
      if (in.ops.size() == 2 && in.ops[1].kind == Operand::Kind::Special &&
          is_cluster_special(in.ops[1].special)) {
        return {Arch::Sm90, {7, 8}};
      }
      return {};
    case Op::Ld:
    case Op::St:
      return in.space == Space::SharedCluster ? Requirement{Arch::Sm90, {7, 8}} : Requirement{};
    case Op::Mapa:
    case Op::FenceCluster:
      return {Arch::Sm90, {7, 8}};
    case Op::BarClusterArrive:
    case Op::BarClusterWait:
      return {Arch::Sm90, in.sem == MemSem::None ? PtxVersion{7, 8} : PtxVersion{8, 0}};
    case Op::MbarrierArrive:
    case Op::MbarrierWait:
      return in.sem == MemSem::None ? Requirement{} : Requirement{Arch::Sm90, {8, 0}};
    case Op::FenceProxyAsync:
    case Op::MbarrierExpectTx:
    case Op::MbarrierCompleteTx:
      return {Arch::Sm90, {8, 0}};
    case Op::StAsync:
    case Op::RedAsync:
      return {Arch::Sm90, {8, 1}};
    default:
      return {};
  }
}

// The oldest target and PTX version an instruction form needs, where that is newer than sm_80 /
// PTX 7.0 (the oldest pair a module may have).
Requirement requirement(const Instr& in) {
  const ScalarType t = in.type;
  if (is_bf16_kind(t) && (is_add_sub_mul(in.op) || in.op == Op::Ex2)) return {Arch::Sm90, {7, 8}};
  if (in.op == Op::Setp && t == ScalarType::BF16) return {Arch::Sm90, {7, 8}};
  if (in.op == Op::Cvt && (t == ScalarType::BF16 || in.src_type == ScalarType::BF16)) {
    // sm_80 converts bf16 only to and from f32.
    if (t == ScalarType::F32) return {Arch::Sm80, {7, 1}};
    if (in.src_type != ScalarType::F32) return {Arch::Sm90, {7, 8}};
  }
  if ((in.op == Op::Ld || in.op == Op::St) &&
      (in.eviction != Eviction::None || in.l2_cache_hint || in.l2_prefetch != 0)) {
    return {Arch::Sm80, {7, 4}};
  }
  if (in.op == Op::CreatePolicy) return {Arch::Sm80, {7, 4}};
  if (Requirement r = cluster_requirement(in); r.arch != Arch::Sm80) return r;
  if (in.op == Op::GridDepLaunch || in.op == Op::GridDepWait) return {Arch::Sm90, {7, 8}};
  // mbarrier.init is sm_80's; arrive with the sink `_` and try_wait sm_90's (PTX 7.8); expect_tx,
  // the bulk copy and the init fence came with PTX 8.0.
  if (in.op == Op::MbarrierWait) return {Arch::Sm90, {7, 8}};
  if (in.op == Op::MbarrierArrive)
    return {Arch::Sm90, in.ops.size() > 1 ? PtxVersion{8, 0} : PtxVersion{7, 8}};
  if (in.op == Op::CpAsyncBulk || in.op == Op::FenceMbarrierInit) return {Arch::Sm90, {8, 0}};
  if (in.op == Op::Prefetch &&
      (in.prefetch == PrefetchLevel::L2EvictLast || in.prefetch == PrefetchLevel::L2EvictNormal)) {
    return {Arch::Sm80, {7, 4}};
  }
  if (in.op == Op::CpAsync && (in.l2_cache_hint || in.l2_prefetch != 0)) {
    return {Arch::Sm80, {7, 4}};
  }
  return {};
}

}  // namespace

std::string check_instr(const Instr& in, Arch arch, PtxVersion version) {
  if (std::string problem = check_form(in); !problem.empty()) return problem;
  const Requirement need = requirement(in);
  if (arch < need.arch) {
    return fmt::format("needs {} or newer; the module targets {}", arch_name(need.arch),
                       arch_name(arch));
  }
  if (version < need.version) {
    return fmt::format("needs PTX {}.{} or newer; the module is PTX {}.{}", need.version.major,
                       need.version.minor, version.major, version.minor);
  }
  return {};
}

}  // namespace ptxdsl::detail
