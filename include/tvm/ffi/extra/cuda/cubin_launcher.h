/*
 * Load CUBIN, PTX and fatbin images and launch their kernels through the CUDA driver API.
 *
 * The driver is loaded at run time (detail/driver_api.h), so a library using this header
 * links with nothing CUDA-specific. Images are loaded as context-independent libraries
 * (cuLibraryLoadData): the driver loads them into each device's context when first used
 * there, and a launch runs in the context of its stream (the current context for stream 0).
 * docs/guides/cubin_launcher.md is the user guide.
 */
#ifndef TVM_FFI_EXTRA_CUDA_CUBIN_LAUNCHER_H_
#define TVM_FFI_EXTRA_CUDA_CUBIN_LAUNCHER_H_

#include <cuda.h>
#include <driver_types.h>
#include <tvm/ffi/base.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/cuda/detail/cubin_image.h>
#include <tvm/ffi/extra/cuda/detail/cuda_error.h>
#include <tvm/ffi/extra/cuda/detail/driver_api.h>
// Wrappers around a launch are exported functions; the guide's code relies on this include.
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

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

namespace detail {

/*! \brief A loaded library, shared by its CubinModule and every kernel taken from it. */
struct LibraryState {
  const DriverApi* api = nullptr;
  CUlibrary handle = nullptr;
  std::string label;  // `embedded module "my_cubin"`, `module "k.cubin"`, `module <N-byte image>`
  std::string owned;  // our copy of a caller's buffer: the driver may read it after loading
  ImageInfo info;

  LibraryState() = default;
  LibraryState(const LibraryState&) = delete;
  LibraryState& operator=(const LibraryState&) = delete;
  ~LibraryState() {
    // The result is ignored: at process exit the driver may already be shut down.
    if (handle != nullptr) api->LibraryUnload(handle);
  }
};

/*! \brief Per-kernel data that is only needed off the hot path. */
struct KernelState {
  std::shared_ptr<const LibraryState> library;
  std::string name;
  std::once_flag params_once;
  std::vector<size_t> param_sizes;    // from cuKernelGetParamInfo
  std::string params_unavailable;     // why param_sizes could not be read
  std::atomic<bool> large_clusters_enabled{false};

  std::string Describe() const { return "kernel \"" + name + "\" in " + library->label; }
};

[[noreturn]] TVM_FFI_COLD inline void ThrowCudaFailure(const std::string& op, int code,
                                                       const std::string& details = "") {
  TVM_FFI_THROW(RuntimeError) << op << ": " << DriverErrorText(code) << details;
  throw;  // not reached
}

inline bool CheckArgsFromEnvironment() {
  // Read once: the hot path must not call getenv.
  static const bool enabled = [] {
    const char* value = std::getenv("TVM_FFI_CUBIN_CHECK_ARGS");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  return enabled;
}

/*! \brief Reads a whole file; false (errno set) when it cannot be opened or read. */
inline bool ReadFile(const std::string& path, std::string* out) {
  // <cstdio> rather than <fstream>: the stream headers would double this header's parse time.
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return false;
  char buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), file)) > 0) out->append(buf, n);
  const bool ok = std::ferror(file) == 0;
  const int saved = errno;  // fclose must not replace the read error
  std::fclose(file);
  errno = saved;
  return ok;
}

inline std::string JoinSizes(const char* noun, const std::vector<size_t>& sizes) {
  std::string out = std::to_string(sizes.size()) + " " + noun + (sizes.size() == 1 ? "" : "s");
  if (sizes.empty()) return out;
  out += sizes.size() == 1 ? " (size " : " (sizes ";
  for (size_t i = 0; i < sizes.size(); ++i) out += (i ? ", " : "") + std::to_string(sizes[i]);
  return out + ")";
}

}  // namespace detail

class CubinModule;

/*!
 * \brief A kernel of a loaded module. Move-only; it shares ownership of the module's library,
 *  so it stays valid after the CubinModule it came from is gone.
 */
