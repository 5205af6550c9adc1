// tvm_ffi.cuda: layouts, signatures, grid/block values and argument packing (no driver).
#include "cuda_args.h"

#include <tvm/ffi/base_detail.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>

#include "core/arg_types.h"

namespace tvm_ffi_next {
namespace cuda {
namespace {

// DLPack device types a kernel can read through a plain pointer.
bool IsCudaAccessible(int32_t device_type) {
  return device_type == kDLCUDA || device_type == kDLCUDAHost || device_type == kDLCUDAManaged;
}

const char* DeviceTypeName(int32_t device_type) {
  switch (device_type) {
    case kDLCPU:
      return "cpu";
    case kDLCUDA:
      return "cuda";
    case kDLCUDAHost:
      return "cuda_host";
    case kDLCUDAManaged:
      return "cuda_managed";
    case kDLROCM:
      return "rocm";
    default:
      return "device type ";
  }
}

std::string DeviceText(const DLDevice& d) {
  const char* name = DeviceTypeName(d.device_type);
  std::string out = name;
  if (std::strcmp(name, "device type ") == 0) out += std::to_string(d.device_type);
  return out + ":" + std::to_string(d.device_id);
}

// "kernel "k" in module "m": argument 3: " -- the prefix of every per-argument message.
std::string ArgPrefix(const std::string& who, Py_ssize_t i) {
  return who + ": argument " + std::to_string(i + 1) + ": ";
}

int Fail(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  return -1;
}

// Writes an int of `size` bytes (little-endian two's complement, as the GPU reads it).
void StoreInt(char* dst, uint32_t size, uint64_t bits) { std::memcpy(dst, &bits, size); }

int PackInt(const std::string& who, Py_ssize_t i, const Param& p, PyObject* value, char* dst) {
  if (p.kind == ParamKind::kFloat) {
    // C converts an int to the float parameter; so do we.
    const double v = PyLong_AsDouble(value);
    if (v == -1.0 && PyErr_Occurred()) return -1;
    if (p.size == 4) {
      const float f = static_cast<float>(v);
      std::memcpy(dst, &f, 4);
    } else {
      std::memcpy(dst, &v, 8);
    }
    return 0;
  }
  if (p.size != 1 && p.size != 2 && p.size != 4 && p.size != 8) {
    return Fail(PyExc_TypeError, ArgPrefix(who, i) + "an int needs a 1-, 2-, 4- or 8-byte " +
                                     "parameter (this one has " + std::to_string(p.size) +
                                     " bytes)");
  }
  // The range a parameter of this size and kind holds: an untyped one takes both the signed
  // and the unsigned values (the image does not say which it is).
  const int bits = static_cast<int>(p.size) * 8;
  const bool is_signed = p.kind == ParamKind::kSigned;
  const bool is_unsigned = p.kind == ParamKind::kUnsigned || p.kind == ParamKind::kPointer;
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (v == -1 && PyErr_Occurred()) return -1;
  uint64_t u = 0;
  bool ok = false;
  if (overflow == 0) {
    const long long lo = is_unsigned ? 0 : (bits == 64 ? INT64_MIN : -(1LL << (bits - 1)));
    const long long hi_signed = bits == 64 ? INT64_MAX : (1LL << (bits - 1)) - 1;
    const unsigned long long hi = is_signed ? static_cast<unsigned long long>(hi_signed)
                                            : (bits == 64 ? UINT64_MAX : (1ULL << bits) - 1);
    ok = v >= lo && (v < 0 || static_cast<unsigned long long>(v) <= hi);
    u = static_cast<uint64_t>(v);
  } else if (overflow > 0 && bits == 64 && !is_signed) {
    const unsigned long long big = PyLong_AsUnsignedLongLong(value);
    if (!(big == static_cast<unsigned long long>(-1) && PyErr_Occurred())) {
      ok = true;
      u = big;
    }
    PyErr_Clear();
  }
  if (!ok) {
    std::string lo, hi;
    if (is_unsigned) {
      lo = "0";
      hi = bits == 64 ? "18446744073709551615" : std::to_string((1ULL << bits) - 1);
    } else {
      lo = bits == 64 ? "-9223372036854775808" : std::to_string(-(1LL << (bits - 1)));
      hi = is_signed
               ? (bits == 64 ? "9223372036854775807" : std::to_string((1LL << (bits - 1)) - 1))
               : (bits == 64 ? "18446744073709551615" : std::to_string((1ULL << bits) - 1));
    }
    PyObject* repr = PyObject_Repr(value);
    const char* text = repr != nullptr ? PyUnicode_AsUTF8(repr) : nullptr;
    const std::string shown = text != nullptr ? text : "int";
    Py_XDECREF(repr);
    PyErr_Clear();
    return Fail(PyExc_ValueError, ArgPrefix(who, i) + shown + " is out of range for the " +
                                      ParamName(p) + " parameter (" + lo + " to " + hi + ")");
  }
  StoreInt(dst, p.size, u);
  return 0;
}

int PackFloat(const std::string& who, Py_ssize_t i, const Param& p, double v, char* dst) {
  if (p.kind != ParamKind::kAny && p.kind != ParamKind::kFloat) {
    return Fail(PyExc_TypeError, ArgPrefix(who, i) + "a float cannot be passed as " + ParamName(p));
  }
  if (p.size == 4) {
    const float f = static_cast<float>(v);
    std::memcpy(dst, &f, 4);
  } else if (p.size == 8) {
    std::memcpy(dst, &v, 8);
  } else {
    return Fail(PyExc_TypeError, ArgPrefix(who, i) +
                                     "a float needs a 4- or 8-byte parameter (this one has " +
                                     std::to_string(p.size) + " bytes)");
  }
  return 0;
}

int PackPointer(const std::string& who, Py_ssize_t i, const Param& p, const char* what, void* ptr,
                char* dst) {
  if (p.kind != ParamKind::kAny && p.kind != ParamKind::kPointer) {
    return Fail(PyExc_TypeError,
                ArgPrefix(who, i) + "a " + what + " cannot be passed as " + ParamName(p));
  }
  if (p.size != sizeof(void*)) {
    return Fail(PyExc_TypeError, ArgPrefix(who, i) + "a " + what +
                                     " passes an 8-byte pointer, but the parameter has " +
                                     std::to_string(p.size) + " bytes");
  }
  std::memcpy(dst, &ptr, sizeof(ptr));
  return 0;
}

// A tensor's data pointer, read by the core's argument conversion (the exchange API into a stack
// DLTensor, else __dlpack__ into a TensorObj the frame holds until the launch is queued), with
// the core's checks of the producer's DLTensor and of torch's conjugate and negative bits.
int PackTensor(const std::string& who, Py_ssize_t i, const Param& p, const TypeEntry* entry,
               PyObject* obj, char* dst, LaunchTarget* target, ArgFrame* frame, bool accept_host) {
  DLTensor view;
  TVMFFIAny value;
  frame->position = static_cast<int>(i + 1);
  if (ConvertArg(frame, obj, &value, &view, 0) != 0) return -1;
  const DLTensor* tensor = value.type_index == kTVMFFIDLTensorPtr
                               ? static_cast<const DLTensor*>(value.v_ptr)
                               : CellOf<DLTensor>(value.v_obj);
  const DLDevice dev = tensor->device;
  if (!IsCudaAccessible(dev.device_type) && !accept_host) {
    return Fail(PyExc_ValueError, ArgPrefix(who, i) + "the tensor is on " + DeviceText(dev) +
                                      "; a kernel takes tensors on a CUDA device");
  }
  if (dev.device_type == kDLCUDA) {
    if (target->device < 0) {
      target->device = dev.device_id;
      target->device_arg = static_cast<int>(i + 1);
    } else if (target->device != dev.device_id) {
      return Fail(PyExc_ValueError, ArgPrefix(who, i) +
                                        "the tensor is on cuda:" + std::to_string(dev.device_id) +
                                        " but argument " + std::to_string(target->device_arg) +
                                        " is on cuda:" + std::to_string(target->device));
    }
    if (target->stream_api == nullptr && entry->kind == Kind::kExchangeApi) {
      target->stream_api = entry->api;
    }
  }
  void* data = static_cast<char*>(tensor->data) + tensor->byte_offset;
  return PackPointer(who, i, p, "tensor", data, dst);
}

// numpy scalars, ctypes values, bytes: their own bytes, which must fill the parameter.
int PackBuffer(const std::string& who, Py_ssize_t i, const Param& p, PyObject* obj, char* dst) {
  Py_buffer view;
  if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) != 0) return -1;
  const Py_ssize_t len = view.len;
  if (len == static_cast<Py_ssize_t>(p.size)) std::memcpy(dst, view.buf, p.size);
  PyBuffer_Release(&view);
  if (len != static_cast<Py_ssize_t>(p.size)) {
    return Fail(PyExc_TypeError, ArgPrefix(who, i) + "a " + Py_TYPE(obj)->tp_name + " of " +
                                     std::to_string(len) + " bytes for the " + ParamName(p) +
                                     " parameter");
  }
  return 0;
}

int PackOne(const std::string& who, Py_ssize_t i, const Param& p, PyObject* obj, char* dst,
            LaunchTarget* target, ArgFrame* frame, bool accept_host) {
  PyTypeObject* type = Py_TYPE(obj);
  if (type == &PyLong_Type || type == &PyBool_Type) return PackInt(who, i, p, obj, dst);
  if (type == &PyFloat_Type) return PackFloat(who, i, p, PyFloat_AS_DOUBLE(obj), dst);
  if (obj == Py_None) return PackPointer(who, i, p, "None", nullptr, dst);
  const TypeEntry* entry = LookupType(type);
  if (entry->kind == Kind::kExchangeApi || entry->kind == Kind::kDLPack) {
    return PackTensor(who, i, p, entry, obj, dst, target, frame, accept_host);
  }
  if (entry->kind == Kind::kOpaquePtr) {  // ctypes.c_void_p: its value, as the core reads it
    TVMFFIAny value;
    frame->position = static_cast<int>(i + 1);
    if (ConvertArg(frame, obj, &value, nullptr, 0) != 0) return -1;
    return PackPointer(who, i, p, "c_void_p", value.v_ptr, dst);
  }
  // Before the int/float kinds: numpy and ctypes scalars keep their own width.
  if (PyObject_CheckBuffer(obj)) return PackBuffer(who, i, p, obj, dst);
  if (entry->kind == Kind::kInt) {
    PyObject* index = PyNumber_Index(obj);
    if (index == nullptr) return -1;
    const int rc = PackInt(who, i, p, index, dst);
    Py_DECREF(index);
    return rc;
  }
  if (entry->kind == Kind::kFloat) {
    const double v = PyFloat_AsDouble(obj);
    if (v == -1.0 && PyErr_Occurred()) return -1;
    return PackFloat(who, i, p, v, dst);
  }
  return Fail(PyExc_TypeError, ArgPrefix(who, i) + "cannot pass a " + type->tp_name +
                                   " (a kernel takes tensors, ints, floats, numpy scalars, " +
                                   "ctypes values and bytes)");
}

// Signature parsing: C type names -> (kind, size).
struct TypeName {
  const char* name;
  ParamKind kind;
  uint32_t size;
};

const TypeName kTypeNames[] = {
    {"bool", ParamKind::kUnsigned, 1},
    {"char", ParamKind::kSigned, 1},
    {"signed char", ParamKind::kSigned, 1},
    {"unsigned char", ParamKind::kUnsigned, 1},
    {"int8_t", ParamKind::kSigned, 1},
    {"uint8_t", ParamKind::kUnsigned, 1},
    {"short", ParamKind::kSigned, 2},
    {"unsigned short", ParamKind::kUnsigned, 2},
    {"int16_t", ParamKind::kSigned, 2},
    {"uint16_t", ParamKind::kUnsigned, 2},
    {"int", ParamKind::kSigned, 4},
    {"unsigned", ParamKind::kUnsigned, 4},
    {"unsigned int", ParamKind::kUnsigned, 4},
    {"int32_t", ParamKind::kSigned, 4},
    {"uint32_t", ParamKind::kUnsigned, 4},
    {"long", ParamKind::kSigned, 8},
    {"unsigned long", ParamKind::kUnsigned, 8},
    {"long long", ParamKind::kSigned, 8},
    {"unsigned long long", ParamKind::kUnsigned, 8},
    {"int64_t", ParamKind::kSigned, 8},
    {"uint64_t", ParamKind::kUnsigned, 8},
    {"size_t", ParamKind::kUnsigned, 8},
    {"ptrdiff_t", ParamKind::kSigned, 8},
    {"float", ParamKind::kFloat, 4},
    {"double", ParamKind::kFloat, 8},
};

bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::vector<std::string> Words(const std::string& s) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < s.size()) {
    if (std::isspace(static_cast<unsigned char>(s[i]))) {
      ++i;
    } else if (IsIdentChar(s[i])) {
      size_t j = i;
      while (j < s.size() && IsIdentChar(s[j])) ++j;
      words.push_back(s.substr(i, j - i));
      i = j;
    } else {
      words.push_back(std::string(1, s[i]));
      ++i;
    }
  }
  return words;
}

