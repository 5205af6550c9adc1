// tvm_ffi.cuda's bindings in _core: the loaded module (_CubinModule), its kernels and the
// device's compute capability. The driver-free launch code is tested through a test-only
// extension (tests/helpers/cuda_test_hooks.cc), not through this module.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <tvm/ffi/extra/cuda/detail/param_info.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cuda_args.h"
#include "cuda_launch.h"

namespace py = pybind11;

namespace tvm_ffi_next {
namespace {

[[noreturn]] void ThrowPython() { throw py::error_already_set(); }

namespace detail = tvm::ffi::details;

/*! \brief A loaded image and the bytes its parameter layouts are read from. */
class CudaModule {
 public:
  static CudaModule FromBytes(const py::bytes& image) {
    std::string data = image;
    try {
      tvm::ffi::CubinModule mod(data.data(), data.size());
      return CudaModule(std::move(mod), std::move(data));
    } catch (const tvm::ffi::Error& e) {
      cuda::RaiseFfiError(e);
      ThrowPython();
    }
  }

  static CudaModule FromFile(const std::string& path) {
    try {
      tvm::ffi::CubinModule mod = tvm::ffi::CubinModule::FromFile(path);
      std::string data;
      detail::ReadFile(path, &data);  // just read by FromFile; only layouts come from it
      return CudaModule(std::move(mod), std::move(data));
    } catch (const tvm::ffi::Error& e) {
      cuda::RaiseFfiError(e);
      ThrowPython();
    }
  }

  py::object GetKernel(const std::string& name) const {
    if (name.find('\0') != std::string::npos) {  // the driver would look up the name cut there
      throw py::key_error("kernel " + py::repr(py::str(name)).cast<std::string>() + " is not in " +
                          label() + " (the name holds a NUL byte)");
    }
    auto kernel = std::make_shared<tvm::ffi::CubinKernel>();
    try {
      *kernel = module_.GetKernel(name);
    } catch (const tvm::ffi::Error& e) {
      // A name the module lacks is a lookup miss: KeyError, with the kernels it has.
      const bool missing =
          e.message().find(detail::DriverErrorText(CUDA_ERROR_NOT_FOUND)) != std::string::npos;
      if (missing) {
        PyErr_SetString(PyExc_KeyError, e.message().c_str());
      } else {
        cuda::RaiseFfiError(e);
      }
      ThrowPython();
    }
    cuda::Layout layout = LayoutOf(name, *kernel);
    PyObject* out = cuda::NewKernel(std::move(kernel), std::move(layout), name, label());
    if (out == nullptr) ThrowPython();
    return py::reinterpret_steal<py::object>(out);
  }

  std::vector<std::string> KernelNames() const {
    try {
      return module_.KernelNames();
    } catch (const tvm::ffi::Error& e) {
      cuda::RaiseFfiError(e);
      ThrowPython();
    }
  }

  const std::string& label() const { return module_.label(); }
  uintptr_t handle() const { return reinterpret_cast<uintptr_t>(module_.GetHandle()); }

 private:
  CudaModule(tvm::ffi::CubinModule mod, std::string image)
      : module_(std::move(mod)), image_(std::move(image)) {}

  // The image's own record first (any driver), then cuKernelGetParamInfo (CUDA 12.4).
  cuda::Layout LayoutOf(const std::string& name, const tvm::ffi::CubinKernel& kernel) const {
    std::vector<detail::ParamSlot> slots;
    cuda::Layout layout;
    if (detail::ImageParamLayout(image_.data(), image_.size(), name, &slots)) {
      std::vector<std::pair<uint32_t, uint32_t>> pairs;
      for (const auto& s : slots) pairs.emplace_back(s.offset, s.size);
      return cuda::LayoutFromSlots(pairs);
    }
    const detail::DriverApi& api = detail::DriverApi::Get();
    if (api.KernelGetParamInfo == nullptr) {
      layout.unknown_reason =
          "its parameter layout is unknown (the image does not record it, and "
          "cuKernelGetParamInfo needs a CUDA 12.4 or newer driver)";
      return layout;
    }
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    for (size_t i = 0;; ++i) {
      size_t offset = 0, size = 0;
      const CUresult r = api.KernelGetParamInfo(kernel.GetHandle(), i, &offset, &size);
      if (r == CUDA_ERROR_INVALID_VALUE) break;  // past the last parameter
      if (r != CUDA_SUCCESS) {
        layout.unknown_reason =
            "its parameter layout is unknown (cuKernelGetParamInfo: " + detail::DriverErrorText(r) +
            ")";
        return layout;
      }
      pairs.emplace_back(static_cast<uint32_t>(offset), static_cast<uint32_t>(size));
    }
    return cuda::LayoutFromSlots(pairs);
  }

  tvm::ffi::CubinModule module_;
  std::string image_;
};

py::tuple DeviceCapability(int device) {
  const detail::DriverApi& api = detail::DriverApi::Get();
  int major = 0, minor = 0;
  CUresult r = api.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  if (r == CUDA_SUCCESS) {
    r = api.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  }
  if (r != CUDA_SUCCESS) {
    throw py::value_error("cannot read the compute capability of CUDA device " +
                          std::to_string(device) + ": " + detail::DriverErrorText(r));
  }
  return py::make_tuple(major, minor);
}
}  // namespace

void RegisterCuda(py::module_& m) {
  if (cuda::InitKernelTypes() == nullptr) ThrowPython();
  m.attr("CubinKernel") =
      py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(cuda::InitKernelTypes()));
  py::class_<CudaModule>(m, "_CubinModule", "A loaded CUBIN, PTX or fatbin image.")
      .def_static("from_bytes", &CudaModule::FromBytes, py::arg("image"))
      .def_static("from_file", &CudaModule::FromFile, py::arg("path"))
      .def("get_kernel", &CudaModule::GetKernel, py::arg("name"))
      .def_property_readonly("kernel_names", &CudaModule::KernelNames)
      .def_property_readonly("label", &CudaModule::label)
      .def_property_readonly("handle", &CudaModule::handle);
  m.def("_cuda_device_capability", &DeviceCapability, py::arg("device"));
}

}  // namespace tvm_ffi_next
