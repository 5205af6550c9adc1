// Calls the functions of export_lib.cc the way any foreign caller would: dlopen, dlsym
// "__tvm_ffi_<name>", TVMFFIAny arrays built by hand, results and errors read per c_api.h.
// Only c_api.h is included: the driver knows nothing of the C++ side.
#include <dlfcn.h>
#include <tvm/ffi/c_api.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#define main testing_main
#include "testing.h"
#undef main

static void* g_lib = nullptr;

static TVMFFIFunctionEntry Entry(const char* name) {
  std::string symbol = std::string(TVM_FFI_SYMBOL_PREFIX) + name;
  void* sym = dlsym(g_lib, symbol.c_str());
  if (sym == nullptr) {
    std::cout << "missing symbol " << symbol << std::endl;
    std::exit(2);
  }
  return reinterpret_cast<TVMFFIFunctionEntry>(sym);
}

// ---- building arguments --------------------------------------------------------------------

static TVMFFIAny Make(int32_t type_code) {
  TVMFFIAny v;
  std::memset(&v, 0, sizeof(v));
  v.type_code = type_code;
  return v;
}
static TVMFFIAny None() { return Make(kTVMFFINone); }
static TVMFFIAny Int(int64_t x) {
  TVMFFIAny v = Make(kTVMFFIInt);
  v.v_int64 = x;
  return v;
}
static TVMFFIAny Bool(bool x) {
  TVMFFIAny v = Make(kTVMFFIBool);
  v.v_int64 = x;
  return v;
}
static TVMFFIAny Float(double x) {
  TVMFFIAny v = Make(kTVMFFIFloat);
  v.v_float64 = x;
  return v;
}
static TVMFFIAny Str(const char* s, int64_t size = -1) {
  TVMFFIAny v = Make(kTVMFFIStr);
  v.v_str = s;
  v.size = size < 0 ? static_cast<int64_t>(std::strlen(s)) : size;
  return v;
}
static TVMFFIAny RawBytes(const char* s, int64_t size) {
  TVMFFIAny v = Make(kTVMFFIBytes);
  v.v_str = s;
  v.size = size;
  return v;
}
static TVMFFIAny Tensor(DLTensor* t) {
  TVMFFIAny v = Make(kTVMFFIDLTensorPtr);
  v.v_tensor = t;
  return v;
}
static TVMFFIAny Ptr(void* p) {
  TVMFFIAny v = Make(kTVMFFIOpaquePtr);
  v.v_ptr = p;
  return v;
}
static TVMFFIAny Unsupported(const char* type_name) {
  TVMFFIAny v = Make(kTVMFFIUnsupported);
  v.v_str = type_name;
  v.size = static_cast<int64_t>(std::strlen(type_name));
  return v;
}
static TVMFFIAny Array(const std::vector<TVMFFIAny>& items, bool tuple = false) {
  TVMFFIAny v = Make(kTVMFFIArray);
  v.flags = tuple ? TVM_FFI_ARRAY_IS_TUPLE : 0;
  v.v_array = items.data();
  v.size = static_cast<int64_t>(items.size());
  return v;
}

// ---- calling -------------------------------------------------------------------------------

/*! \brief One call's outcome; releases the owner like a well-behaved caller. */
struct Call {
  int rc;
  TVMFFIResult result;
  Call(const char* name, std::vector<TVMFFIAny> args, const TVMFFICallContext* ctx = nullptr) {
    std::memset(&result, 0xAB, sizeof(result));  // poison: the entry must fill every field
    rc = Entry(name)(ctx, args.data(), static_cast<int32_t>(args.size()), &result);
  }
  Call(const Call&) = delete;
  ~Call() {
    if (result.owner != nullptr) result.owner->deleter(result.owner);
  }
  const TVMFFIAny& value() const { return result.value; }
  const TVMFFIErrorInfo* error() const {
    return static_cast<const TVMFFIErrorInfo*>(result.value.v_ptr);
  }
  std::string ErrorText() const {
    if (rc != -1 || result.value.type_code != kTVMFFIError) return "<no error>";
    return std::string(error()->kind) + ": " + error()->message;
  }
};