// One parameter: "const float* __restrict__ x" -> pointer; "int64_t n" -> int64.
bool ParseParam(const std::string& text, Param* out) {
  std::vector<std::string> words;
  bool pointer = false;
  for (const std::string& w : Words(text)) {
    if (w == "const" || w == "volatile" || w == "__restrict__" || w == "restrict" ||
        w == "__restrict" || w == "struct" || w == "std") {
      continue;
    }
    if (w == ":") continue;  // std::int64_t
    if (w == "*") {
      pointer = true;
      continue;
    }
    if (!IsIdentChar(w[0])) return false;
    words.push_back(w);
  }
  if (words.empty()) return false;
  if (pointer) {
    *out = Param{0, 8, ParamKind::kPointer};
    return true;
  }
  // The longest known type name that the words start with; one word may follow (a name).
  for (size_t take = words.size(); take > 0; --take) {
    std::string name;
    for (size_t k = 0; k < take; ++k) name += (k ? " " : "") + words[k];
    for (const TypeName& t : kTypeNames) {
      if (name == t.name && words.size() - take <= 1) {
        *out = Param{0, t.size, t.kind};
        return true;
      }
    }
  }
  return false;
}

}  // namespace

std::string ParamName(const Param& p) {
  const std::string bits = std::to_string(p.size * 8);
  switch (p.kind) {
    case ParamKind::kPointer:
      return "pointer";
    case ParamKind::kSigned:
      return "int" + bits;
    case ParamKind::kUnsigned:
      return "uint" + bits;
    case ParamKind::kFloat:
      return "float" + bits;
    default:
      return std::to_string(p.size) + "-byte";
  }
}