class CubinKernel {
 public:
  /*! \brief An empty kernel: launching it returns CUDA_ERROR_INVALID_HANDLE. */
  CubinKernel() = default;
  CubinKernel(CubinKernel&&) noexcept = default;
  CubinKernel& operator=(CubinKernel&&) noexcept = default;
  CubinKernel(const CubinKernel&) = delete;
  CubinKernel& operator=(const CubinKernel&) = delete;

  /*!
   * \brief cuLaunchKernel. `args[i]` points at the i-th kernel argument. The kernel runs in
   *  the context of `stream` (the current context for stream 0). Returns the CUDA result.
   */
  LaunchResult Launch(void** args, dim3 grid, dim3 block, CUstream stream,
                      uint32_t dyn_smem_bytes = 0) const {
    if (TVM_FFI_UNLIKELY(api_ == nullptr)) return LaunchEmpty();
    CUresult r = api_->LaunchKernel(Function(), grid.x, grid.y, grid.z, block.x, block.y,
                                    block.z, dyn_smem_bytes, stream, args, nullptr);
    if (TVM_FFI_UNLIKELY(r != CUDA_SUCCESS)) {
      r = Recover(r, "cuLaunchKernel", stream, [&] {
        return api_->LaunchKernel(Function(), grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                  dyn_smem_bytes, stream, args, nullptr);
      });
    }
    return r;
  }

  /*! \brief cuLaunchKernelEx with a typed configuration (clusters, PDL, cooperative, ...). */
  LaunchResult Launch(void** args, const LaunchConfig& config) const {
    if (TVM_FFI_UNLIKELY(api_ == nullptr)) return LaunchEmpty();
    if (TVM_FFI_UNLIKELY(config.has_large_cluster())) EnableLargeClusters();
    CUlaunchConfig raw;
    raw.gridDimX = config.grid().x;
    raw.gridDimY = config.grid().y;
    raw.gridDimZ = config.grid().z;
    raw.blockDimX = config.block().x;
    raw.blockDimY = config.block().y;
    raw.blockDimZ = config.block().z;
    raw.sharedMemBytes = config.dynamic_shared_memory();
    raw.hStream = config.stream();
    // The driver only reads the attributes; CUlaunchConfig just lacks the const.
    raw.attrs = const_cast<CUlaunchAttribute*>(config.attributes());
    raw.numAttrs = config.num_attributes();
    return LaunchRaw(raw, args);
  }

  /*!
   * \brief cuLaunchKernelEx with a configuration built by the caller (this kernel is passed as
   *  the function). Cluster attributes above 8 blocks are handled as in Launch(args, config).
   */
  LaunchResult LaunchEx(const CUlaunchConfig& config, void** args) const {
    if (TVM_FFI_UNLIKELY(api_ == nullptr)) return LaunchEmpty();
    for (unsigned i = 0; i < config.numAttrs; ++i) {
      const CUlaunchAttribute& a = config.attrs[i];
      if (a.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION &&
          uint64_t{a.value.clusterDim.x} * a.value.clusterDim.y * a.value.clusterDim.z > 8) {
        EnableLargeClusters();
      }
    }
    return LaunchRaw(config, args);
  }

  /*!
   * \brief Launch with typed arguments: `kernel.LaunchWithArgs(cfg, x_ptr, y_ptr, n)`. Each
   *  argument is passed by address, so its C++ type must match the kernel parameter's size;
   *  with cfg.SetCheckArgs(true), TVM_FFI_CUBIN_DEBUG or TVM_FFI_CUBIN_CHECK_ARGS=1 the count
   *  and sizes are checked against the kernel (ValueError on mismatch).
   */
  template <typename... Args>
  LaunchResult LaunchWithArgs(const LaunchConfig& config, const Args&... args) const {
    static_assert((std::is_trivially_copyable<Args>::value && ...),
                  "kernel arguments are copied bytewise: pass plain values and device pointers "
                  "(e.g. tensor.data_ptr()), not C++ objects");
    void* pointers[sizeof...(Args) + 1] = {const_cast<void*>(static_cast<const void*>(&args))...,
                                           nullptr};
#ifdef TVM_FFI_CUBIN_DEBUG
    const bool check = true;
#else
    const bool check = config.check_args() || detail::CheckArgsFromEnvironment();
#endif
    if (TVM_FFI_UNLIKELY(check)) CheckArgs({sizeof(Args)...}, config.check_args());
    return Launch(pointers, config);
  }

