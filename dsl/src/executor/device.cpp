#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

#include "program.hpp"
#include "ptxdsl/dsl/emit.hpp"

namespace ptxdsl {
namespace detail {

struct Memory {
  std::vector<std::unique_ptr<Allocation>> all;
  std::vector<Allocation*> sorted;  // by base
  std::uint64_t slots = 0;          // slots handed out; a freed allocation's is not reused

  Allocation& add(std::unique_ptr<Allocation> a) {
    Allocation* raw = a.get();
    all.push_back(std::move(a));
    sorted.insert(std::upper_bound(
                      sorted.begin(), sorted.end(), raw,
                      [](const Allocation* x, const Allocation* y) { return x->base < y->base; }),
                  raw);
    return *raw;
  }

  // The base of the next slot. Addresses stay below 2^63, so that no signed offset arithmetic
  // on them overflows.
  std::uint64_t reserve(std::uint64_t bytes) {
    constexpr std::uint64_t kMaxSlots =
        ((std::uint64_t{1} << 63) - kFirstAllocation) / kAllocationSlot - 1;
    if (bytes > kAllocationSlot / 4) {
      throw Error(fmt::format("CpuDevice: an allocation must be at most {} bytes, got {}",
                              kAllocationSlot / 4, bytes));
    }
    if (slots == kMaxSlots) {
      throw Error(fmt::format("CpuDevice: at most {} allocations a device", kMaxSlots));
    }
    return kFirstAllocation + slots++ * kAllocationSlot;
  }

