// DLPack layout and tvm::ffi::TensorView over hand-built DLTensors.
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/dlpack.h>
#include <tvm/ffi/extra/c_env_api.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "testing.h"

using tvm::ffi::TensorView;

// The DLPack ABI, as the specification lays it out on 64-bit platforms.
static_assert(std::is_same_v<std::underlying_type_t<DLDeviceType>, int32_t>);
static_assert(kDLCPU == 1 && kDLCUDA == 2 && kDLCUDAHost == 3 && kDLOpenCL == 4 && kDLVulkan == 7 &&
              kDLMetal == 8 && kDLVPI == 9 && kDLROCM == 10 && kDLROCMHost == 11 &&
              kDLExtDev == 12 && kDLCUDAManaged == 13 && kDLOneAPI == 14 && kDLWebGPU == 15 &&
              kDLHexagon == 16 && kDLMAIA == 17 && kDLTrn == 18);
static_assert(kDLInt == 0 && kDLUInt == 1 && kDLFloat == 2 && kDLOpaqueHandle == 3 &&
              kDLBfloat == 4 && kDLComplex == 5 && kDLBool == 6 && kDLFloat8_e3m4 == 7 &&
              kDLFloat8_e8m0fnu == 14 && kDLFloat4_e2m1fn == 17);
static_assert(sizeof(DLPackVersion) == 8);
static_assert(sizeof(DLDevice) == 8);
static_assert(sizeof(DLDataType) == 4);
static_assert(sizeof(DLTensor) == 48);
static_assert(offsetof(DLTensor, device) == 8 && offsetof(DLTensor, ndim) == 16 &&
              offsetof(DLTensor, dtype) == 20 && offsetof(DLTensor, shape) == 24 &&
              offsetof(DLTensor, strides) == 32 && offsetof(DLTensor, byte_offset) == 40);
static_assert(sizeof(DLManagedTensor) == 64);
static_assert(offsetof(DLManagedTensorVersioned, manager_ctx) == 8 &&
              offsetof(DLManagedTensorVersioned, deleter) == 16 &&
              offsetof(DLManagedTensorVersioned, flags) == 24 &&
              offsetof(DLManagedTensorVersioned, dl_tensor) == 32);
static_assert(DLPACK_FLAG_BITMASK_READ_ONLY == 1 && DLPACK_FLAG_BITMASK_IS_COPIED == 2 &&
              DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED == 4);
static_assert(DLPACK_MAJOR_VERSION == 1);
static_assert(offsetof(DLPackExchangeAPI, managed_tensor_allocator) == 16 &&
              offsetof(DLPackExchangeAPI, current_work_stream) == 48);
static_assert(std::is_trivially_copyable_v<TensorView>);

namespace {
struct Tensor {
  std::vector<float> storage = std::vector<float>(64);
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  DLTensor dl{};
  Tensor(std::vector<int64_t> shape_in, std::vector<int64_t> strides_in, uint64_t byte_offset = 0)
      : shape(std::move(shape_in)), strides(std::move(strides_in)) {
    dl.data = storage.data();
    dl.device = DLDevice{kDLCPU, 0};
    dl.ndim = static_cast<int32_t>(shape.size());
    dl.dtype = DLDataType{kDLFloat, 32, 1};
    dl.shape = shape.empty() ? nullptr : shape.data();
    dl.strides = strides.empty() ? nullptr : strides.data();
    dl.byte_offset = byte_offset;
  }
};
}  // namespace

TEST(accessors) {
  Tensor t({2, 3, 4}, {12, 4, 1}, 8);
  t.dl.device = DLDevice{kDLCUDA, 3};
  TensorView v(&t.dl);
  // DLPack's (and apache-tvm-ffi's) meaning: the raw pointer; the first element is 8 bytes on.
  EXPECT_TRUE(v.data_ptr() == static_cast<void*>(t.storage.data()));
  EXPECT_EQ(v.byte_offset(), uint64_t{8});
  EXPECT_TRUE(static_cast<char*>(v.data_ptr()) + v.byte_offset() ==
              reinterpret_cast<char*>(t.storage.data() + 2));
  EXPECT_EQ(v.dim(), 3);
  EXPECT_EQ(v.sizes()[1], 3);
  EXPECT_TRUE(v.is_contiguous());
  EXPECT_EQ(v.device().device_type, kDLCUDA);
  EXPECT_EQ(v.device().device_id, 3);
  EXPECT_EQ(int(v.dtype().code), int(kDLFloat));
  EXPECT_EQ(int(v.dtype().bits), 32);
  EXPECT_EQ(int(v.dtype().lanes), 1);
  EXPECT_EQ(v.ndim(), 3);
  EXPECT_EQ(v.numel(), 24);
  // A view holds its own copy of the DLTensor (48 bytes), pointing at the same memory.
  EXPECT_TRUE(v.GetDLTensorPtr()->data == t.dl.data && v.GetDLTensorPtr()->shape == t.dl.shape);
  TensorView from_mutable = &t.dl;  // implicit from DLTensor*
  EXPECT_EQ(from_mutable.ndim(), 3);
}

TEST(shape_and_strides_views) {
  Tensor t({2, 3, 4}, {12, 4, 1});
  TensorView v(&t.dl);
  auto shape = v.shape();
  EXPECT_EQ(shape.size(), 3u);
  EXPECT_EQ(shape[0], 2);
  EXPECT_EQ(shape.back(), 4);
  std::vector<int64_t> collected(shape.begin(), shape.end());
  EXPECT_TRUE(collected == std::vector<int64_t>({2, 3, 4}));
  std::vector<int64_t> strides;
  for (int64_t s : v.strides()) strides.push_back(s);
  EXPECT_TRUE(strides == std::vector<int64_t>({12, 4, 1}));
  EXPECT_EQ(v.strides().end() - v.strides().begin(), 3);
}