static std::string StrOf(const TVMFFIAny& v) {
  return std::string(v.v_str, static_cast<size_t>(v.size));
}

#define EXPECT_OK(call)                                                          \
  do {                                                                           \
    if ((call).rc != 0) ::testing::Fail(__FILE__, __LINE__, (call).ErrorText()); \
  } while (0)

static void ExpectCallError(const char* name, std::vector<TVMFFIAny> args, const char* kind,
                            const std::string& message, const char* file, int line) {
  Call c(name, std::move(args));
  if (c.rc != -1 || c.value().type_code != kTVMFFIError) {
    ::testing::Fail(file, line, std::string("expected an error from ") + name);
    return;
  }
  if (c.result.owner == nullptr) ::testing::Fail(file, line, "error without owner");
  std::string got = c.ErrorText();
  std::string want = std::string(kind) + ": " + message;
  if (got != want) ::testing::Fail(file, line, "expected " + want + "\n    got      " + got);
}
// ARGS(a, b) keeps the commas of an argument list away from the macro below.
#define ARGS(...) \
  std::vector<TVMFFIAny> { __VA_ARGS__ }
#define EXPECT_CALL_ERROR(name, args, kind, message) \
  ExpectCallError(name, args, kind, message, __FILE__, __LINE__)

// ---- query info ----------------------------------------------------------------------------

static std::string Signature(const char* name, int32_t* num_args = nullptr) {
  TVMFFIResult result;
  std::memset(&result, 0xAB, sizeof(result));
  int rc = Entry(name)(nullptr, nullptr, TVM_FFI_QUERY_INFO, &result);
  if (rc != 0 || result.value.type_code != kTVMFFIOpaquePtr || result.owner != nullptr) {
    return "<query failed>";
  }
  auto* info = static_cast<const TVMFFIFunctionInfo*>(result.value.v_ptr);
  if (info->abi_version != TVM_FFI_ABI_VERSION || std::string(info->name) != name) {
    return "<bad info>";
  }
  if (num_args != nullptr) *num_args = info->num_args;
  return info->signature;
}

TEST(query_info_signatures) {
  int32_t n = -5;
  EXPECT_EQ(Signature("add_one", &n), std::string("add_one(Tensor, Tensor) -> None"));
  EXPECT_EQ(n, 2);
  EXPECT_EQ(Signature("no_args", &n), std::string("no_args() -> int"));
  EXPECT_EQ(n, 0);
  EXPECT_EQ(Signature("narrow"), std::string("narrow(int, int, int, int, int, int, int) -> int"));
  EXPECT_EQ(Signature("scale"), std::string("scale(float, float) -> float"));
  EXPECT_EQ(Signature("negate"), std::string("negate(bool) -> bool"));
  EXPECT_EQ(Signature("greet"), std::string("greet(str, str, str) -> str"));
  EXPECT_EQ(Signature("echo_bytes"), std::string("echo_bytes(bytes) -> bytes"));
  EXPECT_EQ(Signature("maybe"), std::string("maybe(int | None) -> str | None"));
  EXPECT_EQ(Signature("row_sums"), std::string("row_sums(list[list[float]]) -> list[float]"));
  EXPECT_EQ(Signature("swap"), std::string("swap(tuple[int, str]) -> tuple[str, int]"));
  EXPECT_EQ(Signature("describe_raw"),
            std::string("describe_raw(Tensor) -> tuple[int, list[int]]"));
  EXPECT_EQ(Signature("ptr_roundtrip"), std::string("ptr_roundtrip(pointer) -> pointer"));
  EXPECT_EQ(Signature("total_numel"), std::string("total_numel(list[Tensor]) -> int"));
  EXPECT_EQ(Signature("maybe_tensor"), std::string("maybe_tensor(Tensor | None) -> int"));
  EXPECT_EQ(Signature("nested"),
            std::string("nested() -> tuple[list[str | None], bytes, tuple[], list[int], "
                        "tuple[bool, tuple[float]]]"));
  // The same static answer every time.
  TVMFFIResult a, b;
  Entry("greet")(nullptr, nullptr, TVM_FFI_QUERY_INFO, &a);
  Entry("greet")(nullptr, nullptr, TVM_FFI_QUERY_INFO, &b);
  EXPECT_TRUE(a.value.v_ptr == b.value.v_ptr);
  // Two functions with one C++ signature still describe themselves.
  EXPECT_EQ(Signature("bytes_size"), std::string("bytes_size(bytes) -> int"));
  EXPECT_EQ(Signature("str_size"), std::string("str_size(str) -> int"));
}

