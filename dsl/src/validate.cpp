#include "validate.hpp"

#include <fmt/format.h>

#include "instruction_table.hpp"

namespace ptxdsl::detail {
namespace {

bool is_f16_kind(ScalarType t) {
  return t == ScalarType::F16 || t == ScalarType::F16x2;
}
bool is_16bit_float(ScalarType t) {
  return is_f16_kind(t) || t == ScalarType::BF16 || t == ScalarType::BF16x2;
}

bool is_float_rounding(Rounding r) {
  return r == Rounding::Rn || r == Rounding::Rz || r == Rounding::Rm || r == Rounding::Rp;
}
bool is_integer_rounding(Rounding r) {
  return r == Rounding::Rni || r == Rounding::Rzi || r == Rounding::Rmi || r == Rounding::Rpi;
}

std::string check_l2_prefetch(const Instr& in) {
  if (in.l2_prefetch != 0 && in.l2_prefetch != 64 && in.l2_prefetch != 128 &&
      in.l2_prefetch != 256) {
    return fmt::format("the L2 prefetch size must be 64, 128 or 256 bytes, got {}", in.l2_prefetch);
  }
  return {};
}

std::string check_integer_math(const Instr& in, const MathForms& m) {
  if (in.precision != Precision::Exact || in.rounding != Rounding::None) {
    return "rounding modes and .approx/.full apply to floating-point types only";
  }
  if (in.ftz) return ".ftz applies to floating-point types only";
  if (in.sat && !(m.sat_s32 && in.type == ScalarType::S32)) {
    return ".sat applies to add.s32 and sub.s32 among the integer forms";
  }
  return {};
}

std::string check_float_math(const Instr& in, const MathForms& m) {
  const ScalarType t = in.type;
  const bool approx = in.precision == Precision::Approx;
  if (is_integer_rounding(in.rounding)) {
    return "integer rounding modes (.rni, .rzi, .rmi, .rpi) apply to cvt only";
  }
  if (in.precision != Precision::Exact && in.rounding != Rounding::None) {
    return "choose .approx/.full or a rounding mode, not both";
  }
  if (approx && !m.approx.has(t)) return "has no .approx form";
  if (in.precision == Precision::Full && !(m.full && t == ScalarType::F32)) {
    return ".full exists for div.f32 only";
  }
  if (m.approx_only && !approx) return "has only the .approx form (MathMode kApprox)";
  if (in.rounding != Rounding::None) {
    if (!m.rounding) return "takes no rounding mode";
    if (is_16bit_float(t) && in.rounding != Rounding::Rn) {
      return "the 16-bit float forms round to nearest (.rn) only";
    }
  }
  if (in.ftz && !(m.ftz.has(t) || (approx && m.ftz_approx.has(t)))) {
    return ".ftz does not apply to this form";
  }
  if (!in.ftz && approx && m.approx_needs_ftz.has(t)) {
    return fmt::format("{}.approx.{} needs .ftz (MathMode kApproxFtz)", instruction(in.op).spelling,
                       ptx_name(t));
  }
  if (in.sat && !(m.sat && (t == ScalarType::F32 || is_f16_kind(t)))) {
    return ".sat applies to add, sub, mul and fma on f32 and f16 only";
  }
  return {};
}

}  // namespace

std::string check_math(const Instr& in) {
  const MathForms& m = instruction(in.op).math;
  return is_float(in.type) ? check_float_math(in, m) : check_integer_math(in, m);
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
  if (std::string p = check_l2_prefetch(in); !p.empty()) return p;
  const int bytes = in.vec * size_bytes(in.type);
  if (bytes > 16) return fmt::format("one access moves at most 16 bytes, got {}", bytes);
  return {};
}

namespace {

// 16-bit float values have no immediate form in arithmetic; only data movement takes their bits.
std::string check_immediates(const Instr& in) {
  if (!is_16bit_float(in.type) || instruction(in.op).float16_immediates) return {};
  for (const Operand& o : in.ops) {
    if (o.kind == Operand::Kind::Imm) {
      return "16-bit float immediates are not operands of arithmetic in PTX; mov the value into a "
             "register first";
    }
  }
  return {};
}

std::string check_types(const Instr& in) {
  const InstructionInfo& row = instruction(in.op);
  if (row.types.has(in.type)) return {};
  std::string allowed;
  for (int t = 0; t < kScalarTypeCount; ++t) {
    if (row.types.has(static_cast<ScalarType>(t))) {
      allowed +=
          fmt::format("{}.{}", allowed.empty() ? "" : ", ", ptx_name(static_cast<ScalarType>(t)));
    }
  }
  return fmt::format("{} takes the types {}, got .{}", row.spelling, allowed, ptx_name(in.type));
}

}  // namespace

std::string check_cvt_pack(const Instr& in) {
  if (in.type == ScalarType::UE8M0x2) {
    if (in.rounding != Rounding::Rz && in.rounding != Rounding::Rp) {
      return "a cvt to ue8m0x2 rounds with .rz or .rp";
    }
    return {};
  }
  if (is_narrow_float(in.type)) {
    if (in.rounding != Rounding::Rn || !in.sat) {
      return fmt::format("a cvt to {} is .rn.satfinite", ptx_name(in.type));
    }
    return {};
  }
  if (in.rounding != Rounding::Rn && in.rounding != Rounding::Rz) {
    return "a cvt to a 16-bit float pair rounds with .rn or .rz";
  }
  return {};
}

std::string check_cvt_pair(const Instr& in) {
  const bool widening = !is_narrow_float(in.type);
  const ScalarType narrow = widening ? in.src_type : in.type;
  const ScalarType wide = widening ? in.type : in.src_type;
  const ScalarType expected =
      narrow == ScalarType::UE8M0x2 ? ScalarType::BF16x2 : ScalarType::F16x2;
  if (!is_narrow_float(narrow) || wide != expected ||
      (!widening && narrow != ScalarType::E4M3x2 && narrow != ScalarType::E5M2x2)) {
    return fmt::format(
        "cvt between pairs converts e4m3x2, e5m2x2 and e2m1x2 to f16x2, ue8m0x2 to "
        "bf16x2, and f16x2 to e4m3x2 or e5m2x2; got {} to {}",
        ptx_name(in.src_type), ptx_name(in.type));
  }
  if (in.rounding != Rounding::Rn || in.sat == widening) {
    return widening ? "a cvt from a narrow pair is .rn" : "a cvt to a narrow pair is .rn.satfinite";
  }
  return {};
}

std::string check_cp_async(const Instr& in) {
  if (in.cache == CacheOp::Cg && in.ops.size() > 2 && in.ops[2].imm_bits != 16) {
    return "cp.async.cg copies 16 bytes only; narrower copies take .ca";
  }
  return check_l2_prefetch(in);
}

std::string check_instr(const Instr& in, Arch arch, PtxVersion version) {
  const InstructionInfo& row = instruction(in.op);
  if (std::string problem = check_types(in); !problem.empty()) return problem;
  if (std::string problem = check_immediates(in); !problem.empty()) return problem;
  if (row.check != nullptr) {
    if (std::string problem = row.check(in); !problem.empty()) return problem;
  }
  const Requirement need = row.form_needs ? newest(row.least, row.form_needs(in)) : row.least;
  if (!arch_provides(arch, need.arch)) {
    return fmt::format("needs {}{}; the module targets {}", arch_name(need.arch),
                       arch_is_specific(need.arch) ? "" : " or newer", arch_name(arch));
  }
  if (version < need.version) {
    return fmt::format("needs PTX {}.{} or newer; the module is PTX {}.{}", need.version.major,
                       need.version.minor, version.major, version.minor);
  }
  return {};
}

}  // namespace ptxdsl::detail
