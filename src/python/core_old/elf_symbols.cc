// Lists a library's exported TVM-FFI functions from its ELF .dynsym section, found with the
// one ELF reader (tvm/ffi/detail/elf64.h).
// Reading the file (instead of walking the loaded image) is what the ABI specifies:
// the dynamic section of a loaded image has no symbol count without decoding hash tables.
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <tvm/ffi/detail/elf64.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "library.h"

namespace tvm_ffi_py {
namespace {

constexpr const char* kCubinPrefix = "__tvm_ffi__cubin_";
// std::locale::classic(): defined only by libstdc++ itself, so a library that exports it
// carries a static copy of the C++ runtime.
constexpr const char* kCxxRuntimeMark = "_ZNSt6locale7classicEv";

class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
      void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        data_ = static_cast<const uint8_t*>(p);
        size_ = static_cast<size_t>(st.st_size);
      }
    }
    close(fd);
  }
  ~MappedFile() {
    if (data_ != nullptr) munmap(const_cast<uint8_t*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

bool ListExportedFunctions(const std::string& path, std::vector<std::string>* out,
                           std::string* error, bool* exports_cxx_runtime) {
  out->clear();
  *exports_cxx_runtime = false;
  MappedFile file(path);
  if (file.data() == nullptr) {
    *error = "cannot read the file";
    return false;
  }
  return ListExportedFunctions(reinterpret_cast<const char*>(file.data()), file.size(), out, error,
                               exports_cxx_runtime);
}

bool ListExportedFunctions(const char* data, size_t size, std::vector<std::string>* out,
                           std::string* error, bool* exports_cxx_runtime) {
  out->clear();
  *exports_cxx_runtime = false;
  namespace detail = tvm::ffi::detail;
  detail::Elf64Sections sections;
  if (size < detail::kElf64HeaderSize || std::memcmp(data, ELFMAG, SELFMAG) != 0 ||
      data[EI_CLASS] != ELFCLASS64) {
    *error = "not an ELF64 file";
    return false;
  }
  if (!sections.Open(data, size)) {
    *error = "truncated section header table";
    return false;
  }
  bool found = false;
  const size_t prefix_len = std::strlen(TVM_FFI_SYMBOL_PREFIX);
  const size_t cubin_len = std::strlen(kCubinPrefix);
  for (uint16_t i = 0; i < sections.count(); ++i) {
    const detail::Elf64Section symtab = sections[i];
    if (symtab.type != SHT_DYNSYM) continue;
    found = true;
    if (symtab.link >= sections.count() || symtab.entsize != sizeof(Elf64_Sym) ||
        !sections.Contains(symtab)) {
      *error = "malformed .dynsym";
      return false;
    }
    const detail::Elf64Section strtab = sections[symtab.link];
    if (!sections.Contains(strtab)) {
      *error = "malformed .dynstr";
      return false;
    }
    const char* names = sections.Data(strtab);
    const char* syms = sections.Data(symtab);
    const size_t count = symtab.size / sizeof(Elf64_Sym);
    for (size_t k = 0; k < count; ++k) {
      Elf64_Sym sym;
      std::memcpy(&sym, syms + k * sizeof(Elf64_Sym), sizeof(sym));
      const unsigned bind = ELF64_ST_BIND(sym.st_info);
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF ||
          (bind != STB_GLOBAL && bind != STB_WEAK) ||
          ELF64_ST_VISIBILITY(sym.st_other) == STV_HIDDEN ||
          ELF64_ST_VISIBILITY(sym.st_other) == STV_INTERNAL || sym.st_name >= strtab.size) {
        continue;
      }
      const char* name = names + sym.st_name;
      const size_t len = strnlen(name, strtab.size - sym.st_name);
      if (len == std::strlen(kCxxRuntimeMark) && std::memcmp(name, kCxxRuntimeMark, len) == 0) {
        *exports_cxx_runtime = true;
        continue;
      }
      if (len <= prefix_len || std::strncmp(name, TVM_FFI_SYMBOL_PREFIX, prefix_len) != 0 ||
          (len >= cubin_len && std::strncmp(name, kCubinPrefix, cubin_len) == 0)) {
        continue;
      }
      out->emplace_back(name + prefix_len, len - prefix_len);
    }
  }
  if (!found) {
    // e.g. a library whose section headers were stripped: the loader falls back to dlsym.
    *error = "no .dynsym section";
    return false;
  }
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
  return true;
}

}  // namespace tvm_ffi_py
