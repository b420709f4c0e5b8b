#include <fmt/format.h>

#include <map>
#include <unordered_map>

#include "../instruction_table.hpp"
#include "program.hpp"
#include "ptxdsl/dsl/emit.hpp"

namespace ptxdsl::detail {
namespace {

std::uint32_t align_up(std::uint32_t v, std::uint32_t a) {
  return (v + a - 1) / a * a;
}

class Decoder {
 public:
  explicit Decoder(const Kernel& k) : k_(k) {
    p_.kernel = &k;
    std::uint32_t base = 0;
    for (int c = 0; c < kRegClassCount; ++c) {
      p_.class_base[c] = base;
      base += k.reg_count(static_cast<RegClass>(c));
    }
    p_.first_const = base;
    layout_shared();
    layout_params();
  }

  Program run() {
    const auto& body = k_.instructions();
    // Labels are not instructions: a label's pc is that of the next real instruction.
    std::unordered_map<std::uint64_t, std::uint32_t> label_pc;
    std::uint32_t pc = 0;
    for (const Instr& in : body) {
      if (in.op == Op::Label) {
        label_pc[in.ops.at(0).imm_bits] = pc;
      } else {
        ++pc;
      }
    }
    for (std::uint32_t i = 0; i < body.size(); ++i) {
      if (body[i].op == Op::Label) continue;
      index_ = i;
      DInstr d = decode_one(body[i]);
      if (d.flow == Flow::Bra) {
        const auto it = label_pc.find(body[i].ops.at(0).imm_bits);
        if (it == label_pc.end()) fail(body[i], "branch to a label that is never bound");
        d.aux = it->second;
      }
      p_.code.push_back(d);
    }
    if (p_.code.empty() || p_.code.back().flow != Flow::Ret || p_.code.back().guard != kNoSlot) {
      throw Error(
          fmt::format("kernel '{}': the CPU executor needs a finalized kernel (call "
                      "finalize() or Module::emit() first)",
                      k_.name()));
    }
    p_.slots = p_.first_const + static_cast<std::uint32_t>(p_.consts.size());
    return std::move(p_);
  }

 private:
  [[noreturn]] void fail(const Instr& in, const std::string& problem) const {
    throw Error(fmt::format("kernel '{}', instruction #{} '{}': the CPU executor cannot run it: {}",
                            k_.name(), index_, format_instr(k_, in), problem));
  }

  void layout_shared() {
    std::uint32_t end = 0;
    for (const SharedDecl& d : k_.shared()) {
      if (d.dynamic) continue;
      const std::uint32_t begin = align_up(end, d.align);
      p_.shared.push_back({begin, begin + d.bytes, d.name});
      symbols_[d.name] = begin;
      end = begin + k_.laid_out_bytes(d);  // padding past `bytes` stays out of bounds
    }
    p_.static_shared_end = end;
    for (const SharedDecl& d : k_.shared()) {
      if (!d.dynamic) continue;
      const std::uint32_t begin = align_up(end, d.align);
      p_.has_dynamic_shared = true;
      p_.dynamic_align = d.align;
      p_.shared.push_back({begin, begin, d.name});
      symbols_[d.name] = begin;
    }
  }

  void layout_params() {
    std::uint32_t offset = 0;
    for (const ParamSpec& s : k_.params()) {
      const auto bytes = static_cast<std::uint32_t>(s.size_bytes());
      offset = align_up(offset, bytes == 0 ? 1 : bytes);
      params_[s.name] = {offset, bytes};
      p_.param_offsets.push_back(offset);
      offset += bytes;
    }
    p_.param_bytes = offset;
  }

  std::uint32_t reg_slot(const Instr& in, RegId r) {
    const std::uint32_t n = k_.reg_count(r.cls);
    if (r.index == 0 || r.index > n) {
      fail(in, fmt::format("register {} is outside the kernel's {} registers of its class",
                           register_name(r), n));
    }
    return p_.class_base[static_cast<int>(r.cls)] + r.index - 1;
  }

  std::uint32_t const_slot(std::uint64_t bits) {
    const auto it = const_index_.find(bits);
    if (it != const_index_.end()) return it->second;
    const std::uint32_t slot = p_.first_const + static_cast<std::uint32_t>(p_.consts.size());
    p_.consts.push_back(bits);
    const_index_[bits] = slot;
    return slot;
  }

