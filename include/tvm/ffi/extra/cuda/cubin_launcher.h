/*
 * Load CUBIN, PTX and fatbin images and launch their kernels through the CUDA driver API.
 *
 * The driver is loaded at run time (detail/driver_api.h), so a library using this header
 * links with nothing CUDA-specific. Images are loaded as context-independent libraries
 * (cuLibraryLoadData): the driver loads them into each device's context when first used
 * there, and a launch runs in the context of its stream (the current context for stream 0).
 * docs/guides/cubin_launcher.md is the user guide.
 *
 * This is the one header launcher code includes; it brings the rest of the family along:
 * base.h (dim3, check macros), launch_config.h (LaunchConfig, LaunchResult),
 * internal/unified_api.h (apache-tvm-ffi's cuda_api names) and the embed macros of
 * embed_cubin.h (detail/embed_cubin_macros.h).
 * The run-once functions (loading, lookup, error texts) are defined in the impl headers under
 * detail/: inline by default, or compiled once per library (detail/launcher_linkage.h).
 */
#ifndef TVM_FFI_EXTRA_CUDA_CUBIN_LAUNCHER_H_
#define TVM_FFI_EXTRA_CUDA_CUBIN_LAUNCHER_H_

#include <cuda.h>
#include <driver_types.h>
#include <tvm/ffi/base_detail.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/cuda/base.h>
#include <tvm/ffi/extra/cuda/detail/cubin_image.h>
#include <tvm/ffi/extra/cuda/detail/cuda_error.h>
#include <tvm/ffi/extra/cuda/detail/driver_api.h>
#include <tvm/ffi/extra/cuda/detail/launcher_linkage.h>
#include <tvm/ffi/extra/cuda/internal/unified_api.h>
#include <tvm/ffi/extra/cuda/launch_config.h>
#include <tvm/ffi/string.h>
// Wrappers around a launch are exported functions; the guide's code relies on this include.
// The separate launcher's definitions (detail/launcher_definitions_modules.h) need none of it.
#ifndef TVM_FFI_DETAIL_LAUNCHER_DEFINITIONS
#include <tvm/ffi/function.h>
#endif

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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

namespace details {

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
  std::vector<size_t> param_sizes;  // from cuKernelGetParamInfo
  std::string params_unavailable;   // why param_sizes could not be read
  std::atomic<bool> large_clusters_enabled{false};

  std::string Describe() const;
};

/*! \brief Codes after which the useful question is "is this image for this GPU?". */
inline bool IsArchitectureError(int code) {
  return code == CUDA_ERROR_NO_BINARY_FOR_GPU || code == CUDA_ERROR_INVALID_IMAGE ||
         code == CUDA_ERROR_INVALID_PTX || code == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ||
         code == CUDA_ERROR_INVALID_SOURCE;
}

/*! \brief "image holds sm_80 (cubin) but device 0 is sm_90"; device < 0 means "unknown". */
std::string ArchitectureNote(const ImageInfo& info, int device);

[[noreturn]] void ThrowCudaFailure(const std::string& op, int code,
                                   const std::string& details = "");

