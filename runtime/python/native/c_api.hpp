// The C ABI functions that ptxdsl's native Python libraries (torch_ops.cpp, jax_ffi.cpp) call,
// bound once from the addresses that Python's ctypes resolved in the libptxdsl.so it loaded: one
// library and one set of kernel objects in the process, and nothing here links libptxdsl.so.
#pragma once

#include <cstdint>

#include "ptxdsl/ptxdsl.h"

namespace ptxdsl::native {

// In the order of ptxdsl._lib.NATIVE_FUNCTIONS, which hands over their addresses.
struct CApi {
  decltype(&ptxdsl_layer_norm_forward) layer_norm_forward = nullptr;
  decltype(&ptxdsl_layer_norm_backward) layer_norm_backward = nullptr;
  decltype(&ptxdsl_rms_norm_forward) rms_norm_forward = nullptr;
  decltype(&ptxdsl_rms_norm_backward) rms_norm_backward = nullptr;
  decltype(&ptxdsl_last_error) last_error = nullptr;
  decltype(&ptxdsl_norm_backward_ex) norm_backward_ex = nullptr;

  static constexpr int kCount = 6;

  // False, binding nothing, where an address is null.
  bool bind(const std::int64_t* addresses) {
    for (int i = 0; i < kCount; ++i) {
      if (addresses[i] == 0) return false;
    }
    set(layer_norm_forward, addresses[0]);
    set(layer_norm_backward, addresses[1]);
    set(rms_norm_forward, addresses[2]);
    set(rms_norm_backward, addresses[3]);
    set(last_error, addresses[4]);
    set(norm_backward_ex, addresses[5]);
    return true;
  }

 private:
  template <typename Function>
  static void set(Function& slot, std::int64_t address) {
    slot = reinterpret_cast<Function>(static_cast<std::intptr_t>(address));
  }
};

}  // namespace ptxdsl::native
