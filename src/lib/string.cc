// Strings and bytes (small values or objects with the characters inline), big integers and
// data-type strings.
#include <cstdlib>
#include <vector>

#include "internal.h"

namespace tvm_ffi_runtime {
namespace {

// StringObj / BytesObj: the header, a TVMFFIByteArray at 24, the characters from 40 on,
// NUL-terminated so that data can be handed to C as it is.
struct StrObject {
  TVMFFIObject header;
  TVMFFIByteArray bytes;
};

// BigIntObj: the header, the number of 64-bit words at 24, the words from 32 on.
struct BigIntObject {
  TVMFFIObject header;
  size_t size;
};

int64_t* BigIntWords(BigIntObject* obj) { return reinterpret_cast<int64_t*>(obj + 1); }

}  // namespace

TVMFFIAny MakeStr(std::string_view s, bool bytes) {
  TVMFFIAny v = NoneValue();
  if (s.size() <= 7) {
    // Small values keep a NUL after the last byte, as a C string would.
    v.type_index = bytes ? kTVMFFISmallBytes : kTVMFFISmallStr;
    v.small_str_len = static_cast<uint32_t>(s.size());
    if (!s.empty()) std::memcpy(v.v_bytes, s.data(), s.size());
    return v;
  }
  auto* obj = static_cast<StrObject*>(AllocObject(sizeof(StrObject) + s.size() + 1,
                                                  bytes ? kTVMFFIBytes : kTVMFFIStr, &FlatDeleter));
  char* chars = reinterpret_cast<char*>(obj + 1);
  std::memcpy(chars, s.data(), s.size());
  chars[s.size()] = '\0';
  obj->bytes = TVMFFIByteArray{chars, s.size()};
  return ObjectValue(&obj->header);
}

bool IsStrLike(const TVMFFIAny& v) {
  switch (v.type_index) {
    case kTVMFFISmallStr:
    case kTVMFFISmallBytes:
    case kTVMFFIRawStr:
    case kTVMFFIByteArrayPtr:
    case kTVMFFIStr:
    case kTVMFFIBytes:
      return true;
    default:
      return false;
  }
}

std::string_view StrView(const TVMFFIAny& v, const char* what) {
  switch (v.type_index) {
    case kTVMFFISmallStr:
    case kTVMFFISmallBytes:
      return std::string_view(v.v_bytes, v.small_str_len);
    case kTVMFFIRawStr:
      return std::string_view(v.v_c_str);
    case kTVMFFIByteArrayPtr: {
      auto* b = static_cast<const TVMFFIByteArray*>(v.v_ptr);
      return std::string_view(b->data, b->size);
    }
    case kTVMFFIStr:
    case kTVMFFIBytes: {
      auto* obj = reinterpret_cast<const StrObject*>(v.v_obj);
      return std::string_view(obj->bytes.data, obj->bytes.size);
    }
    default:
      Throw("TypeError",
            std::string(what) + " must be a str or bytes (got " + TypeName(v.type_index) + ")");
  }
}

std::string TypeName(int32_t type_index) {
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(type_index);
  return std::string(info->type_key.data, info->type_key.size);
}

namespace {

// ---- data types ---------------------------------------------------------------------

struct NamedCode {
  const char* name;
  uint8_t code;
  uint8_t bits;
};

// DLPack's float8/6/4 codes and their names (DLDataTypeCode 7..17).
constexpr NamedCode kNamedFloats[] = {
    {"float8_e3m4", 7, 8},      {"float8_e4m3", 8, 8},      {"float8_e4m3b11fnuz", 9, 8},
    {"float8_e4m3fn", 10, 8},   {"float8_e4m3fnuz", 11, 8}, {"float8_e5m2", 12, 8},
    {"float8_e5m2fnuz", 13, 8}, {"float8_e8m0fnu", 14, 8},  {"float6_e2m3fn", 15, 6},
    {"float6_e3m2fn", 16, 6},   {"float4_e2m1fn", 17, 4},
};

[[noreturn]] void BadDType(std::string_view s) {
  Throw("ValueError",
        "unknown dtype '" + std::string(s) +
            "': expected int<bits>, uint<bits>, float<bits>, bfloat16, bool, handle, void or a "
            "float8/6/4 name such as float8_e4m3fn, optionally followed by x<lanes>");
}

// Parses "x<lanes>" or "xvscalex<n>" (scalable: lanes = -n); an empty suffix is one lane.
int32_t ParseLanes(std::string_view whole, std::string_view rest) {
  if (rest.empty()) return 1;
  if (rest[0] != 'x') BadDType(whole);
  rest.remove_prefix(1);
  bool scalable = false;
  if (rest.substr(0, 7) == "vscalex") {
    scalable = true;
    rest.remove_prefix(7);
  }
  if (rest.empty() || rest.size() > 5) {
    Throw("ValueError", "dtype '" + std::string(whole) +
                            "' has a bad lane count: lanes must be a positive integer");
  }
  int32_t lanes = 0;
  for (char c : rest) {
    if (c < '0' || c > '9') {
      Throw("ValueError", "dtype '" + std::string(whole) +
                              "' has a bad lane count: lanes must be a positive integer");
    }
    lanes = lanes * 10 + (c - '0');
  }
  if (lanes <= 0 || lanes > 65535) {
    Throw("ValueError", "dtype '" + std::string(whole) +
                            "' has a bad lane count: lanes must be a positive integer");
  }
  return scalable ? -lanes : lanes;
}

// apache-tvm-ffi's short spellings, as its TVMFFIDataTypeFromString reads them: i<bits>,
// u<bits>, bf<bits>, f<bits> (so f8_e4m3fn too), fp8_/fp6_/fp4_ for float8_/float6_/float4_, and
// an underscore before float4_e2m1fn's lanes (float4_e2m1fn_x2, torch's name). Libraries built
// with its headers pass such strings; the canonical name is what they stand for.
std::string Canonical(std::string_view s) {
  auto digit = [&](size_t i) { return i < s.size() && s[i] >= '0' && s[i] <= '9'; };
  std::string out;
  if (s.size() > 1 && s[0] == 'i' && digit(1)) {
    out = "int" + std::string(s.substr(1));
  } else if (s.size() > 1 && s[0] == 'u' && digit(1)) {
    out = "uint" + std::string(s.substr(1));
  } else if (s.substr(0, 2) == "bf" && digit(2)) {
    out = "bfloat" + std::string(s.substr(2));
  } else if (s.substr(0, 2) == "fp" &&
             (s.substr(2, 2) == "8_" || s.substr(2, 2) == "6_" || s.substr(2, 2) == "4_")) {
    out = "float" + std::string(s.substr(2));
  } else if (s.size() > 1 && s[0] == 'f' && digit(1)) {
    out = "float" + std::string(s.substr(1));
  } else {
    out = std::string(s);
  }
  constexpr std::string_view kFloat4Lanes = "float4_e2m1fn_x";
  if (out.compare(0, kFloat4Lanes.size(), kFloat4Lanes) == 0) {
    out.erase(kFloat4Lanes.size() - 2, 1);
  }
  return out;
}

DLDataType ParseCanonical(std::string_view s) {
  if (s.empty() || s == "void") return DLDataType{kDLOpaqueHandle, 0, 0};
  auto starts = [&](std::string_view p) { return s.substr(0, p.size()) == p; };
  for (const NamedCode& n : kNamedFloats) {
    std::string_view name(n.name);
    if (starts(name) && (s.size() == name.size() || s[name.size()] == 'x')) {
      int32_t lanes = ParseLanes(s, s.substr(name.size()));
      return DLDataType{n.code, n.bits, static_cast<uint16_t>(lanes)};
    }
  }
  if (starts("bool")) {
    int32_t lanes = ParseLanes(s, s.substr(4));
    return DLDataType{kDLBool, 8, static_cast<uint16_t>(lanes)};
  }
  if (starts("handle")) {
    int32_t lanes = ParseLanes(s, s.substr(6));
    return DLDataType{kDLOpaqueHandle, 64, static_cast<uint16_t>(lanes)};
  }
  struct Prefix {
    const char* name;
    uint8_t code;
    uint8_t default_bits;
  };
  // Longest first: "uint" before "int", "bfloat" before "float". "complex" is DLPack's
  // kDLComplex, which apache's grammar lacks: numpy and torch name complex64/complex128 tensors,
  // and refusing them would leave such a tensor's dtype without a name.
  constexpr Prefix kPrefixes[] = {{"uint", kDLUInt, 32},
                                  {"int", kDLInt, 32},
                                  {"bfloat", kDLBfloat, 16},
                                  {"float", kDLFloat, 32},
                                  {"complex", kDLComplex, 64}};
  for (const Prefix& p : kPrefixes) {
    std::string_view name(p.name);
    if (!starts(name)) continue;
    size_t i = name.size();
    uint32_t bits = 0;
    size_t digits = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && digits < 4) {
      bits = bits * 10 + static_cast<uint32_t>(s[i] - '0');
      ++i;
      ++digits;
    }
    if (bits > 255) BadDType(s);
    if (bits == 0) bits = p.default_bits;  // "int", "float", and "int0" like apache's
    int32_t lanes = ParseLanes(s, s.substr(i));
    return DLDataType{p.code, static_cast<uint8_t>(bits), static_cast<uint16_t>(lanes)};
  }
  BadDType(s);
}

DLDataType ParseDType(std::string_view s) { return ParseCanonical(Canonical(s)); }

std::string DTypeToString(const DLDataType& t) {
  int16_t lanes = static_cast<int16_t>(t.lanes);
  if (t.code == kDLOpaqueHandle && t.bits == 0 && lanes == 0) return "";
  std::string out;
  switch (t.code) {
    case kDLInt:
      out = "int" + std::to_string(t.bits);
      break;
    case kDLUInt:
      out = "uint" + std::to_string(t.bits);
      break;
    case kDLFloat:
      out = "float" + std::to_string(t.bits);
      break;
    case kDLBfloat:
      out = "bfloat" + std::to_string(t.bits);
      break;
    case kDLComplex:
      out = "complex" + std::to_string(t.bits);
      break;
    case kDLOpaqueHandle:
      out = "handle";
      break;
    case kDLBool:
      out = t.bits == 8 ? "bool" : "bool" + std::to_string(t.bits);
      break;
    default: {
      for (const NamedCode& n : kNamedFloats) {
        if (n.code == t.code) out = n.name;
      }
      if (out.empty()) {
        Throw("ValueError", "DLDataType{code=" + std::to_string(t.code) + ", bits=" +
                                std::to_string(t.bits) + ", lanes=" + std::to_string(lanes) +
                                "} has an unknown type code " + std::to_string(t.code));
      }
    }
  }
  if (lanes > 1) out += "x" + std::to_string(lanes);
  if (lanes < -1) out += "xvscalex" + std::to_string(-lanes);
  return out;
}

}  // namespace
}  // namespace tvm_ffi_runtime

