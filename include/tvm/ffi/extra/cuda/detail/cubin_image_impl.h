/*
 * The definitions of detail/cubin_image.h's checks; the rules they apply are described there.
 * Included after that header's declarations, by it or by launcher_definitions_driver.h (see
 * detail/launcher_linkage.h), so it includes nothing of its family.
 */
#ifndef TVM_FFI_EXTRA_CUDA_DETAIL_CUBIN_IMAGE_IMPL_H_
#define TVM_FFI_EXTRA_CUDA_DETAIL_CUBIN_IMAGE_IMPL_H_

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

/*! \brief a + b in decimal, exact even where it exceeds 64 bits (for error messages). */
TVM_FFI_COLD inline std::string DecimalSum(uint64_t a, uint64_t b) {
  const uint64_t low = a + b;
  if (low >= a) return std::to_string(low);
  // Wrapped: the sum is 2^64 + low; add the two decimal strings digit by digit.
  const std::string x = "18446744073709551616", y = std::to_string(low);
  std::string out;
  int carry = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const int digit = (x[x.size() - 1 - i] - '0') + (i < y.size() ? y[y.size() - 1 - i] - '0' : 0);
    out.insert(out.begin(), static_cast<char>('0' + (digit + carry) % 10));
    carry = (digit + carry) / 10;
  }
  return carry ? "1" + out : out;
}

TVM_FFI_COLD TVM_FFI_DETAIL_LAUNCHER_INLINE std::string CubinArch(const char* d, size_t n) {
  if (d == nullptr || n < 64) return "";
  const Elf64Header h(d);
  const unsigned sm = h.abi_version >= 8 ? (h.flags >> 8) & 0xff : h.flags & 0xff;
  const bool accel = h.abi_version >= 8 ? (h.flags & 0x8) != 0 : (h.flags & 0x800) != 0;
  const std::string number = std::to_string(sm);
  std::string arch = "sm_" + number + (accel ? "a" : "");
  Elf64Sections sections;
  if (!sections.Open(d, n) || !sections.OpenNames(kShtStrtab)) return arch;
  static const char kNote[] = ".note.nv.tkinfo";  // compared with its NUL
  for (uint16_t i = 0; i < sections.count(); ++i) {
    const Elf64Section section = sections[i];
    if (!sections.NameIs(section, kNote, sizeof(kNote)) || section.type != kShtNote) continue;
    const char* note = sections.Data(section);
    if (note == nullptr) break;
    const uint64_t size = section.size;
    static const char kArch[] = "-arch sm_";
    const char* end = note + size;
    const size_t found = std::string_view(note, size).find(kArch);
    if (found == std::string_view::npos) break;
    const char* at = note + found;
    const char* digits = at + sizeof(kArch) - 1;
    const char* p = digits;
    while (p < end && IsImageDigit(*p)) ++p;
    const char* suffix = p;
    while (p < end && IsImageLower(*p)) ++p;
    const std::string letters(suffix, p);
    if (std::string(digits, suffix) == number &&
        (letters.empty() || letters == "a" || letters == "f")) {
      arch = "sm_" + number + letters;
    }
    break;
  }
  return arch;
}

