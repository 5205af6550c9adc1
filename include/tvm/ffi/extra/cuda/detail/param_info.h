/*
 * A kernel's parameter layout (offset and size of each parameter), read from the image.
 *
 * ptxas writes, for each kernel, a section ".nv.info.<kernel>" of attribute records; one
 * EIATTR_KPARAM_INFO record per parameter gives its ordinal, its offset in the parameter
 * buffer and its size. Reading them needs no driver, so the layout is known on any driver
 * (cuKernelGetParamInfo, which gives the same numbers, needs CUDA 12.4) and can be checked
 * on a machine without a GPU. Python launches size their int and float arguments from it.
 *
 * Record format: u8 format, u8 attribute, then by format: EIFMT_NVAL (1) no value, EIFMT_BVAL
 * (2) and EIFMT_HVAL (3) a 2-byte value, EIFMT_SVAL (4) a u16 length and that many bytes.
 * EIATTR_KPARAM_INFO (0x17) is an SVAL of at least 12 bytes: u32 index, u16 ordinal, u16
 * offset, u32 whose bits 18..31 are the size in bytes. Every read is bounds-checked; a
 * section that does not parse, or ordinals that are not 0..n-1 each once, give "no layout".
 */
#ifndef TVM_FFI_EXTRA_CUDA_DETAIL_PARAM_INFO_H_
#define TVM_FFI_EXTRA_CUDA_DETAIL_PARAM_INFO_H_

#include <tvm/ffi/extra/cuda/detail/cubin_image.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

/*! \brief Where one kernel parameter lives in the parameter buffer. */
struct ParamSlot {
  uint32_t offset;
  uint32_t size;
};

constexpr uint8_t kEiFormatSval = 4;
constexpr uint8_t kEiAttrKparamInfo = 0x17;
// Fatbin entry flag of a compressed payload: its ELF cannot be read in place.
constexpr uint64_t kFatbinFlagCompressed = 0x2000;

/*! \brief The layout from a .nv.info.<kernel> section's bytes; false when it does not parse. */
inline bool ParseKernelInfo(const char* d, size_t n, std::vector<ParamSlot>* out) {
  std::vector<ParamSlot> slots;
  std::vector<bool> seen;
  size_t at = 0;
  while (n - at >= 4) {
    const uint8_t format = static_cast<uint8_t>(d[at]);
    const uint8_t attr = static_cast<uint8_t>(d[at + 1]);
    if (format != kEiFormatSval) {
      at += 4;
      continue;
    }
    const uint16_t len = ReadLE<uint16_t>(d + at + 2);
    if (!InBounds(at + 4, len, n)) return false;
    if (attr == kEiAttrKparamInfo) {
      if (len < 12) return false;
      const char* rec = d + at + 4;
      const uint16_t ordinal = ReadLE<uint16_t>(rec + 4);
      const uint16_t offset = ReadLE<uint16_t>(rec + 6);
      const uint32_t size = ReadLE<uint32_t>(rec + 8) >> 18;
      if (ordinal >= slots.size()) {
        slots.resize(ordinal + 1u, ParamSlot{0, 0});
        seen.resize(ordinal + 1u, false);
      }
      if (seen[ordinal]) return false;
      seen[ordinal] = true;
      slots[ordinal] = ParamSlot{offset, size};
    }
    at += 4 + len;
  }
  for (bool s : seen) {
    if (!s) return false;
  }
  *out = std::move(slots);
  return true;
}

/*! \brief The layout of `kernel` from a CUBIN (ELF); false when the image does not say. */
inline bool CubinParamLayout(const char* d, size_t n, const std::string& kernel,
                             std::vector<ParamSlot>* out) {
  if (d == nullptr || n < 64 || !IsElf(d, n)) return false;
  Elf64Sections sections;
  // Any type of name table: this reads what the driver would, and judges nothing.
  if (!sections.Open(d, n) || !sections.OpenNames(0)) return false;
  const std::string wanted = ".nv.info." + kernel;
  for (uint16_t i = 0; i < sections.count(); ++i) {
    const Elf64Section section = sections[i];
    if (!sections.NameIs(section, wanted.c_str(), wanted.size() + 1)) continue;
    const char* info = sections.Data(section);
    if (info == nullptr) return false;
    return ParseKernelInfo(info, static_cast<size_t>(section.size), out);
  }
  return false;
}

/*!
 * \brief The layout of `kernel` from a CUBIN, or from the first uncompressed CUBIN entry of a
 *  fatbin that has it (every architecture's build of a kernel has the same layout). False for
 *  PTX, compressed fatbins and kernels the image does not describe: ask the driver then.
 */
inline bool ImageParamLayout(const char* d, size_t n, const std::string& kernel,
                             std::vector<ParamSlot>* out) {
  if (d == nullptr) return false;
  if (IsElf(d, n)) return CubinParamLayout(d, n, kernel, out);
  if (!IsFatbin(d, n)) return false;
  size_t pos = 0;
  while (n - pos >= 16 && ReadLE<uint32_t>(d + pos) == kFatbinMagic) {
    const uint16_t header = ReadLE<uint16_t>(d + pos + 6);
    const uint64_t body = ReadLE<uint64_t>(d + pos + 8);
    if (header < 16 || !InBounds(header, body, n - pos)) return false;
    size_t at = pos + header;
    const size_t end = at + static_cast<size_t>(body);
    while (end - at >= 16) {
      const uint16_t kind = ReadLE<uint16_t>(d + at);
      const uint32_t entry_header = ReadLE<uint32_t>(d + at + 4);
      const uint64_t payload = ReadLE<uint64_t>(d + at + 8);
      if (entry_header < 16 || !InBounds(entry_header, payload, end - at)) return false;
      if (kind == 2 && entry_header >= 48 &&
          (ReadLE<uint64_t>(d + at + 40) & kFatbinFlagCompressed) == 0 &&
          CubinParamLayout(d + at + entry_header, static_cast<size_t>(payload), kernel, out)) {
        return true;
      }
      at += entry_header + static_cast<size_t>(payload);
    }
    pos = end;
  }
  return false;
}

}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END
#endif  // TVM_FFI_EXTRA_CUDA_DETAIL_PARAM_INFO_H_