  /*!
   * \brief Throws ValueError unless the kernel takes exactly these parameter sizes. Needs
   *  cuKernelGetParamInfo (CUDA 12.4 driver); with `required` false an older driver skips it.
   */
  void CheckArgs(std::initializer_list<size_t> sizes, bool required = true) const {
    const detail::KernelState& state = State();
    std::call_once(state_->params_once, [this] { ReadParamInfo(); });
    if (!state.params_unavailable.empty()) {
      if (!required) return;
      TVM_FFI_THROW(RuntimeError) << "cannot check the arguments of " << state.Describe() << ": "
                                  << state.params_unavailable;
    }
    const std::vector<size_t> given(sizes);
    if (given != state.param_sizes) {
      TVM_FFI_THROW(ValueError) << state.Describe() << " takes "
                                << detail::JoinSizes("parameter", state.param_sizes) << "; got "
                                << detail::JoinSizes("argument", given);
    }
  }

  /*!
   * \brief Allows `dynamic_smem_max` bytes of dynamic shared memory on every device
   *  (-1: the device's opt-in maximum minus `static_mem_size`). Needed above 48 KiB.
   */
  void SetMaxDynamicSharedMemory(size_t static_mem_size, int64_t dynamic_smem_max = -1) const {
    const detail::KernelState& state = State();
    if (dynamic_smem_max < -1) {
      TVM_FFI_THROW(ValueError) << "dynamic_smem_max must be -1 (the device maximum) or a byte "
                                << "count (got " << dynamic_smem_max << ")";
    }
    int count = 0;
    CUresult r = api_->DeviceGetCount(&count);
    if (r != CUDA_SUCCESS) detail::ThrowCudaFailure("cuDeviceGetCount", r);
    int applied = 0;
    for (int dev = 0; dev < count; ++dev) {
      int optin = 0;
      r = api_->DeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                   dev);
      if (r != CUDA_SUCCESS) {
        detail::ThrowCudaFailure(
            "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) of device " +
                std::to_string(dev),
            r);
      }
      const int64_t room = static_cast<int64_t>(optin) - static_cast<int64_t>(static_mem_size);
      if (room < 0 || dynamic_smem_max > room) {
        TVM_FFI_THROW(ValueError)
            << state.Describe() << ": " << static_mem_size << " bytes of static and "
            << (dynamic_smem_max < 0 ? std::string("any") : std::to_string(dynamic_smem_max))
            << " bytes of dynamic shared memory exceed device " << dev << "'s limit of " << optin
            << " bytes per block";
      }
      const int64_t value = dynamic_smem_max < 0 ? room : dynamic_smem_max;
      r = api_->KernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   static_cast<int>(value), handle_, dev);
      // A device this image has no code for cannot run the kernel anyway; skip it.
      if (r == CUDA_ERROR_NO_BINARY_FOR_GPU && count > 1) continue;
      if (r != CUDA_SUCCESS) {
        detail::ThrowCudaFailure("cuKernelSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, " +
                                     std::to_string(value) + ") of " + state.Describe() +
                                     " on device " + std::to_string(dev),
                                 r,
                                 detail::IsArchitectureError(r)
                                     ? "; " + detail::ArchitectureNote(state.library->info, dev)
                                     : std::string());
      }
      ++applied;
    }
    if (applied == 0 && count > 0) {
      detail::ThrowCudaFailure("cuKernelSetAttribute of " + state.Describe(),
                               CUDA_ERROR_NO_BINARY_FOR_GPU,
                               "; " + detail::ArchitectureNote(state.library->info, 0));
    }
  }

  /*! \brief The driver handle (a CUkernel; cast to CUfunction for cuLaunchKernel*). */
  CUkernel GetHandle() const { return handle_; }
  /*! \brief The kernel's name as looked up. */
  const std::string& name() const { return State().name; }

 private:
  friend class CubinModule;

  CUfunction Function() const { return reinterpret_cast<CUfunction>(handle_); }

  const detail::KernelState& State() const {
    if (state_ == nullptr) {
      TVM_FFI_THROW(RuntimeError) << "use of an empty CubinKernel (default-constructed or "
                                  << "moved-from)";
    }
    return *state_;
  }

  LaunchResult LaunchRaw(const CUlaunchConfig& config, void** args) const {
    CUresult r = api_->LaunchKernelEx(&config, Function(), args, nullptr);
    if (TVM_FFI_UNLIKELY(r != CUDA_SUCCESS)) {
      r = Recover(r, "cuLaunchKernelEx", config.hStream,
                  [&] { return api_->LaunchKernelEx(&config, Function(), args, nullptr); });
    }
    return r;
  }

  // The failure path of every launch: make a context current if the program has none (like
  // the runtime would), retry once, and otherwise remember what failed for the check macros.
  template <typename Retry>
  TVM_FFI_COLD CUresult Recover(CUresult r, const char* op, CUstream stream, Retry retry) const {
    if (stream == nullptr && detail::EnsureCurrentContext(*api_)) r = retry();
    if (r != CUDA_SUCCESS) {
      std::string where = std::string(op) + " of " + state_->Describe();
      if (detail::IsArchitectureError(r)) {
        where += ": " + detail::ArchitectureNote(state_->library->info,
                                                 detail::LaunchDevice(*api_, stream));
      }
      detail::SetLaunchFailure(r, where);
    }
    return r;
  }

  TVM_FFI_COLD static LaunchResult LaunchEmpty() {
    detail::SetLaunchFailure(CUDA_ERROR_INVALID_HANDLE,
                             "launch of an empty CubinKernel (default-constructed or moved-from)");
    return CUDA_ERROR_INVALID_HANDLE;
  }

  // Clusters above 8 blocks need an opt-in per kernel and device; done once, on every device,
  // so that the launch itself stays free of device queries. Devices without cluster support
  // refuse it, which is harmless: the launch reports the real problem.
  TVM_FFI_COLD void EnableLargeClusters() const {
    if (state_->large_clusters_enabled.load(std::memory_order_acquire)) return;
    int count = 0;
    if (api_->DeviceGetCount(&count) != CUDA_SUCCESS) return;
    for (int dev = 0; dev < count; ++dev) {
      api_->KernelSetAttribute(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1, handle_,
                               dev);
    }
    state_->large_clusters_enabled.store(true, std::memory_order_release);
  }

  void ReadParamInfo() const {
    detail::KernelState& state = *state_;
    if (api_->KernelGetParamInfo == nullptr) {
      state.params_unavailable = "cuKernelGetParamInfo needs a CUDA 12.4 or newer driver (this "
                                 "one supports CUDA " +
                                 std::to_string(api_->driver_version / 1000) + "." +
                                 std::to_string(api_->driver_version % 1000 / 10) + ")";
      return;
    }
    for (size_t i = 0;; ++i) {
      size_t offset = 0, size = 0;
      const CUresult r = api_->KernelGetParamInfo(handle_, i, &offset, &size);
      if (r == CUDA_ERROR_INVALID_VALUE) break;  // past the last parameter
      if (r != CUDA_SUCCESS) {
        state.params_unavailable = "cuKernelGetParamInfo: " + detail::DriverErrorText(r);
        return;
      }
      state.param_sizes.push_back(size);
    }
  }

  const detail::DriverApi* api_ = nullptr;  // hot path: read without touching state_
  CUkernel handle_ = nullptr;
  std::unique_ptr<detail::KernelState> state_;
};