TVM_FFI_COLD TVM_FFI_DETAIL_LAUNCHER_INLINE void InspectCubin(const char* d, size_t n,
                                                              ImageInfo* info) {
  info->kind = ImageKind::kCubin;
  auto fail = [&](const std::string& why) { info->error = why; };
  auto truncated = [&](const std::string& what, uint64_t off, uint64_t len) {
    fail("truncated or corrupt CUBIN image: " + what + " ends at byte " + DecimalSum(off, len) +
         " but the image has " + std::to_string(n) + " bytes");
  };
  if (n < 64) {
    return fail("truncated CUBIN image: " + std::to_string(n) +
                " bytes, smaller than an ELF header (64 bytes)");
  }
  const Elf64Header h(d);
  if (h.elf_class != 2) return fail("not a 64-bit ELF image (CUBINs are ELF64)");
  if (h.data_encoding != 1) {
    return fail("not a little-endian ELF image (CUBINs are little-endian)");
  }
  if (h.machine != kElfMachineCuda) {
    return fail("ELF image is not a CUBIN (e_machine " + std::to_string(h.machine) +
                ", expected 190 for NVIDIA CUDA)");
  }
  if (h.shnum == 0 && h.shoff != 0) {
    return fail(
        "corrupt CUBIN image: e_shnum is 0 but e_shoff is not "
        "(extended section numbering is not supported)");
  }
  if (h.shnum != 0 && h.shentsize != kElf64SectionSize) {
    return fail("corrupt CUBIN image: section header size " + std::to_string(h.shentsize) +
                ", expected 64");
  }
  if (h.shnum != 0 && !InBounds(h.shoff, uint64_t{h.shnum} * kElf64SectionSize, n)) {
    return truncated("the section table", h.shoff, uint64_t{h.shnum} * kElf64SectionSize);
  }
  if (h.phnum != 0 && h.phentsize != kElf64SegmentSize) {
    return fail("corrupt CUBIN image: program header size " + std::to_string(h.phentsize) +
                ", expected 56");
  }
  if (h.phnum != 0 && !InBounds(h.phoff, uint64_t{h.phnum} * kElf64SegmentSize, n)) {
    return truncated("the program header table", h.phoff, uint64_t{h.phnum} * kElf64SegmentSize);
  }
  if (h.shstrndx != 0 && h.shstrndx >= h.shnum) {
    return fail("corrupt CUBIN image: section name table index " + std::to_string(h.shstrndx) +
                " is out of range (" + std::to_string(h.shnum) + " sections)");
  }
  Elf64Sections sections;
  sections.Open(d, n);  // cannot fail: the checks above are the ones it makes
  for (uint16_t i = 0; i < sections.count(); ++i) {
    const Elf64Section section = sections[i];
    // SHT_NULL and SHT_NOBITS occupy no bytes of the file: their offsets mean nothing here.
    if (section.HasBytes() && !sections.Contains(section)) {
      return truncated("section " + std::to_string(i), section.offset, section.size);
    }
  }
  for (uint16_t i = 0; i < h.phnum; ++i) {
    const Elf64Segment segment(d + h.phoff + kElf64SegmentSize * i);
    if (segment.HasBytes() && !InBounds(segment.offset, segment.filesz, n)) {
      return truncated("segment " + std::to_string(i), segment.offset, segment.filesz);
    }
  }
  if (h.shstrndx != 0) {
    const uint32_t type = sections[h.shstrndx].type;
    if (type != kShtStrtab) {
      return fail("corrupt CUBIN image: the section name table (section " +
                  std::to_string(h.shstrndx) + ") is not a string table (type " +
                  std::to_string(type) + ")");
    }
  }
  info->entries.push_back({ImageKind::kCubin, CubinArch(d, n)});
}

TVM_FFI_COLD TVM_FFI_DETAIL_LAUNCHER_INLINE void InspectFatbin(const char* d, size_t n,
                                                               ImageInfo* info) {
  info->kind = ImageKind::kFatbin;
  auto fail = [&](const std::string& why) { info->error = why; };
  if (n < 16) {
    return fail("truncated fatbin image: " + std::to_string(n) +
                " bytes, smaller than a fatbin header (16 bytes)");
  }
  size_t pos = 0;
  // A fatbin file may hold several fatbins back to back (one per translation unit).
  while (n - pos >= 16 && ReadLE<uint32_t>(d + pos) == kFatbinMagic) {
    const uint16_t header = ReadLE<uint16_t>(d + pos + 6);
    const uint64_t body = ReadLE<uint64_t>(d + pos + 8);
    if (header < 16) {
      return fail("corrupt fatbin image: the fatbin at byte " + std::to_string(pos) +
                  " declares a " + std::to_string(header) + "-byte header (at least 16)");
    }
    if (!InBounds(header, body, n - pos)) {
      return fail("truncated fatbin image: its header declares " + DecimalSum(header, body) +
                  " bytes but the image has " + std::to_string(n - pos) + " bytes");
    }
    size_t at = pos + header;
    const size_t end = at + static_cast<size_t>(body);
    while (end - at >= 16) {  // a shorter tail is padding
      const uint16_t kind = ReadLE<uint16_t>(d + at);
      const uint32_t entry_header = ReadLE<uint32_t>(d + at + 4);
      const uint64_t payload = ReadLE<uint64_t>(d + at + 8);
      if (entry_header < 16) {
        return fail("corrupt fatbin image: the entry at byte " + std::to_string(at) +
                    " declares a " + std::to_string(entry_header) + "-byte header (at least 16)");
      }
      if (!InBounds(entry_header, payload, end - at)) {
        return fail("corrupt fatbin image: the entry at byte " + std::to_string(at) +
                    " runs past the end of the fatbin");
      }
      if (kind == 1 || kind == 2) {
        if (entry_header < 48) {
          return fail("corrupt fatbin image: the code entry at byte " + std::to_string(at) +
                      " has a " + std::to_string(entry_header) +
                      "-byte header, too short to name its architecture (48)");
        }
        const uint32_t sm = ReadLE<uint32_t>(d + at + 28);
        const uint64_t flags = ReadLE<uint64_t>(d + at + 40);
        std::string arch = (kind == 1 ? "compute_" : "sm_") + std::to_string(sm);
        if (flags & kFatbinFlagArchSpecific) arch += "a";
        if (flags & kFatbinFlagFamily) arch += "f";
        info->entries.push_back({kind == 1 ? ImageKind::kPtx : ImageKind::kCubin, arch});
      }
      at += entry_header + static_cast<size_t>(payload);
    }
    pos = end;
  }
}

