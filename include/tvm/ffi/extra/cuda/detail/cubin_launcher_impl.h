/*
 * The definitions of cubin_launcher.h's run-once functions: loading modules, looking up
 * kernels, shared-memory and argument checks, failures. Included after that header's
 * declarations, by it or by launcher_definitions_modules.h (see detail/launcher_linkage.h).
 */
#ifndef TVM_FFI_EXTRA_CUDA_DETAIL_CUBIN_LAUNCHER_IMPL_H_
#define TVM_FFI_EXTRA_CUDA_DETAIL_CUBIN_LAUNCHER_IMPL_H_

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

TVM_FFI_COLD TVM_FFI_DETAIL_LAUNCHER_INLINE std::string ArchitectureNote(const ImageInfo& info,
                                                                         int device) {
  std::string note = "image holds " + DescribeArchs(info);
  try {
    const DriverApi& api = DriverApi::Get();
    CUdevice dev = 0;
    if (device < 0) device = 0;
    int major = 0, minor = 0;
    if (api.DeviceGet(&dev, device) == CUDA_SUCCESS &&
        api.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) ==
            CUDA_SUCCESS &&
        api.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) ==
            CUDA_SUCCESS) {
      note += " but device " + std::to_string(device) + " is sm_" + std::to_string(major) +
              std::to_string(minor);
    }
  } catch (...) {
  }
  return note;
}

TVM_FFI_COLD TVM_FFI_DETAIL_LAUNCHER_INLINE void ThrowCudaFailure(const std::string& op, int code,
                                                                  const std::string& details) {
  TVM_FFI_THROW(RuntimeError) << op << ": " << DriverErrorText(code) << details;
  throw;  // not reached
}

TVM_FFI_DETAIL_LAUNCHER_INLINE bool ReadFile(const std::string& path, std::string* out) {
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

TVM_FFI_DETAIL_LAUNCHER_INLINE std::string JoinSizes(const char* noun,
                                                     const std::vector<size_t>& sizes) {
  std::string out = std::to_string(sizes.size()) + " " + noun + (sizes.size() == 1 ? "" : "s");
  if (sizes.empty()) return out;
  out += sizes.size() == 1 ? " (size " : " (sizes ";
  for (size_t i = 0; i < sizes.size(); ++i) out += (i ? ", " : "") + std::to_string(sizes[i]);
  return out + ")";
}

TVM_FFI_DETAIL_LAUNCHER_INLINE std::string KernelState::Describe() const {
  return "kernel \"" + name + "\" in " + library->label;
}

}  // namespace details

TVM_FFI_DETAIL_LAUNCHER_INLINE void CubinKernel::CheckArgs(std::initializer_list<size_t> sizes,
                                                           bool required) const {
  const details::KernelState& state = State();
  std::call_once(state_->params_once, [this] { ReadParamInfo(); });
  if (!state.params_unavailable.empty()) {
    if (!required) return;
    TVM_FFI_THROW(RuntimeError) << "cannot check the arguments of " << state.Describe() << ": "
                                << state.params_unavailable;
  }
  const std::vector<size_t> given(sizes);
  if (given != state.param_sizes) {
    TVM_FFI_THROW(ValueError) << state.Describe() << " takes "
                              << details::JoinSizes("parameter", state.param_sizes) << "; got "
                              << details::JoinSizes("argument", given);
  }
}