// ---- calls ---------------------------------------------------------------------------------

TEST(tensor_arguments) {
  float x[6] = {1, 2, 3, 4, 5, 6};
  float y[6] = {-9, -9, -9, -9, -9, -9};
  int64_t shape[2] = {2, 3};
  int64_t strides[2] = {3, 1};
  DLTensor tx{x, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, shape, strides, 0};
  DLTensor ty{y, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, shape, nullptr, 0};
  Call c("add_one", {Tensor(&tx), Tensor(&ty)});
  EXPECT_OK(c);
  EXPECT_EQ(c.value().type_code, int(kTVMFFINone));
  EXPECT_TRUE(c.result.owner == nullptr);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[i], x[i] + 1);

  Call d("describe_raw", {Tensor(&tx)});
  EXPECT_OK(d);
  EXPECT_EQ(d.value().type_code, int(kTVMFFIArray));
  EXPECT_EQ(d.value().flags, TVM_FFI_ARRAY_IS_TUPLE);
  EXPECT_EQ(d.value().v_array[0].v_int64, 2);
  const TVMFFIAny& dims = d.value().v_array[1];
  EXPECT_EQ(dims.type_code, int(kTVMFFIArray));
  EXPECT_EQ(dims.flags, 0);
  EXPECT_EQ(dims.size, 2);
  EXPECT_EQ(dims.v_array[1].v_int64, 3);

  Call e("ndim_const", {Tensor(&tx)});
  EXPECT_EQ(e.value().v_int64, 2);
  Call f("maybe_tensor", {None()});
  EXPECT_EQ(f.value().v_int64, -1);
  Call g("maybe_tensor", {Tensor(&tx)});
  EXPECT_EQ(g.value().v_int64, 6);
  std::vector<TVMFFIAny> ts = {Tensor(&tx), Tensor(&ty)};
  Call h("total_numel", {Array(ts, true)});
  EXPECT_EQ(h.value().v_int64, 12);
}

TEST(scalar_arguments_and_results) {
  Call add("add_int", {Int(40), Int(2)});
  EXPECT_OK(add);
  EXPECT_EQ(add.value().type_code, int(kTVMFFIInt));
  EXPECT_EQ(add.value().v_int64, 42);
  EXPECT_TRUE(add.result.owner == nullptr);
  Call with_bool("add_int", {Bool(true), Int(2)});  // bool is an int, as in Python
  EXPECT_EQ(with_bool.value().v_int64, 3);

  Call narrow("narrow", {Int(-128), Int(255), Int(-32768), Int(65535), Int(INT32_MIN),
                         Int(UINT32_MAX), Int(int64_t{1} << 40)});
  EXPECT_OK(narrow);
  EXPECT_EQ(narrow.value().v_int64, (int64_t{1} << 40) + (-128 + 255 - 32768 + 65535) +
                                        (int64_t{INT32_MIN} + int64_t{UINT32_MAX}));

  Call scale("scale", {Float(1.5), Int(4)});  // an int is accepted for a float
  EXPECT_OK(scale);
  EXPECT_EQ(scale.value().type_code, int(kTVMFFIFloat));
  EXPECT_EQ(scale.value().v_float64, 6.0);
  Call fr("float_result", {});
  EXPECT_EQ(fr.value().v_float64, 0.25);

  Call neg("negate", {Bool(false)});
  EXPECT_EQ(neg.value().type_code, int(kTVMFFIBool));
  EXPECT_EQ(neg.value().v_int64, 1);

  Call none("no_args", {});
  EXPECT_EQ(none.value().v_int64, 7);
  Call i8("int8_result", {});
  EXPECT_EQ(i8.value().v_int64, -5);
  Call commas("lambda_commas", {Int(6), Int(7)});
  EXPECT_EQ(commas.value().v_int64, 42);
}