// Skips whitespace, "//" line comments and "/* */" block comments in d[i, n).
inline size_t SkipPtxSpace(const char* d, size_t n, size_t i) {
  while (i < n) {
    if (IsImageSpace(d[i])) {
      ++i;
    } else if (ImageStartsWith(d + i, n - i, "//")) {
      const void* eol = std::memchr(d + i + 2, '\n', n - i - 2);
      i = eol ? static_cast<const char*>(eol) - d + 1 : n;
    } else if (ImageStartsWith(d + i, n - i, "/*")) {
      const size_t close = std::string_view(d + i + 2, n - i - 2).find("*/");
      i = close == std::string_view::npos ? n : i + 2 + close + 2;
    } else {
      break;
    }
  }
  return i;
}

// Whether d[i, n) starts with the directive `word` as a whole token.
inline bool PtxDirectiveAt(const char* d, size_t n, size_t i, const char* word) {
  const size_t len = std::strlen(word);
  return ImageStartsWith(d + i, n - i, word) && (n - i == len || !IsPtxIdentChar(d[i + len]));
}

TVM_FFI_COLD TVM_FFI_DETAIL_LAUNCHER_INLINE void InspectPtx(const char* d, size_t n,
                                                            ImageInfo* info) {
  info->kind = ImageKind::kPtx;
  const void* nul = std::memchr(d, 0, n);
  info->nul_terminated = nul != nullptr;
  const size_t len = nul ? static_cast<const char*>(nul) - d : n;
  size_t i = SkipPtxSpace(d, len, 0);
  if (!PtxDirectiveAt(d, len, i, ".version")) {
    info->error =
        "not a PTX image: no .version directive at its start (only whitespace and comments "
        "may precede it); CUDA source must be compiled to PTX first";
    return;
  }
  auto bad_version = [&] {
    info->error = "not a PTX image: malformed .version directive (expected e.g. .version 8.5)";
  };
  i = SkipPtxSpace(d, len, i + 8);
  const size_t major = i;
  while (i < len && IsImageDigit(d[i])) ++i;
  if (i == major || i == len || d[i] != '.') return bad_version();
  const size_t minor = ++i;
  while (i < len && IsImageDigit(d[i])) ++i;
  if (i == minor || (i < len && (IsPtxIdentChar(d[i]) || d[i] == '.'))) return bad_version();
  i = SkipPtxSpace(d, len, i);
  if (!PtxDirectiveAt(d, len, i, ".target")) {
    info->error = "not a PTX image: .version is not followed by a .target directive";
    return;
  }
  i = SkipPtxSpace(d, len, i + 7);
  std::string arch;
  while (true) {  // the target list: identifiers separated by commas
    const size_t start = i;
    while (i < len && IsPtxIdentChar(d[i])) ++i;
    if (i == start) break;
    // The architecture is the first item of the form sm_<digits><lowercase letters>.
    if (arch.empty() && ImageStartsWith(d + start, i - start, "sm_")) {
      size_t j = start + 3;
      while (j < i && IsImageDigit(d[j])) ++j;
      const size_t digits_end = j;
      while (j < i && IsImageLower(d[j])) ++j;
      if (digits_end > start + 3 && j == i) arch = "compute_" + std::string(d + start + 3, d + i);
    }
    i = SkipPtxSpace(d, len, i);
    if (i >= len || d[i] != ',') break;
    i = SkipPtxSpace(d, len, i + 1);
  }
  if (arch.empty()) {
    info->error = "not a PTX image: its .target directive names no sm_ architecture";
    return;
  }
  info->entries.push_back({ImageKind::kPtx, arch});
}

