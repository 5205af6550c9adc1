// Shapes, arrays and lists, and the runtime globals that build and read them
// ("ffi.String", "ffi.Bytes", "ffi.Shape", "ffi.Array", "ffi.ArrayGetItem", "ffi.ArraySize",
// "ffi.List", "ffi.ListGetItem", "ffi.ListSize", "ffi.ListAppend").
#include <vector>

#include "internal.h"

namespace tvm_ffi_runtime {
namespace {

// ShapeObj: the header, the TVMFFIShapeCell at 24, the dimensions from 40 on.
struct ShapeObject {
  TVMFFIObject header;
  TVMFFIShapeCell cell;
};

// ArrayObj and ListObj: the header, the TVMFFISeqCell at 24. An array keeps its elements
// inside the object (from 56 on, data_deleter NULL); a list in a separate buffer from
// ::operator new, freed by data_deleter, so that libraries' inline code can grow it with
// ::operator new as well.
struct SeqObject {
  TVMFFIObject header;
  TVMFFISeqCell cell;
};

TVMFFIAny* Elements(SeqObject* s) { return static_cast<TVMFFIAny*>(s->cell.data); }

void SeqDeleter(void* obj, int flags) {
  auto* s = static_cast<SeqObject*>(obj);
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) {
    TVMFFIAny* items = Elements(s);
    for (int64_t i = 0; i < s->cell.size; ++i) ReleaseValue(&items[i]);
    if (s->cell.data_deleter != nullptr) s->cell.data_deleter(s->cell.data);
  }
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) FreeObjectSpace(obj);
}

void ListDataDeleter(void* data) { ::operator delete(data); }

SeqObject* NewSeq(bool list, int64_t capacity) {
  if (!list) {
    auto* s = static_cast<SeqObject*>(
        AllocObject(sizeof(SeqObject) + sizeof(TVMFFIAny) * static_cast<size_t>(capacity),
                    kTVMFFIArray, &SeqDeleter));
    s->cell.data = s + 1;
    s->cell.capacity = capacity;
    return s;
  }
  auto* s = static_cast<SeqObject*>(AllocObject(sizeof(SeqObject), kTVMFFIList, &SeqDeleter));
  s->cell.data =
      ::operator new(sizeof(TVMFFIAny) * static_cast<size_t>(capacity > 0 ? capacity : 1));
  s->cell.capacity = capacity > 0 ? capacity : 1;
  s->cell.data_deleter = &ListDataDeleter;
  return s;
}

TVMFFIAny MakeSeq(bool list, const TVMFFIAny* args, int32_t n) {
  SeqObject* s = NewSeq(list, n);
  TVMFFIAny* items = Elements(s);
  for (int32_t i = 0; i < n; ++i) {
    items[i] = OwnedCopy(args[i]);
    s->cell.size = i + 1;  // counted as it goes, so a failure mid-way releases what was taken
  }
  return ObjectValue(&s->header);
}

SeqObject* SeqArg(const char* fname, const TVMFFIAny& v, int32_t type_index) {
  if (v.type_index != type_index) {
    Throw("TypeError", std::string(fname) + ": argument 0 must be " + TypeName(type_index) +
                           " (got " + TypeName(v.type_index) + ")");
  }
  return reinterpret_cast<SeqObject*>(v.v_obj);
}

TVMFFIAny GetItem(const char* fname, const TVMFFIAny* args, int32_t n, int32_t type_index) {
  CheckArgCount(fname, n, 2);
  SeqObject* s = SeqArg(fname, args[0], type_index);
  int64_t i = IntArg(fname, args, 1);
  if (i < 0 || i >= s->cell.size) {
    Throw("IndexError", std::string(fname) + ": index " + std::to_string(i) + " out of range for " +
                            std::to_string(s->cell.size) + " elements");
  }
  return OwnedCopy(Elements(s)[i]);
}

TVMFFIAny Size(const char* fname, const TVMFFIAny* args, int32_t n, int32_t type_index) {
  CheckArgCount(fname, n, 1);
  return IntValue(SeqArg(fname, args[0], type_index)->cell.size);
}

