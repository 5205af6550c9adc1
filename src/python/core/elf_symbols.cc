// Lists a library's exported TVM-FFI functions from its ELF .dynsym section.
// Reading the file (instead of walking the loaded image) is what the ABI specifies:
// the dynamic section of a loaded image has no symbol count without decoding hash tables.
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "library.h"

namespace tvm_ffi_py {
namespace {

constexpr const char* kCubinPrefix = "__tvm_ffi__cubin_";

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
  bool Contains(uint64_t offset, uint64_t length) const {
    return offset <= size_ && length <= size_ - offset;
  }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

bool ListExportedFunctions(const std::string& path, std::vector<std::string>* out,
                           std::string* error) {
  out->clear();
  MappedFile file(path);
  if (file.data() == nullptr) {
    *error = "cannot read the file";
    return false;
  }
  if (!file.Contains(0, sizeof(Elf64_Ehdr)) || std::memcmp(file.data(), ELFMAG, SELFMAG) != 0 ||
      file.data()[EI_CLASS] != ELFCLASS64) {
    *error = "not an ELF64 file";
    return false;
  }
  Elf64_Ehdr ehdr;
  std::memcpy(&ehdr, file.data(), sizeof(ehdr));
  if (ehdr.e_shentsize != sizeof(Elf64_Shdr) ||
      !file.Contains(ehdr.e_shoff, uint64_t{ehdr.e_shnum} * sizeof(Elf64_Shdr))) {
    *error = "truncated section header table";
    return false;
  }
  auto section = [&](size_t i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, file.data() + ehdr.e_shoff + i * sizeof(Elf64_Shdr), sizeof(sh));
    return sh;
  };
  bool found = false;
  const size_t prefix_len = std::strlen(TVM_FFI_SYMBOL_PREFIX);
  const size_t cubin_len = std::strlen(kCubinPrefix);
  for (size_t i = 0; i < ehdr.e_shnum; ++i) {
    Elf64_Shdr symtab = section(i);
    if (symtab.sh_type != SHT_DYNSYM) continue;
    found = true;
    if (symtab.sh_link >= ehdr.e_shnum || symtab.sh_entsize != sizeof(Elf64_Sym) ||
        !file.Contains(symtab.sh_offset, symtab.sh_size)) {
      *error = "malformed .dynsym";
      return false;
    }
    Elf64_Shdr strtab = section(symtab.sh_link);
    if (!file.Contains(strtab.sh_offset, strtab.sh_size)) {
      *error = "malformed .dynstr";
      return false;
    }
    const char* names = reinterpret_cast<const char*>(file.data() + strtab.sh_offset);
    const size_t count = symtab.sh_size / sizeof(Elf64_Sym);
    for (size_t k = 0; k < count; ++k) {
      Elf64_Sym sym;
      std::memcpy(&sym, file.data() + symtab.sh_offset + k * sizeof(Elf64_Sym), sizeof(sym));
      const unsigned bind = ELF64_ST_BIND(sym.st_info);
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF ||
          (bind != STB_GLOBAL && bind != STB_WEAK) ||
          ELF64_ST_VISIBILITY(sym.st_other) == STV_HIDDEN ||
          ELF64_ST_VISIBILITY(sym.st_other) == STV_INTERNAL || sym.st_name >= strtab.sh_size) {
        continue;
      }
      const char* name = names + sym.st_name;
      const size_t len = strnlen(name, strtab.sh_size - sym.st_name);
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