TEST(pointer_arguments) {
  int anchor = 0;
  Call same("ptr_roundtrip", {Ptr(&anchor)});
  EXPECT_OK(same);
  EXPECT_EQ(same.value().type_code, int(kTVMFFIOpaquePtr));
  EXPECT_TRUE(same.value().v_ptr == &anchor);
  Call from_int("ptr_address", {Int(0x1234)});
  EXPECT_EQ(from_int.value().v_int64, 0x1234);
  Call from_none("ptr_address", {None()});
  EXPECT_EQ(from_none.value().v_int64, 0);
}

TEST(string_results_own_their_memory) {
  Call c("greet", {Str("Ann"), Str("Hello"), Str("!")});
  EXPECT_OK(c);
  EXPECT_EQ(c.value().type_code, int(kTVMFFIStr));
  EXPECT_EQ(StrOf(c.value()), std::string("Hello, Ann!"));
  EXPECT_EQ(c.value().v_str[c.value().size], '\0');
  EXPECT_TRUE(c.result.owner != nullptr);

  Call sized("str_size", {Str("a\0b", 3)});
  EXPECT_EQ(sized.value().v_int64, 3);
  Call cstr("cstr_len", {Str("hello")});
  EXPECT_EQ(cstr.value().v_int64, 5);
  Call with_nul("std_string_result", {});
  EXPECT_EQ(with_nul.value().size, 3);
  EXPECT_EQ(StrOf(with_nul.value()), std::string("a\0b", 3));

  Call empty("empty_string", {});
  EXPECT_OK(empty);
  EXPECT_EQ(empty.value().type_code, int(kTVMFFIStr));
  EXPECT_EQ(empty.value().size, 0);
  EXPECT_EQ(std::string(empty.value().v_str), std::string(""));
  EXPECT_TRUE(empty.result.owner == nullptr);

  const char blob[] = {0x7f, 'E', 'L', 'F', 0, 0, 1, 0};
  Call bytes("echo_bytes", {RawBytes(blob, sizeof(blob))});
  EXPECT_OK(bytes);
  EXPECT_EQ(bytes.value().type_code, int(kTVMFFIBytes));
  EXPECT_EQ(bytes.value().size, int64_t(sizeof(blob)));
  EXPECT_EQ(std::memcmp(bytes.value().v_str, blob, sizeof(blob)), 0);
  Call bsize("bytes_size", {RawBytes(blob, sizeof(blob))});
  EXPECT_EQ(bsize.value().v_int64, int64_t(sizeof(blob)));
}