TVMFFIAny ListAppend(const TVMFFIAny* args, int32_t n) {
  CheckArgCount("ffi.ListAppend", n, 2);
  SeqObject* s = SeqArg("ffi.ListAppend", args[0], kTVMFFIList);
  if (s->cell.size == s->cell.capacity) {
    int64_t cap = s->cell.capacity * 2;
    auto* data =
        static_cast<TVMFFIAny*>(::operator new(sizeof(TVMFFIAny) * static_cast<size_t>(cap)));
    std::memcpy(data, s->cell.data, sizeof(TVMFFIAny) * static_cast<size_t>(s->cell.size));
    s->cell.data_deleter(s->cell.data);
    s->cell.data = data;
    s->cell.capacity = cap;
  }
  Elements(s)[s->cell.size] = OwnedCopy(args[1]);
  s->cell.size += 1;
  return NoneValue();
}

TVMFFIAny MakeShape(const TVMFFIAny* args, int32_t n) {
  std::vector<int64_t> dims(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) dims[static_cast<size_t>(i)] = IntArg("ffi.Shape", args, i);
  auto* s = static_cast<ShapeObject*>(AllocObject(
      sizeof(ShapeObject) + sizeof(int64_t) * static_cast<size_t>(n), kTVMFFIShape, &FlatDeleter));
  auto* data = reinterpret_cast<int64_t*>(s + 1);
  if (n > 0) std::memcpy(data, dims.data(), sizeof(int64_t) * static_cast<size_t>(n));
  s->cell = TVMFFIShapeCell{data, static_cast<size_t>(n)};
  return ObjectValue(&s->header);
}

TVMFFIAny ToStr(const char* fname, const TVMFFIAny* args, int32_t n, bool bytes) {
  CheckArgCount(fname, n, 1);
  return MakeStr(StrView(args[0], fname), bytes);
}

}  // namespace

TVMFFIAny MakeArray(const TVMFFIAny* items, int32_t n) { return MakeSeq(false, items, n); }

const TVMFFIAny* SeqItems(TVMFFIObject* seq, int64_t* size) {
  auto* s = reinterpret_cast<SeqObject*>(seq);
  *size = s->cell.size;
  return Elements(s);
}

namespace {

const bool registered = [] {
  RegisterGlobalNative(
      "ffi.String", [](const TVMFFIAny* a, int32_t n) { return ToStr("ffi.String", a, n, false); });
  RegisterGlobalNative(
      "ffi.Bytes", [](const TVMFFIAny* a, int32_t n) { return ToStr("ffi.Bytes", a, n, true); });
  RegisterGlobalNative("ffi.Shape", &MakeShape);
  RegisterGlobalNative("ffi.Array",
                       [](const TVMFFIAny* a, int32_t n) { return MakeSeq(false, a, n); });
  RegisterGlobalNative("ffi.ArrayGetItem", [](const TVMFFIAny* a, int32_t n) {
    return GetItem("ffi.ArrayGetItem", a, n, kTVMFFIArray);
  });
  RegisterGlobalNative("ffi.ArraySize", [](const TVMFFIAny* a, int32_t n) {
    return Size("ffi.ArraySize", a, n, kTVMFFIArray);
  });
  RegisterGlobalNative("ffi.List",
                       [](const TVMFFIAny* a, int32_t n) { return MakeSeq(true, a, n); });
  RegisterGlobalNative("ffi.ListGetItem", [](const TVMFFIAny* a, int32_t n) {
    return GetItem("ffi.ListGetItem", a, n, kTVMFFIList);
  });
  RegisterGlobalNative("ffi.ListSize", [](const TVMFFIAny* a, int32_t n) {
    return Size("ffi.ListSize", a, n, kTVMFFIList);
  });
  RegisterGlobalNative("ffi.ListAppend", &ListAppend);
  return true;
}();

}  // namespace
}  // namespace tvm_ffi_runtime