/*!
 * \brief A loaded CUBIN, PTX or fatbin image (a context-independent CUlibrary). Move-only;
 *  unloaded when it and every kernel taken from it are gone.
 */
class CubinModule {
 public:
  /*! \brief Loads a copy of `image`. */
  explicit CubinModule(const Bytes& image)
      : CubinModule(Load(SizedLabel(image.size()), image.data(), image.size(), true)) {}
  /*!
   * \brief Loads an image known only by its start: ELF and fatbin headers give the size,
   *  PTX ends at its NUL. The memory must outlive the module (as embedded data does).
   */
  explicit CubinModule(const char* image)
      : CubinModule(Load(SizedLabel(UnsizedImageSize(image)), image, UnsizedImageSize(image),
                         false)) {}
  /*! \brief Loads a copy of `size` bytes at `image`. */
  CubinModule(const void* image, size_t size)
      : CubinModule(Load(SizedLabel(size), static_cast<const char*>(image), size, true)) {}

  /*! \brief Reads and loads a .cubin, .ptx or .fatbin file. */
  static CubinModule FromFile(const std::string& path) {
    std::string data;
    if (!detail::ReadFile(path, &data)) {
      TVM_FFI_THROW(RuntimeError) << "cannot read CUDA module file \"" << path
                                  << "\": " << std::strerror(errno);
    }
    return CubinModule(Load("module \"" + path + "\"", data.data(), data.size(), true));
  }