inline bool CheckArgsFromEnvironment() {
  // Read once: the hot path must not call getenv.
  static const bool enabled = [] {
    const char* value = std::getenv("TVM_FFI_CUBIN_CHECK_ARGS");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  return enabled;
}

/*! \brief Reads a whole file; false (errno set) when it cannot be opened or read. */
bool ReadFile(const std::string& path, std::string* out);

std::string JoinSizes(const char* noun, const std::vector<size_t>& sizes);

}  // namespace details

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
    CUresult r = api_->LaunchKernel(Function(), grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                    dyn_smem_bytes, stream, args, nullptr);
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
  LaunchResult LaunchEx(void** args, const cuda_api::LaunchConfig& config) const {
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
  // compat: apache-tvm-ffi (code written for its runtime-API mode builds a cudaLaunchConfig_t)
  LaunchResult LaunchEx(void** args, const cudaLaunchConfig_t& config) const {
    return LaunchEx(args, details::DriverLaunchConfig(config));
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
    const bool check = config.check_args() || details::CheckArgsFromEnvironment();
#endif
    if (TVM_FFI_UNLIKELY(check)) CheckArgs({sizeof(Args)...}, config.check_args());
    return Launch(pointers, config);
  }

  /*!
   * \brief Throws ValueError unless the kernel takes exactly these parameter sizes. Needs
   *  cuKernelGetParamInfo (CUDA 12.4 driver); with `required` false an older driver skips it.
   */
  void CheckArgs(std::initializer_list<size_t> sizes, bool required = true) const;

  /*!
   * \brief Allows `dynamic_smem_max` bytes of dynamic shared memory per block on every device
   *  (-1: the device's opt-in maximum minus the kernel's static shared memory there). Needed
   *  above 48 KiB. ValueError when a device has less room; devices without code are skipped.
   */
  void SetMaxDynamicSharedMemory(int64_t dynamic_smem_max = -1) const {
    ApplyMaxDynamicSharedMemory(-1, dynamic_smem_max);
  }

  /*!
   * \brief As SetMaxDynamicSharedMemory, with the kernel's static shared memory given by the
   *  caller as `static_smem_bytes` instead of read from the kernel.
   */
  void SetMaxDynamicSharedMemoryForStatic(size_t static_smem_bytes,
                                          int64_t dynamic_smem_max = -1) const {
    ApplyMaxDynamicSharedMemory(static_cast<int64_t>(static_smem_bytes), dynamic_smem_max);
  }

  /*! \brief The driver handle (a CUkernel; cast to CUfunction for cuLaunchKernel*). */
  CUkernel GetHandle() const { return handle_; }
  /*! \brief The kernel's name as looked up. */
  const std::string& name() const { return State().name; }

 private:
  friend class CubinModule;

  CUfunction Function() const { return reinterpret_cast<CUfunction>(handle_); }

  const details::KernelState& State() const {
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
    if (stream == nullptr && details::EnsureCurrentContext(*api_)) r = retry();
    if (r != CUDA_SUCCESS) RecordFailure(r, op, stream);
    return r;
  }

  // What the check macros report for a failed launch (see details::SetLaunchFailure).
  void RecordFailure(CUresult r, const char* op, CUstream stream) const;

  // static_smem < 0: read it from the kernel on each device.
  void ApplyMaxDynamicSharedMemory(int64_t static_smem, int64_t dynamic_smem_max) const;

  [[noreturn]] void FailOnDevice(const std::string& op, CUresult r, int dev) const;

  static LaunchResult LaunchEmpty();

  // Clusters above 8 blocks need an opt-in per kernel and device; done once, on every device,
  // so that the launch itself stays free of device queries. Devices without cluster support
  // refuse it, which is harmless: the launch reports the real problem.
  void EnableLargeClusters() const;

  void ReadParamInfo() const;

  const details::DriverApi* api_ = nullptr;  // hot path: read without touching state_
  CUkernel handle_ = nullptr;
  std::unique_ptr<details::KernelState> state_;
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
      : CubinModule(
            Load(SizedLabel(UnsizedImageSize(image)), image, UnsizedImageSize(image), false)) {}
  /*! \brief The same, for images held as unsigned bytes (`#embed`, bin2c). */
  explicit CubinModule(const unsigned char* image)
      : CubinModule(reinterpret_cast<const char*>(image)) {}
  /*! \brief Loads a copy of `size` bytes at `image`. */
  CubinModule(const void* image, size_t size)
      : CubinModule(Load(SizedLabel(size), static_cast<const char*>(image), size, true)) {}

  /*! \brief Reads and loads a .cubin, .ptx or .fatbin file. */
  static CubinModule FromFile(const std::string& path);

  /*! \brief Used by TVM_FFI_EMBED_CUBIN: static data between two linker symbols, not copied. */
  static CubinModule FromEmbedded(const char* name, const char* begin, const char* end) {
    return CubinModule(Load(std::string("embedded module \"") + name + "\"", begin,
                            static_cast<size_t>(end - begin), false));
  }

  /*!
   * \brief Used by TVM_FFI_EMBED_CUBIN_FROM_BYTES: a static array of bytes (or of wider
   *  integers, as `bin2c --type` writes), sized by its type; a pointer or an array of unknown
   *  bound is sized by the image's own header. Not copied, unless misaligned.
   */
  template <typename Array>
  static CubinModule FromEmbeddedBytes(const char* name, const Array& image) {
    using Element = std::remove_cv_t<std::remove_pointer_t<std::decay_t<Array>>>;
    static_assert(std::is_integral<Element>::value && !std::is_same<Element, bool>::value,
                  "TVM_FFI_EMBED_CUBIN_FROM_BYTES takes an array of bytes (unsigned char[], "
                  "char[], or wider integers as bin2c --type writes) or a pointer to one");
    const char* begin = reinterpret_cast<const char*>(static_cast<const Element*>(image));
    size_t size = 0;
    if constexpr (std::is_array<Array>::value && std::extent<Array>::value != 0) {
      size = sizeof(Array);
    } else {
      size = UnsizedImageSize(begin);
    }
    // The driver reads the 8-byte fields of ELF and fatbin headers in place, and a byte array
    // may start at any address: a misaligned one is copied (once, at load) to aligned memory.
    const bool copy = reinterpret_cast<uintptr_t>(begin) % alignof(uint64_t) != 0;
    return CubinModule(Load(std::string("embedded module \"") + name + "\"", begin, size, copy));
  }

  CubinModule(CubinModule&&) noexcept = default;
  CubinModule& operator=(CubinModule&&) noexcept = default;
  CubinModule(const CubinModule&) = delete;
  CubinModule& operator=(const CubinModule&) = delete;

  /*! \brief Looks up a kernel by its (extern "C" or mangled) name; the error lists the kernels. */
  CubinKernel GetKernel(const std::string& name) const;
  CubinKernel operator[](const std::string& name) const { return GetKernel(name); }

  /*!
   * \brief GetKernel, then allow `dynamic_smem_max` bytes of dynamic shared memory on every
   *  device (-1: the device's opt-in maximum minus the kernel's static shared memory).
   */
  CubinKernel GetKernelWithMaxDynamicSharedMemory(const std::string& name,
                                                  int64_t dynamic_smem_max = -1) const {
    CubinKernel kernel = GetKernel(name);
    kernel.SetMaxDynamicSharedMemory(dynamic_smem_max);
    return kernel;
  }

  /*! \brief As above, with the kernel's static shared memory given as `static_smem_bytes`. */
  CubinKernel GetKernelWithMaxDynamicSharedMemoryForStatic(const std::string& name,
                                                           size_t static_smem_bytes,
                                                           int64_t dynamic_smem_max = -1) const {
    CubinKernel kernel = GetKernel(name);
    kernel.SetMaxDynamicSharedMemoryForStatic(static_smem_bytes, dynamic_smem_max);
    return kernel;
  }

  /*! \brief Names of the kernels in the module (needs a CUDA 12.4 or newer driver). */
  std::vector<std::string> KernelNames() const { return KernelNamesOf(Library()); }

  /*! \brief The driver handle. */
  CUlibrary GetHandle() const { return Library().handle; }
  /*! \brief How errors name this module: `embedded module "x"`, `module "path"`, ... */
  const std::string& label() const { return Library().label; }

 private:
  explicit CubinModule(std::shared_ptr<details::LibraryState> state) : state_(std::move(state)) {}

  static std::string SizedLabel(size_t size) {
    return "module <" + std::to_string(size) + "-byte image>";
  }

  const details::LibraryState& Library() const {
    if (state_ == nullptr) TVM_FFI_THROW(RuntimeError) << "use of a moved-from CubinModule";
    return *state_;
  }

  static int CurrentDevice(const details::LibraryState& lib) {
    return details::LaunchDevice(*lib.api, nullptr);
  }

  static std::vector<std::string> KernelNamesOf(const details::LibraryState& lib);

  static std::string ListKernelsForError(const details::LibraryState& lib);

  static size_t UnsizedImageSize(const char* image) {
    const size_t size = details::SelfDescribedSize(image);
    // Unrecognised: hand InspectImage the first few bytes so its error can show them.
    return size != 0 || image == nullptr ? size : strnlen(image, 4);
  }

  static std::shared_ptr<details::LibraryState> Load(std::string label, const char* data,
                                                    size_t size, bool copy);

  std::shared_ptr<details::LibraryState> state_;
};

}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

// The definitions: here unless TVM_FFI_CUDA_SEPARATE_LAUNCHER moves them to
// detail/launcher_definitions_modules.h.
#ifndef TVM_FFI_CUDA_SEPARATE_LAUNCHER
#include <tvm/ffi/extra/cuda/detail/cubin_launcher_impl.h>
#endif

// The macros that declare embedded images (embed_cubin.h); after the classes they expand to.
#include <tvm/ffi/extra/cuda/detail/embed_cubin_macros.h>

#endif  // TVM_FFI_EXTRA_CUDA_CUBIN_LAUNCHER_H_