  // A scalar source: register, immediate, or a shared array's address.
  std::uint32_t source(const Instr& in, const Operand& o) {
    switch (o.kind) {
      case Operand::Kind::Reg:
        return reg_slot(in, o.reg);
      case Operand::Kind::Imm:
        return const_slot(o.imm_bits);
      case Operand::Kind::Symbol: {
        const auto it = symbols_.find(o.symbol);
        if (it != symbols_.end()) return const_slot(it->second);
        // A parameter's address in param space: its offset (cvta.param makes it generic).
        const auto param = params_.find(o.symbol);
        if (param == params_.end()) fail(in, fmt::format("unknown symbol '{}'", o.symbol));
        return const_slot(param->second.first);
      }
      default:
        fail(in, "unexpected operand kind");
    }
  }

  std::uint32_t dest(const Instr& in, const Operand& o) {
    if (o.kind != Operand::Kind::Reg) fail(in, "destination is not a register");
    return reg_slot(in, o.reg);
  }

  void add_src(DInstr& d, std::uint32_t slot) { d.src.at(d.nsrc++) = slot; }
  void add_dst(DInstr& d, std::uint32_t slot) { d.dst.at(d.ndst++) = slot; }

  void operands_in_order(const Instr& in, DInstr& d, std::size_t ndst) {
    if (in.ops.size() < ndst) fail(in, "missing operands");
    for (std::size_t i = 0; i < in.ops.size(); ++i) {
      if (i < ndst) {
        add_dst(d, dest(in, in.ops[i]));
      } else {
        add_src(d, source(in, in.ops[i]));
      }
    }
  }

  void address(const Instr& in, DInstr& d, const Operand& o) {
    if (o.kind != Operand::Kind::Addr) fail(in, "expected an address operand");
    d.offset = o.offset;
    if (in.space == Space::Param) {
      const auto it = params_.find(o.symbol);
      if (o.has_base || it == params_.end())
        fail(in, fmt::format("unknown parameter '{}'", o.symbol));
      if (it->second.second != static_cast<std::uint32_t>(size_bytes(in.type)) || in.vec != 1 ||
          o.offset != 0) {
        fail(in, fmt::format("reads {} bytes of the {}-byte parameter '{}'",
                             size_bytes(in.type) * in.vec, it->second.second, o.symbol));
      }
      d.aux = it->second.first;
      add_src(d, kNoSlot);
      d.nsrc = 0;  // nothing to check for initialization
      return;
    }
    if (!o.has_base) fail(in, "a symbol address outside param space");
    add_src(d, reg_slot(in, o.reg));
  }

  void memory(const Instr& in, DInstr& d, Operands layout) {
    d.vec = static_cast<std::uint8_t>(in.vec);
    d.elem_bytes = static_cast<std::uint8_t>(size_bytes(in.type));
    if (in.ops.size() < 2) fail(in, "missing operands");
    const auto values = [&](const Operand& o, bool is_dst) {
      std::vector<std::uint32_t> slots;
      if (o.kind == Operand::Kind::Vec) {
        for (RegId r : o.vec) slots.push_back(reg_slot(in, r));
      } else {
        slots.push_back(is_dst ? dest(in, o) : source(in, o));
      }
      if (slots.size() != static_cast<std::size_t>(in.vec)) {
        fail(in, fmt::format("{} registers for a .v{} access", slots.size(), in.vec));
      }
      return slots;
    };
    switch (layout) {
      case Operands::Load:
        address(in, d, in.ops[1]);
        for (std::uint32_t s : values(in.ops[0], true)) add_dst(d, s);
        break;
      case Operands::Store:
        address(in, d, in.ops[0]);
        for (std::uint32_t s : values(in.ops[1], false)) add_src(d, s);
        break;
      case Operands::AtomResult:
        if (in.ops.size() != 3 && in.ops.size() != 4) fail(in, "atom takes d, [a], b{, c}");
        add_dst(d, dest(in, in.ops[0]));
        address(in, d, in.ops[1]);
        for (std::size_t i = 2; i < in.ops.size(); ++i) add_src(d, source(in, in.ops[i]));
        break;
      default:  // AtomNoResult
        address(in, d, in.ops[0]);
        add_src(d, source(in, in.ops[1]));
        break;
    }
  }

