/*
 * tvm::ffi::Object, ObjectPtr<T>, ObjectRef and make_object<T>: reference-counted C++ objects
 * that cross the C ABI as kTVMFFIRefObject values (c_api.h, docs/abi.md). Functions
 * (function.h) and modules (extra/module.h) are objects; so is any class a library derives
 * from Object and registers with reflection::ObjectDef (reflection/registry.h).
 *
 * An ObjectRef holds any TVMFFIRefObject, also one made by another library or by Python;
 * get() reaches the C++ Object only when the object is one (TVM_FFI_OBJECT_IS_CXX).
 */
#ifndef TVM_FFI_OBJECT_H_
#define TVM_FFI_OBJECT_H_

#include <tvm/ffi/detail/object.h>
#include <tvm/ffi/detail/names.h>

#endif  // TVM_FFI_OBJECT_H_