TVM_FFI_DETAIL_LAUNCHER_INLINE void CubinKernel::ApplyMaxDynamicSharedMemory(
    int64_t static_smem, int64_t dynamic_smem_max) const {
  const details::KernelState& state = State();
  if (dynamic_smem_max < -1) {
    TVM_FFI_THROW(ValueError) << "dynamic_smem_max must be -1 (the device maximum) or a byte "
                              << "count (got " << dynamic_smem_max << ")";
  }
  int count = 0;
  CUresult r = api_->DeviceGetCount(&count);
  if (r != CUDA_SUCCESS) details::ThrowCudaFailure("cuDeviceGetCount", r);
  int applied = 0;
  for (int dev = 0; dev < count; ++dev) {
    int optin = 0;
    r = api_->DeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                 dev);
    if (r != CUDA_SUCCESS) {
      details::ThrowCudaFailure(
          "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) of device " +
              std::to_string(dev),
          r);
    }
    int64_t static_bytes = static_smem;
    if (static_bytes < 0) {
      int value = 0;
      r = api_->KernelGetAttribute(&value, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, handle_, dev);
      // A device this image has no code for cannot run the kernel anyway; skip it.
      if (r == CUDA_ERROR_NO_BINARY_FOR_GPU && count > 1) continue;
      if (r != CUDA_SUCCESS) FailOnDevice("cuKernelGetAttribute(SHARED_SIZE_BYTES)", r, dev);
      static_bytes = value;
    }
    const int64_t room = static_cast<int64_t>(optin) - static_bytes;
    if (room < 0 || dynamic_smem_max > room) {
      TVM_FFI_THROW(ValueError) << state.Describe() << ": " << static_bytes
                                << " bytes of static and "
                                << (dynamic_smem_max < 0 ? std::string("any")
                                                         : std::to_string(dynamic_smem_max))
                                << " bytes of dynamic shared memory exceed device " << dev
                                << "'s limit of " << optin << " bytes per block";
    }
    const int64_t value = dynamic_smem_max < 0 ? room : dynamic_smem_max;
    r = api_->KernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 static_cast<int>(value), handle_, dev);
    if (r == CUDA_ERROR_NO_BINARY_FOR_GPU && count > 1) continue;
    if (r != CUDA_SUCCESS) {
      FailOnDevice(
          "cuKernelSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, " + std::to_string(value) + ")", r,
          dev);
    }
    ++applied;
  }
  if (applied == 0 && count > 0) {
    details::ThrowCudaFailure("cuKernelSetAttribute of " + state.Describe(),
                              CUDA_ERROR_NO_BINARY_FOR_GPU,
                              "; " + details::ArchitectureNote(state.library->info, 0));
  }
}

TVM_FFI_COLD TVM_FFI_DETAIL_LAUNCHER_INLINE void CubinKernel::RecordFailure(CUresult r,
                                                                            const char* op,
                                                                            CUstream stream) const {
  std::string where = std::string(op) + " of " + state_->Describe();
  if (details::IsArchitectureError(r)) {
    where += ": " +
             details::ArchitectureNote(state_->library->info, details::LaunchDevice(*api_, stream));
  }
  details::SetLaunchFailure(r, where);
}

TVM_FFI_COLD TVM_FFI_DETAIL_LAUNCHER_INLINE void CubinKernel::FailOnDevice(const std::string& op,
                                                                           CUresult r,
                                                                           int dev) const {
  const details::KernelState& state = State();
  details::ThrowCudaFailure(op + " of " + state.Describe() + " on device " + std::to_string(dev), r,
                            details::IsArchitectureError(r)
                                ? "; " + details::ArchitectureNote(state.library->info, dev)
                                : std::string());
}

TVM_FFI_COLD TVM_FFI_DETAIL_LAUNCHER_INLINE LaunchResult CubinKernel::LaunchEmpty() {
  details::SetLaunchFailure(CUDA_ERROR_INVALID_HANDLE,
                            "launch of an empty CubinKernel (default-constructed or moved-from)");
  return CUDA_ERROR_INVALID_HANDLE;
}

TVM_FFI_COLD TVM_FFI_DETAIL_LAUNCHER_INLINE void CubinKernel::EnableLargeClusters() const {
  if (state_->large_clusters_enabled.load(std::memory_order_acquire)) return;
  int count = 0;
  if (api_->DeviceGetCount(&count) != CUDA_SUCCESS) return;
  for (int dev = 0; dev < count; ++dev) {
    api_->KernelSetAttribute(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1, handle_, dev);
  }
  state_->large_clusters_enabled.store(true, std::memory_order_release);
}

TVM_FFI_DETAIL_LAUNCHER_INLINE void CubinKernel::ReadParamInfo() const {
  details::KernelState& state = *state_;
  if (api_->KernelGetParamInfo == nullptr) {
    state.params_unavailable =
        "cuKernelGetParamInfo needs a CUDA 12.4 or newer driver (this "
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
      state.params_unavailable = "cuKernelGetParamInfo: " + details::DriverErrorText(r);
      return;
    }
    state.param_sizes.push_back(size);
  }
}

TVM_FFI_DETAIL_LAUNCHER_INLINE CubinModule CubinModule::FromFile(const std::string& path) {
  std::string data;
  if (!details::ReadFile(path, &data)) {
    TVM_FFI_THROW(RuntimeError) << "cannot read CUDA module file \"" << path
                                << "\": " << std::strerror(errno);
  }
  return CubinModule(Load("module \"" + path + "\"", data.data(), data.size(), true));
}