  void mov(const Instr& in, DInstr& d) {
    if (in.ops.size() != 2) fail(in, "mov takes d, a");
    const Operand& dst = in.ops[0];
    const Operand& src = in.ops[1];
    if (dst.kind == Operand::Kind::Vec) {  // unpack
      if (dst.vec.size() != 2) fail(in, "unpack needs two halves");
      for (RegId r : dst.vec) add_dst(d, reg_slot(in, r));
      add_src(d, source(in, src));
    } else if (src.kind == Operand::Kind::Vec) {  // pack
      if (src.vec.size() != 2) fail(in, "pack needs two halves");
      add_dst(d, dest(in, dst));
      for (RegId r : src.vec) add_src(d, reg_slot(in, r));
    } else if (src.kind == Operand::Kind::Special) {
      add_dst(d, dest(in, dst));
      d.aux = static_cast<std::uint32_t>(src.special);
    } else {
      add_dst(d, dest(in, dst));
      add_src(d, source(in, src));
    }
  }

  // cp.async.bulk.tensor. Load: src = shared destination, map, mbarrier, the coordinates{, mask};
  // aux and offset2: the destination's and the mbarrier's constant offsets. Store: src = map,
  // shared source, the coordinates; aux: the source's offset. vec: the coordinates.
  void tensor_copy(const Instr& in, DInstr& d) {
    const bool load = in.op == Op::BulkTensorLoad;
    const Operand& map = in.ops.at(load ? 1 : 0);
    const auto smem = [&](const Operand& o) {
      if (o.kind != Operand::Kind::Addr || !o.has_base) fail(in, "expected a shared address");
      add_src(d, reg_slot(in, o.reg));
      return static_cast<std::uint32_t>(static_cast<std::int32_t>(o.offset));
    };
    if (load) d.aux = smem(in.ops[0]);
    add_src(d, reg_slot(in, map.reg));
    if (load) {
      d.offset2 = smem(in.ops.at(2));
    } else {
      d.aux = smem(in.ops.at(1));
    }
    for (RegId r : map.vec) add_src(d, reg_slot(in, r));
    d.vec = static_cast<std::uint8_t>(map.vec.size());
    if (load && in.ops.size() == 4) add_src(d, source(in, in.ops[3]));
    if (!load) p_.reads_async_proxy = true;
  }

  // wgmma.mma_async: the form in Program::wgmma (d.aux); the sources checked for initialization
  // are the descriptors, A's registers and scale-d's predicate (D's only where it is read).
  void wgmma(const Instr& in, DInstr& d) {
    WgmmaForm f;
    f.n = in.mma_n;
    f.k = mma_form(in.mma_a).k;
    f.a = in.mma_a;
    f.b = in.mma_b;
    f.a_in_registers = in.ops.at(1).kind == Operand::Kind::Vec;
    for (RegId r : in.ops.at(0).vec) f.d.push_back(reg_slot(in, r));
    if (f.a_in_registers) {
      for (std::size_t i = 0; i < 4; ++i) f.a_regs[i] = reg_slot(in, in.ops[1].vec.at(i));
      for (std::uint32_t s : f.a_regs) add_src(d, s);
    } else {
      f.a_desc = source(in, in.ops[1]);
      add_src(d, f.a_desc);
    }
    f.b_desc = source(in, in.ops.at(2));
    add_src(d, f.b_desc);
    const Operand& scale_d = in.ops.at(3);
    if (scale_d.kind == Operand::Kind::Reg) {
      f.scale_d = reg_slot(in, scale_d.reg);
      add_src(d, f.scale_d);
    } else {
      f.scale_d_imm = scale_d.imm_bits != 0;
    }
    const auto imm = [&](std::size_t i) {
      return static_cast<std::int32_t>(in.ops.at(i).imm_bits);
    };
    f.negate_a = imm(4) == -1;
    f.negate_b = imm(5) == -1;
    if (wgmma_transposes(in.mma_a)) {
      f.transpose_a = !f.a_in_registers && imm(6) == 1;
      f.transpose_b = imm(f.a_in_registers ? 6 : 7) == 1;
    }
    p_.reads_async_proxy = true;  // B at least is read through its descriptor
    d.aux = static_cast<std::uint32_t>(p_.wgmma.size());
    p_.wgmma.push_back(std::move(f));
  }

