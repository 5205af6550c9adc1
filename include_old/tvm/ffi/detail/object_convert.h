/*
 * Conversions of object handles (ObjectRef and the classes derived from it: Function, Module,
 * user handles) to and from TVMFFIAny, and the deep copy of any value that Any and results of
 * type Any use. See any_convert.h for the TypeTraits contract.
 */
#ifndef TVM_FFI_DETAIL_OBJECT_CONVERT_H_
#define TVM_FFI_DETAIL_OBJECT_CONVERT_H_

#include <tvm/ffi/base.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/detail/any_convert.h>
#include <tvm/ffi/detail/export.h>
#include <tvm/ffi/detail/object.h>

#include <string>
#include <string_view>
#include <type_traits>

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace detail {

/*! \brief "Function" for "ffi.Function": the names Python users see. */
inline std::string_view ObjectTypeName(std::string_view key) {
  return key.substr(0, 4) == "ffi." ? key.substr(4) : key;
}

/*! \brief Hidden, so each library has its own: its address names this library. */
inline constexpr char kThisLibrary = 0;

/*! \brief "'/path/lib.so'" of the library that holds `address`, for messages. */
TVM_FFI_COLD inline std::string LibraryText(const void* address) {
  const char* path = TVMFFILibraryPathOf != nullptr ? TVMFFILibraryPathOf(address) : nullptr;
  return path != nullptr ? Concat({"'", path, "'"}) : std::string("a library not known");
}

/*!
 * \brief "an object of type 'my.Point' made by another definition ...", for `cell` of T's type
 * key but another definition (CellIsForeignDefinitionOf): read as a T, its layout is wrong.
 */
template <typename T>
TVM_FFI_COLD std::string ForeignDefinitionText(const TVMFFIRefObject* cell) {
  const void* here = &kThisLibrary;
  return Concat({"an object of type '", T::_type_key,
                 "' made by another definition of that type (in ", LibraryText(cell->type),
                 ") than the one this function expects (in ", LibraryText(here),
                 "); two loaded libraries define '", T::_type_key,
                 "', and an object passes only to the library that made it"});
}

template <typename T>
struct ObjectRefTraits {
  using ObjType = typename T::ContainerType;
  static constexpr bool kArg = true;
  static constexpr bool kResult = true;
  static constexpr bool kInlineResult = true;
  static constexpr bool kTopLevelOnly = true;
  static void AppendName(std::string* out) { *out += ObjectTypeName(ObjType::_type_key); }
  static T FromArg(const TVMFFIAny& v) {
    if (TVM_FFI_LIKELY(v.type_code == kTVMFFIRefObject)) {
      TVMFFIRefObject* cell = static_cast<TVMFFIRefObject*>(v.v_ptr);
      if (CellIsA<ObjType>(cell)) return T(ObjectPtr<ObjType>::Borrow(cell));
      if (CellIsForeignDefinitionOf<ObjType>(cell)) {
        throw ConversionError{"", "", "", "", "is " + ForeignDefinitionText<ObjType>(cell)};
      }
    } else if (v.type_code == kTVMFFINone && T::_type_is_nullable) {
      return T(ObjectPtr<ObjType>());
    }
    ThrowTypeMismatch<T>(v);
  }
  static size_t ResultBytes(const T&) { return 0; }
  static void ToResult(const T& v, TVMFFIAny* out, char**) {
    TVMFFIRefObject* cell = ObjectCells::CellOfRef(v);
    if (cell == nullptr) {
      SetScalar(out, kTVMFFINone);
      out->v_int64 = 0;
      return;
    }
    RetainCell(cell);  // the receiver's new reference
    SetScalar(out, kTVMFFIRefObject);
    out->v_ptr = cell;
  }
};

template <typename T>
struct TypeTraits<T, std::enable_if_t<std::is_base_of_v<ObjectRef, T>>> : ObjectRefTraits<T> {};

// ---- deep copy of any value (Any, and results of type Any) ---------------------------------

/*! \brief Heap bytes CopyValue needs for `v` (a multiple of 8). */
inline size_t ValueBytes(const TVMFFIAny& v) {
  switch (v.type_code) {
    case kTVMFFIStr:
    case kTVMFFIBytes:
      return v.size == 0 ? 0 : RoundUp8(static_cast<size_t>(v.size) + 1);
    case kTVMFFIArray:
    case kTVMFFIMap: {
      size_t n = static_cast<size_t>(v.size) * (v.type_code == kTVMFFIMap ? 2 : 1);
      size_t bytes = n * sizeof(TVMFFIAny);
      for (size_t i = 0; i < n; ++i) bytes += ValueBytes(v.v_array[i]);
      return bytes;
    }
    default:
      return 0;
  }
}

/*!
 * \brief Copies `v` into `out`, carving strings and elements from `cursor`. An object is
 * copied by address only at the top level (the caller takes the reference); inside a
 * container it is refused, as a result block cannot release it.
 */
inline void CopyValue(const TVMFFIAny& v, TVMFFIAny* out, char** cursor, bool top_level) {
  switch (v.type_code) {
    case kTVMFFIStr:
    case kTVMFFIBytes:
      if (v.type_code == kTVMFFIStr) {
        CharsResult<kTVMFFIStr>::ToResult(std::string_view(v.v_str, v.size), out, cursor);
      } else {
        CharsResult<kTVMFFIBytes>::ToResult(std::string_view(v.v_str, v.size), out, cursor);
      }
      return;
    case kTVMFFIArray:
    case kTVMFFIMap: {
      size_t n = static_cast<size_t>(v.size) * (v.type_code == kTVMFFIMap ? 2 : 1);
      TVMFFIAny* items = reinterpret_cast<TVMFFIAny*>(*cursor);
      *cursor += n * sizeof(TVMFFIAny);
      for (size_t i = 0; i < n; ++i) CopyValue(v.v_array[i], &items[i], cursor, false);
      *out = v;
      out->v_array = items;
      return;
    }
    case kTVMFFIRefObject:
      if (!top_level) {
        throw ConversionError{"", "", "",
                              "holds an object inside a container, which cannot be copied"};
      }
      *out = v;
      return;
    case kTVMFFIDLManagedTensor:
    case kTVMFFIError:
      throw ConversionError{"", "", "", "holds a value that cannot be copied"};
    default:  // scalars, pointers and borrowed tensors: the value itself
      *out = v;
      return;
  }
}

/*! \brief A copy of `v` in `result`: its own block (owner) when it needs memory. */
inline void CopyValueToResult(const TVMFFIAny& v, TVMFFIResult* result) {
  size_t bytes = ValueBytes(v);
  result->owner = nullptr;
  if (bytes == 0 && v.type_code != kTVMFFIArray && v.type_code != kTVMFFIMap) {
    char* none = nullptr;
    CopyValue(v, &result->value, &none, true);
    return;
  }
  TVMFFIObject* owner = AllocResultBlock(bytes);
  if (owner == nullptr) throw std::bad_alloc();
  char* cursor = ResultPayload(owner);
  try {
    CopyValue(v, &result->value, &cursor, true);
  } catch (...) {
    owner->deleter(owner);
    throw;
  }
  result->owner = owner;
}

}  // namespace detail
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_DETAIL_OBJECT_CONVERT_H_
