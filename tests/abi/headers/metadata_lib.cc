// One signature per boundary type, built twice: with the staging headers and with
// apache-tvm-ffi's (TVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1). The __tvm_ffi__metadata_<name>
// exports of both must be the same text (the loader reads which parameters are DLTensor*).
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/container/tuple.h>
#include <tvm/ffi/container/variant.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/optional.h>

namespace ffi = tvm::ffi;

int64_t Scalars(int64_t a, double b, bool c, void* d, DLDataType e, DLDevice f) {
  (void)b, (void)c, (void)d, (void)e, (void)f;
  return a;
}
ffi::String Texts(ffi::String a, ffi::Bytes b) {
  (void)b;
  return a;
}
void Tensors(ffi::TensorView a, ffi::Tensor b, ffi::Optional<ffi::TensorView> c,
             ffi::Array<ffi::Tensor> d) {
  (void)a, (void)b, (void)c, (void)d;
}
ffi::Tuple<ffi::Array<int64_t>, int64_t> Containers(ffi::Shape a,
                                                    ffi::Variant<double, ffi::Tensor> b,
                                                    ffi::Optional<int64_t> c, ffi::Any d,
                                                    ffi::Function e) {
  (void)b, (void)c, (void)d, (void)e;
  return ffi::Tuple<ffi::Array<int64_t>, int64_t>(ffi::Array<int64_t>(), a.size());
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(scalars, Scalars);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(texts, Texts);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(tensors, Tensors);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(containers, Containers);