TEST(negative_indices) {
  Tensor t({2, 3, 4}, {12, 4, 1});
  TensorView v(&t.dl);
  EXPECT_EQ(v.size(-1), 4);
  EXPECT_EQ(v.size(-3), 2);
  EXPECT_EQ(v.size(1), 3);
  EXPECT_EQ(v.stride(-1), 1);
  EXPECT_EQ(v.stride(-3), 12);
}

TEST(index_errors) {
  Tensor t({2, 3, 4}, {12, 4, 1});
  TensorView v(&t.dl);
  EXPECT_ERROR(v.size(3), "IndexError",
               "Tensor::size(3): dimension out of range for a tensor of ndim 3 "
               "(expected -3 to 2)");
  EXPECT_ERROR(v.size(-4), "IndexError",
               "Tensor::size(-4): dimension out of range for a tensor of ndim 3 "
               "(expected -3 to 2)");
  EXPECT_ERROR(v.stride(7), "IndexError",
               "Tensor::stride(7): dimension out of range for a tensor of ndim 3 "
               "(expected -3 to 2)");
  Tensor scalar({}, {});
  EXPECT_ERROR(TensorView(&scalar.dl).size(0), "IndexError",
               "Tensor::size(0): a 0-d tensor has no dimensions");
}

TEST(zero_dim) {
  Tensor scalar({}, {});
  TensorView v(&scalar.dl);
  EXPECT_EQ(v.ndim(), 0);
  EXPECT_EQ(v.numel(), 1);
  EXPECT_TRUE(v.shape().empty());
  EXPECT_TRUE(v.strides().empty());
  EXPECT_TRUE(v.IsContiguous());
}

static bool Contiguous(std::vector<int64_t> shape, std::vector<int64_t> strides) {
  Tensor t(std::move(shape), std::move(strides));
  return TensorView(&t.dl).IsContiguous();
}

TEST(contiguity) {
  EXPECT_TRUE(Contiguous({2, 3, 4}, {12, 4, 1}));
  // Column-major and padded rows are not.
  EXPECT_TRUE(!Contiguous({2, 3}, {1, 2}));
  EXPECT_TRUE(!Contiguous({2, 3}, {4, 1}));
  // A transposed view.
  EXPECT_TRUE(!Contiguous({4, 3}, {1, 4}));
  // Dimensions of size 1 may carry any stride.
  EXPECT_TRUE(Contiguous({2, 1, 3}, {3, 99, 1}));
  EXPECT_TRUE(Contiguous({1, 5}, {-7, 1}));
  // No elements: nothing to lay out.
  EXPECT_TRUE(Contiguous({0, 3}, {7, 9}));
  // Broadcast (stride 0) is not contiguous.
  EXPECT_TRUE(!Contiguous({3, 2}, {0, 1}));
  Tensor empty({0, 3}, {7, 9});
  EXPECT_EQ(TensorView(&empty.dl).numel(), 0);
}

TEST(null_strides_mean_row_major) {
  Tensor t({2, 3, 4}, {});
  EXPECT_TRUE(t.dl.strides == nullptr);
  TensorView v(&t.dl);
  EXPECT_TRUE(v.IsContiguous());
  // The view gives the producer's strides as they are (none); stride(d) computes row-major.
  EXPECT_EQ(v.strides().size(), 0u);
  EXPECT_EQ(v.stride(0), 12);
  EXPECT_EQ(v.stride(-2), 4);
  EXPECT_EQ(v.stride(2), 1);
}

// ---- tvm::ffi::Tensor: the size check before any allocator ---------------------------------

namespace {
int g_env_alloc_calls = 0;
int CountingEnvAlloc(DLTensor*, TVMFFIObjectHandle*) {
  ++g_env_alloc_calls;
  TVMFFIErrorSetRaisedFromCStr("MemoryError", "refused by the test's allocator");
  return -1;
}
}  // namespace

TEST(env_alloc_refuses_sizes_that_overflow_before_allocating) {
  using tvm::ffi::Tensor;
  const DLDataType f32{kDLFloat, 32, 1};
  EXPECT_ERROR(Tensor::FromEnvAlloc(CountingEnvAlloc, {int64_t{1} << 32, int64_t{1} << 32}, f32,
                                    DLDevice{kDLCPU, 0}),
               "ValueError",
               "Tensor::FromEnvAlloc: a float32 tensor of shape (4294967296, 4294967296) is too "
               "large: its size in bytes does not fit in int64");
  EXPECT_ERROR(Tensor::FromEnvAlloc(CountingEnvAlloc, {3, -2}, f32, DLDevice{kDLCPU, 0}),
               "ValueError",
               "Tensor::FromEnvAlloc: dimension 1 of the shape is -2 (expected a size >= 0)");
  EXPECT_EQ(g_env_alloc_calls, 0);
  // A size that fits reaches the allocator (which refuses it here).
  EXPECT_ERROR(Tensor::FromEnvAlloc(CountingEnvAlloc, {int64_t{1} << 40, 0}, f32,
                                    DLDevice{kDLCPU, 0}),
               "MemoryError", "refused by the test's allocator");
  EXPECT_EQ(g_env_alloc_calls, 1);
}