  /*! \brief Used by TVM_FFI_EMBED_CUBIN: static data between two linker symbols, not copied. */
  static CubinModule FromEmbedded(const char* name, const char* begin, const char* end) {
    return CubinModule(Load(std::string("embedded module \"") + name + "\"", begin,
                            static_cast<size_t>(end - begin), false));
  }

  CubinModule(CubinModule&&) noexcept = default;
  CubinModule& operator=(CubinModule&&) noexcept = default;
  CubinModule(const CubinModule&) = delete;
  CubinModule& operator=(const CubinModule&) = delete;

  /*! \brief Looks up a kernel by its (extern "C" or mangled) name; the error lists the kernels. */
  CubinKernel GetKernel(const std::string& name) const {
    const detail::LibraryState& lib = Library();
    CubinKernel kernel;
    const CUresult r = lib.api->LibraryGetKernel(&kernel.handle_, lib.handle, name.c_str());
    if (r != CUDA_SUCCESS) {
      std::string details;
      if (detail::IsArchitectureError(r)) {
        details = "; " + detail::ArchitectureNote(lib.info, CurrentDevice(lib));
      } else if (r == CUDA_ERROR_NOT_FOUND) {
        details = "; " + ListKernelsForError(lib);
      }
      detail::ThrowCudaFailure("cuLibraryGetKernel(\"" + name + "\") in " + lib.label, r, details);
    }
    kernel.api_ = lib.api;
    kernel.state_ = std::make_unique<detail::KernelState>();
    kernel.state_->library = state_;
    kernel.state_->name = name;
    return kernel;
  }
  CubinKernel operator[](const std::string& name) const { return GetKernel(name); }

  /*! \brief GetKernel, then CubinKernel::SetMaxDynamicSharedMemory on every device. */
  CubinKernel GetKernelWithMaxDynamicSharedMemory(const std::string& name, size_t static_mem_size,
                                                  int64_t dynamic_smem_max = -1) const {
    CubinKernel kernel = GetKernel(name);
    kernel.SetMaxDynamicSharedMemory(static_mem_size, dynamic_smem_max);
    return kernel;
  }

  /*! \brief Names of the kernels in the module (needs a CUDA 12.4 or newer driver). */
  std::vector<std::string> KernelNames() const { return KernelNamesOf(Library()); }

  /*! \brief The driver handle. */
  CUlibrary GetHandle() const { return Library().handle; }
  /*! \brief How errors name this module: `embedded module "x"`, `module "path"`, ... */
  const std::string& label() const { return Library().label; }

 private:
  explicit CubinModule(std::shared_ptr<detail::LibraryState> state) : state_(std::move(state)) {}

