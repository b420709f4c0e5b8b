#include <cctype>
#include <chrono>
#include <functional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "driver_api.hpp"
#include "ptxdsl/runtime/error.hpp"
#include "ptxdsl/runtime/module.hpp"

namespace ptxdsl::runtime {
namespace {

constexpr std::size_t kJitLogBytes = 64 * 1024;
constexpr std::size_t kMaxParams = 64;

// ".entry name(" → "name", for error messages.
std::string entry_names(std::string_view ptx) {
  std::string out;
  std::size_t at = 0;
  while ((at = ptx.find(".entry", at)) != std::string_view::npos) {
    at += 6;
    while (at < ptx.size() && (ptx[at] == ' ' || ptx[at] == '\t')) ++at;
    std::size_t end = at;
    while (end < ptx.size() && (std::isalnum(static_cast<unsigned char>(ptx[end])) ||
                                ptx[end] == '_' || ptx[end] == '$')) {
      ++end;
    }
    if (end > at) out += fmt::format("{}{}", out.empty() ? "" : ", ", ptx.substr(at, end - at));
    at = end;
  }
  return out.empty() ? "none" : out;
}

std::string trimmed(const std::vector<char>& log) {
  std::string s(log.data());
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

LoadedModule::LoadedModule(const Context& ctx, std::string_view ptx, std::string name)
    : ctx_(ctx.state()), name_(std::move(name)) {
  ctx.make_current();
  std::string text(ptx);  // the driver wants NUL-terminated text
  std::vector<char> error_log(kJitLogBytes, '\0'), info_log(kJitLogBytes, '\0');
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {error_log.data(), reinterpret_cast<void*>(kJitLogBytes - 1), info_log.data(),
                    reinterpret_cast<void*>(kJitLogBytes - 1)};
  CUmodule m = nullptr;
  auto start = std::chrono::steady_clock::now();
  CUresult r = detail::driver().cuModuleLoadDataEx(&m, text.c_str(), 4, options, values);
  jit_ms_ =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  info_log_ = trimmed(info_log);
  if (r != CUDA_SUCCESS) {
    std::string log = trimmed(error_log);
    throw DriverError(
        static_cast<int>(r), "cuModuleLoadDataEx",
        fmt::format("JIT of module '{}' (entries: {}) for device {} ({}, sm_{}{}): "
                    "cuModuleLoadDataEx failed: {} [CUresult {}]\nJIT error log:\n{}",
                    name_, entry_names(ptx), ctx.device(), ctx.info().name,
                    ctx.info().model.cc_major, ctx.info().model.cc_minor, detail::describe(r),
                    static_cast<int>(r), log.empty() ? "(empty)" : log));
  }
  handle_ = m;
}

LoadedModule::LoadedModule(LoadedModule&& other) noexcept
    : ctx_(std::move(other.ctx_)),
      handle_(std::exchange(other.handle_, nullptr)),
      name_(std::move(other.name_)),
      info_log_(std::move(other.info_log_)),
      jit_ms_(other.jit_ms_) {}

LoadedModule& LoadedModule::operator=(LoadedModule&& other) noexcept {
  if (this != &other) {
    release();
    ctx_ = std::move(other.ctx_);
    handle_ = std::exchange(other.handle_, nullptr);
    name_ = std::move(other.name_);
    info_log_ = std::move(other.info_log_);
    jit_ms_ = other.jit_ms_;
  }
  return *this;
}

LoadedModule::~LoadedModule() {
  release();
}

void LoadedModule::release() noexcept {
  if (handle_ != nullptr) {
    if (const detail::DriverApi* d = detail::loaded_driver()) d->cuModuleUnload(handle_);
    handle_ = nullptr;
  }
}

CUctx_st* LoadedModule::context() const {
  return ctx_ ? ctx_->context : nullptr;
}
int LoadedModule::device() const {
  return ctx_ ? ctx_->info.ordinal : -1;
}

namespace {

CUfunction find_entry(const LoadedModule& module, const std::string& entry) {
  if (module.handle() == nullptr) throw Error("function lookup in an empty (moved-from) module");
  detail::make_current(module.context());
  CUfunction f = nullptr;
  PTXDSL_CU_CHECK(
      [&] { return fmt::format("looking up entry '{}' in module '{}'", entry, module.name()); },
      cuModuleGetFunction, &f, module.handle(), entry.c_str());
  return f;
}

detail::ParamSlot slot_for(const ParamSpec& p) {
  using Kind = detail::ParamSlot::Kind;
  if (p.tensor_map) return {Kind::TensorMap, 0, 0, 0, 0};  // 128 bytes: size is the slot's kind
  if (p.pointer) {
    return {Kind::Pointer, 8, static_cast<std::uint8_t>(size_bytes(p.element)), p.align_bytes, 0};
  }
  if (p.type == ScalarType::F32 || p.type == ScalarType::F64) {
    return {Kind::Float, static_cast<std::uint8_t>(size_bytes(p.type)), 0, 0, 0};
  }
  // Integers, bit types, and f16/bf16 scalars passed as their bits.
  return {Kind::Int, static_cast<std::uint8_t>(size_bytes(p.type)), 0, 0, p.multiple};
}

}  // namespace

Function::Function(std::shared_ptr<const LoadedModule> module, KernelContract contract)
    : module_(std::move(module)),
      contract_(std::move(contract)),
      has_contract_(true),
      shared_opted_in_(std::make_shared<std::atomic<std::uint32_t>>(0)),
      non_portable_clusters_(std::make_shared<std::atomic<bool>>(false)) {
  if (!module_) throw Error("Function needs a module, got none");
  if (contract_.params.size() > kMaxParams) {
    throw Error(fmt::format("kernel '{}' has {} parameters; launch takes at most {}",
                            contract_.entry, contract_.params.size(), kMaxParams));
  }
  handle_ = find_entry(*module_, contract_.entry);
  ctx_ = module_->context();
  slots_.reserve(contract_.params.size());
  for (const ParamSpec& p : contract_.params) slots_.push_back(slot_for(p));
}

Function::Function(std::shared_ptr<const LoadedModule> module, std::string_view entry)
    : module_(std::move(module)),
      shared_opted_in_(std::make_shared<std::atomic<std::uint32_t>>(0)),
      non_portable_clusters_(std::make_shared<std::atomic<bool>>(false)) {
  if (!module_) throw Error("Function needs a module, got none");
  contract_.entry = std::string(entry);
  handle_ = find_entry(*module_, contract_.entry);
  ctx_ = module_->context();
}

int Function::registers() const {
  int v = 0;
  PTXDSL_CU_CHECK([&] { return fmt::format("reading kernel '{}' registers", name()); },
                  cuFuncGetAttribute, &v, CU_FUNC_ATTRIBUTE_NUM_REGS, handle_);
  return v;
}

int Function::max_threads_per_block() const {
  int v = 0;
  PTXDSL_CU_CHECK([&] { return fmt::format("reading kernel '{}' max threads", name()); },
                  cuFuncGetAttribute, &v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, handle_);
  return v;
}

void Function::reserve_dynamic_shared(std::uint32_t bytes) const {
  if (!shared_opted_in_ || bytes <= shared_opted_in_->load(std::memory_order_relaxed)) return;
  detail::make_current(ctx_);
  PTXDSL_CU_CHECK(
      [&] {
        return fmt::format("opting kernel '{}' into {} bytes of dynamic shared memory", name(),
                           bytes);
      },
      cuFuncSetAttribute, handle_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
      static_cast<int>(bytes));
  std::uint32_t seen = shared_opted_in_->load();
  while (seen < bytes && !shared_opted_in_->compare_exchange_weak(seen, bytes)) {
  }
}

void Function::allow_non_portable_clusters() const {
  if (!non_portable_clusters_ || non_portable_clusters_->load(std::memory_order_relaxed)) return;
  detail::make_current(ctx_);
  PTXDSL_CU_CHECK(
      [&] {
        return fmt::format("allowing kernel '{}' clusters of more than 8 CTAs (non-portable)",
                           name());
      },
      cuFuncSetAttribute, handle_, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
  non_portable_clusters_->store(true);
}

ModuleCache& ModuleCache::global() {
  static ModuleCache cache;
  return cache;
}

std::shared_ptr<const LoadedModule> ModuleCache::get(const Context& ctx, std::string_view ptx,
                                                     std::string_view name) {
  const Key key{fnv1a(ptx), std::hash<std::string_view>{}(ptx), ptx.size(), ctx.device()};
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard lock(mutex_);
    std::shared_ptr<Entry>& slot = entries_[key];
    if (!slot) slot = std::make_shared<Entry>();
    entry = slot;
  }
  // One JIT per entry; other threads asking for the same module wait here, not on the map.
  std::lock_guard lock(entry->mutex);
  if (entry->module) {
    hits_.fetch_add(1, std::memory_order_relaxed);
    return entry->module;
  }
  entry->module = std::make_shared<const LoadedModule>(ctx, ptx, std::string(name));
  jits_.fetch_add(1, std::memory_order_relaxed);
  return entry->module;
}

std::size_t ModuleCache::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}
std::uint64_t ModuleCache::jit_count() const {
  return jits_.load();
}
std::uint64_t ModuleCache::hit_count() const {
  return hits_.load();
}

void ModuleCache::clear() {
  std::lock_guard lock(mutex_);
  entries_.clear();
}

}  // namespace ptxdsl::runtime