  const Allocation* find(std::uint64_t address, std::uint64_t bytes) const {
    const Allocation* a = allocation_of(sorted, address);
    if (a == nullptr || address < a->base || address - a->base > a->size ||
        a->size - (address - a->base) < bytes) {
      return nullptr;
    }
    return a;
  }
};

const Allocation* allocation_of(const std::vector<Allocation*>& sorted, std::uint64_t address) {
  constexpr std::uint64_t kFirstSlot = kFirstAllocation - kAllocationSlot / 2;
  if (address < kFirstSlot) return nullptr;
  // A slot's allocation starts at its centre, or up to 255 bytes later (a mapped buffer keeps its
  // host address's alignment).
  const std::uint64_t centre =
      kFirstAllocation + (address - kFirstSlot) / kAllocationSlot * kAllocationSlot;
  const auto it =
      std::lower_bound(sorted.begin(), sorted.end(), centre,
                       [](const Allocation* a, std::uint64_t x) { return a->base < x; });
  return it != sorted.end() && (*it)->base - centre < 256 ? *it : nullptr;
}

}  // namespace detail

namespace {

std::string describe_dim(Dim3 d) {
  return fmt::format("({}, {}, {})", d.x, d.y, d.z);
}

// The launch's cluster shape: the config's, else the kernel's, else one CTA.
Dim3 cluster_of(const KernelContract& contract, const LaunchConfig& cfg) {
  if (cfg.cluster.count() != 0) return cfg.cluster;
  if (contract.cluster.count() != 0) return contract.cluster;
  return Dim3{1, 1, 1};
}

void check_config(const Kernel& k, const KernelContract& contract, const LaunchConfig& cfg) {
  const auto bad = [&](const std::string& what) {
    throw Error(fmt::format("kernel '{}': launch {}", k.name(), what));
  };
  const Dim3 b = cfg.block, g = cfg.grid;
  if (b.x == 0 || b.y == 0 || b.z == 0 || b.x > 1024 || b.y > 1024 || b.z > 64 ||
      b.count() > 1024) {
    bad(fmt::format("block must have 1 to 1024 threads (x, y ≤ 1024, z ≤ 64), got {}",
                    describe_dim(b)));
  }
  if (g.x == 0 || g.y == 0 || g.z == 0 || g.x > 0x7FFFFFFFu || g.y > 65535 || g.z > 65535) {
    bad(fmt::format("grid must be at least 1 in each dimension (x < 2^31, y, z ≤ 65535), got {}",
                    describe_dim(g)));
  }
  if (contract.block_threads != 0) {
    if (contract.block_required && (b.x != contract.block_threads || b.y != 1 || b.z != 1)) {
      bad(fmt::format("block must be ({}, 1, 1) as the kernel's .reqntid says, got {}",
                      contract.block_threads, describe_dim(b)));
    }
    if (!contract.block_required && b.count() > contract.block_threads) {
      bad(fmt::format("block must have at most {} threads (.maxntid), got {}",
                      contract.block_threads, b.count()));
    }
  }
  if (cfg.cluster.count() != 0) {
    const Dim3 c = cfg.cluster;
    if (c.x == 0 || c.y == 0 || c.z == 0 || c.count() > kMaxClusterCtas) {
      bad(fmt::format("cluster must have 1 to {} CTAs (each dimension at least 1), got {}",
                      kMaxClusterCtas, describe_dim(c)));
    }
    if (contract.cluster.count() != 0 && c != contract.cluster) {
      bad(fmt::format("cluster must be {} as the kernel's .reqnctapercluster says, got {}",
                      describe_dim(contract.cluster), describe_dim(c)));
    }
  } else if (contract.explicit_cluster && contract.cluster.count() == 0) {
    bad("needs cluster dimensions (LaunchConfig::cluster): the kernel has .explicitcluster");
  }
  const Dim3 c = cluster_of(contract, cfg);
  if (g.x % c.x != 0 || g.y % c.y != 0 || g.z % c.z != 0) {
    bad(fmt::format("grid {} must be a whole number of clusters {} in each dimension",
                    describe_dim(g), describe_dim(c)));
  }
  if (cfg.dynamic_shared_bytes < contract.dynamic_shared_bytes) {
    bad(fmt::format(
        "dynamic shared memory must be at least the {} bytes the kernel declares, got {}",
        contract.dynamic_shared_bytes, cfg.dynamic_shared_bytes));
  }
}

std::string arg_type_name(const Arg& a) {
  if (a.is_tensor_map) return "a tensor map";
  return a.pointer ? std::string("a device pointer") : std::string(ptx_name(a.type));
}

std::vector<std::byte> pack_params(const Kernel& k, const detail::Program& p,
                                   std::span<const Arg> args) {
  const auto& params = k.params();
  if (args.size() != params.size()) {
    std::string names;
    for (const ParamSpec& s : params) names += (names.empty() ? "" : ", ") + s.name;
    throw Error(fmt::format("kernel '{}' takes {} arguments ({}), got {}", k.name(), params.size(),
                            names, args.size()));
  }
  std::vector<std::byte> buffer(p.param_bytes);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const ParamSpec& s = params[i];
    const Arg& a = args[i];
    if (s.tensor_map || a.is_tensor_map) {
      if (s.tensor_map != a.is_tensor_map) {
        throw Error(fmt::format("kernel '{}', argument {} ('{}'): expected {}, got {}", k.name(), i,
                                s.name,
                                s.tensor_map ? std::string("a tensor map (Arg::of_tensor_map)")
                                             : std::string(ptx_name(s.type)),
                                arg_type_name(a)));
      }
      std::memcpy(buffer.data() + p.param_offsets[i], a.map.data(), a.map.size());
      continue;
    }
    if (s.pointer != a.pointer || (!s.pointer && s.type != a.type)) {
      throw Error(fmt::format(
          "kernel '{}', argument {} ('{}'): expected {}, got {}{}", k.name(), i, s.name,
          s.pointer ? fmt::format("a device pointer to {}", ptx_name(s.element))
                    : std::string(ptx_name(s.type)),
          arg_type_name(a),
          s.pointer || a.pointer
              ? ""
              : fmt::format(" (pass a {} value, or Arg::of(ScalarType::...))", ptx_name(s.type))));
    }
    const auto bytes = static_cast<std::size_t>(s.size_bytes());
    std::memcpy(buffer.data() + p.param_offsets[i], &a.bits, bytes);  // little-endian low bytes
  }
  return buffer;
}

}  // namespace