using namespace tvm_ffi_runtime;

extern "C" {

int TVMFFIStringFromByteArray(const TVMFFIByteArray* input, TVMFFIAny* out) {
  TVM_FFI_RT_BEGIN();
  *out = MakeStr(std::string_view(input->data, input->size), false);
  TVM_FFI_RT_END();
}

int TVMFFIBytesFromByteArray(const TVMFFIByteArray* input, TVMFFIAny* out) {
  TVM_FFI_RT_BEGIN();
  *out = MakeStr(std::string_view(input->data, input->size), true);
  TVM_FFI_RT_END();
}

int TVMFFIDataTypeFromString(const TVMFFIByteArray* str, DLDataType* out) {
  TVM_FFI_RT_BEGIN();
  *out = ParseDType(std::string_view(str->data, str->size));
  TVM_FFI_RT_END();
}

int TVMFFIDataTypeToString(const DLDataType* dtype, TVMFFIAny* out) {
  TVM_FFI_RT_BEGIN();
  *out = MakeStr(DTypeToString(*dtype), false);
  TVM_FFI_RT_END();
}

int TVMFFIBigIntFromByteArray(const TVMFFIByteArray* input, TVMFFIAny* out) {
  TVM_FFI_RT_BEGIN();
  if (input->size % 8 != 0) {
    Throw("ValueError", "TVMFFIBigIntFromByteArray: " + std::to_string(input->size) +
                            " bytes is not a whole number of 64-bit words");
  }
  std::vector<int64_t> words(input->size / 8);
  if (!words.empty()) std::memcpy(words.data(), input->data, input->size);
  // Minimal two's-complement form: drop top words that only repeat the sign of the one below.
  while (words.size() > 1) {
    int64_t top = words.back();
    int64_t below_sign = words[words.size() - 2] < 0 ? -1 : 0;
    if (top != below_sign) break;
    words.pop_back();
  }
  if (words.size() <= 1) {
    *out = IntValue(words.empty() ? 0 : words[0]);
    return 0;
  }
  auto* obj = static_cast<BigIntObject*>(AllocObject(
      sizeof(BigIntObject) + words.size() * sizeof(int64_t), kTVMFFIBigInt, &FlatDeleter));
  obj->size = words.size();
  std::memcpy(BigIntWords(obj), words.data(), words.size() * sizeof(int64_t));
  *out = ObjectValue(&obj->header);
  TVM_FFI_RT_END();
}

TVMFFIByteArray TVMFFIBigIntGetContentByteArray(const TVMFFIAny* value) {
  if (value->type_index == kTVMFFIBigInt) {
    auto* obj = reinterpret_cast<BigIntObject*>(value->v_obj);
    return TVMFFIByteArray{reinterpret_cast<const char*>(BigIntWords(obj)), obj->size * 8};
  }
  if (value->type_index == kTVMFFIInt || value->type_index == kTVMFFIBool) {
    return TVMFFIByteArray{reinterpret_cast<const char*>(&value->v_int64), 8};
  }
  return TVMFFIByteArray{nullptr, 0};
}

}  // extern "C"
