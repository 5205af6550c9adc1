// What a Function says about itself: its signature text and argument count, read once from the
// export's metadata (`__tvm_ffi__metadata_<name>`: {"type_schema": "<JSON>"}), and the
// attributes built on them (__qualname__, __doc__, __signature__, __text_signature__). Libraries
// without metadata (apache's default) state no signature: the name alone, any argument count.
#include "core.h"

namespace tvm_ffi_next {
namespace {

// Schema type keys as a Python reader writes them; others (user object types) stay as they are.
const char* ShortTypeName(const char* key) {
  static const char* const kNames[][2] = {
      {"ffi.Tensor", "Tensor"},     {"DLTensor*", "Tensor"},  {"ffi.String", "str"},
      {"ffi.Bytes", "bytes"},       {"ffi.Array", "list"},    {"ffi.List", "list"},
      {"ffi.Map", "dict"},          {"ffi.Dict", "dict"},     {"ffi.Shape", "Shape"},
      {"ffi.Function", "Function"}, {"ffi.Module", "Module"}, {"DataType", "dtype"},
      {"void*", "pointer"},         {"Variant", "Union"},
  };
  for (const auto& entry : kNames) {
    if (std::strcmp(entry[0], key) == 0) return entry[1];
  }
  return key;
}

// {"type": "ffi.Array", "args": [{"type": "int"}]} -> "list[int]"; NULL (no error) if malformed.
PyObject* FormatType(PyObject* node, int depth) {
  PyObject* type = PyDict_Check(node) ? PyDict_GetItemString(node, "type") : nullptr;
  const char* key = type != nullptr && PyUnicode_Check(type) ? PyUnicode_AsUTF8(type) : nullptr;
  if (key == nullptr || depth > 16) return nullptr;
  PyObject* out = PyUnicode_FromString(ShortTypeName(key));
  PyObject* args = PyDict_GetItemString(node, "args");
  if (out == nullptr || args == nullptr || !PyList_Check(args) || PyList_GET_SIZE(args) == 0) {
    return out;
  }
  // Optional[T] and Variant[A, B] read as Python writes them: "T | None", "A | B".
  const bool optional = std::strcmp(key, "Optional") == 0 && PyList_GET_SIZE(args) == 1;
  const bool variant = std::strcmp(key, "Variant") == 0;
  PyObject* parts = PyList_New(0);
  for (Py_ssize_t i = 0; parts != nullptr && i < PyList_GET_SIZE(args); ++i) {
    PyObject* part = FormatType(PyList_GET_ITEM(args, i), depth + 1);
    if (part == nullptr || PyList_Append(parts, part) != 0) Py_CLEAR(parts);
    Py_XDECREF(part);
  }
  PyObject* sep = parts != nullptr ? PyUnicode_FromString(variant ? " | " : ", ") : nullptr;
  PyObject* joined = sep != nullptr ? PyUnicode_Join(sep, parts) : nullptr;
  PyObject* full = nullptr;
  if (joined != nullptr) {
    full = optional  ? PyUnicode_FromFormat("%U | None", joined)
           : variant ? Py_NewRef(joined)
                     : PyUnicode_FromFormat("%U[%U]", out, joined);
  }
  Py_XDECREF(sep);
  Py_XDECREF(joined);
  Py_XDECREF(parts);
  Py_DECREF(out);
  return full;
}

// Our headers write {"named_args": {"params": [...], "return": [...]}}; apache's writes
// {"args": [return, param0, ...]}.
int ReadSchema(PyObject* schema, PyObject** params, PyObject** result) {
  PyObject* named = PyDict_GetItemString(schema, "named_args");
  if (named != nullptr && PyDict_Check(named)) {
    *params = PyDict_GetItemString(named, "params");
    PyObject* ret = PyDict_GetItemString(named, "return");
    *result = ret != nullptr && PyList_Check(ret) && PyList_GET_SIZE(ret) == 1
                  ? PyList_GET_ITEM(ret, 0)
                  : nullptr;
    if (*params == nullptr || !PyList_Check(*params)) return -1;
    *params = PyList_GetSlice(*params, 0, PyList_GET_SIZE(*params));
    return *params != nullptr ? 0 : -1;
  }
  PyObject* args = PyDict_GetItemString(schema, "args");
  if (args == nullptr || !PyList_Check(args) || PyList_GET_SIZE(args) == 0) return -1;
  *result = PyList_GET_ITEM(args, 0);
  *params = PyList_GetSlice(args, 1, PyList_GET_SIZE(args));
  return *params != nullptr ? 0 : -1;
}

PyObject* Name(FunctionObject* f) { return f->name != nullptr ? f->name : Py_None; }

PyObject* GetName(PyObject* self, void*) {
  return Py_NewRef(Name(reinterpret_cast<FunctionObject*>(self)));
}

PyObject* GetSignature(PyObject* self, void*) { return FunctionSignatureText(self); }

// __doc__: an assigned one, else the signature; deleting (or assigning None) goes back to it.
PyObject* GetDoc(PyObject* self, void*) {
  PyObject* doc = reinterpret_cast<FunctionObject*>(self)->doc;
  return doc != nullptr ? Py_NewRef(doc) : FunctionSignatureText(self);
}

int SetDoc(PyObject* self, PyObject* value, void*) {
  Py_XSETREF(reinterpret_cast<FunctionObject*>(self)->doc,
             value != nullptr && value != Py_None ? Py_NewRef(value) : nullptr);
  return 0;
}

PyObject* GetNumArgs(PyObject* self, void*) {
  return PyLong_FromLong(reinterpret_cast<FunctionObject*>(self)->num_args);
}

// __signature__ / __text_signature__ for inspect and help(): built in Python
// (tvm_ffi/_signature.py) from the signature text, on request only.
PyObject* CallSignatureHelper(PyObject* self, const char* helper) {
  const int num_args = reinterpret_cast<FunctionObject*>(self)->num_args;
  PyObject* module = PyImport_ImportModule("tvm_ffi._signature");
  PyObject* text = module != nullptr ? FunctionSignatureText(self) : nullptr;
  PyObject* out = nullptr;
  if (text != nullptr) {
    out = std::strcmp(helper, "from_text") == 0
              ? PyObject_CallMethod(module, helper, "Oi", text, num_args)
              : PyObject_CallMethod(module, helper, "i", num_args);
  }
  Py_XDECREF(text);
  Py_XDECREF(module);
  return out;
}

PyObject* GetPySignature(PyObject* self, void*) { return CallSignatureHelper(self, "from_text"); }
PyObject* GetTextSignature(PyObject* self, void*) {
  return CallSignatureHelper(self, "text_signature");
}

// json.loads(text), through the standard library's C scanner (_json) alone: the json package
// imports re, which a cache hit of a JIT module must not pay for in a fresh process. Malformed
// text raises (then _json imports json.decoder for its error type: that path may pay it).
PyObject* LoadJson(PyObject* text) {
  static PyObject* scanner = nullptr;  // _json.make_scanner of json's defaults; kept for good
  if (scanner == nullptr) {
    PyObject* module = PyImport_ImportModule("_json");
    // The context make_scanner reads its settings from: a class of json.JSONDecoder's defaults.
    PyObject* ctx =
        module != nullptr
            ? PyObject_CallFunction(
                  reinterpret_cast<PyObject*>(&PyType_Type), "s()N", "_JsonContext",
                  Py_BuildValue("{sOsOsOsOsOsO}", "strict", Py_True, "object_hook", Py_None,
                                "object_pairs_hook", Py_None, "parse_float", &PyFloat_Type,
                                "parse_int", &PyLong_Type, "parse_constant", &PyFloat_Type))
            : nullptr;
    scanner = ctx != nullptr ? PyObject_CallMethod(module, "make_scanner", "O", ctx) : nullptr;
    Py_XDECREF(ctx);
    Py_XDECREF(module);
    if (scanner == nullptr) return nullptr;
  }
  PyObject* stripped = PyObject_CallMethod(text, "strip", "s", " \t\n\r");
  if (stripped == nullptr) return nullptr;
  PyObject* pair = PyObject_CallFunction(scanner, "On", stripped, Py_ssize_t{0});
  PyObject* out = nullptr;
  if (pair != nullptr && PyTuple_Check(pair) && PyTuple_GET_SIZE(pair) == 2 &&
      PyLong_AsSsize_t(PyTuple_GET_ITEM(pair, 1)) == PyUnicode_GET_LENGTH(stripped)) {
    out = Py_NewRef(PyTuple_GET_ITEM(pair, 0));
  } else if (!PyErr_Occurred()) {
    PyErr_SetString(PyExc_ValueError, "function metadata: text after the JSON value");
  }
  Py_XDECREF(pair);
  Py_DECREF(stripped);
  return out;
}

}  // namespace

PyGetSetDef kFunctionInfoGetSet[] = {
    {"__name__", GetName, nullptr, "The exported (or global) name; None for an unnamed one.",
     nullptr},
    {"__qualname__", GetName, nullptr, "The exported name.", nullptr},
    {"__doc__", GetDoc, SetDoc, nullptr, nullptr},
    {"signature", GetSignature, nullptr,
     "The C++ signature, e.g. 'add_one(Tensor, Tensor) -> None' (the name alone when the "
     "library states none).",
     nullptr},
    {"num_args", GetNumArgs, nullptr, "Number of arguments; -1 when the library states none.",
     nullptr},
    {"__signature__", GetPySignature, nullptr, "inspect.Signature: arg0, arg1, ... by position.",
     nullptr},
    {"__text_signature__", GetTextSignature, nullptr, "'(arg0, arg1, /)'.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyObject* FunctionSignatureText(PyObject* function) {
  auto* f = reinterpret_cast<FunctionObject*>(function);
  if (f->signature != nullptr) return Py_NewRef(f->signature);
  if (f->name != nullptr) return Py_NewRef(f->name);
  return PyUnicode_FromString("function");
}

void ReadFunctionMetadata(PyObject* function, PyObject* metadata) {
  auto* f = reinterpret_cast<FunctionObject*>(function);
  if (!PyUnicode_Check(metadata) || f->name == nullptr) return;
  PyObject* outer = LoadJson(metadata);
  PyObject* text = outer != nullptr && PyDict_Check(outer)
                       ? PyDict_GetItemString(outer, "type_schema")
                       : nullptr;  // borrowed
  PyObject* schema = text != nullptr && PyUnicode_Check(text) ? LoadJson(text) : nullptr;
  PyObject* params = nullptr;
  PyObject* result = nullptr;  // borrowed
  if (schema != nullptr && PyDict_Check(schema) && ReadSchema(schema, &params, &result) == 0) {
    uint64_t bits = 0, pointer_bits = 0;
    PyObject* parts = PyList_New(0);
    for (Py_ssize_t i = 0; parts != nullptr && i < PyList_GET_SIZE(params); ++i) {
      PyObject* param = PyList_GET_ITEM(params, i);
      PyObject* type = PyDict_Check(param) ? PyDict_GetItemString(param, "type") : nullptr;
      const char* key = type != nullptr ? PyUnicode_AsUTF8(type) : nullptr;
      if (key != nullptr && std::strcmp(key, "DLTensor*") == 0 && i < 64) bits |= uint64_t{1} << i;
      if (key != nullptr && std::strcmp(key, "void*") == 0 && i < 64) {
        pointer_bits |= uint64_t{1} << i;
      }
      PyObject* part = FormatType(param, 0);
      if (part == nullptr || PyList_Append(parts, part) != 0) Py_CLEAR(parts);
      Py_XDECREF(part);
    }
    PyObject* ret = result != nullptr ? FormatType(result, 0) : nullptr;
    PyObject* sep = parts != nullptr && ret != nullptr ? PyUnicode_FromString(", ") : nullptr;
    PyObject* joined = sep != nullptr ? PyUnicode_Join(sep, parts) : nullptr;
    if (joined != nullptr) {
      Py_XSETREF(f->signature, PyUnicode_FromFormat("%U(%U) -> %U", f->name, joined, ret));
      f->num_args = static_cast<int>(PyList_GET_SIZE(parts));
      f->view_params = bits;
      f->pointer_params = pointer_bits;
    }
    Py_XDECREF(joined);
    Py_XDECREF(sep);
    Py_XDECREF(ret);
    Py_XDECREF(parts);
    Py_DECREF(params);
  }
  Py_XDECREF(schema);
  Py_XDECREF(outer);
  PyErr_Clear();  // metadata that cannot be read only costs the signature and the shortcut
}

}  // namespace tvm_ffi_next
