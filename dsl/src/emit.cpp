#include "ptxdsl/dsl/emit.hpp"

#include <fmt/format.h>

#include <string_view>

#include "instruction_table.hpp"
#include "ptxdsl/dsl/kernel.hpp"

namespace ptxdsl {

std::string_view special_register_name(Special s) {
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
                                                "%cluster_nctaid.z",
                                                "%clock64",
                                                "%globaltimer"};
  return kNames[static_cast<int>(s)];
}

std::string mnemonic(const Instr& in) {
  return detail::mnemonic_of(in);
}

std::string register_name(RegId id) {
  static constexpr std::string_view kPrefix[] = {"%p", "%rs", "%r", "%rd", "%f", "%fd", "%rc"};
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
      if (!o.vec.empty()) {  // a tensor map and its coordinates
        Operand coords;
        coords.kind = Operand::Kind::Vec;
        coords.vec = o.vec;
        return fmt::format("[{}, {}]", base, format_operand(coords));
      }
      return o.offset == 0 ? fmt::format("[{}]", base) : fmt::format("[{}+{}]", base, o.offset);
    }
    case Operand::Kind::Label:
    case Operand::Kind::Symbol:
      return o.symbol;
    case Operand::Kind::Special:
      return std::string(special_register_name(o.special));
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
  // match.all and elect.sync write their mask (or lane) and predicate as one operand, `d|p`.
  const bool pair = detail::instruction(in.op).operands == detail::Operands::DestPair;
  for (std::size_t i = 0; i < in.ops.size(); ++i) {
    const char* sep = pair && i == 1 ? "|" : ", ";
    s += i || in.op == Op::MbarrierArrive ? sep : " ";
    s += format_operand(in.ops[i]);
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
    if (params[i].tensor_map) {  // the ISA's CUtensorMap: 128 opaque bytes, 64-byte aligned
      out += fmt::format("{}\n\t.param .align 64 .b8 {}[{}]", i ? "," : "", params[i].name,
                         kTensorMapBytes);
      continue;
    }
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
  static constexpr std::string_view kDecl[] = {".pred", ".b16", ".b32", ".b64",
                                               ".f32",  ".f64", ".b8"};
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
