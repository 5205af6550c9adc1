/*
 * Recognising and checking CUBIN, PTX and fatbin images before the driver sees them.
 *
 * The driver trusts the sizes written inside an image, so a truncated file can make it read
 * past the buffer; checking here turns that into a ValueError. The same parsing yields the
 * architectures an image holds, which error messages print when the device cannot run it.
 * python/tvm_ffi/utils/_image.py implements the same rules; keep the two in step.
 */
#ifndef TVM_FFI_EXTRA_CUDA_DETAIL_CUBIN_IMAGE_H_
#define TVM_FFI_EXTRA_CUDA_DETAIL_CUBIN_IMAGE_H_

#include <tvm/ffi/base.h>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace detail {

enum class ImageKind { kUnknown, kCubin, kPtx, kFatbin };

inline const char* ImageKindName(ImageKind kind) {
  switch (kind) {
    case ImageKind::kCubin:
      return "cubin";
    case ImageKind::kPtx:
      return "ptx";
    case ImageKind::kFatbin:
      return "fatbin";
    default:
      return "unknown";
  }
}

/*! \brief One piece of code in an image: "sm_90a" for SASS, "compute_90" for PTX. */
struct ImageEntry {
  ImageKind kind;
  std::string arch;
};

struct ImageInfo {
  ImageKind kind = ImageKind::kUnknown;
  std::vector<ImageEntry> entries;
  bool nul_terminated = false;  // PTX only: the driver reads it as a C string
  std::string error;            // why the image was rejected; empty when it is usable
};