std::vector<Arg> args_by_name(const Kernel& kernel, std::span<const NamedArg> args) {
  std::vector<Arg> out;
  for (const ParamSpec& s : kernel.params()) {
    const auto it =
        std::find_if(args.begin(), args.end(), [&](const NamedArg& a) { return a.name == s.name; });
    if (it == args.end()) {
      throw Error(fmt::format("kernel '{}': no argument named '{}'", kernel.name(), s.name));
    }
    out.push_back(it->value);
  }
  for (const NamedArg& a : args) {
    const auto& params = kernel.params();
    if (std::none_of(params.begin(), params.end(),
                     [&](const ParamSpec& s) { return s.name == a.name; })) {
      std::string names;
      for (const ParamSpec& s : params) names += (names.empty() ? "" : ", ") + s.name;
      throw Error(fmt::format("kernel '{}' has no parameter '{}' (it has: {})", kernel.name(),
                              a.name, names));
    }
  }
  return out;
}

std::string format_trace(std::span<const TraceRecord> records) {
  std::string out;
  for (const TraceRecord& r : records) {
    out += fmt::format("{:6}  {}{}", r.index, r.executed ? "" : "(guard false) ", r.instr);
    for (const auto& [reg, value] : r.writes) out += fmt::format("    {} = {}", reg, value);
    out += "\n";
  }
  return out;
}

CpuDevice::CpuDevice() : memory_(std::make_unique<detail::Memory>()) {}
CpuDevice::~CpuDevice() = default;

ExecutorAddress CpuDevice::alloc(std::size_t bytes, std::string_view name, std::uint8_t fill) {
  auto a = std::make_unique<detail::Allocation>();
  a->owned.assign(bytes + 256, std::byte{fill});
  const auto raw = reinterpret_cast<std::uintptr_t>(a->owned.data());
  a->host = a->owned.data() + ((256 - raw % 256) % 256);
  a->size = bytes;
  a->base = memory_->reserve(bytes);
  a->name = name;
  return {memory_->add(std::move(a)).base};
}

ExecutorAddress CpuDevice::map(std::span<std::byte> host, std::string_view name) {
  auto a = std::make_unique<detail::Allocation>();
  a->host = host.data();
  a->size = host.size();
  // The device address keeps the host address's alignment, so alignment faults mean the same.
  a->base = memory_->reserve(host.size()) + reinterpret_cast<std::uintptr_t>(host.data()) % 256;
  a->name = name;
  return {memory_->add(std::move(a)).base};
}

void CpuDevice::free(ExecutorAddress p) {
  auto& all = memory_->all;
  const auto it =
      std::find_if(all.begin(), all.end(), [&](const auto& a) { return a->base == p.address; });
  if (it == all.end()) {
    throw Error(fmt::format("CpuDevice::free: {:#x} is not an address alloc() or map() returned",
                            p.address));
  }
  auto& sorted = memory_->sorted;
  sorted.erase(std::find(sorted.begin(), sorted.end(), it->get()));
  all.erase(it);
}

std::span<std::byte> CpuDevice::host(ExecutorAddress p, std::size_t bytes) {
  const detail::Allocation* a = memory_->find(p.address, bytes);
  if (a == nullptr) {
    throw Error(
        fmt::format("CpuDevice: [{:#x}, +{}) is not inside one allocation", p.address, bytes));
  }
  return {a->host + (p.address - a->base), bytes};
}

void CpuDevice::write(ExecutorAddress dst, std::span<const std::byte> src) {
  std::span<std::byte> to = host(dst, src.size());
  if (!src.empty()) std::memcpy(to.data(), src.data(), src.size());
}

void CpuDevice::read(std::span<std::byte> dst, ExecutorAddress src) const {
  const detail::Allocation* a = memory_->find(src.address, dst.size());
  if (a == nullptr) {
    throw Error(fmt::format("CpuDevice: [{:#x}, +{}) is not inside one allocation", src.address,
                            dst.size()));
  }
  if (!dst.empty()) std::memcpy(dst.data(), a->host + (src.address - a->base), dst.size());
}

