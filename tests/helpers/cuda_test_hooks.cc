// A test-only extension, `_cuda_test_hooks`: the driver-free half of tvm_ffi.cuda's launch
// path (parameter layouts, signatures, grid/block values, argument packing), exposed for
// tests/python/test_cuda_args.py. Built by that test from src/python's sources (the core's
// argument conversion included: packing reads tensors through it), so the production module
// `_core` carries none of it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <tvm/ffi/extra/cuda/detail/param_info.h>

#include <string>
#include <utility>
#include <vector>

#include "cuda/cuda_args.h"

namespace py = pybind11;

namespace {

using tvm_ffi_next::ArgFrame;
namespace cuda = tvm_ffi_next::cuda;

[[noreturn]] void ThrowPython() { throw py::error_already_set(); }

cuda::Layout LayoutArg(const py::object& params) {
  cuda::Layout layout;
  if (py::isinstance<py::str>(params)) {
    std::string error;
    if (!cuda::ParseSignature(params.cast<std::string>(), &layout, &error)) {
      throw py::value_error("cannot read the signature '" + params.cast<std::string>() +
                            "': " + error);
    }
    return layout;
  }
  return cuda::LayoutFromSlots(params.cast<std::vector<std::pair<uint32_t, uint32_t>>>());
}

}  // namespace

PYBIND11_MODULE(_cuda_test_hooks, m) {
  m.def(
      "param_layout",
      [](const py::bytes& image, const std::string& kernel) -> py::object {
        const std::string data = image;
        std::vector<tvm::ffi::details::ParamSlot> slots;
        if (!tvm::ffi::details::ImageParamLayout(data.data(), data.size(), kernel, &slots)) {
          return py::none();
        }
        py::list out;
        for (const auto& s : slots) out.append(py::make_tuple(s.offset, s.size));
        return out;
      },
      py::arg("image"), py::arg("kernel"),
      "(offset, size) of each parameter of `kernel` as the image records it, or None.");
  m.def(
      "parse_signature",
      [](const py::object& sig) {
        const cuda::Layout layout = LayoutArg(sig);
        py::list out;
        for (const cuda::Param& p : layout.params) {
          out.append(py::make_tuple(p.offset, p.size, cuda::ParamName(p)));
        }
        return out;
      },
      py::arg("signature"), "(offset, size, type name) of each parameter of a signature.");
  m.def(
      "dim3",
      [](const py::object& value, const std::string& label) {
        uint32_t d[3];
        if (!cuda::ParseDim3(value.ptr(), label.c_str(), d)) ThrowPython();
        return py::make_tuple(d[0], d[1], d[2]);
      },
      py::arg("value"), py::arg("label") = "grid", "grid or block as (x, y, z).");
  m.def(
      "pack_args",
      [](const py::object& params, const py::tuple& args, bool accept_host) {
        const cuda::Layout layout = LayoutArg(params);
        std::vector<char> buffer(cuda::BufferSize(layout) + 1, '\x5a');  // poisoned padding
        std::vector<void*> pointers(layout.params.size() + 1);
        cuda::LaunchTarget target;
        {
          ArgFrame frame;
          frame.name = "kernel";
          std::vector<PyObject*> items;
          for (const py::handle& a : args) items.push_back(a.ptr());
          if (cuda::PackArgs("kernel \"k\" in module <test>", layout, items.data(),
                             static_cast<Py_ssize_t>(items.size()), buffer.data(), pointers.data(),
                             &target, &frame, accept_host) != 0) {
            ThrowPython();
          }
        }
        return py::make_tuple(py::bytes(buffer.data(), buffer.size() - 1), target.device);
      },
      py::arg("params"), py::arg("args"), py::arg("accept_host") = false,
      "Pack args against a layout or signature: (parameter buffer, CUDA device or -1).");
}
