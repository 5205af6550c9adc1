/*
 * tvm::ffi::dim3, the grid and block extent of a launch. A header of its own so that what
 * describes a launch (launch_config.h) needs neither the driver nor the check macros of
 * base.h, which brings it too.
 */
#ifndef TVM_FFI_EXTRA_CUDA_DIM3_H_
#define TVM_FFI_EXTRA_CUDA_DIM3_H_

#include <cuda_runtime.h>  // ::dim3
#include <tvm/ffi/base_detail.h>

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {

/*! \brief Grid or block extent; unset dimensions are 1. CUDA's own ::dim3 converts to it. */
struct dim3 {
  unsigned int x = 1;
  unsigned int y = 1;
  unsigned int z = 1;
  constexpr dim3() = default;
  constexpr explicit dim3(unsigned int x) : x(x) {}
  constexpr dim3(unsigned int x, unsigned int y) : x(x), y(y) {}
  constexpr dim3(unsigned int x, unsigned int y, unsigned int z) : x(x), y(y), z(z) {}
  constexpr dim3(const ::dim3& d) : x(d.x), y(d.y), z(d.z) {}  // NOLINT: implicit on purpose
};

}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_EXTRA_CUDA_DIM3_H_