TVM_FFI_COLD TVM_FFI_DETAIL_LAUNCHER_INLINE ImageInfo InspectImage(const char* d, size_t n) {
  ImageInfo info;
  if (n == 0 || d == nullptr) {
    info.error = "empty image (0 bytes)";
    return info;
  }
  switch (AnnouncedImageKind(d, n)) {
    case ImageKind::kCubin:
      InspectCubin(d, n, &info);
      return info;
    case ImageKind::kFatbin:
      InspectFatbin(d, n, &info);
      return info;
    case ImageKind::kPtx:
      InspectPtx(d, n, &info);
      return info;
    case ImageKind::kUnknown:
      break;
  }
  std::string bytes;
  for (size_t i = 0; i < n && i < 4; ++i) {
    char hex[4];
    std::snprintf(hex, sizeof(hex), i ? " %02x" : "%02x", static_cast<unsigned char>(d[i]));
    bytes += hex;
  }
  info.error = "not a CUBIN, PTX or fatbin image (first bytes: " + bytes + ")";
  return info;
}

TVM_FFI_COLD TVM_FFI_DETAIL_LAUNCHER_INLINE size_t SelfDescribedSize(const char* d) {
  if (d == nullptr) return 0;
  const size_t kMax = static_cast<size_t>(-1);
  if (IsElf(d, 4)) {
    uint64_t size = 64;
    auto extend = [&](uint64_t off, uint64_t len) {
      if (len <= UINT64_MAX - off && off + len > size) size = off + len;
    };
    const Elf64Header h(d);
    if (h.elf_class != 2 || h.data_encoding != 1 || h.machine != kElfMachineCuda) return 64;
    const uint64_t sections = uint64_t{h.shnum} * kElf64SectionSize;
    const uint64_t segments = uint64_t{h.phnum} * kElf64SegmentSize;
    if (h.shnum != 0 && (h.shentsize != kElf64SectionSize || h.shoff > UINT64_MAX - sections)) {
      return 64;
    }
    if (h.phnum != 0 && (h.phentsize != kElf64SegmentSize || h.phoff > UINT64_MAX - segments)) {
      return 64;
    }
    if (h.shnum != 0) extend(h.shoff, sections);
    if (h.phnum != 0) extend(h.phoff, segments);
    for (uint16_t i = 0; i < h.shnum; ++i) {
      const Elf64Section section(d + h.shoff + kElf64SectionSize * i);
      if (section.HasBytes()) extend(section.offset, section.size);
    }
    for (uint16_t i = 0; i < h.phnum; ++i) {
      const Elf64Segment segment(d + h.phoff + kElf64SegmentSize * i);
      if (segment.HasBytes()) extend(segment.offset, segment.filesz);
    }
    return size > kMax ? kMax : static_cast<size_t>(size);
  }
  if (IsFatbin(d, 4)) {
    const uint64_t header = ReadLE<uint16_t>(d + 6), body = ReadLE<uint64_t>(d + 8);
    if (header < 16 || body > UINT64_MAX - header || header + body > kMax) return 16;
    return static_cast<size_t>(header + body);
  }
  if (IsPtxStart(d, kMax)) return std::strlen(d);
  return 0;
}

TVM_FFI_COLD TVM_FFI_DETAIL_LAUNCHER_INLINE std::string DescribeArchs(const ImageInfo& info) {
  std::string out;
  for (const ImageEntry& e : info.entries) {
    if (!out.empty()) out += ", ";
    out += e.arch + " (" + ImageKindName(e.kind) + ")";
  }
  return out.empty() ? std::string("no code the launcher could identify") : out;
}

}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END
#endif  // TVM_FFI_EXTRA_CUDA_DETAIL_CUBIN_IMAGE_IMPL_H_
