// The tvm_ffi._core extension: load_module, Module (pybind11) and Function (function.cc).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "c_names.h"
#include "function.h"
#include "library.h"
#include "object.h"
#include "tensor_result.h"
#include "type_cache.h"

namespace py = pybind11;

namespace tvm_ffi_py {
void RegisterCuda(py::module_& m);         // cuda_module.cc: tvm_ffi.cuda's half of _core
void RegisterImageReader(py::module_& m);  // image_reader.cc: image_kind, inspect_image
void RegisterDType(py::module_& m);        // dtype.cc: the dtype grammar for tvm_ffi.dtype
void RegisterErrorKinds(py::module_& m);   // error_kinds.cc: kind <-> exception class

namespace {

class Module {
 public:
  explicit Module(std::shared_ptr<Library> library) : library_(std::move(library)) {}

  const std::string& path() const { return library_->path(); }
  const std::vector<std::string>& functions() const { return library_->functions(); }

  /*! \brief The Function, or None when the library does not export `name`. */
  py::object Find(const std::string& name) const {
    if (HoldsNul(name)) return py::none();  // dlsym would look up the name cut at the NUL
    PyObject* func = library_->GetFunction(name);
    if (func == nullptr) {
      if (PyErr_Occurred()) throw py::error_already_set();
      return py::none();
    }
    return py::reinterpret_steal<py::object>(func);
  }

  std::string MissingMessage(const std::string& name) const {
    if (HoldsNul(name)) {
      return "module '" + path() + "' has no function " +
             py::repr(py::str(name)).cast<std::string>() + kNulNameNote;
    }
    return "module '" + path() + "' has no function '" + name +
           "'; functions in this module: " + library_->FunctionList();
  }

 private:
  std::shared_ptr<Library> library_;
};

bool IsDunder(const std::string& name) {
  return name.size() > 4 && name.compare(0, 2, "__") == 0 &&
         name.compare(name.size() - 2, 2, "__") == 0;
}

Module LoadModule(const py::object& path) {
  PyObject* fs = PyOS_FSPath(path.ptr());
  if (fs == nullptr) throw py::error_already_set();
  py::object fspath = py::reinterpret_steal<py::object>(fs);
  if (!PyUnicode_Check(fspath.ptr())) {
    fspath = py::reinterpret_steal<py::object>(PyUnicode_DecodeFSDefaultAndSize(
        PyBytes_AsString(fspath.ptr()), PyBytes_Size(fspath.ptr())));
    if (!fspath) throw py::error_already_set();
  }
  // The registry first: the library's weak references to it bind at load time.
  if (EnsureRegistry() == nullptr) throw py::error_already_set();
  std::shared_ptr<Library> library = LoadLibrary(fspath.cast<std::string>());
  if (!library) throw py::error_already_set();
  return Module(std::move(library));
}

}  // namespace
}  // namespace tvm_ffi_py

