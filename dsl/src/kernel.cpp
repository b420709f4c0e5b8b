#include "ptxdsl/dsl/kernel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <unordered_map>

#include "instruction_table.hpp"
#include "param_alignment.hpp"
#include "ptxdsl/dsl/emit.hpp"
#include "ptxdsl/dsl/module.hpp"
#include "validate.hpp"

namespace ptxdsl {
namespace {

// Why `s` cannot name something in PTX, or empty. (PTX allows more, e.g. `$`; we keep to C-like
// names, which every tool prints and parses alike.)
std::string identifier_problem(std::string_view what, std::string_view s) {
  const bool c_like = !s.empty() && !std::isdigit(static_cast<unsigned char>(s[0])) &&
                      std::all_of(s.begin(), s.end(), [](char c) {
                        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                      });
  if (!c_like) {
    return fmt::format(
        "{} '{}' is not a PTX identifier (letters, digits, '_'; not starting with "
        "a digit)",
        what, s);
  }
  if (s == "WARP_SZ") return fmt::format("{} '{}' is a predefined PTX constant", what, s);
  return {};
}

// The live kernels by id: a handle's kernel pointer is followed only if its id is here.
struct Registry {
  std::mutex mutex;
  std::unordered_map<std::uint64_t, Kernel*> live;
  std::uint64_t last_id = 0;
};

// Never destroyed: a Module with static storage may destroy its kernels after every other static.
Registry& registry() {
  static Registry* const r = new Registry;
  return *r;
}

}  // namespace

Kernel::Kernel(Module& module, std::string name)
    : module_(&module), id_(0), name_(std::move(name)) {
  if (std::string problem = identifier_problem("kernel name", name_); !problem.empty()) {
    throw Error(problem);
  }
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  id_ = ++r.last_id;
  r.live.emplace(id_, this);
}

Kernel::~Kernel() {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  r.live.erase(id_);
}

Kernel* Kernel::live(Kernel* k, std::uint64_t id) {
  if (k == nullptr) return nullptr;
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  const auto it = r.live.find(id);
  return it != r.live.end() && it->second == k ? k : nullptr;
}

std::string Kernel::foreign_owner(const Kernel* owner, std::uint64_t owner_id) const {
  if (owner_id == id_ && owner == this) return {};
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  const auto it = r.live.find(owner_id);
  if (it == r.live.end() || it->second != owner) {
    return fmt::format(
        "another kernel, destroyed since (kernel id {}, this one is {}): a handle must not outlive "
        "its Module",
        owner_id, id_);
  }
  const Kernel& other = *it->second;
  if (&other.module() == module_) return fmt::format("kernel '{}'", other.name());
  return fmt::format("kernel '{}' of another module (module id {}; this kernel's is {})",
                     other.name(), other.module().id(), module_->id());
}

void Kernel::fail(const std::string& what, const std::string& problem) const {
  // The instruction being built is abandoned: its operands must not be checked with the next one.
  pending_owners_.clear();
  throw Error(fmt::format("kernel '{}', {}: {}", name_, what, problem));
}

void Kernel::fail(const Instr& in, const std::string& problem) const {
  if (in.op == Op::Label && !in.ops.empty()) {
    fail(fmt::format("label '{}'", in.ops[0].symbol), problem);
  }
  // A special register's move is named with the register: `mov.u32 %cluster_ctarank`.
  const bool special =
      in.op == Op::Mov && in.ops.size() == 2 && in.ops[1].kind == Operand::Kind::Special;
  const std::string what =
      special ? fmt::format("{} {}", mnemonic(in), special_register_name(in.ops[1].special))
              : mnemonic(in);
  fail(fmt::format("instruction '{}'", what), problem);
}

// Registers are free to make even after finalize: the instruction that would use one is what fails,
// with its name in the message.
RegId Kernel::new_reg(RegClass c, std::string_view debug_name) {
  RegId id{c, ++reg_counts_[static_cast<int>(c)]};
  if (!debug_name.empty()) reg_names_.emplace_back(id, std::string(debug_name));
  return id;
}

const std::string& Kernel::reg_name(RegId id) const {
  static const std::string kNone;
  for (const auto& [reg, name] : reg_names_) {
    if (reg == id) return name;
  }
  return kNone;
}

Instr Kernel::make(Op op, ScalarType type) {
  Instr in;
  in.op = op;
  in.type = type;
  return in;
}

void Kernel::note_owner(const Kernel* owner, std::uint64_t owner_id) {
  pending_owners_.emplace_back(owner, owner_id);
}

void Kernel::commit(Instr in) {
  std::vector<std::pair<const Kernel*, std::uint64_t>> owners;
  owners.swap(pending_owners_);
  if (finalized_) fail(in, "emitted after the kernel was finalized");
  for (const auto& [owner, owner_id] : owners) {
    if (owner == nullptr) fail(in, "uses a register that was never created (a default Reg)");
    if (std::string whose = foreign_owner(owner, owner_id); !whose.empty()) {
      fail(in, "uses a register of " + whose);
    }
  }
  if (guarded_) {
    if (in.op == Op::Label || in.op == Op::Bra) {
      fail(in, "control flow inside a predicated block; use if_/bra_if instead");
    }
    in.guarded = true;
    in.guard_negated = guard_negated_;
    in.guard = guard_;
  }
  if (std::string problem = detail::check_instr(in, module_->arch(), module_->version());
      !problem.empty()) {
    fail(in, problem);
  }
  if (!in.ops.empty() && in.ops[0].kind == Operand::Kind::Reg &&
      detail::writes_first_operand(detail::instruction(in.op).operands)) {
    in.comment = reg_name(in.ops[0].reg);
  }
  body_.push_back(std::move(in));
}

Rounding Kernel::default_cvt_rounding(ScalarType to, ScalarType from) {
  const bool to_float = is_float(to), from_float = is_float(from);
  if (to_float && from_float) {
    // Narrowing rounds; so does f16 <-> bf16 (same size, different precision and range).
    const bool rounds =
        size_bytes(to) < size_bytes(from) || (size_bytes(to) == size_bytes(from) && to != from);
    return rounds ? Rounding::Rn : Rounding::None;
  }
  if (to_float) return Rounding::Rn;     // int → float can round
  if (from_float) return Rounding::Rzi;  // float → int truncates, as C does
  return Rounding::None;
}

std::uint32_t Kernel::shfl_c_operand(const Instr& in, std::uint32_t width) const {
  if (width == 0 || width > 32 || (width & (width - 1)) != 0) {
    fail(in, fmt::format("segment width must be a power of two in [1, 32], got {}", width));
  }
  // c packs the segment mask (bits 8-12) and the clamp lane (bits 0-4), as shfl.sync defines it.
  const std::uint32_t segment_mask = (32 - width) << 8;
  return in.shfl == ShflMode::Up ? segment_mask : segment_mask | 0x1Fu;
}

Reg<U32> Kernel::special(Special s) {
  Reg<U32> d = reg<U32>();
  Instr in = make(Op::Mov, ScalarType::U32);
  Operand src;
  src.kind = Operand::Kind::Special;
  src.special = s;
  in.ops = {def(d), src};
  if (is_64bit_special(s)) {
    fail(in, fmt::format("{} is a 64-bit register: read it with clock64() or globaltimer()",
                         special_register_name(s)));
  }
  commit(std::move(in));
  return d;
}

Reg<U64> Kernel::timer(Special s) {
  Reg<U64> d = reg<U64>();
  Instr in = make(Op::Mov, ScalarType::U64);
  Operand src;
  src.kind = Operand::Kind::Special;
  src.special = s;
  in.ops = {def(d), src};
  commit(std::move(in));
  return d;
}

std::string Kernel::declare_param(std::string_view name, ScalarType type, bool pointer,
                                  ScalarType element) {
  if (finalized_) fail(fmt::format("parameter '{}'", name), "declared after finalize");
  if (std::string problem = identifier_problem("name", name); !problem.empty()) {
    fail("parameter", problem);
  }
  for (const ParamSpec& p : params_) {
    if (p.name == name) fail("parameter", fmt::format("'{}' is declared twice", name));
  }
  for (const SharedDecl& d : shared_) {
    // A parameter would hide the module-level array inside the entry.
    if (d.name == name) fail("parameter", fmt::format("'{}' is a shared array's symbol", name));
  }
  ParamSpec spec;
  spec.name = std::string(name);
  spec.type = type;
  spec.pointer = pointer;
  spec.element = element;
  params_.push_back(std::move(spec));
  return std::string(name);
}

Operand Kernel::symbol_address(const std::string& symbol) {
  Operand o;
  o.kind = Operand::Kind::Addr;
  o.has_base = false;
  o.symbol = symbol;
  return o;
}

std::string Kernel::declare_shared(std::string_view name, std::uint32_t bytes, std::uint32_t align,
                                   bool dynamic) {
  if (finalized_) fail(fmt::format("shared array '{}'", name), "declared after finalize");
  if (std::string problem = identifier_problem("name", name); !problem.empty()) {
    fail("shared array", problem);
  }
  if (align == 0 || (align & (align - 1)) != 0) {
    fail("shared array",
         fmt::format("'{}': alignment must be a power of two, got {}", name, align));
  }
  if (!dynamic && bytes == 0) fail("shared array", fmt::format("'{}' has 0 bytes", name));
  std::string symbol = fmt::format("{}_{}", name_, name);
  for (const SharedDecl& d : shared_) {
    if (d.name == symbol) fail("shared array", fmt::format("'{}' is declared twice", name));
    if (dynamic && d.dynamic) fail("shared array", "a kernel has one dynamic shared array");
  }
  for (const ParamSpec& p : params_) {
    if (p.name == symbol) {
      fail("shared array",
           fmt::format("'{}' has the symbol '{}', a parameter's name", name, symbol));
    }
  }
  shared_.push_back(SharedDecl{symbol, bytes, align, dynamic});
  return symbol;
}

Reg<U32> Kernel::shared_base(const std::string& symbol) {
  Reg<U32> d = reg<U32>();
  Instr in = make(Op::Mov, ScalarType::U32);
  Operand src;
  src.kind = Operand::Kind::Symbol;
  src.symbol = symbol;
  in.ops = {def(d), src};
  commit(std::move(in));
  return d;
}

void Kernel::cvt_pair_op(ScalarType to, ScalarType from, bool satfinite, Operand d, Operand a) {
  Instr in = make(Op::CvtPair, to);
  in.src_type = from;
  in.rounding = Rounding::Rn;
  in.sat = satfinite;
  in.ops = {std::move(d), std::move(a)};
  commit(std::move(in));
}

void Kernel::mma_op(MmaInput a_type, MmaInput b_type, ScalarType acc, bool satfinite, Operand d,
                    Operand a, Operand b, Operand c) {
  Instr in = make(Op::Mma, acc);
  in.mma_a = a_type;
  in.mma_b = b_type;
  in.sat = satfinite;
  in.ops = {std::move(d), std::move(a), std::move(b), std::move(c)};
  commit(std::move(in));
}

void Kernel::matrix_op(Op op, int count, bool transpose, Operand first, Operand second) {
  Instr in = make(op, ScalarType::B16);
  in.space = Space::Shared;
  in.vec = count;
  in.transpose = transpose;
  in.ops = {std::move(first), std::move(second)};
  commit(std::move(in));
}

void Kernel::memory_op(Op op, Space s, ScalarType t, MemHints h, Operand first, Operand second,
                       int width) {
  Instr in = make(op, t);
  in.space = s;
  in.vec = width;
  in.non_coherent = h.nc;
  in.cache = h.cache;
  in.eviction = h.eviction;
  const bool vector = first.kind == Operand::Kind::Vec || second.kind == Operand::Kind::Vec;
  in.ops = {std::move(first), std::move(second)};
  if (vector ? (width != 2 && width != 4) : width != 1) {
    fail(in, fmt::format("vector width must be 2 or 4, got {}", width));
  }
  const Operand& addr = op == Op::Ld ? in.ops[1] : in.ops[0];
  const std::int64_t access = static_cast<std::int64_t>(width) * size_bytes(t);
  if (addr.offset % access != 0) {
    fail(in, fmt::format("constant offset {} is not a multiple of the {}-byte access size",
                         addr.offset, access));
  }
  if (h.nc && (op != Op::Ld || s != Space::Global)) {
    fail(in, ".nc applies to global loads only");
  }
  if (s == Space::Param && op != Op::Ld) {
    fail(in, "kernel parameters are read-only");
  }
  in.l2_prefetch = h.l2_prefetch;
  if (h.l2_policy) {
    in.l2_cache_hint = true;
    in.ops.push_back(use(*h.l2_policy));
  }
  commit(std::move(in));
}

Reg<B64> Kernel::create_policy(L2Evict primary, float fraction, std::optional<L2Evict> secondary) {
  Reg<B64> d = reg<B64>();
  Instr in = make(Op::CreatePolicy, ScalarType::B64);
  in.l2_primary = primary;
  in.l2_secondary = secondary;
  in.ops = {def(d), use(Src<F32>(fraction))};
  if (!(fraction > 0.0f && fraction <= 1.0f)) {
    fail(in, fmt::format("the fraction must be in (0, 1], got {}", fraction));
  }
  if (secondary && *secondary != L2Evict::First && *secondary != L2Evict::Unchanged) {
    fail(in, "the secondary priority must be evict_first or evict_unchanged");
  }
  commit(std::move(in));
  return d;
}

Reg<F32> Kernel::atom_add(GlobalPtr<F32> addr, Src<F32> v) {
  Reg<F32> d = reg<F32>();
  Instr in = make(Op::Atom, ScalarType::F32);
  in.space = Space::Global;
  in.ops = {def(d), address(addr), use(v)};
  commit(std::move(in));
  return d;
}

Reg<U32> Kernel::atom_add(GlobalPtr<U32> addr, Src<U32> v) {
  Reg<U32> d = reg<U32>();
  atom_add(d, addr, v);
  return d;
}

void Kernel::atom_add(Reg<U32> d, GlobalPtr<U32> addr, Src<U32> v) {
  Instr in = make(Op::Atom, ScalarType::U32);
  in.space = Space::Global;
  in.ops = {def(d), address(addr), use(v)};
  commit(std::move(in));
}

void Kernel::atom_inc(Reg<U32> d, GlobalPtr<U32> addr, Src<U32> limit) {
  Instr in = make(Op::Atom, ScalarType::U32);
  in.space = Space::Global;
  in.atom = AtomOp::Inc;
  in.ops = {def(d), address(addr), use(limit)};
  commit(std::move(in));
}

void Kernel::fence_gpu() {
  fence(MemSem::AcqRel, Scope::Gpu);
}

void Kernel::fence(MemSem sem, Scope scope) {
  Instr in = make(Op::Fence, ScalarType::B32);
  in.sem = sem;
  in.scope = scope;
  commit(std::move(in));
}

void Kernel::atom_op(Op op, AtomOp atom, Space s, ScalarType t, AtomOrder order,
                     std::vector<Operand> ops) {
  Instr in = make(op, t);
  in.space = s;
  in.atom = atom;
  in.sem = order.sem;
  in.scoped = order.scope.has_value();
  in.scope = order.scope.value_or(Scope::Cta);
  in.ops = std::move(ops);
  commit(std::move(in));
}

void Kernel::red_add(GlobalPtr<F32> addr, Src<F32> v) {
  Instr in = make(Op::Red, ScalarType::F32);
  in.space = Space::Global;
  in.ops = {address(addr), use(v)};
  commit(std::move(in));
}

void Kernel::cp_async_op(Operand dst, Operand src, std::uint32_t bytes,
                         std::optional<Operand> src_bytes, MemHints h) {
  Instr in = make(Op::CpAsync, ScalarType::B32);
  in.space = Space::Shared;
  in.cache = bytes == 16 ? CacheOp::Cg : CacheOp::Ca;
  in.l2_prefetch = h.l2_prefetch;
  in.l2_cache_hint = h.l2_policy.has_value();
  in.ops = {std::move(dst), std::move(src), use(Src<U32>(bytes))};
  if (src_bytes) in.ops.push_back(std::move(*src_bytes));
  if (h.l2_policy) in.ops.push_back(use(*h.l2_policy));
  if (h.nc || h.cache != CacheOp::None || h.eviction != Eviction::None) {
    fail(in, "a cp.async takes only L2 hints (l2_policy, l2_prefetch)");
  }
  if (bytes != 4 && bytes != 8 && bytes != 16) {
    fail(in, fmt::format("copy size must be 4, 8 or 16 bytes, got {}", bytes));
  }
  for (const Operand& a : {in.ops[0], in.ops[1]}) {
    if (a.offset % bytes != 0) {
      fail(in, fmt::format("constant offset {} is not a multiple of the {}-byte copy size",
                           a.offset, bytes));
    }
  }
  if (src_bytes && src_bytes->kind == Operand::Kind::Imm && src_bytes->imm_bits > bytes) {
    fail(in,
         fmt::format("source size {} exceeds the {}-byte copy size", src_bytes->imm_bits, bytes));
  }
  commit(std::move(in));
}

void Kernel::check_mbarrier_address(const Instr& in, const Operand& bar) const {
  if (bar.offset % 8 != 0) {
    fail(in, fmt::format("constant offset {} of the mbarrier is not a multiple of 8", bar.offset));
  }
}

Instr Kernel::mbarrier_op(Op op, SharedPtr<B64> bar) {
  Instr in = make(op, ScalarType::B64);
  in.space = Space::Shared;
  in.ops = {address(bar)};
  check_mbarrier_address(in, in.ops[0]);
  return in;
}

void Kernel::mbarrier_init(SharedPtr<B64> bar, Src<U32> count) {
  Instr in = mbarrier_op(Op::MbarrierInit, bar);
  in.ops.push_back(use(count));
  const Operand& c = in.ops.back();
  if (c.kind == Operand::Kind::Imm && (c.imm_bits == 0 || c.imm_bits > kMbarrierMaxCount)) {
    fail(in,
         fmt::format("arrival count must be in [1, {}], got {}", kMbarrierMaxCount, c.imm_bits));
  }
  commit(std::move(in));
}

void Kernel::fence_mbarrier_init() {
  commit(make(Op::FenceMbarrierInit, ScalarType::B32));
}

void Kernel::mbarrier_arrive(SharedPtr<B64> bar) {
  commit(mbarrier_op(Op::MbarrierArrive, bar));
}

void Kernel::mbarrier_arrive_expect_tx(SharedPtr<B64> bar, Src<U32> bytes) {
  Instr in = mbarrier_op(Op::MbarrierArrive, bar);
  in.ops.push_back(use(bytes));
  const Operand& b = in.ops.back();
  if (b.kind == Operand::Kind::Imm && b.imm_bits > kBulkCopyMaxBytes) {
    fail(in, fmt::format("transaction bytes must be at most {}, got {}", kBulkCopyMaxBytes,
                         b.imm_bits));
  }
  commit(std::move(in));
}

void Kernel::mbarrier_wait(SharedPtr<B64> bar, Src<U32> parity, Scope scope) {
  const Label again = label("mbarrier_wait");
  bind(again);
  Instr in = mbarrier_op(Op::MbarrierWait, bar);
  in.scope = scope;
  if (scope == Scope::Cluster) in.sem = MemSem::Acquire;
  const Pred done = reg<PredT>();
  in.ops.insert(in.ops.begin(), def(done));
  in.ops.push_back(use(parity));
  const Operand& q = in.ops.back();
  if (q.kind == Operand::Kind::Imm && q.imm_bits > 1) {
    fail(in, fmt::format("phase parity must be 0 or 1, got {}", q.imm_bits));
  }
  commit(std::move(in));
  bra_if(done, again, /*negate=*/true);
}

void Kernel::mbarrier_tx_op(Op op, Space s, Operand bar, Operand bytes) {
  Instr in = make(op, ScalarType::B64);
  in.space = s;
  in.sem = MemSem::Relaxed;
  in.scope = Scope::Cluster;
  in.ops = {std::move(bar), std::move(bytes)};
  check_mbarrier_address(in, in.ops[0]);
  const Operand& b = in.ops[1];
  if (b.kind == Operand::Kind::Imm && b.imm_bits > kBulkCopyMaxBytes) {
    fail(in, fmt::format("transaction bytes must be at most {}, got {}", kBulkCopyMaxBytes,
                         b.imm_bits));
  }
  commit(std::move(in));
}

void Kernel::mbarrier_expect_tx(SharedPtr<B64> bar, Src<U32> bytes) {
  mbarrier_tx_op(Op::MbarrierExpectTx, Space::Shared, address(bar), use(bytes));
}

void Kernel::mbarrier_complete_tx(SharedPtr<B64> bar, Src<U32> bytes) {
  mbarrier_tx_op(Op::MbarrierCompleteTx, Space::Shared, address(bar), use(bytes));
}

void Kernel::mbarrier_complete_tx(ClusterPtr<B64> bar, Src<U32> bytes) {
  mbarrier_tx_op(Op::MbarrierCompleteTx, Space::SharedCluster, address(bar), use(bytes));
}

void Kernel::mbarrier_arrive(ClusterPtr<B64> bar) {
  Instr in = make(Op::MbarrierArrive, ScalarType::B64);
  in.space = Space::SharedCluster;
  in.sem = MemSem::Release;
  in.scope = Scope::Cluster;
  in.ops = {address(bar)};
  check_mbarrier_address(in, in.ops[0]);
  commit(std::move(in));
}

void Kernel::mapa_op(Operand d, Operand a, Operand rank) {
  Instr in = make(Op::Mapa, ScalarType::U32);
  in.space = Space::SharedCluster;
  in.ops = {std::move(d), std::move(a), std::move(rank)};
  const Operand& r = in.ops[2];
  if (r.kind == Operand::Kind::Imm && r.imm_bits >= kMaxClusterCtas) {
    fail(in, fmt::format("CTA rank must be below the largest cluster ({} CTAs), got {}",
                         kMaxClusterCtas, r.imm_bits));
  }
  commit(std::move(in));
}

void Kernel::async_remote_op(Op op, ScalarType t, Operand addr, Operand v, Operand bar) {
  Instr in = make(op, t);
  in.space = Space::SharedCluster;
  in.ops = {std::move(addr), std::move(v), std::move(bar)};
  const auto bytes = size_bytes(t);
  if (in.ops[0].offset % bytes != 0) {
    fail(in, fmt::format("constant offset {} is not a multiple of the {}-byte access size",
                         in.ops[0].offset, bytes));
  }
  check_mbarrier_address(in, in.ops[2]);
  commit(std::move(in));
}

void Kernel::barrier_cluster_arrive(MemSem sem, bool aligned) {
  Instr in = make(Op::BarClusterArrive, ScalarType::B32);
  in.sem = sem;
  in.aligned = aligned;
  if (sem == MemSem::Acquire) {
    fail(in, "an arrive releases (MemSem::Release, the default) or is relaxed (MemSem::Relaxed)");
  }
  commit(std::move(in));
}

void Kernel::barrier_cluster_wait(MemSem sem, bool aligned) {
  Instr in = make(Op::BarClusterWait, ScalarType::B32);
  in.sem = sem;
  in.aligned = aligned;
  if (sem != MemSem::None && sem != MemSem::Acquire) {
    fail(in, "a wait acquires (MemSem::Acquire, the default) only");
  }
  commit(std::move(in));
}

void Kernel::cluster_sync() {
  barrier_cluster_arrive();
  barrier_cluster_wait();
}

void Kernel::fence_cluster() {
  fence(MemSem::AcqRel, Scope::Cluster);
}

void Kernel::fence_proxy_async() {
  Instr in = make(Op::FenceProxyAsync, ScalarType::B32);
  in.space = Space::Shared;
  commit(std::move(in));
}

void Kernel::cp_async_bulk_op(Operand dst, Operand src, Operand bytes, Operand bar) {
  Instr in = make(Op::CpAsyncBulk, ScalarType::B32);
  in.space = Space::Shared;
  in.ops = {std::move(dst), std::move(src), std::move(bytes), std::move(bar)};
  for (int i : {0, 1}) {
    if (in.ops[i].offset % 16 != 0) {
      fail(in, fmt::format("constant offset {} of the {} is not a multiple of 16", in.ops[i].offset,
                           i == 0 ? "destination" : "source"));
    }
  }
  check_mbarrier_address(in, in.ops[3]);
  const Operand& n = in.ops[2];
  if (n.kind == Operand::Kind::Imm &&
      (n.imm_bits == 0 || n.imm_bits % 16 != 0 || n.imm_bits > kBulkCopyMaxBytes)) {
    fail(in, fmt::format("size must be a multiple of 16 in [16, {}], got {}", kBulkCopyMaxBytes,
                         n.imm_bits));
  }
  commit(std::move(in));
}

TensorMap Kernel::param_tensor_map(std::string_view name) {
  const std::string symbol = declare_param(name, ScalarType::B8, false, ScalarType::B8);
  params_.back().tensor_map = true;
  Reg<U64> param = reg<U64>(name);
  Instr mov = make(Op::Mov, ScalarType::U64);
  Operand s;
  s.kind = Operand::Kind::Symbol;
  s.symbol = symbol;
  mov.ops = {def(param), s};
  commit(std::move(mov));
  Reg<U64> generic = reg<U64>(name);
  Instr cv = make(Op::Cvta, ScalarType::U64);
  cv.space = Space::Param;
  cv.ops = {def(generic), use(param)};
  commit(std::move(cv));
  return {generic};
}

void Kernel::bulk_tensor_op(Op op, std::vector<Operand> ops) {
  Instr in = make(op, ScalarType::B32);
  in.multicast = op == Op::BulkTensorLoad && ops.size() == 4;
  in.ops = std::move(ops);
  if (op == Op::BulkTensorLoad) check_mbarrier_address(in, in.ops[2]);
  commit(std::move(in));
}

void Kernel::cp_async_bulk_commit_group() {
  commit(make(Op::BulkCommit, ScalarType::B32));
}

void Kernel::cp_async_bulk_wait_group(std::uint32_t newest_pending, bool read) {
  Instr in = make(Op::BulkWait, ScalarType::B32);
  in.bulk_read = read;
  in.ops = {use(Src<U32>(newest_pending))};
  commit(std::move(in));
}

void Kernel::prefetch_tensormap(const TensorMap& map) {
  Instr in = make(Op::PrefetchTensormap, ScalarType::B32);
  Operand a = use(map.address);
  a.kind = Operand::Kind::Addr;
  a.has_base = true;
  in.ops = {a};
  commit(std::move(in));
}

void Kernel::prefetch_op(Operand addr, PrefetchLevel level) {
  Instr in = make(Op::Prefetch, ScalarType::B32);  // untyped: the suffix is not printed
  in.space = Space::Global;
  in.prefetch = level;
  in.ops = {std::move(addr)};
  commit(std::move(in));
}

void Kernel::cp_async_commit() {
  commit(make(Op::CpAsyncCommit, ScalarType::B32));
}

void Kernel::cp_async_wait(std::uint32_t newest_pending) {
  Instr in = make(Op::CpAsyncWait, ScalarType::B32);
  in.ops = {use(Src<U32>(newest_pending))};
  commit(std::move(in));
}

void Kernel::wgmma_fence() {
  commit(make(Op::WgmmaFence, ScalarType::B32));
}

void Kernel::wgmma_commit_group() {
  commit(make(Op::WgmmaCommit, ScalarType::B32));
}

void Kernel::wgmma_wait_group(std::uint32_t newest_pending) {
  Instr in = make(Op::WgmmaWait, ScalarType::B32);
  in.ops = {use(Src<U32>(newest_pending))};
  commit(std::move(in));
}

void Kernel::wgmma_op(MmaInput a_type, MmaInput b_type, int n, Operand d, Operand a, Operand b,
                      const WgmmaOptions& o) {
  Instr in = make(Op::WgmmaMma, ScalarType::F32);
  in.mma_a = a_type;
  in.mma_b = b_type;
  in.mma_n = static_cast<std::uint16_t>(n);
  const bool a_in_registers = a.kind == Operand::Kind::Vec;
  const auto immediate = [](std::int32_t v) { return Src<S32>(v).op; };
  const Operand scale_d = std::holds_alternative<bool>(o.accumulate)
                              ? immediate(std::get<bool>(o.accumulate) ? 1 : 0)
                              : use(std::get<Pred>(o.accumulate));
  in.ops = {std::move(d),
            std::move(a),
            std::move(b),
            scale_d,
            immediate(o.negate_a ? -1 : 1),
            immediate(o.negate_b ? -1 : 1)};
  if (detail::wgmma_transposes(a_type)) {
    if (!a_in_registers) in.ops.push_back(immediate(o.transpose_a ? 1 : 0));
    in.ops.push_back(immediate(o.transpose_b ? 1 : 0));
  }
  if (o.transpose_a && (a_in_registers || !detail::wgmma_transposes(a_type))) {
    fail(in, "A is read MN-major (transpose_a) only from shared memory, and only f16 or bf16");
  }
  if (o.transpose_b && !detail::wgmma_transposes(a_type)) {
    fail(in, "B is read MN-major (transpose_b) only for f16 or bf16");
  }
  commit(std::move(in));
}

MatrixDescriptor Kernel::matrix_descriptor_op(Reg<U32> base, std::int64_t offset,
                                              const MatrixLayout& layout) {
  std::uint64_t constant = 0;
  try {
    constant = ptxdsl::matrix_descriptor(0, layout);
  } catch (const Error& e) {
    fail("matrix_descriptor", e.what());
  }
  const Reg<U32> address = offset == 0 ? base : add(base, static_cast<std::uint32_t>(offset));
  const Reg<U32> start = shr(and_(address, 0x3FFFFu), 4u);
  return {or_(cvt<U64>(start), constant)};
}

void Kernel::griddep_launch_dependents() {
  commit(make(Op::GridDepLaunch, ScalarType::B32));
}

void Kernel::griddep_wait() {
  commit(make(Op::GridDepWait, ScalarType::B32));
}

void Kernel::bar_sync(std::uint32_t barrier) {
  Instr in = make(Op::Bar, ScalarType::B32);
  if (barrier > 15) {
    fail(in, fmt::format("barrier id must be in [0, 15], got {}", barrier));
  }
  in.ops = {use(Src<U32>(barrier))};
  commit(std::move(in));
}

// The id, count and register ranges are the instruction table's checks.
void Kernel::named_barrier(Op op, std::uint32_t barrier, std::uint32_t threads) {
  Instr in = make(op, ScalarType::B32);
  in.ops = {use(Src<U32>(barrier)), use(Src<U32>(threads))};
  commit(std::move(in));
}

void Kernel::setmaxnreg(bool grow, std::uint32_t registers) {
  Instr in = make(Op::Setmaxnreg, ScalarType::U32);
  in.grow = grow;
  in.ops = {use(Src<U32>(registers))};
  commit(std::move(in));
}

void Kernel::nanosleep(Src<U32> ns) {
  Instr in = make(Op::Nanosleep, ScalarType::U32);
  in.ops = {use(ns)};
  commit(std::move(in));
}

Label Kernel::label(std::string_view hint) {
  if (std::string problem = identifier_problem("hint", hint); !problem.empty()) {
    fail("label", problem);
  }
  label_hints_.emplace_back(hint);
  label_bound_.push_back(false);
  return Label{this, static_cast<std::uint32_t>(label_hints_.size() - 1), id_};
}

std::string Kernel::label_name(std::uint32_t id) const {
  return fmt::format("$L__{}_{}", label_hints_.at(id), id);
}

namespace {

Operand label_operand(const Kernel& k, Label l) {
  Operand o;
  o.kind = Operand::Kind::Label;
  o.symbol = k.label_name(l.id);
  o.imm_bits = l.id;
  return o;
}

}  // namespace

void Kernel::bind(Label l) {
  Instr in = make(Op::Label, ScalarType::B32);
  if (l.kernel == nullptr) fail("label", "was never created");
  if (std::string whose = foreign_owner(l.kernel, l.kernel_id); !whose.empty()) {
    fail("label", "belongs to " + whose);
  }
  in.ops = {label_operand(*this, l)};
  if (label_bound_.at(l.id)) fail(in, "is bound twice");
  commit(std::move(in));
  label_bound_[l.id] = true;
}

void Kernel::bra(Label l, bool uniform) {
  Instr in = make(Op::Bra, ScalarType::B32);
  in.uniform = uniform;
  if (l.kernel == nullptr) fail(in, "branches to a label that was never created");
  if (std::string whose = foreign_owner(l.kernel, l.kernel_id); !whose.empty()) {
    fail(in, "branches to a label of " + whose);
  }
  in.ops = {label_operand(*this, l)};
  commit(std::move(in));
}

void Kernel::bra_if(Pred p, Label l, bool negate) {
  Instr in = make(Op::Bra, ScalarType::B32);
  if (guarded_) fail(in, "control flow inside a predicated block");
  if (l.kernel == nullptr || !foreign_owner(l.kernel, l.kernel_id).empty()) {
    fail(in, "branches to a label of another kernel, or one never created");
  }
  in.ops = {label_operand(*this, l)};
  in.guarded = true;
  in.guard_negated = negate;
  in.guard = p.id;
  note_owner(p.kernel, p.kernel_id);
  commit(std::move(in));
}

void Kernel::ret() {
  commit(make(Op::Ret, ScalarType::B32));
}

void Kernel::predicated(Pred p, const std::function<void()>& body, bool negate) {
  if (guarded_) fail("predicated block", "predicated blocks do not nest");
  if (p.kernel == nullptr) fail("predicated block", "guard register was never created");
  if (std::string whose = foreign_owner(p.kernel, p.kernel_id); !whose.empty()) {
    fail("predicated block", "guard register of " + whose);
  }
  guarded_ = true;
  guard_negated_ = negate;
  guard_ = p.id;
  try {
    body();
  } catch (...) {
    guarded_ = false;
    throw;
  }
  guarded_ = false;
}

void Kernel::if_(Pred p, const std::function<void()>& then_body) {
  Label end = label("endif");
  bra_if(p, end, /*negate=*/true);
  then_body();
  bind(end);
}

void Kernel::if_else(Pred p, const std::function<void()>& then_body,
                     const std::function<void()>& else_body) {
  Label other = label("else");
  Label end = label("endif");
  bra_if(p, other, /*negate=*/true);
  then_body();
  bra(end, /*uniform=*/false);
  bind(other);
  else_body();
  bind(end);
}

void Kernel::for_range(Src<U32> lo, Src<U32> hi, Src<U32> step,
                       const std::function<void(Reg<U32>)>& body) {
  if (step.op.kind == Operand::Kind::Imm && step.op.imm_bits == 0) {
    fail("for_range", "a step of 0 never ends the loop");
  }
  Reg<U32> i = mov<U32>(lo);
  Label top = label("loop");
  Label end = label("loop_end");
  bind(top);
  Pred done = reg<PredT>();
  {
    Instr in = make(Op::Setp, ScalarType::U32);
    in.cmp = Cmp::Ge;
    in.ops = {def(done), use(i), use(hi)};
    commit(std::move(in));
  }
  bra_if(done, end);
  body(i);
  add(i, i, step);
  bra(top);
  bind(end);
}

void Kernel::while_(const std::function<Pred()>& cond, const std::function<void()>& body) {
  Label top = label("while");
  Label end = label("while_end");
  bind(top);
  bra_if(cond(), end, /*negate=*/true);
  body();
  bra(top);
  bind(end);
}

void Kernel::require_threads(std::uint32_t x) {
  if (finalized_) fail("require_threads", "called after finalize");
  if (x == 0 || x > kMaxBlockThreads)
    fail("require_threads", fmt::format("block size must be in [1, 1024], got {}", x));
  block_threads_ = x;
  block_required_ = true;
}

void Kernel::max_threads(std::uint32_t x) {
  if (finalized_) fail("max_threads", "called after finalize");
  if (x == 0 || x > kMaxBlockThreads)
    fail("max_threads", fmt::format("block size must be in [1, 1024], got {}", x));
  block_threads_ = x;
  block_required_ = false;
}

void Kernel::max_registers(std::uint32_t n) {
  if (finalized_) fail("max_registers", "called after finalize");
  if (n < 16 || n > 255) {
    fail("max_registers", fmt::format("register count must be in [16, 255], got {}", n));
  }
  max_registers_ = n;
}

void Kernel::cluster_attribute(const char* directive) {
  if (finalized_) fail(directive, "called after finalize");
  if (!arch_provides(module_->arch(), Arch::Sm90)) {
    fail(directive,
         fmt::format("needs sm_90 or newer; the module targets {}", arch_name(module_->arch())));
  }
}

void Kernel::require_cluster(Dim3 dims) {
  cluster_attribute(".reqnctapercluster");
  if (dims.x == 0 || dims.y == 0 || dims.z == 0 || dims.count() > kMaxClusterCtas) {
    fail(".reqnctapercluster",
         fmt::format("a cluster must have 1 to {} CTAs (each dimension at least 1), got ({}, {}, "
                     "{})",
                     kMaxClusterCtas, dims.x, dims.y, dims.z));
  }
  cluster_ = dims;
}

void Kernel::explicit_cluster() {
  cluster_attribute(".explicitcluster");
  explicit_cluster_ = true;
}

void Kernel::finalize() {
  if (finalized_) return;
  if (guarded_) fail("finalize", "a predicated block is still open");
  for (const Instr& in : body_) {
    if (in.op != Op::Bra) continue;
    const auto id = static_cast<std::uint32_t>(in.ops.at(0).imm_bits);
    if (!label_bound_.at(id)) fail(in, fmt::format("label '{}' is never bound", label_name(id)));
  }
  if (body_.empty() || body_.back().op != Op::Ret || body_.back().guarded) ret();
  finalized_ = true;
}

std::uint32_t Kernel::laid_out_bytes(const SharedDecl& d) const {
  if (d.dynamic) return d.bytes;
  for (const SharedDecl& other : shared_) {
    if (other.dynamic) return (d.bytes + other.align - 1) / other.align * other.align;
  }
  return d.bytes;
}

KernelContract Kernel::contract() const {
  KernelContract c;
  c.entry = name_;
  c.params = params_;
  detail::derive_param_alignment(body_, c.params);
  c.block_threads = block_threads_;
  c.block_required = block_required_;
  for (const SharedDecl& d : shared_) {
    if (d.dynamic) {
      c.dynamic_shared_bytes = std::max(c.dynamic_shared_bytes, d.bytes);
    } else {
      c.static_shared_bytes += laid_out_bytes(d);
    }
  }
  c.cluster = cluster_;
  c.explicit_cluster = explicit_cluster_;
  c.waits_for_prior_grid = std::any_of(body_.begin(), body_.end(),
                                       [](const Instr& in) { return in.op == Op::GridDepWait; });
  return c;
}

}  // namespace ptxdsl
