/*
 * Recognising and checking CUBIN, PTX and fatbin images before the driver sees them.
 *
 * The driver trusts the sizes written inside an image, so a truncated file can make it read
 * past the buffer; checking here turns that into a ValueError. The same parsing yields the
 * architectures an image holds, which error messages print when the device cannot run it.
 *
 * This is the one image reader: Python reaches it through tvm_ffi._core (image_kind,
 * inspect_image; python/tvm_ffi/utils/_image.py), and the CMake embedding functions through
 * `python -m tvm_ffi.utils.check_image`. A CUBIN's header and sections are read with the one
 * ELF reader, tvm/ffi/detail/elf64.h. Every offset and size read from an image is checked
 * against the image's length before use, with arithmetic that cannot wrap, whatever the
 * section or entry type says (tests/python/utils/test_image_corpus.py runs a corpus through a
 * sanitized build).
 *
 * The rules, in the order they are applied:
 * - Kind, from the first bytes: "\x7fELF" is a CUBIN; u32 0xBA55ED50 is a fatbin; text that,
 *   after any ASCII whitespace (space \t \n \v \f \r, no limit on how much), starts with a
 *   comment ("//" or slash-star) or ".version" is PTX. PTX text ends at its first NUL.
 * - CUBIN: at least 64 bytes, ELF64, little-endian, e_machine 190. Both header tables (when
 *   not empty) have the ELF64 entry sizes (64, 56) and lie in the image; e_shnum 0 needs
 *   e_shoff 0 (no extended numbering); e_shstrndx is 0 or names an SHT_STRTAB section.
 *   Every section other than SHT_NULL/SHT_NOBITS and every segment other than PT_NULL lies
 *   in the image. The SM comes from e_flags, refined by the first SHT_NOTE section named
 *   ".note.nv.tkinfo" (see CubinArch).
 * - Fatbin: one or more fatbins back to back (trailing bytes that start no fatbin are
 *   ignored). Each declares a header of at least 16 bytes and a body inside the image; the
 *   body is entries of at least 16 header bytes plus their payload, fully inside the body
 *   (a tail under 16 bytes is padding). PTX (1) and ELF (2) entries need a 48-byte header,
 *   which holds their SM and flags; other kinds are skipped.
 * - PTX: only whitespace and comments ("//" to the line end, slash-star to star-slash) may
 *   precede ".version <major>.<minor>", which must be followed by ".target" and a comma-
 *   separated list naming an "sm_<digits><lowercase letters>" target; nothing past that
 *   list is read.
 */
#ifndef TVM_FFI_EXTRA_CUDA_DETAIL_CUBIN_IMAGE_H_
#define TVM_FFI_EXTRA_CUDA_DETAIL_CUBIN_IMAGE_H_

#include <tvm/ffi/base_detail.h>
#include <tvm/ffi/detail/elf64.h>
#include <tvm/ffi/extra/cuda/detail/launcher_linkage.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

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

constexpr uint32_t kFatbinMagic = 0xBA55ED50u;
constexpr uint16_t kElfMachineCuda = 190;  // EM_CUDA
// Fatbin entry flags that mark architecture-specific ("a") and family ("f") code.
constexpr uint64_t kFatbinFlagArchSpecific = 0x100000;
constexpr uint64_t kFatbinFlagFamily = 0x200000;

// Compares byte by byte and stops at the first difference, so it never reads past a NUL
// that ends a shorter string (SelfDescribedSize relies on that).
inline bool ImageStartsWith(const char* d, size_t n, const char* lit) {
  size_t i = 0;
  for (; lit[i] != '\0'; ++i) {
    if (i >= n || d[i] != lit[i]) return false;
  }
  return true;
}

inline bool IsImageSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}
inline bool IsImageDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsImageLower(char c) { return c >= 'a' && c <= 'z'; }
// PTX identifier characters (letters, digits, '_' and '$').
inline bool IsPtxIdentChar(char c) {
  return IsImageDigit(c) || IsImageLower(c) || (c >= 'A' && c <= 'Z') || c == '_' || c == '$';
}

inline bool IsElf(const char* d, size_t n) { return ImageStartsWith(d, n, "\177ELF"); }
inline bool IsFatbin(const char* d, size_t n) {
  return ImageStartsWith(d, n, "\x50\xed\x55\xba");  // kFatbinMagic, little-endian
}
inline bool IsPtxStart(const char* d, size_t n) {
  size_t i = 0;
  while (i < n && IsImageSpace(d[i])) ++i;
  return ImageStartsWith(d + i, n - i, "//") || ImageStartsWith(d + i, n - i, "/*") ||
         ImageStartsWith(d + i, n - i, ".version");
}

/*! \brief The kind the first bytes announce, before any check of the rest (kUnknown for
 *  none): the one order of the tests, for InspectImage and for callers that only sort. */
inline ImageKind AnnouncedImageKind(const char* d, size_t n) {
  if (IsElf(d, n)) return ImageKind::kCubin;
  if (IsFatbin(d, n)) return ImageKind::kFatbin;
  if (IsPtxStart(d, n)) return ImageKind::kPtx;
  return ImageKind::kUnknown;
}

/*!
 * \brief The SM of a cubin. ELF ABI version 8 (CUDA 13) keeps it in e_flags bits 8..15 with
 *  "a" at bit 3; older cubins keep it in the low byte with "a" at bit 11. ptxas also records
 *  its command line ("-arch sm_90a") in .note.nv.tkinfo, which is the only place that tells
 *  "a" and "f" builds apart in CUDA 13 cubins, so it wins when the first "-arch sm_" in it
 *  names the header's SM followed by no letter, "a" or "f". Safe on any bytes: whatever it
 *  reads is bounds-checked here too; "" when n is shorter than an ELF header.
 */
std::string CubinArch(const char* d, size_t n);

// The checks of each kind; InspectImage picks one.
void InspectCubin(const char* d, size_t n, ImageInfo* info);
void InspectFatbin(const char* d, size_t n, ImageInfo* info);
void InspectPtx(const char* d, size_t n, ImageInfo* info);

/*! \brief Classifies and checks `n` bytes at `d`; ImageInfo::error says what is wrong. */
ImageInfo InspectImage(const char* d, size_t n);

/*!
 * \brief The size of an image known only by its start (the unsized constructor): ELF and
 *  fatbin headers record it, PTX ends at its NUL. 0 when the start is not recognised.
 *
 *  It has to trust the header (there is no length to check against), but reads nothing past
 *  the extent the header declares, and never past a NUL when the start is not an image. For
 *  an image InspectImage accepts with n bytes it returns at most n, and InspectImage accepts
 *  the first SelfDescribedSize bytes too. A declared size that does not fit in 64 bits gives
 *  the header alone, which InspectImage then reports as truncated.
 */
size_t SelfDescribedSize(const char* d);

/*! \brief "sm_80 (cubin), compute_90 (ptx)" for error messages. */
std::string DescribeArchs(const ImageInfo& info);

}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

// The definitions: here unless TVM_FFI_CUDA_SEPARATE_LAUNCHER moves them to
// detail/launcher_definitions_driver.h.
#ifndef TVM_FFI_CUDA_SEPARATE_LAUNCHER
#include <tvm/ffi/extra/cuda/detail/cubin_image_impl.h>
#endif

#endif  // TVM_FFI_EXTRA_CUDA_DETAIL_CUBIN_IMAGE_H_
