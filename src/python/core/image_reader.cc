// The image reader (detail/cubin_image.h) in _core: the one reader of CUBIN, PTX and fatbin
// images, so the embed tool, load_inline's embed_cubin check and make_fatbin judge an image
// exactly as CubinModule does when it loads it (python/tvm_ffi/utils/_image.py wraps these).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

// The launcher headers (include/tvm/ffi/extra/cuda) come with the switch's header port; until
// they are in include/, the core has no image reader.
#if __has_include(<tvm/ffi/extra/cuda/detail/cubin_image.h>)
#include <tvm/ffi/extra/cuda/detail/cubin_image.h>
#define TVM_FFI_PYCORE_IMAGE_READER 1
#endif

#include <string>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace tvm_ffi_next {
#ifdef TVM_FFI_PYCORE_IMAGE_READER
namespace {

namespace detail = tvm::ffi::details;

/*! \brief The bytes of a bytes-like object, read in place (no copy of a large fatbin). */
class ByteView {
 public:
  explicit ByteView(const py::object& obj) {
    if (PyObject_GetBuffer(obj.ptr(), &view_, PyBUF_SIMPLE) != 0) throw py::error_already_set();
  }
  ~ByteView() { PyBuffer_Release(&view_); }
  ByteView(const ByteView&) = delete;
  ByteView& operator=(const ByteView&) = delete;

  const char* data() const { return static_cast<const char*>(view_.buf); }
  size_t size() const { return static_cast<size_t>(view_.len); }

 private:
  Py_buffer view_;
};

py::object ImageKind(const py::object& data) {
  const ByteView bytes(data);
  const detail::ImageKind kind = detail::AnnouncedImageKind(bytes.data(), bytes.size());
  if (kind == detail::ImageKind::kUnknown) return py::none();
  return py::str(detail::ImageKindName(kind));
}

std::pair<std::string, std::vector<std::pair<std::string, std::string>>> InspectImage(
    const py::object& data) {
  const ByteView bytes(data);
  const detail::ImageInfo info = detail::InspectImage(bytes.data(), bytes.size());
  if (!info.error.empty()) throw py::value_error(info.error);
  std::vector<std::pair<std::string, std::string>> entries;
  for (const detail::ImageEntry& e : info.entries) {
    entries.emplace_back(detail::ImageKindName(e.kind), e.arch);
  }
  return {detail::ImageKindName(info.kind), std::move(entries)};
}

}  // namespace

void RegisterImageReader(py::module_& m) {
  m.def("image_kind", &ImageKind, py::arg("data"),
        "\"cubin\", \"ptx\" or \"fatbin\" judged from the first bytes alone, else None.");
  m.def("inspect_image", &InspectImage, py::arg("data"),
        "(kind, [(entry kind, arch), ...]) of a checked image; ValueError says what is wrong.");
}
#else
void RegisterImageReader(py::module_&) {}
#endif

}  // namespace tvm_ffi_next
