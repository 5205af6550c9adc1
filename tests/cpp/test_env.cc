// TVMFFIEnvGetStream / TVMFFIEnvSetStream as a library built with the headers sees them: calls
// into the runtime (libtvm_ffi.so), per thread and per device. The call frames that give a
// caller's stream lazily are the runtime's (tests/abi/test_runtime_*.py).
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/c_env_api.h>

#include <cstdint>
#include <thread>

#include "testing.h"

static void* Handle(uintptr_t v) { return reinterpret_cast<void*>(v); }

TEST(outside_any_call_default_is_null) {
  EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, 0) == nullptr);
  EXPECT_TRUE(TVMFFIEnvGetStream(kDLCPU, 0) == nullptr);
}

TEST(set_overrides_and_reports_the_original) {
  TVMFFIStreamHandle original = Handle(1);
  EXPECT_EQ(TVMFFIEnvSetStream(kDLCUDA, 0, Handle(0xA), &original), 0);
  EXPECT_TRUE(original == nullptr);
  EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, 0) == Handle(0xA));
  EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, 1) == nullptr);  // other device untouched
  EXPECT_EQ(TVMFFIEnvSetStream(kDLCUDA, 0, Handle(0xB), &original), 0);
  EXPECT_TRUE(original == Handle(0xA));
  EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, 0) == Handle(0xB));
  EXPECT_EQ(TVMFFIEnvSetStream(kDLCUDA, 0, nullptr, nullptr), 0);  // back to the default stream
  EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, 0) == nullptr);
}

TEST(threads_do_not_share) {
  TVMFFIEnvSetStream(kDLCUDA, 0, Handle(0xF), nullptr);
  void* seen = Handle(1);
  std::thread([&seen]() { seen = TVMFFIEnvGetStream(kDLCUDA, 0); }).join();
  EXPECT_TRUE(seen == nullptr);
  EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, 0) == Handle(0xF));
  TVMFFIEnvSetStream(kDLCUDA, 0, nullptr, nullptr);
}

// Outside a call from a framework there is no allocator: the error says so, and nothing leaks.
TEST(env_alloc_without_an_allocator_raises) {
  EXPECT_ERROR((void)tvm::ffi::Tensor::FromEnvAlloc(TVMFFIEnvTensorAlloc, {2, 3},
                                                    DLDataType{kDLFloat, 32, 1},
                                                    DLDevice{kDLCPU, 0}),
               "RuntimeError",
               "TVMFFIEnvTensorAlloc: no tensor allocator is set on this thread or globally "
               "(TVMFFIEnvSetDLPackManagedTensorAllocator)");
}

// The guide's spelling: a DLDeviceType argument and a cast of the result to a driver-API handle.
typedef struct CUstream_st* CUstream;
TEST(guide_usage_compiles) {
  DLDevice device{kDLCUDA, 0};
  CUstream stream = static_cast<CUstream>(TVMFFIEnvGetStream(device.device_type, device.device_id));
  EXPECT_TRUE(stream == nullptr);
}
