/*
 * The one ELF reader of the C++ code: an ELF64 little-endian file's header and section
 * headers, read from bytes in memory with every offset and size checked against their length
 * (arithmetic that cannot wrap), whatever the file says. The image reader
 * (extra/cuda/detail/cubin_image.h) reads CUBINs with it, and the Python core
 * (src/python) the .dynsym of a library it loads.
 */
#ifndef TVM_FFI_DETAIL_ELF64_H_
#define TVM_FFI_DETAIL_ELF64_H_

#include <tvm/ffi/base_detail.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

// ELF files here are little-endian (x86-64 and aarch64 hosts alike) and may sit at any
// alignment in memory.
template <typename T>
inline T ReadLE(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

/*! \brief Whether bytes [off, off + len) lie in n bytes; never wraps. */
inline bool InBounds(uint64_t off, uint64_t len, uint64_t n) { return off <= n && len <= n - off; }

constexpr size_t kElf64HeaderSize = 64, kElf64SectionSize = 64, kElf64SegmentSize = 56;
constexpr uint32_t kShtNull = 0, kShtStrtab = 3, kShtNote = 7, kShtNobits = 8, kPtNull = 0;

/*! \brief The ELF64 header fields the readers use (the caller ensures 64 bytes). */
struct Elf64Header {
  uint8_t elf_class, data_encoding, abi_version;
  uint16_t machine, phentsize, phnum, shentsize, shnum, shstrndx;
  uint32_t flags;
  uint64_t phoff, shoff;

  explicit Elf64Header(const char* d)
      : elf_class(static_cast<uint8_t>(d[4])),
        data_encoding(static_cast<uint8_t>(d[5])),
        abi_version(static_cast<uint8_t>(d[8])),
        machine(ReadLE<uint16_t>(d + 18)),
        phentsize(ReadLE<uint16_t>(d + 54)),
        phnum(ReadLE<uint16_t>(d + 56)),
        shentsize(ReadLE<uint16_t>(d + 58)),
        shnum(ReadLE<uint16_t>(d + 60)),
        shstrndx(ReadLE<uint16_t>(d + 62)),
        flags(ReadLE<uint32_t>(d + 48)),
        phoff(ReadLE<uint64_t>(d + 32)),
        shoff(ReadLE<uint64_t>(d + 40)) {}
};

/*! \brief One section header. */
struct Elf64Section {
  uint32_t name, type, link;
  uint64_t offset, size, entsize;

  explicit Elf64Section(const char* hdr)
      : name(ReadLE<uint32_t>(hdr)),
        type(ReadLE<uint32_t>(hdr + 4)),
        link(ReadLE<uint32_t>(hdr + 40)),
        offset(ReadLE<uint64_t>(hdr + 24)),
        size(ReadLE<uint64_t>(hdr + 32)),
        entsize(ReadLE<uint64_t>(hdr + 56)) {}

  /*! \brief Whether the section occupies file bytes (SHT_NULL and SHT_NOBITS do not). */
  bool HasBytes() const { return type != kShtNull && type != kShtNobits; }
};

/*! \brief One program header: its type and the file bytes it maps. */
struct Elf64Segment {
  uint32_t type;
  uint64_t offset, filesz;

  explicit Elf64Segment(const char* hdr)
      : type(ReadLE<uint32_t>(hdr)),
        offset(ReadLE<uint64_t>(hdr + 8)),
        filesz(ReadLE<uint64_t>(hdr + 32)) {}

  /*! \brief Whether the segment maps file bytes (PT_NULL does not). */
  bool HasBytes() const { return type != kPtNull; }
};

/*!
 * \brief The section headers of an ELF64 file of n bytes at d: Open checks that the header
 *  and the whole section table lie in the file; each accessor then checks what it reads.
 */
class Elf64Sections {
 public:
  /*! \brief False unless d holds "\x7fELF", class ELF64, 64-byte section headers and a
   *  section table inside the file (an empty table is fine). */
  bool Open(const char* d, size_t n) {
    if (d == nullptr || n < kElf64HeaderSize || std::memcmp(d, "\177ELF", 4) != 0 || d[4] != 2) {
      return false;
    }
    const Elf64Header h(d);
    if (h.shnum != 0 && (h.shentsize != kElf64SectionSize ||
                         !InBounds(h.shoff, uint64_t{h.shnum} * kElf64SectionSize, n))) {
      return false;
    }
    d_ = d;
    n_ = n;
    shoff_ = h.shoff;
    shnum_ = h.shnum;
    shstrndx_ = h.shstrndx;
    return true;
  }

  uint16_t count() const { return shnum_; }
  /*! \brief Section i (i < count()). */
  Elf64Section operator[](uint64_t i) const {
    return Elf64Section(d_ + shoff_ + kElf64SectionSize * i);
  }
  /*! \brief Whether the bytes of `s` lie in the file. */
  bool Contains(const Elf64Section& s) const { return InBounds(s.offset, s.size, n_); }
  /*! \brief The bytes of `s`, or nullptr unless Contains(s). */
  const char* Data(const Elf64Section& s) const { return Contains(s) ? d_ + s.offset : nullptr; }

  /*! \brief The section-name table, when e_shstrndx names a section whose bytes lie in the
   *  file and whose type is `type` (SHT_STRTAB for a sound file; 0: any type). */
  bool OpenNames(uint32_t type = kShtStrtab) {
    if (shstrndx_ == 0 || shstrndx_ >= shnum_) return false;
    const Elf64Section names = (*this)[shstrndx_];
    if ((type != 0 && names.type != type) || !Contains(names)) return false;
    names_ = d_ + names.offset;
    names_size_ = names.size;
    return true;
  }

  /*! \brief Whether `s` is named `name`, compared over `size` bytes with its NUL (so that
   *  ".nv.info.add" does not match ".nv.info.add_one"); false before OpenNames. */
  bool NameIs(const Elf64Section& s, const char* name, size_t size) const {
    return names_ != nullptr && InBounds(s.name, size, names_size_) &&
           std::memcmp(names_ + s.name, name, size) == 0;
  }

 private:
  const char* d_ = nullptr;
  size_t n_ = 0;
  uint64_t shoff_ = 0;
  uint16_t shnum_ = 0, shstrndx_ = 0;
  const char* names_ = nullptr;
  uint64_t names_size_ = 0;
};

}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END
#endif  // TVM_FFI_DETAIL_ELF64_H_
