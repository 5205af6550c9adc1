// Runs the C++ image check (cubin_image.h) on images and prints one verdict line per image,
// in the format of tests/python/utils/image_corpus.py's verdict:
//   ok <kind> <nul|-> <entry kind>:<arch> ...     or     error <message>
// With no arguments it reads images from stdin, each a little-endian u64 length then the
// bytes; with arguments it reads each file named. Each image sits in a heap block of its
// exact size, so under AddressSanitizer a read one byte past it is caught.
#include <tvm/ffi/extra/cuda/detail/cubin_image.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

namespace {

namespace details = tvm::ffi::details;

std::string Verdict(const char* data, size_t n) {
  const details::ImageInfo info = details::InspectImage(data, n);
  // Standalone, CubinArch must stay in bounds on any bytes; its result is not compared.
  if (details::CubinArch(data, n).size() > 64) std::abort();
  if (!info.error.empty()) {
    std::string line = "error ";
    for (char c : info.error) line += c == '\n' ? std::string("\\n") : std::string(1, c);
    return line;
  }
  std::string line =
      std::string("ok ") + details::ImageKindName(info.kind) + (info.nul_terminated ? " nul" : " -");
  for (const details::ImageEntry& e : info.entries) {
    line += std::string(" ") + details::ImageKindName(e.kind) + ":" + e.arch;
  }
  // The unsized path: for an accepted image (PTX with its NUL) SelfDescribedSize reads
  // nothing past it, stays within it, and InspectImage accepts that many bytes too.
  if (info.kind != details::ImageKind::kPtx || info.nul_terminated) {
    const size_t size = details::SelfDescribedSize(data);
    if (size == 0 || size > n) {
      line += " SelfDescribedSize=" + std::to_string(size);
    } else {
      const details::ImageInfo again = details::InspectImage(data, size);
      if (!again.error.empty() || again.kind != info.kind) {
        line += " SelfDescribedSize=" + std::to_string(size) + " (" + again.error + ")";
      }
    }
  }
  return line;
}

void Report(const std::string& bytes) {
  // An exact-size copy: the string's own buffer has slack ASan would not flag.
  std::unique_ptr<char[]> copy(new char[bytes.size()]);
  if (!bytes.empty()) std::memcpy(copy.get(), bytes.data(), bytes.size());
  std::printf("%s\n", Verdict(copy.get(), bytes.size()).c_str());
  std::fflush(stdout);  // a crash on the next image must not lose this line
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::ifstream file(argv[i], std::ios::binary);
    if (!file) {
      std::fprintf(stderr, "cannot read %s\n", argv[i]);
      return 2;
    }
    Report(std::string(std::istreambuf_iterator<char>(file), {}));
  }
  if (argc > 1) return 0;
  unsigned char length[8];
  while (std::fread(length, 1, 8, stdin) == 8) {
    uint64_t n = 0;
    for (int b = 7; b >= 0; --b) n = n << 8 | length[b];
    std::string bytes(n, '\0');
    if (n != 0 && std::fread(&bytes[0], 1, n, stdin) != n) {
      std::fprintf(stderr, "short read\n");
      return 2;
    }
    Report(bytes);
  }
  return 0;
}