  DInstr decode_one(const Instr& in) {
    DInstr d;
    d.op = in.op;
    d.type = in.type;
    d.src_type = in.src_type;
    d.rounding = in.rounding;
    d.precision = in.precision;
    d.cmp = in.cmp;
    d.mul = in.mul;
    d.space = in.space;
    d.shfl = in.shfl;
    d.atom = in.atom;
    d.ftz = in.ftz;
    d.sat = in.sat;
    d.uniform = in.uniform;
    d.aligned = in.aligned;
    d.index = index_;
    if (in.guarded) {
      if (in.guard.cls != RegClass::Pred) fail(in, "guard is not a predicate");
      d.guard = reg_slot(in, in.guard);
      d.guard_negated = in.guard_negated;
    }
    const InstructionInfo& row = instruction(in.op);
    d.flow = row.flow;
    switch (row.operands) {
      case Operands::Label:
        fail(in, "label");
      case Operands::Branch:
      case Operands::None:
        break;
      case Operands::Count:
        if (in.ops.size() != 1 || in.ops[0].kind != Operand::Kind::Imm) {
          fail(in, fmt::format("{} takes one immediate count", mnemonic(in)));
        }
        d.aux = static_cast<std::uint32_t>(in.ops[0].imm_bits);
        break;
      case Operands::DestSources:
        if (in.ops.empty()) fail(in, "no operands");
        operands_in_order(in, d, 1);
        break;
      case Operands::DestPair:
        operands_in_order(in, d, 2);
        break;
      case Operands::Sources:
        operands_in_order(in, d, 0);
        break;
      case Operands::Fragments:
        // dst: D's registers; src: A's, B's, then C's, in order.
        for (std::size_t i = 0; i < in.ops.size(); ++i) {
          if (in.ops[i].kind != Operand::Kind::Vec) fail(in, "expected a register group");
          for (RegId r : in.ops[i].vec) {
            if (i == 0) {
              add_dst(d, reg_slot(in, r));
            } else {
              add_src(d, reg_slot(in, r));
            }
          }
        }
        break;
      case Operands::Wgmma:
        wgmma(in, d);
        break;
      case Operands::TensorCopy:
        tensor_copy(in, d);
        break;
      case Operands::Barrier:
        if (in.ops.empty() || in.ops.size() > 2) fail(in, "takes a barrier id{, thread count}");
        for (const Operand& o : in.ops) {
          if (o.kind != Operand::Kind::Imm) fail(in, "the barrier id and count must be immediates");
        }
        d.aux = static_cast<std::uint32_t>(in.ops[0].imm_bits);
        if (in.ops.size() == 2) d.threads = static_cast<std::uint32_t>(in.ops[1].imm_bits);
        break;
      case Operands::Mov:
        mov(in, d);
        break;
      case Operands::Load:
      case Operands::Store:
      case Operands::AtomResult:
      case Operands::AtomNoResult:
        memory(in, d, row.operands);
        break;
      case Operands::CpAsync:
        // src: shared destination base, global source base, [src-size]; offsets: aux (shared),
        // offset (global); elem_bytes: the copy size.
        if (in.ops.size() < 3) fail(in, "cp.async takes [dst], [src], cp-size{, src-size}");
        address(in, d, in.ops[0]);
        d.aux = static_cast<std::uint32_t>(static_cast<std::int32_t>(d.offset));
        address(in, d, in.ops[1]);
        d.elem_bytes = static_cast<std::uint8_t>(in.ops[2].imm_bits);
        // A cache policy, last where there is one, is a hint: not read here.
        if (in.ops.size() > (in.l2_cache_hint ? 4u : 3u)) add_src(d, source(in, in.ops[3]));
        break;
      case Operands::Address:
        if (in.ops.size() != 1) fail(in, "takes [a]");
        address(in, d, in.ops[0]);
        break;
      case Operands::Mbarrier:
        // src: mbarrier base, then the count (init) or the transaction bytes (expect_tx).
        if (in.ops.empty() || in.ops.size() > 2) fail(in, "takes [bar] and at most one value");
        address(in, d, in.ops[0]);
        if (in.ops.size() == 2) add_src(d, source(in, in.ops[1]));
        if (in.op == Op::MbarrierInit && in.ops.size() != 2) fail(in, "takes [bar], count");
        break;
      case Operands::MbarrierWait:
        // dst: the predicate; src: mbarrier base, parity.
        if (in.ops.size() != 3) fail(in, "takes p, [bar], parity");
        add_dst(d, dest(in, in.ops[0]));
        address(in, d, in.ops[1]);
        add_src(d, source(in, in.ops[2]));
        break;
      case Operands::BulkCopy:
        // src: destination base, mbarrier base, source base, size; offsets: aux (destination),
        // offset2 (mbarrier), offset (source).
        if (in.ops.size() != 4) fail(in, "takes [dst], [src], size, [bar]");
        address(in, d, in.ops[0]);
        d.aux = static_cast<std::uint32_t>(static_cast<std::int32_t>(d.offset));
        address(in, d, in.ops[3]);
        d.offset2 = d.offset;
        address(in, d, in.ops[1]);
        add_src(d, source(in, in.ops[2]));
        break;
      case Operands::TxCount:
        // src: mbarrier base, the transaction bytes.
        if (in.ops.size() != 2) fail(in, "takes [bar], tx-count");
        address(in, d, in.ops[0]);
        add_src(d, source(in, in.ops[1]));
        break;
      case Operands::AsyncRemote: {
        // src: destination base, value, mbarrier base; offsets: offset (destination), offset2
        // (mbarrier).
        if (in.ops.size() != 3) fail(in, "takes [a], b, [bar]");
        address(in, d, in.ops[0]);
        const std::int64_t to = d.offset;
        add_src(d, source(in, in.ops[1]));
        address(in, d, in.ops[2]);
        d.offset2 = d.offset;
        d.offset = to;
        d.elem_bytes = static_cast<std::uint8_t>(size_bytes(in.type));
        break;
      }
    }
    // Branches, barriers and ret are the scheduler's; every other form has a handler.
    if (d.flow == Flow::Bra || d.flow == Flow::Bar || d.flow == Flow::Ret) return d;
    d.fn = row.semantics != nullptr ? row.semantics(in) : nullptr;
    if (d.fn == nullptr) {
      fail(in, fmt::format("{} is not supported for type {}", mnemonic(in), ptx_name(in.type)));
    }
    return d;
  }