// Images are little-endian (x86-64 and aarch64 hosts alike) and may sit at any alignment.
template <typename T>
inline T ReadImage(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

constexpr uint32_t kFatbinMagic = 0xBA55ED50u;
constexpr uint16_t kElfMachineCuda = 190;  // EM_CUDA
// Fatbin entry flags that mark architecture-specific ("a") and family ("f") code.
constexpr uint64_t kFatbinFlagArchSpecific = 0x100000;
constexpr uint64_t kFatbinFlagFamily = 0x200000;

inline bool IsElf(const char* d, size_t n) {
  return n >= 4 && std::memcmp(d, "\x7f" "ELF", 4) == 0;
}
inline bool IsFatbin(const char* d, size_t n) {
  return n >= 4 && ReadImage<uint32_t>(d) == kFatbinMagic;
}
inline bool IsPtxStart(const char* d, size_t n) {
  size_t i = 0;
  while (i < n && (d[i] == ' ' || d[i] == '\t' || d[i] == '\r' || d[i] == '\n')) ++i;
  if (i + 2 > n) return false;
  return (d[i] == '/' && (d[i + 1] == '/' || d[i + 1] == '*')) ||
         (n - i >= 8 && std::memcmp(d + i, ".version", 8) == 0);
}

/*!
 * \brief The SM of a cubin. ELF ABI version 8 (CUDA 13) keeps it in e_flags bits 8..15 with
 *  "a" at bit 3; older cubins keep it in the low byte with "a" at bit 11. ptxas also records
 *  its command line ("-arch sm_90a") in .note.nv.tkinfo, which is the only place that tells
 *  "a" and "f" builds apart in CUDA 13 cubins, so it wins when present.
 */
inline std::string CubinArch(const char* d, size_t n) {
  const uint8_t abi_version = static_cast<uint8_t>(d[8]);
  const uint32_t flags = ReadImage<uint32_t>(d + 48);
  const unsigned sm = abi_version >= 8 ? (flags >> 8) & 0xff : flags & 0xff;
  const bool accel = abi_version >= 8 ? (flags & 0x8) != 0 : (flags & 0x800) != 0;
  std::string arch = "sm_" + std::to_string(sm) + (accel ? "a" : "");
  const uint64_t shoff = ReadImage<uint64_t>(d + 40);
  const uint16_t shnum = ReadImage<uint16_t>(d + 60);
  const uint16_t shstrndx = ReadImage<uint16_t>(d + 62);
  if (shstrndx >= shnum) return arch;
  const char* strtab_hdr = d + shoff + 64 * static_cast<uint64_t>(shstrndx);
  const uint64_t str_off = ReadImage<uint64_t>(strtab_hdr + 24);
  const uint64_t str_size = ReadImage<uint64_t>(strtab_hdr + 32);
  if (str_off > n || str_size > n - str_off) return arch;  // InspectCubin reports it
  for (uint16_t i = 0; i < shnum; ++i) {
    const char* hdr = d + shoff + 64 * static_cast<uint64_t>(i);
    const uint32_t name = ReadImage<uint32_t>(hdr);
    static const char kNote[] = ".note.nv.tkinfo";
    if (name >= str_size || str_size - name < sizeof(kNote)) continue;
    if (std::memcmp(d + str_off + name, kNote, sizeof(kNote)) != 0) continue;
    const std::string note(d + ReadImage<uint64_t>(hdr + 24), ReadImage<uint64_t>(hdr + 32));
    const size_t at = note.find("-arch sm_");
    if (at == std::string::npos) break;
    size_t end = at + 9;
    while (end < note.size() && (std::isalnum(static_cast<unsigned char>(note[end])))) ++end;
    const std::string token = note.substr(at + 6, end - at - 6);  // e.g. "sm_90a"
    const std::string number = std::to_string(sm);
    const size_t digits_end = 3 + number.size();
    // Only trust the note when it names the same SM number as the header.
    if (token.compare(3, number.size(), number) == 0 &&
        (token.size() == digits_end ||
         !std::isdigit(static_cast<unsigned char>(token[digits_end])))) {
      arch = token;
    }
    break;
  }
  return arch;
}

inline void InspectCubin(const char* d, size_t n, ImageInfo* info) {
  info->kind = ImageKind::kCubin;
  auto fail = [&](const std::string& why) { info->error = why; };
  if (n < 64) return fail("truncated CUBIN image: " + std::to_string(n) +
                          " bytes, smaller than an ELF header (64 bytes)");
  if (d[4] != 2) return fail("not a 64-bit ELF image (CUBINs are ELF64)");
  const uint16_t machine = ReadImage<uint16_t>(d + 18);
  if (machine != kElfMachineCuda) {
    return fail("ELF image is not a CUBIN (e_machine " + std::to_string(machine) +
                ", expected 190 for NVIDIA CUDA)");
  }
  const uint64_t shoff = ReadImage<uint64_t>(d + 40);
  const uint16_t shentsize = ReadImage<uint16_t>(d + 58);
  const uint16_t shnum = ReadImage<uint16_t>(d + 60);
  const uint64_t phoff = ReadImage<uint64_t>(d + 32);
  const uint16_t phentsize = ReadImage<uint16_t>(d + 54);
  const uint16_t phnum = ReadImage<uint16_t>(d + 56);
  auto past_end = [&](uint64_t off, uint64_t len) { return off > n || len > n - off; };
  auto truncated = [&](const std::string& what, uint64_t off, uint64_t len) {
    fail("truncated or corrupt CUBIN image: " + what + " ends at byte " +
         std::to_string(off + len) + " but the image has " + std::to_string(n) + " bytes");
  };
  if (shnum != 0 && shentsize != 64) return fail("corrupt CUBIN image: bad section entry size");
  if (past_end(shoff, uint64_t{shnum} * shentsize)) {
    return truncated("the section table", shoff, uint64_t{shnum} * shentsize);
  }
  if (past_end(phoff, uint64_t{phnum} * phentsize)) {
    return truncated("the program header table", phoff, uint64_t{phnum} * phentsize);
  }
  for (uint16_t i = 0; i < shnum; ++i) {
    const char* hdr = d + shoff + 64 * uint64_t{i};
    const uint32_t type = ReadImage<uint32_t>(hdr + 4);
    const uint64_t off = ReadImage<uint64_t>(hdr + 24);
    const uint64_t len = ReadImage<uint64_t>(hdr + 32);
    if (type != 8 /* SHT_NOBITS */ && type != 0 && past_end(off, len)) {
      return truncated("section " + std::to_string(i), off, len);
    }
  }
  info->entries.push_back({ImageKind::kCubin, CubinArch(d, n)});
}

inline void InspectFatbin(const char* d, size_t n, ImageInfo* info) {
  info->kind = ImageKind::kFatbin;
  size_t pos = 0;
  // A fatbin file may hold several fatbins back to back (one per translation unit).
  while (pos + 16 <= n && ReadImage<uint32_t>(d + pos) == kFatbinMagic) {
    const uint16_t header = ReadImage<uint16_t>(d + pos + 6);
    const uint64_t body = ReadImage<uint64_t>(d + pos + 8);
    if (header < 16 || header > n - pos || body > n - pos - header) {
      info->error = "truncated fatbin image: its header declares " +
                    std::to_string(uint64_t{header} + body) + " bytes but the image has " +
                    std::to_string(n - pos) + " bytes";
      return;
    }
    size_t at = pos + header;
    const size_t end = at + body;
    while (at < end) {
      if (end - at < 16) break;  // trailing padding
      const uint16_t kind = ReadImage<uint16_t>(d + at);
      const uint32_t entry_header = ReadImage<uint32_t>(d + at + 4);
      const uint64_t payload = ReadImage<uint64_t>(d + at + 8);
      if (entry_header < 16 || entry_header > end - at || payload > end - at - entry_header) {
        info->error = "corrupt fatbin image: the entry at byte " + std::to_string(at) +
                      " runs past the end of the fatbin";
        return;
      }
      if (entry_header >= 48 && (kind == 1 || kind == 2)) {
        const uint32_t sm = ReadImage<uint32_t>(d + at + 28);
        const uint64_t flags = ReadImage<uint64_t>(d + at + 40);
        std::string arch = (kind == 1 ? "compute_" : "sm_") + std::to_string(sm);
        if (flags & kFatbinFlagArchSpecific) arch += "a";
        if (flags & kFatbinFlagFamily) arch += "f";
        info->entries.push_back({kind == 1 ? ImageKind::kPtx : ImageKind::kCubin, arch});
      }
      at += entry_header + payload;
    }
    pos = end;
  }
  if (pos == 0) info->error = "truncated fatbin image: " + std::to_string(n) + " bytes";
}

inline void InspectPtx(const char* d, size_t n, ImageInfo* info) {
  info->kind = ImageKind::kPtx;
  const void* nul = std::memchr(d, 0, n);
  info->nul_terminated = nul != nullptr;
  const size_t len = nul ? static_cast<const char*>(nul) - d : n;
  const std::string head(d, len < 65536 ? len : 65536);
  const size_t at = head.find(".target");
  if (at == std::string::npos) return;
  size_t i = head.find("sm_", at);
  if (i == std::string::npos || i > at + 16) return;
  size_t end = i + 3;
  while (end < head.size() && std::isalnum(static_cast<unsigned char>(head[end]))) ++end;
  info->entries.push_back({ImageKind::kPtx, "compute_" + head.substr(i + 3, end - i - 3)});
}

/*! \brief Classifies and checks `n` bytes at `d`; ImageInfo::error says what is wrong. */
inline ImageInfo InspectImage(const char* d, size_t n) {
  ImageInfo info;
  if (n == 0 || d == nullptr) {
    info.error = "empty image (0 bytes)";
  } else if (IsElf(d, n)) {
    InspectCubin(d, n, &info);
  } else if (IsFatbin(d, n)) {
    InspectFatbin(d, n, &info);
  } else if (IsPtxStart(d, n)) {
    InspectPtx(d, n, &info);
  } else {
    std::string bytes;
    for (size_t i = 0; i < n && i < 4; ++i) {
      char hex[4];
      std::snprintf(hex, sizeof(hex), i ? " %02x" : "%02x", static_cast<unsigned char>(d[i]));
      bytes += hex;
    }
    info.error = "not a CUBIN, PTX or fatbin image (first bytes: " + bytes + ")";
  }
  return info;
}

/*!
 * \brief The size of an image known only by its start (the unsized constructor): ELF and
 *  fatbin headers record it, PTX ends at its NUL. 0 when the start is not recognised.
 */
inline size_t SelfDescribedSize(const char* d) {
  if (d == nullptr) return 0;
  if (IsElf(d, 4)) {
    uint64_t size = 64;
    auto extend = [&](uint64_t end) { size = end > size ? end : size; };
    const uint64_t shoff = ReadImage<uint64_t>(d + 40);
    const uint16_t shnum = ReadImage<uint16_t>(d + 60);
    extend(ReadImage<uint64_t>(d + 32) +
           uint64_t{ReadImage<uint16_t>(d + 54)} * ReadImage<uint16_t>(d + 56));
    extend(shoff + 64 * uint64_t{shnum});
    for (uint16_t i = 0; i < shnum; ++i) {
      const char* hdr = d + shoff + 64 * uint64_t{i};
      if (ReadImage<uint32_t>(hdr + 4) != 8) {
        extend(ReadImage<uint64_t>(hdr + 24) + ReadImage<uint64_t>(hdr + 32));
      }
    }
    return static_cast<size_t>(size);
  }
  if (IsFatbin(d, 4)) return ReadImage<uint16_t>(d + 6) + ReadImage<uint64_t>(d + 8);
  if (IsPtxStart(d, strnlen(d, 4096))) return std::strlen(d);
  return 0;
}

/*! \brief "sm_80 (cubin), compute_90 (ptx)" for error messages. */
inline std::string DescribeArchs(const ImageInfo& info) {
  std::string out;
  for (const ImageEntry& e : info.entries) {
    if (!out.empty()) out += ", ";
    out += e.arch + " (" + ImageKindName(e.kind) + ")";
  }
  return out.empty() ? std::string("no code the launcher could identify") : out;
}

}  // namespace detail
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END
#endif  // TVM_FFI_EXTRA_CUDA_DETAIL_CUBIN_IMAGE_H_