TEST(optional_and_containers) {
  Call none("maybe", {None()});
  EXPECT_OK(none);
  EXPECT_EQ(none.value().type_code, int(kTVMFFINone));
  EXPECT_TRUE(none.result.owner == nullptr);
  Call some("maybe", {Int(12)});
  EXPECT_EQ(some.value().type_code, int(kTVMFFIStr));
  EXPECT_EQ(StrOf(some.value()), std::string("12"));

  std::vector<TVMFFIAny> ints = {Int(1), Int(2), Int(39)};
  Call sum_list("sum_list", {Array(ints)});
  EXPECT_EQ(sum_list.value().v_int64, 42);
  Call sum_tuple("sum_list", {Array(ints, true)});  // a tuple is fine for a vector
  EXPECT_EQ(sum_tuple.value().v_int64, 42);
  Call sum_empty("sum_list", {Array({})});
  EXPECT_EQ(sum_empty.value().v_int64, 0);

  std::vector<TVMFFIAny> row0 = {Float(1), Float(2)};
  std::vector<TVMFFIAny> row1 = {Int(10)};
  std::vector<TVMFFIAny> rows = {Array(row0), Array(row1, true), Array({})};
  Call sums("row_sums", {Array(rows)});
  EXPECT_OK(sums);
  EXPECT_EQ(sums.value().type_code, int(kTVMFFIArray));
  EXPECT_EQ(sums.value().flags, 0);
  EXPECT_EQ(sums.value().size, 3);
  EXPECT_EQ(sums.value().v_array[0].v_float64, 3.0);
  EXPECT_EQ(sums.value().v_array[1].v_float64, 10.0);
  EXPECT_EQ(sums.value().v_array[2].v_float64, 0.0);

  std::vector<TVMFFIAny> pair = {Int(5), Str("five")};
  Call swapped("swap", {Array(pair, true)});
  EXPECT_OK(swapped);
  EXPECT_EQ(swapped.value().flags, TVM_FFI_ARRAY_IS_TUPLE);
  EXPECT_EQ(StrOf(swapped.value().v_array[0]), std::string("five"));
  EXPECT_EQ(swapped.value().v_array[1].v_int64, 5);
  Call from_list("swap", {Array(pair)});  // a list of the right length is fine for a tuple
  EXPECT_OK(from_list);

  Call flags("bool_flags", {Int(3)});
  EXPECT_OK(flags);
  EXPECT_EQ(flags.value().size, 3);
  EXPECT_EQ(flags.value().v_array[0].type_code, int(kTVMFFIBool));
  EXPECT_EQ(flags.value().v_array[1].v_int64, 0);
  EXPECT_EQ(flags.value().v_array[2].v_int64, 1);

  std::vector<TVMFFIAny> names = {Str("a"), Str("b")};
  Call ml("maybe_list", {Array(names)});
  EXPECT_EQ(ml.value().v_int64, 2);
  Call ml_none("maybe_list", {None()});
  EXPECT_EQ(ml_none.value().v_int64, -1);
}

TEST(nested_result) {
  Call c("nested", {});
  EXPECT_OK(c);
  EXPECT_TRUE(c.result.owner != nullptr);
  const TVMFFIAny& top = c.value();
  EXPECT_EQ(top.type_code, int(kTVMFFIArray));
  EXPECT_EQ(top.flags, TVM_FFI_ARRAY_IS_TUPLE);
  EXPECT_EQ(top.size, 5);
  const TVMFFIAny& strs = top.v_array[0];
  EXPECT_EQ(strs.size, 3);
  EXPECT_EQ(StrOf(strs.v_array[0]), std::string("x"));
  EXPECT_EQ(strs.v_array[1].type_code, int(kTVMFFINone));
  EXPECT_EQ(strs.v_array[2].type_code, int(kTVMFFIStr));
  EXPECT_EQ(strs.v_array[2].size, 0);
  EXPECT_EQ(top.v_array[1].type_code, int(kTVMFFIBytes));
  EXPECT_EQ(StrOf(top.v_array[1]), std::string("\0\1", 2));
  EXPECT_EQ(top.v_array[2].type_code, int(kTVMFFIArray));
  EXPECT_EQ(top.v_array[2].flags, TVM_FFI_ARRAY_IS_TUPLE);
  EXPECT_EQ(top.v_array[2].size, 0);
  EXPECT_EQ(top.v_array[3].flags, 0);
  EXPECT_EQ(top.v_array[3].size, 0);
  const TVMFFIAny& inner = top.v_array[4];
  EXPECT_EQ(inner.v_array[0].type_code, int(kTVMFFIBool));
  EXPECT_EQ(inner.v_array[1].v_array[0].v_float64, 2.5);
}

// ---- errors --------------------------------------------------------------------------------