TVM_FFI_DETAIL_LAUNCHER_INLINE CubinKernel CubinModule::GetKernel(const std::string& name) const {
  const details::LibraryState& lib = Library();
  CubinKernel kernel;
  const CUresult r = lib.api->LibraryGetKernel(&kernel.handle_, lib.handle, name.c_str());
  if (r != CUDA_SUCCESS) {
    std::string details;
    if (details::IsArchitectureError(r)) {
      details = "; " + details::ArchitectureNote(lib.info, CurrentDevice(lib));
    } else if (r == CUDA_ERROR_NOT_FOUND) {
      details = "; " + ListKernelsForError(lib);
    }
    details::ThrowCudaFailure("cuLibraryGetKernel(\"" + name + "\") in " + lib.label, r, details);
  }
  kernel.api_ = lib.api;
  kernel.state_ = std::make_unique<details::KernelState>();
  kernel.state_->library = state_;
  kernel.state_->name = name;
  return kernel;
}

TVM_FFI_DETAIL_LAUNCHER_INLINE std::vector<std::string> CubinModule::KernelNamesOf(
    const details::LibraryState& lib) {
  const details::DriverApi& api = *lib.api;
  api.Require(api.LibraryGetKernelCount, "cuLibraryGetKernelCount", 12040);
  api.Require(api.LibraryEnumerateKernels, "cuLibraryEnumerateKernels", 12040);
  api.Require(api.KernelGetName, "cuKernelGetName", 12030);
  unsigned count = 0;
  CUresult r = api.LibraryGetKernelCount(&count, lib.handle);
  if (r != CUDA_SUCCESS) details::ThrowCudaFailure("cuLibraryGetKernelCount of " + lib.label, r);
  std::vector<CUkernel> kernels(count);
  r = api.LibraryEnumerateKernels(kernels.data(), count, lib.handle);
  if (r != CUDA_SUCCESS) details::ThrowCudaFailure("cuLibraryEnumerateKernels of " + lib.label, r);
  std::vector<std::string> names;
  for (CUkernel k : kernels) {
    const char* name = nullptr;
    r = api.KernelGetName(&name, k);
    if (r != CUDA_SUCCESS) details::ThrowCudaFailure("cuKernelGetName in " + lib.label, r);
    names.emplace_back(name ? name : "");
  }
  return names;
}

TVM_FFI_DETAIL_LAUNCHER_INLINE std::string CubinModule::ListKernelsForError(
    const details::LibraryState& lib) {
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

TVM_FFI_DETAIL_LAUNCHER_INLINE std::shared_ptr<details::LibraryState> CubinModule::Load(
    std::string label, const char* data, size_t size, bool copy) {
  auto lib = std::make_shared<details::LibraryState>();
  lib->label = std::move(label);
  lib->info = details::InspectImage(data, size);
  if (!lib->info.error.empty()) {
    TVM_FFI_THROW(ValueError) << "cannot load " << lib->label << ": " << lib->info.error;
  }
  const char* code = data;
  // The driver reads PTX as a C string: terminate a sized PTX image that lacks its NUL.
  if (copy || (lib->info.kind == details::ImageKind::kPtx && !lib->info.nul_terminated)) {
    lib->owned.assign(data, size);
    code = lib->owned.c_str();
  }
  lib->api = &details::DriverApi::Get();
  std::string log(16384, '\0');
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {&log[0], reinterpret_cast<void*>(static_cast<uintptr_t>(log.size() - 1))};
  const CUresult r =
      lib->api->LibraryLoadData(&lib->handle, code, options, values, 2, nullptr, nullptr, 0);
  if (r != CUDA_SUCCESS) {
    lib->handle = nullptr;
    std::string details;
    if (details::IsArchitectureError(r)) {
      details = "; " + details::ArchitectureNote(lib->info, CurrentDevice(*lib));
    }
    log.resize(std::strlen(log.c_str()));
    if (!log.empty()) details += "; JIT log:\n" + log;
    details::ThrowCudaFailure("cuLibraryLoadData(" + lib->label + ")", r, details);
  }
  return lib;
}

}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END
#endif  // TVM_FFI_EXTRA_CUDA_DETAIL_CUBIN_LAUNCHER_IMPL_H_
