/*
 * DLDataType helpers: the string form ("float32", "bfloat16", "int8x4") both ways, and
 * comparison (declared at global scope, where apache-tvm-ffi declares it).
 */
#ifndef TVM_FFI_DTYPE_H_
#define TVM_FFI_DTYPE_H_

#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <ostream>
#include <string>

namespace tvm {
namespace ffi {

/*! \brief The data type a string names; ValueError naming the string otherwise. */
TVM_FFI_HIDDEN inline DLDataType StringToDLDataType(const String& str) {
  const TVMFFIByteArray text{str.data(), str.size()};
  DLDataType out;
  if (TVMFFIDataTypeFromString(&text, &out) != 0) {
    TVMFFIObjectHandle raised = nullptr;  // the runtime's wording is replaced by ours
    TVMFFIErrorMoveFromRaised(&raised);
    if (raised != nullptr) TVMFFIObjectDecRef(raised);
    TVM_FFI_THROW(ValueError) << "\"" << std::string_view(str)
                              << "\" is not a data type (expected a name such as float32)";
  }
  return out;
}

/*! \brief "float32", "bfloat16", "int8x4", "bool", ... */
TVM_FFI_HIDDEN inline String DLDataTypeToString(DLDataType dtype) {
  std::string out;
  details::AppendDType(out, dtype);
  return String(out);
}

}  // namespace ffi
}  // namespace tvm

TVM_FFI_HIDDEN inline bool operator==(const DLDataType& lhs, const DLDataType& rhs) {
  return lhs.code == rhs.code && lhs.bits == rhs.bits && lhs.lanes == rhs.lanes;
}
TVM_FFI_HIDDEN inline bool operator!=(const DLDataType& lhs, const DLDataType& rhs) {
  return !(lhs == rhs);
}
// compat: apache-tvm-ffi (at global scope, as there): prints "float32".
TVM_FFI_HIDDEN inline std::ostream& operator<<(std::ostream& os, DLDataType dtype) {
  std::string text;
  tvm::ffi::details::AppendDType(text, dtype);
  return os << text;
}

#endif  // TVM_FFI_DTYPE_H_
