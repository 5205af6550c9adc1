/*
 * How a launch is described and what it returns: tvm::ffi::LaunchConfig (grid, block, stream,
 * dynamic shared memory and cuLaunchKernelEx attributes, with no heap allocation) and
 * tvm::ffi::LaunchResult (a CUresult that also converts to cudaError_t).
 */
#ifndef TVM_FFI_EXTRA_CUDA_LAUNCH_CONFIG_H_
#define TVM_FFI_EXTRA_CUDA_LAUNCH_CONFIG_H_

#include <cuda.h>
#include <driver_types.h>
#include <tvm/ffi/base_detail.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/cuda/dim3.h>

#include <cstdint>
#include <cstring>

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {

/*!
 * \brief What a launch returns: converts to both CUresult and cudaError_t, whose codes are
 *  numerically the same, so code written against either API compiles unchanged. (An
 *  overload on the stream type cannot tell them apart: CUstream and cudaStream_t are one type.)
 */
class LaunchResult {
 public:
  constexpr LaunchResult(CUresult code) noexcept : code_(code) {}  // NOLINT: implicit on purpose
  constexpr operator CUresult() const noexcept { return code_; }   // NOLINT
  constexpr operator cudaError_t() const noexcept {                // NOLINT
    return static_cast<cudaError_t>(code_);
  }
  constexpr explicit operator int() const noexcept { return static_cast<int>(code_); }
  constexpr int code() const noexcept { return static_cast<int>(code_); }
  constexpr bool ok() const noexcept { return code_ == CUDA_SUCCESS; }

  friend constexpr bool operator==(LaunchResult a, LaunchResult b) { return a.code_ == b.code_; }
  friend constexpr bool operator!=(LaunchResult a, LaunchResult b) { return a.code_ != b.code_; }
  friend constexpr bool operator==(LaunchResult a, CUresult b) { return a.code_ == b; }
  friend constexpr bool operator!=(LaunchResult a, CUresult b) { return a.code_ != b; }
  friend constexpr bool operator==(CUresult a, LaunchResult b) { return a == b.code_; }
  friend constexpr bool operator!=(CUresult a, LaunchResult b) { return a != b.code_; }
  friend constexpr bool operator==(LaunchResult a, cudaError_t b) { return a.code() == b; }
  friend constexpr bool operator!=(LaunchResult a, cudaError_t b) { return a.code() != b; }
  friend constexpr bool operator==(cudaError_t a, LaunchResult b) { return a == b.code(); }
  friend constexpr bool operator!=(cudaError_t a, LaunchResult b) { return a != b.code(); }

 private:
  CUresult code_;
};

/*!
 * \brief Everything a cuLaunchKernelEx launch takes, built without heap allocation: the
 *  attributes live inline (at most kMaxAttributes). Setting an attribute twice replaces it.
 */
class LaunchConfig {
 public:
  static constexpr unsigned kMaxAttributes = 8;

  LaunchConfig() = default;
  LaunchConfig(dim3 grid, dim3 block, CUstream stream = nullptr, uint32_t dynamic_smem_bytes = 0)
      : grid_(grid), block_(block), stream_(stream), dynamic_smem_bytes_(dynamic_smem_bytes) {}

  LaunchConfig& SetGrid(dim3 grid) { return grid_ = grid, *this; }
  LaunchConfig& SetBlock(dim3 block) { return block_ = block, *this; }
  LaunchConfig& SetStream(CUstream stream) { return stream_ = stream, *this; }
  LaunchConfig& SetDynamicSharedMemory(uint32_t bytes) {
    return dynamic_smem_bytes_ = bytes, *this;
  }
  /*! \brief Thread block clusters (sm_90+). More than 8 blocks per cluster is non-portable;
   *  the kernel is given CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED automatically. */
  LaunchConfig& SetCluster(dim3 cluster) {
    Slot(CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION).value.clusterDim = {cluster.x, cluster.y,
                                                                    cluster.z};
    large_cluster_ = uint64_t{cluster.x} * cluster.y * cluster.z > 8;
    return *this;
  }
  LaunchConfig& SetClusterSchedulingPolicy(CUclusterSchedulingPolicy policy) {
    Slot(CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE)
        .value.clusterSchedulingPolicyPreference = policy;
    return *this;
  }
  /*! \brief Programmatic dependent launch: may start before the previous kernel in the stream
   *  finishes; the kernels coordinate with griddepcontrol.wait / launch_dependents. */
  LaunchConfig& SetProgrammaticStreamSerialization(bool allowed = true) {
    Slot(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
        .value.programmaticStreamSerializationAllowed = allowed ? 1 : 0;
    return *this;
  }
  /*! \brief Cooperative launch: all blocks co-resident, so the grid may synchronise. */
  LaunchConfig& SetCooperative(bool cooperative = true) {
    Slot(CU_LAUNCH_ATTRIBUTE_COOPERATIVE).value.cooperative = cooperative ? 1 : 0;
    return *this;
  }
  LaunchConfig& SetPriority(int priority) {
    Slot(CU_LAUNCH_ATTRIBUTE_PRIORITY).value.priority = priority;
    return *this;
  }
  /*! \brief Any other launch attribute, passed to the driver as given. */
  LaunchConfig& AddAttribute(const CUlaunchAttribute& attribute) {
    Slot(attribute.id) = attribute;
    if (attribute.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
      const auto& c = attribute.value.clusterDim;
      large_cluster_ = uint64_t{c.x} * c.y * c.z > 8;
    }
    return *this;
  }
  /*! \brief Makes CubinKernel::LaunchWithArgs check the arguments against the kernel's
   *  parameters (always on with TVM_FFI_CUBIN_DEBUG or TVM_FFI_CUBIN_CHECK_ARGS=1). */
  LaunchConfig& SetCheckArgs(bool check = true) { return check_args_ = check, *this; }

  dim3 grid() const { return grid_; }
  dim3 block() const { return block_; }
  CUstream stream() const { return stream_; }
  uint32_t dynamic_shared_memory() const { return dynamic_smem_bytes_; }
  const CUlaunchAttribute* attributes() const { return attrs_; }
  unsigned num_attributes() const { return num_attrs_; }
  bool check_args() const { return check_args_; }
  bool has_large_cluster() const { return large_cluster_; }

 private:
  CUlaunchAttribute& Slot(CUlaunchAttributeID id) {
    for (unsigned i = 0; i < num_attrs_; ++i) {
      if (attrs_[i].id == id) return attrs_[i];
    }
    if (num_attrs_ == kMaxAttributes) {
      TVM_FFI_THROW(ValueError) << "LaunchConfig holds at most " << kMaxAttributes
                                << " launch attributes";
    }
    CUlaunchAttribute& slot = attrs_[num_attrs_++];
    std::memset(&slot, 0, sizeof(slot));
    slot.id = id;
    return slot;
  }

  dim3 grid_;
  dim3 block_;
  CUstream stream_ = nullptr;
  uint32_t dynamic_smem_bytes_ = 0;
  unsigned num_attrs_ = 0;
  bool check_args_ = false;
  bool large_cluster_ = false;
  CUlaunchAttribute attrs_[kMaxAttributes];  // only the first num_attrs_ are meaningful
};

namespace details {
inline int CudaCode(LaunchResult r) { return r.code(); }
}  // namespace details

}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END
#endif  // TVM_FFI_EXTRA_CUDA_LAUNCH_CONFIG_H_