  static std::string SizedLabel(size_t size) {
    return "module <" + std::to_string(size) + "-byte image>";
  }

  const detail::LibraryState& Library() const {
    if (state_ == nullptr) TVM_FFI_THROW(RuntimeError) << "use of a moved-from CubinModule";
    return *state_;
  }

  static int CurrentDevice(const detail::LibraryState& lib) {
    return detail::LaunchDevice(*lib.api, nullptr);
  }

  static std::vector<std::string> KernelNamesOf(const detail::LibraryState& lib) {
    const detail::DriverApi& api = *lib.api;
    api.Require(api.LibraryGetKernelCount, "cuLibraryGetKernelCount", 12040);
    api.Require(api.LibraryEnumerateKernels, "cuLibraryEnumerateKernels", 12040);
    api.Require(api.KernelGetName, "cuKernelGetName", 12030);
    unsigned count = 0;
    CUresult r = api.LibraryGetKernelCount(&count, lib.handle);
    if (r != CUDA_SUCCESS) detail::ThrowCudaFailure("cuLibraryGetKernelCount of " + lib.label, r);
    std::vector<CUkernel> kernels(count);
    r = api.LibraryEnumerateKernels(kernels.data(), count, lib.handle);
    if (r != CUDA_SUCCESS) detail::ThrowCudaFailure("cuLibraryEnumerateKernels of " + lib.label, r);
    std::vector<std::string> names;
    for (CUkernel k : kernels) {
      const char* name = nullptr;
      r = api.KernelGetName(&name, k);
      if (r != CUDA_SUCCESS) detail::ThrowCudaFailure("cuKernelGetName in " + lib.label, r);
      names.emplace_back(name ? name : "");
    }
    return names;
  }

  static std::string ListKernelsForError(const detail::LibraryState& lib) {
    std::vector<std::string> names;
    try {
      names = KernelNamesOf(lib);
    } catch (const std::exception&) {
      return "(listing the kernels of a module needs a CUDA 12.4 or newer driver)";
    }
    std::string out = "kernels in this module:";
    for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : " ") + names[i];
    return names.empty() ? out + " (none)" : out;
  }

  static size_t UnsizedImageSize(const char* image) {
    const size_t size = detail::SelfDescribedSize(image);
    // Unrecognised: hand InspectImage the first few bytes so its error can show them.
    return size != 0 || image == nullptr ? size : strnlen(image, 4);
  }

  static std::shared_ptr<detail::LibraryState> Load(std::string label, const char* data,
                                                    size_t size, bool copy) {
    auto lib = std::make_shared<detail::LibraryState>();
    lib->label = std::move(label);
    lib->info = detail::InspectImage(data, size);
    if (!lib->info.error.empty()) {
      TVM_FFI_THROW(ValueError) << "cannot load " << lib->label << ": " << lib->info.error;
    }
    const char* code = data;
    // The driver reads PTX as a C string: terminate a sized PTX image that lacks its NUL.
    if (copy || (lib->info.kind == detail::ImageKind::kPtx && !lib->info.nul_terminated)) {
      lib->owned.assign(data, size);
      code = lib->owned.c_str();
    }
    lib->api = &detail::DriverApi::Get();
    std::string log(16384, '\0');
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {&log[0], reinterpret_cast<void*>(static_cast<uintptr_t>(log.size() - 1))};
    const CUresult r = lib->api->LibraryLoadData(&lib->handle, code, options, values, 2, nullptr,
                                                 nullptr, 0);
    if (r != CUDA_SUCCESS) {
      lib->handle = nullptr;
      std::string details;
      if (detail::IsArchitectureError(r)) {
        details = "; " + detail::ArchitectureNote(lib->info, CurrentDevice(*lib));
      }
      log.resize(std::strlen(log.c_str()));
      if (!log.empty()) details += "; JIT log:\n" + log;
      detail::ThrowCudaFailure("cuLibraryLoadData(" + lib->label + ")", r, details);
    }
    return lib;
  }

  std::shared_ptr<detail::LibraryState> state_;
};