bool ParseSignature(const std::string& sig, Layout* out, std::string* error) {
  Layout layout;
  layout.known = true;
  std::string body = sig;
  // "void k(float*, int)" and "(float*, int)" are accepted too: keep what is in the parens.
  const size_t open = body.find('(');
  if (open != std::string::npos) {
    const size_t close = body.rfind(')');
    if (close == std::string::npos || close < open) {
      *error = "unbalanced parentheses";
      return false;
    }
    body = body.substr(open + 1, close - open - 1);
  }
  size_t start = 0;
  uint32_t offset = 0;
  bool blank = body.find_first_not_of(" \t\n") == std::string::npos;
  if (blank || body == "void") {
    *out = layout;
    return true;
  }
  while (start <= body.size()) {
    size_t comma = body.find(',', start);
    if (comma == std::string::npos) comma = body.size();
    const std::string piece = body.substr(start, comma - start);
    Param p{0, 0, ParamKind::kAny};
    if (!ParseParam(piece, &p)) {
      const size_t b = piece.find_first_not_of(" \t\n");
      const size_t e = piece.find_last_not_of(" \t\n");
      *error = "parameter " + std::to_string(layout.params.size() + 1) + " ('" +
               (b == std::string::npos ? std::string() : piece.substr(b, e - b + 1)) +
               "') is not a pointer or a known scalar type";
      return false;
    }
    offset = (offset + p.size - 1) / p.size * p.size;  // natural alignment, as nvcc lays out
    p.offset = offset;
    offset += p.size;
    layout.buffer_size = offset;
    layout.params.push_back(p);
    start = comma + 1;
  }
  *out = layout;
  return true;
}

