// A second library that gives boundary_lib.cc's type key another layout (a rebuilt library
// loaded beside the old one): registering it must be refused with a TypeError, never read
// objects of the other layout as its own.
#include <tvm/ffi/function.h>
#include <tvm/ffi/reflection/registry.h>

namespace ffi = tvm::ffi;

struct CounterObj : public ffi::Object {
  int64_t value = 0;
  int64_t extra[4] = {};
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("test.headers.Counter", CounterObj, ffi::Object);
};

void RegisterOnce() { tvm::ffi::reflection::ObjectDef<CounterObj>(); }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(register_once, RegisterOnce);
