// libFuzzer target for the one ELF reader (detail/elf64.h): every accessor of Elf64Sections
// on any bytes, as its users call them, and the .dynsym walk that lists a library's exports
// (src/python/core/elf_symbols.cc, compiled in beside this file). Built with
// -fsanitize=fuzzer (clang) or with standalone_main.cc (any compiler); tests/cpp/test_fuzz.py
// runs both under ASan+UBSan.
#include <tvm/ffi/detail/elf64.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "library.h"  // src/python/core: ListExportedFunctions (declarations only, no Python use)

namespace {

namespace details = tvm::ffi::details;

// Reads the first and last byte of what Data hands out, so that a range it wrongly claims
// lies in the file is touched under ASan.
volatile char sink;

void Touch(const char* p, uint64_t n) {
  if (p == nullptr || n == 0) return;
  sink = p[0];
  sink = p[n - 1];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* d = reinterpret_cast<const char*>(data);
  std::vector<std::string> names;
  std::string error;
  bool exports_cxx_runtime = false;
  (void)tvm_ffi_py::ListExportedFunctions(d, size, &names, &error, &exports_cxx_runtime);

  details::Elf64Sections sections;
  if (!sections.Open(d, size)) return 0;
  const bool any_names = sections.OpenNames(0);
  const bool string_names = sections.OpenNames(details::kShtStrtab);
  static const char kDynsym[] = ".dynsym", kInfo[] = ".nv.info.add_one";
  for (uint16_t i = 0; i < sections.count(); ++i) {
    const details::Elf64Section section = sections[i];
    Touch(sections.Data(section), section.size);
    if (any_names || string_names) {
      (void)sections.NameIs(section, kDynsym, sizeof(kDynsym));
      (void)sections.NameIs(section, kInfo, sizeof(kInfo));
    }
  }
  return 0;
}