Layout LayoutFromSlots(const std::vector<std::pair<uint32_t, uint32_t>>& slots) {
  Layout layout;
  layout.known = true;
  for (const auto& s : slots) {
    layout.params.push_back(Param{s.first, s.second, ParamKind::kAny});
    layout.buffer_size = std::max<size_t>(layout.buffer_size, size_t{s.first} + s.second);
  }
  return layout;
}

std::string Dim3Text(const uint32_t d[3]) {
  return "(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) +
         ")";
}

bool ParseDim3(PyObject* value, const char* label, uint32_t out[3]) {
  out[0] = out[1] = out[2] = 1;
  if (PyLong_CheckExact(value)) {
    const long long v = PyLong_AsLongLong(value);
    if (v >= 1 && v <= UINT32_MAX) {
      out[0] = static_cast<uint32_t>(v);
      return true;
    }
    PyErr_Clear();
  } else if (PyTuple_Check(value) && PyTuple_GET_SIZE(value) >= 1 && PyTuple_GET_SIZE(value) <= 3) {
    bool ok = true;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(value); ++i) {
      PyObject* item = PyTuple_GET_ITEM(value, i);
      if (!PyLong_Check(item) || PyBool_Check(item)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int or a tuple of 1 to 3 ints (got %R)", label,
                     value);
        return false;
      }
      const long long v = PyLong_AsLongLong(item);
      if (v == -1 && PyErr_Occurred()) PyErr_Clear();
      if (v < 1 || v > UINT32_MAX) ok = false;
      out[i] = static_cast<uint32_t>(v);
    }
    if (ok) return true;
  } else if (!PyLong_Check(value) || PyBool_Check(value)) {
    PyErr_Format(PyExc_TypeError, "%s must be an int or a tuple of 1 to 3 ints (got %R)", label,
                 value);
    return false;
  } else {
    // An int subclass: the same range check as an int.
    const long long v = PyLong_AsLongLong(value);
    if (v >= 1 && v <= UINT32_MAX) {
      out[0] = static_cast<uint32_t>(v);
      return true;
    }
    PyErr_Clear();
  }
  PyErr_Format(PyExc_ValueError, "%s must be 1 to 3 ints from 1 to 4294967295 (got %R)", label,
               value);
  return false;
}

int PackArgs(const std::string& who, const Layout& layout, PyObject* const* args, Py_ssize_t n,
             char* buffer, void** pointers, LaunchTarget* target, ArgFrame* frame,
             bool accept_host) {
  // Every parameter takes a tensor as a view: the producer's DLTensor on the stack, no object.
  frame->view_params = ~uint64_t{0};
  const Py_ssize_t expected = static_cast<Py_ssize_t>(layout.params.size());
  if (TVM_FFI_UNLIKELY(n != expected)) {
    return Fail(PyExc_TypeError, who + " takes " + std::to_string(expected) + " argument" +
                                     (expected == 1 ? "" : "s") + " (got " + std::to_string(n) +
                                     ")");
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    const Param& p = layout.params[i];
    char* dst = buffer + p.offset;
    pointers[i] = dst;
    if (PackOne(who, i, p, args[i], dst, target, frame, accept_host) != 0) return -1;
  }
  return 0;
}

}  // namespace cuda
}  // namespace tvm_ffi_next
