#include "param_alignment.hpp"

#include "instruction_table.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <unordered_map>

namespace ptxdsl::detail {
namespace {

// Granularities are powers of two; past this they are as good as "any multiple".
constexpr std::uint64_t kMaxGranularity = std::uint64_t{1} << 32;

std::uint64_t lowest_power_of_two(std::uint64_t v) {
  return v == 0 ? kMaxGranularity : std::min(kMaxGranularity, v & (~v + 1));
}

// Per parameter: 0 not involved; pointers 1 when based on it; scalars the coefficient's
// granularity.
using Provenance = std::vector<std::uint64_t>;

std::uint64_t key(RegId r) {
  return (std::uint64_t{static_cast<std::uint8_t>(r.cls)} << 32) | r.index;
}

class Analysis {
 public:
  Analysis(const std::vector<Instr>& body, std::vector<ParamSpec>& params)
      : body_(body), params_(params) {
    for (std::size_t i = 0; i < params_.size(); ++i) index_[params_[i].name] = i;
  }

  void run() {
    // Joins only lower granularities or add parameters, so this converges; the bound is a guard.
    for (int pass = 0; pass < 64; ++pass) {
      changed_ = false;
      for (const Instr& in : body_) transfer(in);
      if (!changed_) break;
    }
    for (const Instr& in : body_) access(in);
  }

 private:
  const Provenance* of(const Operand& o) const {
    if (o.kind != Operand::Kind::Reg && !(o.kind == Operand::Kind::Addr && o.has_base)) {
      return nullptr;
    }
    const auto it = regs_.find(key(o.reg));
    return it == regs_.end() ? nullptr : &it->second;
  }
  std::uint64_t immediate(const Operand& o) const {
    return o.kind == Operand::Kind::Imm ? o.imm_bits : 0;
  }

  // The register's value is the join of every definition's: a parameter involved in any of them
  // is involved, at the smallest granularity.
  void join(const Operand& d, const Provenance& p) {
    if (d.kind != Operand::Kind::Reg) return;
    Provenance& cur = regs_.try_emplace(key(d.reg), Provenance(params_.size(), 0)).first->second;
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (p[i] == 0) continue;
      const std::uint64_t next = cur[i] == 0 ? p[i] : std::min(cur[i], p[i]);
      if (next != cur[i]) {
        cur[i] = next;
        changed_ = true;
      }
    }
  }

  Provenance sum(const Provenance* a, const Provenance* b) const {
    Provenance out(params_.size(), 0);
    for (const Provenance* p : {a, b}) {
      if (!p) continue;
      for (std::size_t i = 0; i < out.size(); ++i) {
        if ((*p)[i] != 0) out[i] = out[i] == 0 ? (*p)[i] : std::min(out[i], (*p)[i]);
      }
    }
    return out;
  }
  // a * b where b is a constant `factor` (0: a register, any integer).
  Provenance scaled(const Provenance* a, std::uint64_t factor) const {
    Provenance out(params_.size(), 0);
    if (!a) return out;
    const std::uint64_t f = factor == 0 ? 1 : lowest_power_of_two(factor);
    for (std::size_t i = 0; i < out.size(); ++i) {
      if ((*a)[i] != 0) out[i] = params_[i].pointer ? 1 : std::min(kMaxGranularity, (*a)[i] * f);
    }
    return out;
  }
  Provenance product(const Operand& a, const Operand& b) const {
    const Provenance pa = scaled(of(a), immediate(b)), pb = scaled(of(b), immediate(a));
    return sum(&pa, &pb);
  }
  // Anything else: the parameters stay involved, their factor is forgotten.
  Provenance mixed(const Instr& in) const {
    Provenance out(params_.size(), 0);
    for (std::size_t k = 1; k < in.ops.size(); ++k) {
      if (const Provenance* p = of(in.ops[k])) {
        for (std::size_t i = 0; i < out.size(); ++i) {
          if ((*p)[i] != 0) out[i] = 1;
        }
      }
    }
    return out;
  }

