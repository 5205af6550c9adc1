// A reflected type "client.Shared" whose size depends on SHARED_PAD: two builds of this file
// are two libraries that disagree about one type key (tests/abi/test_runtime_type_conflict.py).
#include <tvm/ffi/reflection/registry.h>
#include <tvm/ffi/tvm_ffi.h>
namespace ffi = tvm::ffi;
namespace refl = tvm::ffi::reflection;
class SharedObj : public ffi::Object {
 public:
  int64_t a0;
  int64_t pad[SHARED_PAD];
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("client.Shared", SharedObj, ffi::Object);
};
int64_t size_impl() { return sizeof(SharedObj); }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(size, size_impl);
TVM_FFI_STATIC_INIT_BLOCK() { refl::ObjectDef<SharedObj>().def_ro("a0", &SharedObj::a0); }