PYBIND11_MODULE(_core, m) {
  using tvm_ffi_py::Module;
  m.doc() = "The compiled core of tvm_ffi: loading libraries and calling their functions.";

  PyTypeObject* function_type = tvm_ffi_py::InitFunctionType();
  if (function_type == nullptr) throw py::error_already_set();
  m.attr("Function") =
      py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(function_type));
  PyTypeObject* tensor_type = tvm_ffi_py::InitTensorType();
  if (tensor_type == nullptr) throw py::error_already_set();
  m.attr("Tensor") = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(tensor_type));
  PyTypeObject* object_type = tvm_ffi_py::InitObjectType();
  if (object_type == nullptr || tvm_ffi_py::AddObjectFunctions(m.ptr()) != 0) {
    throw py::error_already_set();
  }
  m.def(
      "from_dlpack",
      [](py::object obj) {
        PyObject* out = tvm_ffi_py::TensorFromDLPack(obj.ptr());
        if (out == nullptr) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(out);
      },
      py::arg("obj"), "A tvm_ffi.Tensor sharing the memory of a __dlpack__ producer.");
  m.attr("Object") = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(object_type));

  // dynamic_attr: a function found by __getattr__ is stored in the instance __dict__, so the
  // next `mod.name` is a plain attribute hit and never reaches __getattr__ again.
  py::class_<Module>(m, "Module", py::dynamic_attr(),
                     "A loaded library. Its exported functions are attributes and items.")
      .def_property_readonly("path", &Module::path, "Absolute path of the loaded library.")
      .def_property_readonly(
          "functions", &Module::functions,
          "Names of the exported functions, sorted (read from the library's .dynsym).")
      .def(
          "__getattr__",
          [](py::object self, const std::string& name) -> py::object {
            if (tvm_ffi_py::IsDunder(name)) throw py::attribute_error(name);
            const Module& mod = self.cast<const Module&>();
            py::object func = mod.Find(name);
            if (func.is_none()) throw py::attribute_error(mod.MissingMessage(name));
            py::setattr(self, name.c_str(), func);
            return func;
          },
          py::arg("name"))
      .def(
          "__getitem__",
          [](const Module& mod, const py::object& key) -> py::object {
            if (!py::isinstance<py::str>(key)) {
              throw py::type_error(std::string("module function names are str, not ") +
                                   Py_TYPE(key.ptr())->tp_name);
            }
            const std::string name = key.cast<std::string>();
            py::object func = mod.Find(name);
            if (func.is_none()) throw py::key_error(mod.MissingMessage(name));
            return func;
          },
          py::arg("name"))
      .def(
          "__contains__",
          [](const Module& mod, const py::object& key) {
            return py::isinstance<py::str>(key) && !mod.Find(key.cast<std::string>()).is_none();
          },
          py::arg("name"))
      .def("__dir__",
           [](py::object self) {
             py::list names = py::module_::import("builtins").attr("object").attr("__dir__")(self);
             for (const std::string& f : self.cast<const Module&>().functions()) {
               names.append(py::str(f));
             }
             return py::module_::import("builtins")
                 .attr("sorted")(py::module_::import("builtins").attr("set")(names));
           })
      .def("__repr__", [](const Module& mod) { return "<tvm_ffi.Module '" + mod.path() + "'>"; });
  py::type::of<Module>().attr("__module__") = "tvm_ffi";

  m.def("load_module", &tvm_ffi_py::LoadModule, py::arg("path"),
        "Load a library built with TVM_FFI_DLL_EXPORT_TYPED_FUNC and return its Module.");
  m.attr("ABI_VERSION") = TVM_FFI_ABI_VERSION;
  tvm_ffi_py::RegisterCuda(m);
  tvm_ffi_py::RegisterImageReader(m);
  tvm_ffi_py::RegisterDType(m);
  tvm_ffi_py::RegisterErrorKinds(m);

  // tvm_ffi.use_raw_stream / get_raw_stream (python/tvm_ffi/_stream.py).
  m.def(
      "push_raw_stream",
      [](int32_t device_type, int32_t device_id, uintptr_t stream) {
        tvm_ffi_py::RawStreamOverrides().push_back(
            {device_type, device_id, reinterpret_cast<void*>(stream)});
        tvm_ffi_py::g_raw_stream_overrides.fetch_add(1, std::memory_order_relaxed);
      },
      py::arg("device_type"), py::arg("device_id"), py::arg("stream"),
      "Make calls on this thread see `stream` for the device until pop_raw_stream.");
  m.def(
      "pop_raw_stream",
      []() {
        auto& overrides = tvm_ffi_py::RawStreamOverrides();
        if (overrides.empty()) throw py::value_error("pop_raw_stream: no raw stream is set");
        overrides.pop_back();
        tvm_ffi_py::g_raw_stream_overrides.fetch_sub(1, std::memory_order_relaxed);
      },
      "Undo the innermost push_raw_stream of this thread.");
  m.def(
      "get_raw_stream",
      [](int32_t device_type, int32_t device_id) -> uintptr_t {
        if (const auto* o = tvm_ffi_py::FindRawStreamOverride(device_type, device_id)) {
          return reinterpret_cast<uintptr_t>(o->stream);
        }
        void* stream = nullptr;
        if (tvm_ffi_py::FrameworkStream(nullptr, device_type, device_id, &stream) != 0) {
          throw py::error_already_set();
        }
        return reinterpret_cast<uintptr_t>(stream);
      },
      py::arg("device_type"), py::arg("device_id"),
      "The stream a call would see for the device: a raw override, else the framework's.");
}