LaunchStats CpuDevice::launch(const Kernel& kernel, const LaunchConfig& config,
                              std::span<const Arg> args, const ExecOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const detail::Program program = detail::decode(kernel);
  const KernelContract contract = kernel.contract();
  check_config(kernel, contract, config);

  detail::LaunchState state;
  state.kernel = &kernel;
  state.config = config;
  state.options = options;
  state.params = pack_params(kernel, program, args);
  state.allocations = &memory_->sorted;
  std::uint32_t shared_end = program.static_shared_end;
  if (program.has_dynamic_shared) {
    shared_end = program.shared.back().begin + config.dynamic_shared_bytes;
  }
  constexpr std::uint32_t kMaxShared = 227 * 1024;
  if (shared_end > kMaxShared) {
    throw Error(
        fmt::format("kernel '{}': launch needs {} bytes of shared memory per CTA; at most {} "
                    "(227 KiB) are allowed",
                    kernel.name(), shared_end, kMaxShared));
  }
  state.shared_bytes = shared_end;
  state.cluster = cluster_of(contract, config);

  LaunchStats stats;
  const Dim3 cl = state.cluster;
  const Dim3 clusters{config.grid.x / cl.x, config.grid.y / cl.y, config.grid.z / cl.z};
  const std::uint64_t total = clusters.count();
  stats.ctas = config.grid.count();
  const auto coords = [](std::uint64_t i, Dim3 shape) {
    return Dim3{static_cast<std::uint32_t>(i % shape.x),
                static_cast<std::uint32_t>(i / shape.x % shape.y),
                static_cast<std::uint32_t>(i / (std::uint64_t{shape.x} * shape.y))};
  };
  const unsigned nthreads = static_cast<unsigned>(
      std::max<std::uint64_t>(1, std::min<std::uint64_t>(options.threads, total)));
  std::atomic<std::uint64_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::exception_ptr error;
  std::uint64_t error_cta = ~std::uint64_t{0};
  const auto ranks = static_cast<std::uint32_t>(cl.count());
  const auto worker = [&] {
    std::vector<detail::Ctx> ctxs(ranks);
    detail::Cluster cluster;
    cluster.dims = cl;
    for (std::uint32_t r = 0; r < ranks; ++r) {
      detail::prepare_ctx(ctxs[r], program, state);
      ctxs[r].cluster = &cluster;
      ctxs[r].rank = r;
      cluster.ctas.push_back(&ctxs[r]);
    }
    std::vector<Dim3> ctas(ranks);
    std::uint64_t i = 0;
    try {
      while (!failed.load(std::memory_order_relaxed) && (i = next.fetch_add(1)) < total) {
        cluster.id = coords(i, clusters);
        for (std::uint32_t r = 0; r < ranks; ++r) {
          const Dim3 in = coords(r, cl);
          ctas[r] = Dim3{cluster.id.x * cl.x + in.x, cluster.id.y * cl.y + in.y,
                         cluster.id.z * cl.z + in.z};
          ctxs[r].trace =
              options.trace && ctas[r] == options.trace_target.cta ? &stats.trace : nullptr;
        }
        detail::run_cluster(cluster, ctas);
      }
    } catch (...) {
      const std::lock_guard lock(mutex);
      if (i < error_cta) {  // report the first CTA's error, as a one-thread run would
        error_cta = i;
        error = std::current_exception();
      }
      failed = true;
    }
    const std::lock_guard lock(mutex);
    for (const detail::Ctx& c : ctxs) {
      stats.warp_instructions += c.warp_instructions;
      stats.lane_instructions += c.lane_instructions;
    }
  };
  if (nthreads == 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < nthreads; ++t) pool.emplace_back(worker);
    for (std::thread& t : pool) t.join();
  }
  if (error) std::rethrow_exception(error);
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

}  // namespace ptxdsl
