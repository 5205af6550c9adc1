// TVMFFIEnvGetStream / TVMFFIEnvSetStream: the per-call stream environment. The export wrapper
// brackets every call with detail::EnvCallScope; here the scopes are entered by hand.
#include <tvm/ffi/dlpack.h>
#include <tvm/ffi/extra/c_env_api.h>

#include <cstdint>
#include <thread>

#include "testing.h"

using tvm::ffi::detail::EnvCallScope;

static void* Handle(uintptr_t v) { return reinterpret_cast<void*>(v); }

// A caller whose "current stream" for (type, id) is handle + 100 * type + id.
static void* CallerStream(void* handle, int32_t device_type, int32_t device_id) {
  return Handle(reinterpret_cast<uintptr_t>(handle) + 100 * device_type + device_id);
}

TEST(outside_any_call_default_is_null) {
  EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, 0) == nullptr);
  EXPECT_TRUE(TVMFFIEnvGetStream(kDLCPU, 0) == nullptr);
}

TEST(call_context_supplies_the_stream) {
  TVMFFICallContext ctx{TVM_FFI_ABI_VERSION, Handle(0x10000), CallerStream, nullptr};
  {
    EnvCallScope scope(&ctx);
    EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, 3) == Handle(0x10000 + 203));
    EXPECT_TRUE(TVMFFIEnvGetStream(kDLROCM, 1) == Handle(0x10000 + 1001));
  }
  EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, 3) == nullptr);
  TVMFFICallContext no_callback{TVM_FFI_ABI_VERSION, Handle(0x10000), nullptr, nullptr};
  EnvCallScope scope(&no_callback);
  EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, 3) == nullptr);
}

TEST(set_overrides_and_reports_the_original) {
  TVMFFICallContext ctx{TVM_FFI_ABI_VERSION, Handle(0x10000), CallerStream, nullptr};
  EnvCallScope scope(&ctx);
  TVMFFIStreamHandle original = Handle(1);
  EXPECT_EQ(TVMFFIEnvSetStream(kDLCUDA, 0, Handle(0xA), &original), 0);
  EXPECT_TRUE(original == Handle(0x10000 + 200));
  EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, 0) == Handle(0xA));
  EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, 1) == Handle(0x10000 + 201));  // other device untouched
  EXPECT_EQ(TVMFFIEnvSetStream(kDLCUDA, 0, Handle(0xB), &original), 0);
  EXPECT_TRUE(original == Handle(0xA));
  EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, 0) == Handle(0xB));
  EXPECT_EQ(TVMFFIEnvSetStream(kDLCUDA, 0, nullptr, nullptr), 0);  // back to the default stream
  EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, 0) == nullptr);
}

TEST(scopes_restore_everything) {
  TVMFFICallContext outer_ctx{TVM_FFI_ABI_VERSION, Handle(0x10000), CallerStream, nullptr};
  TVMFFICallContext inner_ctx{TVM_FFI_ABI_VERSION, Handle(0x20000), CallerStream, nullptr};
  EnvCallScope outer(&outer_ctx);
  EXPECT_EQ(TVMFFIEnvSetStream(kDLCUDA, 0, Handle(0xA), nullptr), 0);
  {
    // A nested call gets its caller's context, not the outer call's overrides.
    EnvCallScope inner(&inner_ctx);
    EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, 0) == Handle(0x20000 + 200));
    TVMFFIStreamHandle original = nullptr;
    EXPECT_EQ(TVMFFIEnvSetStream(kDLCUDA, 0, Handle(0xC), &original), 0);
    EXPECT_TRUE(original == Handle(0x20000 + 200));
    EXPECT_EQ(TVMFFIEnvSetStream(kDLCUDA, 5, Handle(0xD), nullptr), 0);
    EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, 0) == Handle(0xC));
    {
      EnvCallScope no_ctx(nullptr);
      EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, 0) == nullptr);
      EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, 5) == nullptr);
    }
    EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, 5) == Handle(0xD));
  }
  EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, 0) == Handle(0xA));
  EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, 5) == Handle(0x10000 + 205));
}

TEST(restored_when_the_call_throws) {
  TVMFFICallContext ctx{TVM_FFI_ABI_VERSION, Handle(0x10000), CallerStream, nullptr};
  try {
    EnvCallScope scope(&ctx);
    TVMFFIEnvSetStream(kDLCUDA, 0, Handle(0xE), nullptr);
    throw 1;
  } catch (int) {
  }
  EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, 0) == nullptr);
}

TEST(override_table_is_bounded) {
  EnvCallScope scope(nullptr);
  int32_t n = tvm::ffi::detail::kMaxStreamOverrides;
  for (int32_t i = 0; i < n; ++i) {
    EXPECT_EQ(TVMFFIEnvSetStream(kDLCUDA, i, Handle(0x100 + i), nullptr), 0);
  }
  EXPECT_EQ(TVMFFIEnvSetStream(kDLCUDA, n, Handle(1), nullptr), -1);
  EXPECT_EQ(TVMFFIEnvSetStream(kDLCUDA, 0, Handle(2), nullptr), 0);  // replacing still works
  EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, 0) == Handle(2));
  EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, n - 1) == Handle(0x100 + n - 1));
  EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, n) == nullptr);
}

TEST(threads_do_not_share) {
  EnvCallScope scope(nullptr);
  TVMFFIEnvSetStream(kDLCUDA, 0, Handle(0xF), nullptr);
  void* seen = Handle(1);
  std::thread([&seen]() { seen = TVMFFIEnvGetStream(kDLCUDA, 0); }).join();
  EXPECT_TRUE(seen == nullptr);
  EXPECT_TRUE(TVMFFIEnvGetStream(kDLCUDA, 0) == Handle(0xF));
}

// The guide's spelling: a DLDeviceType argument and a cast of the result to a driver-API handle.
typedef struct CUstream_st* CUstream;
TEST(guide_usage_compiles) {
  DLDevice device{kDLCUDA, 0};
  CUstream stream = static_cast<CUstream>(TVMFFIEnvGetStream(device.device_type, device.device_id));
  EXPECT_TRUE(stream == nullptr);
}