TEST(argument_count_errors) {
  float x[1] = {0};
  int64_t shape[1] = {1};
  DLTensor t{x, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
  EXPECT_CALL_ERROR("add_one", ARGS(Tensor(&t), Tensor(&t), Tensor(&t)), "TypeError",
                    "add_one() takes 2 arguments (3 given)");
  EXPECT_CALL_ERROR("add_one", {}, "TypeError", "add_one() takes 2 arguments (0 given)");
  EXPECT_CALL_ERROR("negate", {}, "TypeError", "negate() takes 1 argument (0 given)");
  EXPECT_CALL_ERROR("no_args", {Int(1)}, "TypeError", "no_args() takes 0 arguments (1 given)");
}

TEST(argument_type_errors) {
  float x[1] = {0};
  int64_t shape[1] = {1};
  DLTensor t{x, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
  EXPECT_CALL_ERROR("add_one", ARGS(Tensor(&t), Str("oops")), "TypeError",
                    "add_one() argument 2 must be Tensor, not str");
  EXPECT_CALL_ERROR("add_one", ARGS(None(), Tensor(&t)), "TypeError",
                    "add_one() argument 1 must be Tensor, not None");
  EXPECT_CALL_ERROR("add_int", ARGS(Int(1), Unsupported("dict")), "TypeError",
                    "add_int() argument 2 must be int, not dict");
  EXPECT_CALL_ERROR("add_int", ARGS(Float(1.0), Int(1)), "TypeError",
                    "add_int() argument 1 must be int, not float");
  EXPECT_CALL_ERROR("negate", {Int(1)}, "TypeError", "negate() argument 1 must be bool, not int");
  EXPECT_CALL_ERROR("scale", ARGS(Str("1"), Float(1)), "TypeError",
                    "scale() argument 1 must be float, not str");
  EXPECT_CALL_ERROR("greet", ARGS(Str("a"), RawBytes("b", 1), Str("c")), "TypeError",
                    "greet() argument 2 must be str, not bytes");
  EXPECT_CALL_ERROR("echo_bytes", {Str("text")}, "TypeError",
                    "echo_bytes() argument 1 must be bytes, not str");
  EXPECT_CALL_ERROR("ptr_roundtrip", {Str("p")}, "TypeError",
                    "ptr_roundtrip() argument 1 must be pointer, not str");
  EXPECT_CALL_ERROR("maybe", {Str("x")}, "TypeError",
                    "maybe() argument 1 must be int | None, not str");
  EXPECT_CALL_ERROR("sum_list", {Int(3)}, "TypeError",
                    "sum_list() argument 1 must be list[int], not int");
  EXPECT_CALL_ERROR("total_numel", {Tensor(&t)}, "TypeError",
                    "total_numel() argument 1 must be list[Tensor], not Tensor");
  EXPECT_CALL_ERROR("maybe_tensor", {Ptr(nullptr)}, "TypeError",
                    "maybe_tensor() argument 1 must be Tensor | None, not pointer");
}

TEST(nested_element_errors) {
  std::vector<TVMFFIAny> mixed = {Int(1), Str("two"), Int(3)};
  EXPECT_CALL_ERROR("sum_list", {Array(mixed)}, "TypeError",
                    "sum_list() argument 1[1] must be int, not str");
  std::vector<TVMFFIAny> row0 = {Float(1)};
  std::vector<TVMFFIAny> row1 = {Float(1), Str("x")};
  std::vector<TVMFFIAny> rows = {Array(row0), Array(row1)};
  EXPECT_CALL_ERROR("row_sums", {Array(rows)}, "TypeError",
                    "row_sums() argument 1[1][1] must be float, not str");
  std::vector<TVMFFIAny> not_rows = {Array(row0), Float(2)};
  EXPECT_CALL_ERROR("row_sums", {Array(not_rows)}, "TypeError",
                    "row_sums() argument 1[1] must be list[float], not float");
  std::vector<TVMFFIAny> triple = {Int(1), Str("a"), Int(2)};
  EXPECT_CALL_ERROR("swap", {Array(triple, true)}, "TypeError",
                    "swap() argument 1 must be tuple[int, str], not tuple of length 3");
  std::vector<TVMFFIAny> short_list = {Int(1)};
  EXPECT_CALL_ERROR("swap", {Array(short_list)}, "TypeError",
                    "swap() argument 1 must be tuple[int, str], not list of length 1");
  std::vector<TVMFFIAny> wrong = {Int(1), Int(2)};
  EXPECT_CALL_ERROR("swap", {Array(wrong, true)}, "TypeError",
                    "swap() argument 1[1] must be str, not int");
  std::vector<TVMFFIAny> opt_names = {Str("a"), None()};
  EXPECT_CALL_ERROR("maybe_list", {Array(opt_names)}, "TypeError",
                    "maybe_list() argument 1[1] must be str, not None");
  std::vector<TVMFFIAny> bad_tensors = {Str("t")};
  EXPECT_CALL_ERROR("total_numel", {Array(bad_tensors)}, "TypeError",
                    "total_numel() argument 1[0] must be Tensor, not str");
}

TEST(integer_range_errors) {
  auto args = [](int64_t a, int64_t b, int64_t g) {
    return std::vector<TVMFFIAny>{Int(a), Int(b), Int(0), Int(0), Int(0), Int(0), Int(g)};
  };
  EXPECT_CALL_ERROR("narrow", args(300, 0, 0), "ValueError",
                    "narrow() argument 1 must fit in int8 [-128, 127] (got 300)");
  EXPECT_CALL_ERROR("narrow", args(0, -1, 0), "ValueError",
                    "narrow() argument 2 must fit in uint8 [0, 255] (got -1)");
  EXPECT_CALL_ERROR("narrow", args(0, 0, -5), "ValueError",
                    "narrow() argument 7 must fit in uint64 [0, 18446744073709551615] (got -5)");
  std::vector<TVMFFIAny> v = {Int(1), Int(-129)};
  EXPECT_CALL_ERROR("small_ints", {Array(v)}, "ValueError",
                    "small_ints() argument 1[1] must fit in int8 [-128, 127] (got -129)");
  EXPECT_CALL_ERROR("ptr_address", {Int(-1)}, "ValueError",
                    "ptr_address() argument 1 must be a non-negative address (got -1)");
  // Above INT64_MAX a uint64_t result travels as its bits, flagged unsigned.
  Call big("big_unsigned", {});
  EXPECT_EQ(big.rc, 0);
  EXPECT_EQ(big.value().type_code, kTVMFFIInt);
  EXPECT_EQ(big.value().flags, TVM_FFI_INT_IS_UNSIGNED);
  EXPECT_TRUE(static_cast<uint64_t>(big.value().v_int64) == UINT64_MAX);
  // And such an argument fits uint64_t parameters only.
  TVMFFIAny huge = Int(-1);
  huge.flags = TVM_FFI_INT_IS_UNSIGNED;
  EXPECT_CALL_ERROR("narrow", (std::vector<TVMFFIAny>{huge, Int(0), Int(0), Int(0), Int(0), Int(0),
                                                     Int(0)}),
                    "ValueError",
                    "narrow() argument 1 must fit in int8 [-128, 127] (got 18446744073709551615)");
  Call top("narrow", {Int(0), Int(0), Int(0), Int(0), Int(0), Int(0), huge});
  EXPECT_EQ(top.rc, 0);
}

static void ExpectThrown(const char* what, const char* kind, const std::string& message,
                         bool has_location, const char* file, int line) {
  Call c("raise_error", {Str(what)});
  std::string want = std::string(kind) + ": " + message;
  if (c.ErrorText() != want) {
    ::testing::Fail(file, line, "expected " + want + "\n    got      " + c.ErrorText());
    return;
  }
  std::string where = c.error()->file;
  bool located = where.size() >= 13 && where.compare(where.size() - 13, 13, "export_lib.cc") == 0 &&
                 c.error()->line > 0;
  bool unlocated = where.empty() && c.error()->line == 0;
  if (has_location ? !located : !unlocated) {
    ::testing::Fail(file, line,
                    "unexpected location " + where + ":" + std::to_string(c.error()->line));
  }
}
#define EXPECT_THROWN(what, kind, message, located) \
  ExpectThrown(what, kind, message, located, __FILE__, __LINE__)

TEST(errors_raised_by_the_function) {
  for (const char* kind : {"RuntimeError", "ValueError", "TypeError", "IndexError", "KeyError",
                           "AttributeError", "NotImplementedError", "MemoryError"}) {
    EXPECT_THROWN(kind, kind, std::string("raised ") + kind, true);
  }
  EXPECT_THROWN("check", "ValueError", "Check failed: (kind != \"check\") is false: limit is 2",
                true);
  EXPECT_THROWN("std", "RuntimeError", "plain std error", false);
  EXPECT_THROWN("bad_alloc", "MemoryError", "std::bad_alloc", false);
  EXPECT_THROWN("int", "RuntimeError", "raise_error() threw a C++ exception of unknown type",
                false);
  Call fine("raise_error", {Str("nothing")});
  EXPECT_OK(fine);

  float x[2] = {0, 0};
  int64_t shape[1] = {2};
  DLTensor t{x, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
  Call dim("dim_of", {Tensor(&t), Int(-1)});
  EXPECT_EQ(dim.value().v_int64, 2);
  Call bad_dim("dim_of", {Tensor(&t), Int(4)});
  EXPECT_EQ(bad_dim.ErrorText(),
            std::string("IndexError: TensorView::size(4): dimension out of range for a tensor "
                        "of ndim 1 (expected -1 to 0)"));
}

// ---- streams -------------------------------------------------------------------------------

static void* CallerStream(void* handle, int32_t device_type, int32_t device_id) {
  return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(handle) + 100 * device_type +
                                 device_id);
}

TEST(stream_environment) {
  TVMFFICallContext ctx{TVM_FFI_ABI_VERSION, reinterpret_cast<void*>(0x10000), CallerStream, nullptr};
  Call with_ctx("current_stream", {Int(kDLCUDA), Int(1)}, &ctx);
  EXPECT_OK(with_ctx);
  EXPECT_TRUE(with_ctx.value().v_ptr == reinterpret_cast<void*>(0x10000 + 201));
  Call without_ctx("current_stream", {Int(kDLCUDA), Int(1)});
  EXPECT_TRUE(without_ctx.value().v_ptr == nullptr);

  void* mine = reinterpret_cast<void*>(0xABC0);
  Call o("override_stream", {Ptr(mine)}, &ctx);
  EXPECT_OK(o);
  const TVMFFIAny* r = o.value().v_array;
  EXPECT_TRUE(r[0].v_ptr == reinterpret_cast<void*>(0x10000 + 200));  // original: the caller's
  EXPECT_TRUE(r[1].v_ptr == mine);                                    // the override
  EXPECT_TRUE(r[2].v_ptr == reinterpret_cast<void*>(0x777));  // a nested call: its own context
  EXPECT_TRUE(r[3].v_ptr == mine);                            // the override survived it
  // Nothing leaks into the next call, with or without a context, even after an error.
  Call after("current_stream", {Int(kDLCUDA), Int(0)}, &ctx);
  EXPECT_TRUE(after.value().v_ptr == reinterpret_cast<void*>(0x10000 + 200));
  Call thrown("override_then_throw", {Ptr(mine)}, &ctx);
  EXPECT_EQ(thrown.ErrorText(), std::string("RuntimeError: after override"));
  Call after_throw("current_stream", {Int(kDLCUDA), Int(0)});
  EXPECT_TRUE(after_throw.value().v_ptr == nullptr);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cout << "usage: export_driver <library.so>" << std::endl;
    return 2;
  }
  g_lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (g_lib == nullptr) {
    std::cout << "dlopen failed: " << dlerror() << std::endl;
    return 2;
  }
  return testing_main();
}
