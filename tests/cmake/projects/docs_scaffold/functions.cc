// The source of the smallest consumer in docs/guides/cmake.md: one exported function.
#include <tvm/ffi/function.h>

#include <cstdint>

namespace {

int64_t Add(int64_t a, int64_t b) { return a + b; }

}  // namespace

TVM_FFI_DLL_EXPORT_TYPED_FUNC(add, Add);
