/*
 * Shapes: IntArrayView (also named ShapeView), the non-owning view TensorView::shape() and
 * strides() return, and tvm::ffi::Shape, an owning array of int64_t. As a parameter of an
 * exported function a Shape accepts a Python list or tuple of ints; as a result it comes back
 * as a tuple.
 */
#ifndef TVM_FFI_CONTAINER_SHAPE_H_
#define TVM_FFI_CONTAINER_SHAPE_H_

#include <tvm/ffi/detail/shape.h>
#include <tvm/ffi/detail/names.h>

#endif  // TVM_FFI_CONTAINER_SHAPE_H_
