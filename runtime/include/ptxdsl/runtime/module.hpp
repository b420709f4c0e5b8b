#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ptxdsl/dsl/contract.hpp"
#include "ptxdsl/runtime/context.hpp"
#include "ptxdsl/runtime/handles.hpp"

namespace ptxdsl::runtime {

// PTX text JIT-compiled for a context's device (cuModuleLoadDataEx): a CUmodule, where the DSL's
// ptxdsl::Module is what builds the text. A JIT failure throws DriverError with the module's name,
// its entries and the JIT error log. Move-only; share it through std::shared_ptr so its Functions
// keep it alive.
class LoadedModule {
 public:
  LoadedModule(const Context& ctx, std::string_view ptx, std::string name = "module");
  LoadedModule(LoadedModule&& other) noexcept;
  LoadedModule& operator=(LoadedModule&& other) noexcept;
  LoadedModule(const LoadedModule&) = delete;
  LoadedModule& operator=(const LoadedModule&) = delete;
  ~LoadedModule();

  const std::string& name() const { return name_; }
  const std::string& info_log() const { return info_log_; }
  CUmod_st* handle() const { return handle_; }
  CUctx_st* context() const;
  int device() const;
  double jit_ms() const { return jit_ms_; }

 private:
  void release() noexcept;
  std::shared_ptr<const detail::ContextState> ctx_;
  CUmod_st* handle_ = nullptr;
  std::string name_;
  std::string info_log_;
  double jit_ms_ = 0;
};

namespace detail {

// How a launch argument must look for one kernel parameter, precomputed from the contract.
struct ParamSlot {
  enum class Kind : std::uint8_t { Pointer, Float, Int, TensorMap };
  Kind kind = Kind::Int;
  std::uint8_t size = 0;          // bytes of the .param
  std::uint8_t element_size = 0;  // pointers: bytes per element
  // From the contract (ParamSpec): pointers' byte alignment, integers' required multiple (0 or 1:
  // none).
  std::uint32_t align = 0;
  std::uint32_t multiple = 0;
};

}  // namespace detail

// One kernel entry of a module. Holds its module alive. Launch it with `launch` (checked against
// the contract) or `launch_raw`. Copyable: a handle.
class Function {
 public:
  Function() = default;
  // The contract's entry, whose parameters `launch` checks arguments against.
  Function(std::shared_ptr<const LoadedModule> module, KernelContract contract);
  // An entry by name, with no contract: only `launch_raw` may launch it.
  Function(std::shared_ptr<const LoadedModule> module, std::string_view entry);

  const std::string& name() const { return contract_.entry; }
  const KernelContract& contract() const { return contract_; }
  bool has_contract() const { return has_contract_; }
  CUfunc_st* handle() const { return handle_; }
  CUctx_st* context() const { return ctx_; }
  const std::shared_ptr<const LoadedModule>& module() const { return module_; }
  const std::vector<detail::ParamSlot>& slots() const { return slots_; }
  int registers() const;
  int max_threads_per_block() const;

  // Opts the kernel into `bytes` of dynamic shared memory when that is above the default 48 KB
  // (cuFuncSetAttribute); a no-op when already done. Thread-safe.
  void reserve_dynamic_shared(std::uint32_t bytes) const;
  // Allows clusters of more than 8 CTAs (the non-portable size) on first use; a no-op after.
  // Thread-safe.
  void allow_non_portable_clusters() const;

 private:
  std::shared_ptr<const LoadedModule> module_;
  CUfunc_st* handle_ = nullptr;
  CUctx_st* ctx_ = nullptr;
  KernelContract contract_;
  bool has_contract_ = false;
  std::vector<detail::ParamSlot> slots_;
  std::shared_ptr<std::atomic<std::uint32_t>> shared_opted_in_;  // bytes allowed; shared by copies
  std::shared_ptr<std::atomic<bool>> non_portable_clusters_;     // shared by copies
};

// LoadedModules keyed by (PTX hash, device): a program pays the JIT once per PTX text and device.
// Thread-safe; two threads asking for the same module wait for one JIT.
class ModuleCache {
 public:
  static ModuleCache& global();

  std::shared_ptr<const LoadedModule> get(const Context& ctx, std::string_view ptx,
                                          std::string_view name = "module");
  std::size_t size() const;
  std::uint64_t jit_count() const;  // modules compiled through this cache
  std::uint64_t hit_count() const;
  void clear();

 private:
  struct Key {
    std::uint64_t hash_a, hash_b, length;
    int device;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const { return k.hash_a ^ (k.hash_b * 31u) ^ k.device; }
  };
  struct Entry {
    std::mutex mutex;
    std::shared_ptr<const LoadedModule> module;
  };
  mutable std::mutex mutex_;
  std::unordered_map<Key, std::shared_ptr<Entry>, KeyHash> entries_;
  std::atomic<std::uint64_t> jits_{0};
  std::atomic<std::uint64_t> hits_{0};
};

}  // namespace ptxdsl::runtime
