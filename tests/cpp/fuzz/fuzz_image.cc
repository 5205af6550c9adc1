// libFuzzer target for the one CUDA image reader (extra/cuda/detail/cubin_image.h) and the
// parameter-layout reader built on it (detail/param_info.h): any bytes, read by every entry
// that takes an image from a user, must stay inside them; and an accepted image keeps the
// promises cubin_image.h makes of SelfDescribedSize. Built with -fsanitize=fuzzer (clang) or
// with standalone_main.cc (any compiler); tests/cpp/test_fuzz.py runs both under ASan+UBSan.
#include <tvm/ffi/extra/cuda/detail/param_info.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

namespace details = tvm::ffi::details;

// A broken promise is a finding like an overread: abort, so that the sanitizer runtime reports
// it and the fuzzer saves the input.
[[noreturn]] void Broken(const char* what, size_t n, const std::string& detail_text) {
  std::fprintf(stderr, "fuzz_image: %s (image of %zu bytes): %s\n", what, n, detail_text.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* d = reinterpret_cast<const char*>(data);
  const details::ImageInfo info = details::InspectImage(d, size);
  (void)details::DescribeArchs(info);
  (void)details::CubinArch(d, size);  // also called alone, on images InspectImage refuses
  std::vector<details::ParamSlot> slots;
  (void)details::ImageParamLayout(d, size, "add_one", &slots);
  // Inside an image a section's overread stays in the buffer, unseen by ASan: the record
  // parser also reads the input alone, where its end is the buffer's end.
  (void)details::ParseKernelInfo(d, size, &slots);
  if (!info.error.empty()) return 0;
  if (info.kind == details::ImageKind::kUnknown) Broken("accepted with no kind", size, "");
  // The unsized constructor's path: SelfDescribedSize trusts the header, so it is promised
  // only for accepted images (PTX: those that hold their NUL).
  if (info.kind == details::ImageKind::kPtx && !info.nul_terminated) return 0;
  const size_t described = details::SelfDescribedSize(d);
  if (described == 0 || described > size) {
    Broken("SelfDescribedSize out of the image", size, std::to_string(described));
  }
  const details::ImageInfo again = details::InspectImage(d, described);
  if (!again.error.empty() || again.kind != info.kind) {
    Broken("the first SelfDescribedSize bytes are refused", size,
           std::to_string(described) + ": " + again.error);
  }
  return 0;
}
