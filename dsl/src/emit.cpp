#include "ptxdsl/dsl/emit.hpp"

#include <fmt/format.h>

#include <string_view>

#include "ptxdsl/dsl/kernel.hpp"

namespace ptxdsl {
namespace {

std::string_view op_name(Op op) {
  switch (op) {
    case Op::Mov:
      return "mov";
    case Op::Add:
      return "add";
    case Op::Sub:
      return "sub";
    case Op::Mul:
      return "mul";
    case Op::Mad:
      return "mad";
    case Op::Fma:
      return "fma";
    case Op::Div:
      return "div";
    case Op::Rem:
      return "rem";
    case Op::Min:
      return "min";
    case Op::Max:
      return "max";
    case Op::Abs:
      return "abs";
    case Op::Neg:
      return "neg";
    case Op::And:
      return "and";
    case Op::Or:
      return "or";
    case Op::Xor:
      return "xor";
    case Op::Not:
      return "not";
    case Op::Shl:
      return "shl";
    case Op::Shr:
      return "shr";
    case Op::Rcp:
      return "rcp";
    case Op::Sqrt:
      return "sqrt";
    case Op::Rsqrt:
      return "rsqrt";
    case Op::Ex2:
      return "ex2";
    case Op::Lg2:
      return "lg2";
    case Op::Setp:
      return "setp";
    case Op::Selp:
      return "selp";
    case Op::Cvt:
    case Op::CvtPack:
      return "cvt";
    case Op::Cvta:
      return "cvta";
    case Op::Ld:
      return "ld";
    case Op::St:
      return "st";
    case Op::Atom:
      return "atom";
    case Op::Red:
      return "red";
    case Op::CpAsync:
      return "cp.async";
    case Op::CpAsyncCommit:
      return "cp.async.commit_group";
    case Op::CpAsyncWait:
      return "cp.async.wait_group";
    case Op::CreatePolicy:
      return "createpolicy.fractional";
    case Op::Prefetch:
      return "prefetch";
    case Op::MbarrierInit:
      return "mbarrier.init";
    case Op::MbarrierArrive:
      return "mbarrier.arrive";
    case Op::MbarrierWait:
      return "mbarrier.try_wait.parity";
    case Op::FenceMbarrierInit:
      return "fence.mbarrier_init.release.cluster";
    case Op::FenceGpu:
      return "fence.acq_rel.gpu";
    case Op::CpAsyncBulk:
      return "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes";
    case Op::Mapa:
      return "mapa";
    case Op::BarClusterArrive:
      return "barrier.cluster.arrive";
    case Op::BarClusterWait:
      return "barrier.cluster.wait";
    case Op::FenceCluster:
      return "fence.acq_rel.cluster";
    case Op::FenceProxyAsync:
      return "fence.proxy.async";
    case Op::MbarrierExpectTx:
      return "mbarrier.expect_tx";
    case Op::MbarrierCompleteTx:
      return "mbarrier.complete_tx";
    case Op::StAsync:
      return "st.async";
    case Op::RedAsync:
      return "red.async.relaxed.cluster";
    case Op::GridDepLaunch:
      return "griddepcontrol.launch_dependents";
    case Op::GridDepWait:
      return "griddepcontrol.wait";
    case Op::Shfl:
      return "shfl.sync";
    case Op::Bar:
      return "bar.sync";
    case Op::Bra:
      return "bra";
    case Op::Label:
      return "";
    case Op::Ret:
      return "ret";
  }
  return "?";
}

std::string_view rounding_name(Rounding r) {
  switch (r) {
    case Rounding::None:
      return "";
    case Rounding::Rn:
      return ".rn";
    case Rounding::Rz:
      return ".rz";
    case Rounding::Rm:
      return ".rm";
    case Rounding::Rp:
      return ".rp";
    case Rounding::Rni:
      return ".rni";
    case Rounding::Rzi:
      return ".rzi";
    case Rounding::Rmi:
      return ".rmi";
    case Rounding::Rpi:
      return ".rpi";
  }
  return "";
}

std::string_view cmp_name(Cmp c) {
  static constexpr std::string_view kNames[] = {"eq",  "ne",  "lt",  "le",  "gt",  "ge",
                                                "lo",  "ls",  "hi",  "hs",  "equ", "neu",
                                                "ltu", "leu", "gtu", "geu", "num", "nan"};
  return kNames[static_cast<int>(c)];
}

std::string_view space_name(Space s) {
  switch (s) {
    case Space::None:
      return "";
    case Space::Global:
      return ".global";
    case Space::Shared:
      return ".shared";
    case Space::Param:
      return ".param";
    case Space::SharedCluster:
      return ".shared::cluster";
  }
  return "";
}

std::string_view cache_name(CacheOp c) {
  static constexpr std::string_view kNames[] = {"",    ".ca", ".cg", ".cs",
                                                ".lu", ".cv", ".wb", ".wt"};
  return kNames[static_cast<int>(c)];
}

std::string_view eviction_name(Eviction e) {
  static constexpr std::string_view kNames[] = {"", ".L1::no_allocate", ".L1::evict_last",
                                                ".L1::evict_first"};
  return kNames[static_cast<int>(e)];
}

std::string_view l2_evict_name(L2Evict e) {
  static constexpr std::string_view kNames[] = {".L2::evict_normal", ".L2::evict_first",
                                                ".L2::evict_last", ".L2::evict_unchanged"};
  return kNames[static_cast<int>(e)];
}

std::string_view prefetch_level_name(PrefetchLevel level) {
  static constexpr std::string_view kNames[] = {".L1", ".L2", ".L2::evict_last",
                                                ".L2::evict_normal"};
  return kNames[static_cast<int>(level)];
}

std::string_view sem_name(MemSem m) {
  static constexpr std::string_view kNames[] = {"", ".relaxed", ".release", ".acquire"};
  return kNames[static_cast<int>(m)];
}

// `.sem.scope` of an mbarrier operation, when it has them.
std::string mbarrier_order(const Instr& in) {
  if (in.sem == MemSem::None) return {};
  return std::string(sem_name(in.sem)) + (in.scope == Scope::Cluster ? ".cluster" : ".cta");
}

// The state space an mbarrier operation names: its own CTA's (`.shared::cta`) or a cluster
// address (`.shared::cluster`).
std::string_view mbarrier_space(const Instr& in) {
  return in.space == Space::SharedCluster ? ".shared::cluster" : ".shared::cta";
}

std::string l2_hints(const Instr& in) {
  std::string s = in.l2_cache_hint ? ".L2::cache_hint" : "";
  if (in.l2_prefetch != 0) s += fmt::format(".L2::{}B", in.l2_prefetch);
  return s;
}

std::string_view shfl_name(ShflMode m) {
  static constexpr std::string_view kNames[] = {".up", ".down", ".bfly", ".idx"};
  return kNames[static_cast<int>(m)];
}

std::string_view special_name(Special s) {
  static constexpr std::string_view kNames[] = {"%tid.x",
                                                "%tid.y",
                                                "%tid.z",
                                                "%ntid.x",
                                                "%ntid.y",
                                                "%ntid.z",
                                                "%ctaid.x",
                                                "%ctaid.y",
                                                "%ctaid.z",
                                                "%nctaid.x",
                                                "%nctaid.y",
                                                "%nctaid.z",
                                                "%laneid",
                                                "%warpid",
                                                "%nwarpid",
                                                "%smid",
                                                "%cluster_ctarank",
                                                "%cluster_nctarank",
                                                "%clusterid.x",
                                                "%clusterid.y",
                                                "%clusterid.z",
                                                "%nclusterid.x",
                                                "%nclusterid.y",
                                                "%nclusterid.z",
                                                "%cluster_ctaid.x",
                                                "%cluster_ctaid.y",
                                                "%cluster_ctaid.z",
                                                "%cluster_nctaid.x",
                                                "%cluster_nctaid.y",
                                                "%cluster_nctaid.z"};
  return kNames[static_cast<int>(s)];
}

// Types as logic instructions spell them: and/or/xor/not/shl take bit types.
ScalarType logic_type(ScalarType t) {
  return t == ScalarType::Pred ? t : bits_type(size_bytes(t));
}

std::string float_modifiers(const Instr& in) {
  std::string s;
  const bool floating = is_float(in.type);
  if (floating) {
    if (in.precision == Precision::Approx) {
      s += ".approx";
    } else if (in.precision == Precision::Full) {
      s += ".full";
    } else {
      Rounding r = in.rounding;
      // The exact forms must name their rounding; round to nearest unless asked otherwise.
      const bool needs_rounding = in.op == Op::Div || in.op == Op::Rcp || in.op == Op::Sqrt ||
                                  in.op == Op::Fma || in.op == Op::Mad;
      if (r == Rounding::None && needs_rounding) r = Rounding::Rn;
      s += rounding_name(r);
    }
    if (in.ftz) s += ".ftz";
  }
  if (in.sat) s += ".sat";
  return s;
}

std::string mul_modifier(MulMode m) {
  switch (m) {
    case MulMode::None:
      return "";
    case MulMode::Lo:
      return ".lo";
    case MulMode::Hi:
      return ".hi";
    case MulMode::Wide:
      return ".wide";
  }
  return "";
}

}  // namespace

std::string mnemonic(const Instr& in) {
  std::string s(op_name(in.op));
  const auto type = [&](ScalarType t) { return fmt::format(".{}", ptx_name(t)); };
  if (is_math_op(in.op)) return s + mul_modifier(in.mul) + float_modifiers(in) + type(in.type);
  switch (in.op) {
    case Op::Mov:
      return s + type(storage_type(in.type));
    case Op::And:
    case Op::Or:
    case Op::Xor:
    case Op::Not:
    case Op::Shl:
      return s + type(logic_type(in.type));
    case Op::Shr:
      return s + type(in.type);
    case Op::Setp:
      return s + "." + std::string(cmp_name(in.cmp)) + (in.ftz ? ".ftz" : "") + type(in.type);
    case Op::Selp:
      return s + type(storage_type(in.type));
    case Op::Cvt:
      return s + std::string(rounding_name(in.rounding)) + (in.ftz ? ".ftz" : "") +
             (in.sat ? ".sat" : "") + type(in.type) + type(in.src_type);
    case Op::CvtPack:
      return s + std::string(rounding_name(in.rounding)) + (in.sat ? ".satfinite" : "") +
             type(in.type) + type(in.src_type);
    case Op::Cvta:
      return s + ".to" + std::string(space_name(in.space)) + type(in.type);
    case Op::Ld:
    case Op::St:
      return s + std::string(space_name(in.space)) + std::string(cache_name(in.cache)) +
             (in.non_coherent ? ".nc" : "") + std::string(eviction_name(in.eviction)) +
             l2_hints(in) + (in.vec > 1 ? fmt::format(".v{}", in.vec) : "") +
             type(storage_type(in.type));
    case Op::Atom:
    case Op::Red:
      return s + std::string(space_name(in.space)) + (in.atom == AtomOp::Inc ? ".inc" : ".add") +
             type(in.type);
    case Op::Shfl:
      return s + std::string(shfl_name(in.shfl)) + type(in.type);
    case Op::CpAsync:
      return s + std::string(cache_name(in.cache)) + ".shared.global" + l2_hints(in);
    case Op::Prefetch:
      return s + std::string(space_name(in.space)) + std::string(prefetch_level_name(in.prefetch));
    case Op::CreatePolicy:
      return s + std::string(l2_evict_name(in.l2_primary)) +
             (in.l2_secondary ? std::string(l2_evict_name(*in.l2_secondary)) : "") + ".b64";
    case Op::MbarrierInit:
      return s + ".shared.b64";
    case Op::MbarrierArrive:
      return s + (in.ops.size() > 1 ? ".expect_tx" : "") + mbarrier_order(in) +
             std::string(mbarrier_space(in)) + ".b64";
    case Op::MbarrierWait:
      return s + mbarrier_order(in) + ".shared::cta.b64";
    case Op::MbarrierExpectTx:
    case Op::MbarrierCompleteTx:
      return s + mbarrier_order(in) + std::string(mbarrier_space(in)) + ".b64";
    case Op::Mapa:
      return s + std::string(space_name(in.space)) + type(in.type);
    case Op::BarClusterArrive:
    case Op::BarClusterWait:
      return s + std::string(sem_name(in.sem)) + (in.aligned ? ".aligned" : "");
    case Op::FenceProxyAsync:
      return s + ".shared::cta";
    case Op::StAsync:
      return s + ".shared::cluster.mbarrier::complete_tx::bytes" + type(in.type);
    case Op::RedAsync:
      return s + ".shared::cluster.mbarrier::complete_tx::bytes.add" + type(in.type);
    case Op::FenceCluster:
      return s;
    case Op::FenceMbarrierInit:
    case Op::FenceGpu:
    case Op::CpAsyncBulk:
    case Op::CpAsyncCommit:
    case Op::CpAsyncWait:
    case Op::GridDepLaunch:
    case Op::GridDepWait:
    case Op::Bar:
    case Op::Ret:
    case Op::Label:
      return s;
    case Op::Bra:
      return s + (in.uniform ? ".uni" : "");
    default:  // the arithmetic families, above
      break;
  }
  return s;
}

std::string register_name(RegId id) {
  static constexpr std::string_view kPrefix[] = {"%p", "%rs", "%r", "%rd", "%f", "%fd"};
  return fmt::format("{}{}", kPrefix[static_cast<int>(id.cls)], id.index);
}

namespace {

std::string format_immediate(const Operand& o) {
  switch (o.imm_type) {
    case ScalarType::F32:
      return fmt::format("0f{:08X}", static_cast<std::uint32_t>(o.imm_bits));
    case ScalarType::F64:
      return fmt::format("0d{:016X}", o.imm_bits);
    case ScalarType::F16:
    case ScalarType::BF16:
    case ScalarType::B16:
      return fmt::format("0x{:04X}", static_cast<std::uint16_t>(o.imm_bits));
    case ScalarType::F16x2:
    case ScalarType::BF16x2:
      return fmt::format("0x{:08X}", static_cast<std::uint32_t>(o.imm_bits));
    case ScalarType::B32:
    case ScalarType::B64:
      return fmt::format("0x{:X}", o.imm_bits);
    case ScalarType::S32:
      return fmt::format("{}", static_cast<std::int32_t>(o.imm_bits));
    case ScalarType::S64:
      return fmt::format("{}", static_cast<std::int64_t>(o.imm_bits));
    default:
      return fmt::format("{}", o.imm_bits);
  }
}

std::string format_operand(const Operand& o) {
  switch (o.kind) {
    case Operand::Kind::Reg:
      return register_name(o.reg);
    case Operand::Kind::Vec: {
      std::string s = "{";
      for (std::size_t i = 0; i < o.vec.size(); ++i) {
        s += (i ? ", " : "") + register_name(o.vec[i]);
      }
      return s + "}";
    }
    case Operand::Kind::Imm:
      return format_immediate(o);
    case Operand::Kind::Addr: {
      const std::string base = o.has_base ? register_name(o.reg) : o.symbol;
      return o.offset == 0 ? fmt::format("[{}]", base) : fmt::format("[{}+{}]", base, o.offset);
    }
    case Operand::Kind::Label:
    case Operand::Kind::Symbol:
      return o.symbol;
    case Operand::Kind::Special:
      return std::string(special_name(o.special));
  }
  return "?";
}

}  // namespace

std::string format_instr(const Kernel& k, const Instr& in) {
  if (in.op == Op::Label) return in.ops.at(0).symbol + ":";
  std::string s;
  if (in.guarded) s += fmt::format("@{}{} ", in.guard_negated ? "!" : "", register_name(in.guard));
  s += mnemonic(in);
  // mbarrier.arrive's state result is not used: the sink `_` takes it.
  if (in.op == Op::MbarrierArrive) s += " _";
  for (std::size_t i = 0; i < in.ops.size(); ++i) {
    s += (i || in.op == Op::MbarrierArrive ? ", " : " ") + format_operand(in.ops[i]);
  }
  s += ";";
  if (!in.comment.empty()) s += "  // " + in.comment;
  (void)k;
  return s;
}

std::string emit_kernel(const Kernel& k) {
  std::string out;
  for (const SharedDecl& d : k.shared()) {
    if (d.dynamic) {
      out += fmt::format(".extern .shared .align {} .b8 {}[];\n", d.align, d.name);
    } else {
      out += fmt::format(".shared .align {} .b8 {}[{}];\n", d.align, d.name, k.laid_out_bytes(d));
    }
  }
  if (!k.shared().empty()) out += "\n";
  out += fmt::format(".visible .entry {}(", k.name());
  const auto& params = k.params();
  for (std::size_t i = 0; i < params.size(); ++i) {
    // .param has no bf16 or pair types: 16-bit floats and pairs are declared by their bits.
    out += fmt::format("{}\n\t.param .{} {}", i ? "," : "", ptx_name(storage_type(params[i].type)),
                       params[i].name);
  }
  out += params.empty() ? ")\n" : "\n)\n";
  const KernelContract c = k.contract();
  if (c.block_threads != 0) {
    out +=
        fmt::format("{} {}, 1, 1\n", c.block_required ? ".reqntid" : ".maxntid", c.block_threads);
  }
  if (k.max_registers() != 0) out += fmt::format(".maxnreg {}\n", k.max_registers());
  if (c.cluster.count() != 0) {
    out += fmt::format(".reqnctapercluster {}, {}, {}\n", c.cluster.x, c.cluster.y, c.cluster.z);
  }
  if (c.explicit_cluster) out += ".explicitcluster\n";
  out += "{\n";
  static constexpr std::string_view kDecl[] = {".pred", ".b16", ".b32", ".b64", ".f32", ".f64"};
  for (int c2 = 0; c2 < kRegClassCount; ++c2) {
    const std::uint32_t n = k.reg_count(static_cast<RegClass>(c2));
    if (n == 0) continue;
    RegId probe{static_cast<RegClass>(c2), 0};
    std::string prefix = register_name(probe);
    prefix.pop_back();  // drop the "0"
    out += fmt::format("\t.reg {} {}<{}>;\n", kDecl[c2], prefix, n + 1);
  }
  out += "\n";
  for (const Instr& in : k.instructions()) {
    out += in.op == Op::Label ? "" : "\t";
    out += format_instr(k, in);
    out += "\n";
  }
  out += "}\n";
  return out;
}

}  // namespace ptxdsl