  void transfer(const Instr& in) {
    if (in.ops.empty()) return;
    const Operand& d = in.ops[0];
    switch (in.op) {
      case Op::Ld:
        if (in.space == Space::Param && in.ops.size() == 2 &&
            in.ops[1].kind == Operand::Kind::Addr && !in.ops[1].has_base) {
          const auto it = index_.find(in.ops[1].symbol);
          if (it != index_.end()) {
            Provenance p(params_.size(), 0);
            p[it->second] = 1;
            join(d, p);
          }
        }
        return;
      case Op::Mov:
      case Op::Cvt:
      case Op::Cvta:
        if (in.ops.size() == 2) {
          if (const Provenance* p = of(in.ops[1])) join(d, Provenance(*p));
        }
        return;
      case Op::Add:
      case Op::Sub:
      case Op::Min:
      case Op::Max:
      case Op::Selp:
        if (in.ops.size() >= 3) join(d, sum(of(in.ops[1]), of(in.ops[2])));
        return;
      case Op::Mul:
        if (in.ops.size() == 3 && in.mul != MulMode::Hi) {
          join(d, product(in.ops[1], in.ops[2]));
        } else {
          join(d, mixed(in));
        }
        return;
      case Op::Mad:
        if (in.ops.size() == 4 && in.mul != MulMode::Hi) {
          const Provenance p = product(in.ops[1], in.ops[2]);
          join(d, sum(&p, of(in.ops[3])));
        } else {
          join(d, mixed(in));
        }
        return;
      case Op::Shl:
        if (in.ops.size() == 3 && in.ops[2].kind == Operand::Kind::Imm && in.ops[2].imm_bits < 32) {
          join(d, scaled(of(in.ops[1]), std::uint64_t{1} << in.ops[2].imm_bits));
        } else {
          join(d, mixed(in));
        }
        return;
      case Op::And:
      case Op::Or:
      case Op::Xor:
      case Op::Not:
      case Op::Shr:
      case Op::Div:
      case Op::Rem:
      case Op::Neg:
      case Op::Abs:
        join(d, mixed(in));
        return;
      default:
        return;  // no address arithmetic: loads' data, predicates, special registers...
    }
  }

  void require(const Operand& address, std::uint32_t bytes) {
    const Provenance* p = of(address);
    if (!p || bytes <= 1) return;
    // A constant offset that is not a multiple of the access leaves only its own alignment known.
    const std::uint32_t need = static_cast<std::uint32_t>(std::min<std::uint64_t>(
        bytes, lowest_power_of_two(static_cast<std::uint64_t>(
                   address.offset < 0 ? -address.offset : address.offset))));
    if (need <= 1) return;
    for (std::size_t ptr = 0; ptr < params_.size(); ++ptr) {
      if (!params_[ptr].pointer || (*p)[ptr] == 0) continue;
      params_[ptr].align_bytes = std::max(params_[ptr].align_bytes, need);
      for (std::size_t s = 0; s < params_.size(); ++s) {
        if (params_[s].pointer || (*p)[s] == 0) continue;
        const std::uint64_t multiple = need / std::gcd(std::uint64_t{need}, (*p)[s]);
        if (multiple <= 1) continue;
        params_[s].multiple = static_cast<std::uint32_t>(
            std::lcm(std::uint64_t{std::max(1u, params_[s].multiple)}, multiple));
        params_[ptr].row_stride = params_[s].name;
      }
    }
  }

  // A global access's address must be aligned to the bytes it moves: to the element vector of
  // ld/st/atom/red, to the copy size of cp.async, to 16 bytes for a bulk copy's source.
  void access(const Instr& in) {
    const InstructionInfo& row = instruction(in.op);
    const MemoryEffect m = row.memory;
    const auto global = [&](Mem e) {
      return e == Mem::Global || (e == Mem::InstrSpace && in.space == Space::Global);
    };
    if (!global(m.reads) && !global(m.writes)) return;
    const auto elements = static_cast<std::uint32_t>(size_bytes(in.type) * in.vec);
    switch (row.operands) {
      case Operands::Load:
      case Operands::AtomResult:
        if (in.ops.size() >= 2) require(in.ops[1], elements);
        return;
      case Operands::Store:
      case Operands::AtomNoResult:
        if (!in.ops.empty()) require(in.ops[0], elements);
        return;
      case Operands::CpAsync:  // [dst], [src], cp-size
        if (in.ops.size() >= 3) {
          require(in.ops[1], static_cast<std::uint32_t>(immediate(in.ops[2])));
        }
        return;
      case Operands::BulkCopy:
        if (in.ops.size() >= 2) require(in.ops[1], 16);
        return;
      default:
        return;
    }
  }

  const std::vector<Instr>& body_;
  std::vector<ParamSpec>& params_;
  std::unordered_map<std::string, std::size_t> index_;
  std::unordered_map<std::uint64_t, Provenance> regs_;
  bool changed_ = false;
};

}  // namespace

void derive_param_alignment(const std::vector<Instr>& body, std::vector<ParamSpec>& params) {
  for (ParamSpec& p : params) {
    p.align_bytes = 0;
    p.multiple = 0;
    p.row_stride.clear();
  }
  Analysis(body, params).run();
}

}  // namespace ptxdsl::detail
