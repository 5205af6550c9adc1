// Compiles only if our headers accept a dlpack.h that was included first by someone else (an
// older DLPack 1.0 here). extra/c_env_api.h is left out: its allocator functions take DLPack
// 1.3's DLPackManagedTensorAllocator, which an older copy lacks (as with apache-tvm-ffi).
#include "dlpack_other_copy.h"
// Order matters: ours come second.
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/dlpack.h>
#include <tvm/ffi/function.h>

static_assert(OTHER_DLPACK_WAS_USED == 1, "the first dlpack.h must win");
static_assert(DLPACK_MINOR_VERSION == 0, "ours must not redefine the version");

int64_t Rows(tvm::ffi::TensorView x) { return x.size(0); }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(rows, Rows);