namespace detail {
inline int CudaCode(CUresult r) { return static_cast<int>(r); }
inline int CudaCode(cudaError_t r) { return static_cast<int>(r); }
inline int CudaCode(LaunchResult r) { return r.code(); }
}  // namespace detail

}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

/*!
 * \brief Throws RuntimeError "CUDA_ERROR_INVALID_VALUE (1): invalid argument" (plus which
 *  kernel, when the code came from a failed launch) unless `expr` is CUDA_SUCCESS.
 */
#define TVM_FFI_CHECK_CUDA_DRIVER_ERROR(expr)                                             \
  do {                                                                                    \
    const int tvm_ffi_cuda_code_ = ::tvm::ffi::detail::CudaCode(expr);                    \
    if (TVM_FFI_UNLIKELY(tvm_ffi_cuda_code_ != 0)) {                                      \
      TVM_FFI_THROW(RuntimeError) << ::tvm::ffi::detail::DriverErrorText(tvm_ffi_cuda_code_) \
                                  << ::tvm::ffi::detail::TakeLaunchFailureNote(            \
                                         tvm_ffi_cuda_code_);                              \
    }                                                                                     \
  } while (0)

/*! \brief As above with the runtime's names: "cudaErrorInvalidValue (1): invalid argument". */
#define TVM_FFI_CHECK_CUDA_ERROR(expr)                                                     \
  do {                                                                                     \
    const int tvm_ffi_cuda_code_ = ::tvm::ffi::detail::CudaCode(expr);                     \
    if (TVM_FFI_UNLIKELY(tvm_ffi_cuda_code_ != 0)) {                                       \
      TVM_FFI_THROW(RuntimeError) << ::tvm::ffi::detail::RuntimeErrorText(tvm_ffi_cuda_code_) \
                                  << ::tvm::ffi::detail::TakeLaunchFailureNote(             \
                                         tvm_ffi_cuda_code_);                               \
    }                                                                                      \
  } while (0)

/*!
 * \brief Declares the image embedded under `name` (symbols __tvm_ffi__cubin_<name> and
 *  __tvm_ffi__cubin_<name>_end, made by tvm_ffi.utils.embed_cubin, load_inline or objcopy)
 *  and a per-library module loaded on first use. Use at namespace scope; may appear in
 *  several files of one library. Hidden visibility keeps two libraries that embed the same
 *  name from sharing (or interposing) each other's data and module.
 */
#define TVM_FFI_EMBED_CUBIN(name)                                                          \
  extern "C" TVM_FFI_DLL_LOCAL const char __tvm_ffi__cubin_##name[];                       \
  extern "C" TVM_FFI_DLL_LOCAL const char __tvm_ffi__cubin_##name##_end[];                 \
  TVM_FFI_DLL_LOCAL inline const ::tvm::ffi::CubinModule& TVMFFIEmbeddedCubin_##name() {   \
    static const ::tvm::ffi::CubinModule module = ::tvm::ffi::CubinModule::FromEmbedded(   \
        #name, __tvm_ffi__cubin_##name, __tvm_ffi__cubin_##name##_end);                    \
    return module;                                                                         \
  }                                                                                        \
  extern "C" TVM_FFI_DLL_LOCAL const char __tvm_ffi__cubin_##name##_end[] /* needs a ; */

/*! \brief The CubinModule declared by TVM_FFI_EMBED_CUBIN(name) (loaded on first use). */
#define TVM_FFI_EMBED_CUBIN_GET_MODULE(name) TVMFFIEmbeddedCubin_##name()

/*! \brief A CubinKernel for `kernel_name` from the module declared by TVM_FFI_EMBED_CUBIN. */
#define TVM_FFI_EMBED_CUBIN_GET_KERNEL(name, kernel_name) \
  TVMFFIEmbeddedCubin_##name().GetKernel(kernel_name)

#endif  // TVM_FFI_EXTRA_CUDA_CUBIN_LAUNCHER_H_