  const Kernel& k_;
  Program p_;
  std::uint32_t index_ = 0;
  std::map<std::string, std::uint32_t> symbols_;
  std::map<std::string, std::pair<std::uint32_t, std::uint32_t>> params_;  // offset, bytes
  std::unordered_map<std::uint64_t, std::uint32_t> const_index_;
};

}  // namespace

Program decode(const Kernel& k) {
  if (!k.finalized()) {
    throw Error(
        fmt::format("kernel '{}': the CPU executor needs a finalized kernel (call "
                    "finalize() or Module::emit() first)",
                    k.name()));
  }
  return Decoder(k).run();
}

RegId Program::reg_of(std::uint32_t slot) const {
  for (int c = kRegClassCount - 1; c >= 0; --c) {
    if (slot >= class_base[c] && kernel->reg_count(static_cast<RegClass>(c)) > 0 &&
        slot < class_base[c] + kernel->reg_count(static_cast<RegClass>(c))) {
      return RegId{static_cast<RegClass>(c), slot - class_base[c] + 1};
    }
  }
  return RegId{};
}

std::string describe_slot(const Program& p, std::uint32_t slot) {
  if (slot >= p.first_const)
    return fmt::format("constant {:#x}", p.consts.at(slot - p.first_const));
  const RegId r = p.reg_of(slot);
  const std::string& name = p.kernel->reg_name(r);
  return name.empty() ? register_name(r) : fmt::format("{} ({})", register_name(r), name);
}

}  // namespace ptxdsl::detail
