/*
 * tvm_ffi.cuda's driver-free half: a kernel's parameter layout (from the image or a signature
 * string), grid and block values, and packing Python arguments into the parameter buffer.
 * Nothing here calls the CUDA driver, so all of it is checked by CPU tests (_core._cuda_*).
 */
#ifndef TVM_FFI_PY_CUDA_ARGS_H_
#define TVM_FFI_PY_CUDA_ARGS_H_

#include <Python.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/core.h"

namespace tvm_ffi_next {
namespace cuda {

/*! \brief What a signature says a parameter is; kAny when only its size is known. */
enum class ParamKind : uint8_t { kAny, kPointer, kSigned, kUnsigned, kFloat };

struct Param {
  uint32_t offset;
  uint32_t size;
  ParamKind kind;
};

struct Layout {
  bool known = false;
  std::vector<Param> params;
  size_t buffer_size = 0;      // bytes of parameter buffer: the end of the last parameter
  std::string unknown_reason;  // why !known: shown when a launch needs the layout
};

/*! \brief "int32", "float64", "pointer", "4-byte": how messages name a parameter. */
std::string ParamName(const Param& p);

/*! \brief Parses "float*, const float* x, int64_t n"; false with *error set when it cannot. */
bool ParseSignature(const std::string& sig, Layout* out, std::string* error);

/*! \brief A layout from (offset, size) pairs. */
Layout LayoutFromSlots(const std::vector<std::pair<uint32_t, uint32_t>>& slots);

/*! \brief int or 1-3 positive ints -> x, y, z. False with a Python error naming `label`. */
bool ParseDim3(PyObject* value, const char* label, uint32_t out[3]);

/*! \brief "(4, 1, 1)". */
std::string Dim3Text(const uint32_t d[3]);

/*! \brief Where the tensors of one launch live, found while packing. */
struct LaunchTarget {
  int32_t device = -1;                      // CUDA device of the tensors, -1 when none
  int device_arg = 0;                       // 1-based argument that set `device`
  const ExchangeApi* stream_api = nullptr;  // exchange API of the first such tensor (torch)
};

/*!
 * \brief Writes each argument at its parameter's offset in `buffer` (sized to the layout) and
 *  points `pointers[i]` at it. `who` prefixes messages ('kernel "k" in module "m"'). Tensors
 *  are read through the core's argument conversion into `frame`, which holds what they need
 *  (a producer's managed tensor) until it is released after the launch; frame->name names the
 *  kernel in the core's own tensor messages. With `accept_host`, CPU tensors pass their
 *  pointer too (CPU tests). 0, or -1 with an error.
 */
int PackArgs(const std::string& who, const Layout& layout, PyObject* const* args, Py_ssize_t n,
             char* buffer, void** pointers, LaunchTarget* target, ArgFrame* frame,
             bool accept_host = false);

/*! \brief Bytes of parameter buffer the layout needs (computed when the layout is made). */
inline size_t BufferSize(const Layout& layout) { return layout.buffer_size; }

}  // namespace cuda
}  // namespace tvm_ffi_next

#endif  // TVM_FFI_PY_CUDA_ARGS_H_
