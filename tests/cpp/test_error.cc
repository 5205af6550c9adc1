// tvm::ffi::Error, TVM_FFI_THROW and TVM_FFI_CHECK.
#include <tvm/ffi/error.h>
#include <tvm/ffi/string.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "testing.h"

using tvm::ffi::Error;

static_assert(std::is_nothrow_copy_constructible_v<Error>, "catch-by-value must not throw");
static_assert(std::is_base_of_v<std::exception, Error>);

static bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}
// The throw site as the runtime's backtrace line names it (Python's traceback format).
static std::string Site(int line) {
  return "test_error.cc\", line " + std::to_string(line) + ", in ";
}

TEST(throw_records_kind_message_and_site) {
  int line = 0;
  try {
    line = __LINE__ + 1;
    TVM_FFI_THROW(ValueError) << "bad value " << 42 << ", expected " << 1.5;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), std::string("ValueError"));
    EXPECT_EQ(e.message(), std::string("bad value 42, expected 1.5"));
    EXPECT_TRUE(Contains(e.backtrace(), Site(line)));
    EXPECT_EQ(std::string(e.what()), std::string("ValueError: bad value 42, expected 1.5"));
    return;
  }
  EXPECT_TRUE(false);
}

TEST(every_kind) {
  EXPECT_ERROR(TVM_FFI_THROW(RuntimeError) << "m", "RuntimeError", "m");
  EXPECT_ERROR(TVM_FFI_THROW(ValueError) << "m", "ValueError", "m");
  EXPECT_ERROR(TVM_FFI_THROW(TypeError) << "m", "TypeError", "m");
  EXPECT_ERROR(TVM_FFI_THROW(IndexError) << "m", "IndexError", "m");
  EXPECT_ERROR(TVM_FFI_THROW(KeyError) << "m", "KeyError", "m");
  EXPECT_ERROR(TVM_FFI_THROW(AttributeError) << "m", "AttributeError", "m");
  EXPECT_ERROR(TVM_FFI_THROW(NotImplementedError) << "m", "NotImplementedError", "m");
  EXPECT_ERROR(TVM_FFI_THROW(MemoryError) << "m", "MemoryError", "m");
  EXPECT_ERROR(TVM_FFI_THROW(RuntimeError), "RuntimeError", "");
}

TEST(caught_as_std_exception) {
  try {
    TVM_FFI_THROW(KeyError) << "no such key: " << std::string("w");
  } catch (const std::exception& e) {
    EXPECT_EQ(std::string(e.what()), std::string("KeyError: no such key: w"));
  }
}

TEST(check_message) {
  int x = 1;
  EXPECT_ERROR(TVM_FFI_CHECK(x > 3, IndexError) << "x = " << x, "IndexError",
               "Check failed: (x > 3) is false: x = 1");
  EXPECT_ERROR(TVM_FFI_CHECK(x == 2, ValueError), "ValueError", "Check failed: (x == 2) is false");
  try {
    TVM_FFI_CHECK(x < 0, TypeError) << "neg";
  } catch (const Error& e) {
    EXPECT_TRUE(Contains(e.backtrace(), Site(__LINE__ - 2)));
  }
}

static int g_evaluations = 0;
static int Count() { return ++g_evaluations; }

TEST(passing_check_evaluates_nothing) {
  int x = 5;
  TVM_FFI_CHECK(x > 3, ValueError) << "never built " << Count();
  EXPECT_EQ(g_evaluations, 0);
}

// Used without braces in if/else: each macro must be exactly one statement.
static int Classify(int x) {
  int result = 0;
  if (x > 100)
    TVM_FFI_THROW(ValueError) << "too big";
  else if (x < 0)
    TVM_FFI_CHECK(x > -10, IndexError) << "too small";
  else
    result = 1;
  if (x == 50)
    TVM_FFI_CHECK(x != 50, KeyError) << "fifty";
  else
    result = 2;
  return result;
}

TEST(usable_in_unbraced_if_else) {
  EXPECT_EQ(Classify(5), 2);
  EXPECT_EQ(Classify(-5), 2);
  EXPECT_ERROR(Classify(500), "ValueError", "too big");
  EXPECT_ERROR(Classify(-50), "IndexError", "Check failed: (x > -10) is false: too small");
  EXPECT_ERROR(Classify(50), "KeyError", "Check failed: (x != 50) is false: fifty");
}

// With -Wall -Werror, these compile only if the compiler knows TVM_FFI_THROW does not return.
static int NoReturnNeeded(int x) {
  if (x > 0) return x;
  TVM_FFI_THROW(ValueError) << "x must be positive";
}
static std::string SwitchWithoutDefaultReturn(int x) {
  switch (x) {
    case 0:
      return "zero";
    case 1:
      return "one";
    default:
      TVM_FFI_THROW(ValueError) << "unexpected " << x;
  }
}

TEST(throw_is_noreturn) {
  EXPECT_EQ(NoReturnNeeded(3), 3);
  EXPECT_ERROR(NoReturnNeeded(0), "ValueError", "x must be positive");
  EXPECT_EQ(SwitchWithoutDefaultReturn(1), std::string("one"));
  EXPECT_ERROR(SwitchWithoutDefaultReturn(7), "ValueError", "unexpected 7");
}

TEST(constructed_directly_and_copied) {
  Error e("NotImplementedError", "later", "  File \"x.cc\", line 7, in f");
  Error copy = e;
  EXPECT_EQ(copy.kind(), std::string("NotImplementedError"));
  EXPECT_EQ(copy.message(), std::string("later"));
  EXPECT_EQ(copy.backtrace(), std::string("  File \"x.cc\", line 7, in f"));
  EXPECT_EQ(std::string(copy.what()), std::string("NotImplementedError: later"));
  EXPECT_TRUE(copy.object().same_as(e.object()));  // one error object, shared
  Error bare("RuntimeError", "oops");
  EXPECT_EQ(bare.backtrace(), std::string(""));
}

// The builder appends into a std::string instead of an ostringstream (to keep <sstream> out of
// the headers); what it prints must be exactly what std::ostream prints.
template <typename T>
static void ExpectStreamsLikeOstream(const T& value) {
  std::ostringstream expected;
  expected << "<" << value << ">";
  try {
    TVM_FFI_THROW(ValueError) << "<" << value << ">";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), expected.str());
    return;
  }
}

enum Color { kRed = 2 };

TEST(streams_like_ostream) {
  ExpectStreamsLikeOstream(0);
  ExpectStreamsLikeOstream(-7);
  ExpectStreamsLikeOstream(std::numeric_limits<int64_t>::min());
  ExpectStreamsLikeOstream(std::numeric_limits<uint64_t>::max());
  ExpectStreamsLikeOstream(static_cast<short>(-3));
  ExpectStreamsLikeOstream(static_cast<unsigned short>(65535));
  ExpectStreamsLikeOstream(size_t{12345});
  ExpectStreamsLikeOstream(1.5);
  ExpectStreamsLikeOstream(0.1f);
  ExpectStreamsLikeOstream(1e300);
  ExpectStreamsLikeOstream(-2.5e-7);
  ExpectStreamsLikeOstream(123456789.0);
  ExpectStreamsLikeOstream(static_cast<long double>(3.25));
  ExpectStreamsLikeOstream(std::numeric_limits<double>::infinity());
  ExpectStreamsLikeOstream(std::nan(""));
  ExpectStreamsLikeOstream(true);
  ExpectStreamsLikeOstream(false);
  ExpectStreamsLikeOstream('x');
  ExpectStreamsLikeOstream(static_cast<int8_t>('A'));  // a character, as ostream prints it
  ExpectStreamsLikeOstream(static_cast<uint8_t>('B'));
  ExpectStreamsLikeOstream(kRed);
  ExpectStreamsLikeOstream("literal");
  const char* c_str = "c string";
  ExpectStreamsLikeOstream(c_str);
  char buffer[] = "mutable";
  ExpectStreamsLikeOstream(static_cast<char*>(buffer));
  ExpectStreamsLikeOstream(std::string("with\0nul", 8));
  ExpectStreamsLikeOstream(std::string_view("view"));
  ExpectStreamsLikeOstream(tvm::ffi::String("ffi string"));
  int local = 0;
  ExpectStreamsLikeOstream(&local);
  ExpectStreamsLikeOstream(static_cast<const void*>(&local));
  ExpectStreamsLikeOstream(static_cast<void*>(nullptr));
}

// Bytes have no operator<< (apache-tvm-ffi declares none); the builder appends their bytes.
TEST(streams_bytes_with_nuls) {
  EXPECT_ERROR(TVM_FFI_THROW(ValueError) << tvm::ffi::Bytes(std::string("ffi\0bytes", 9)),
               "ValueError", std::string("ffi\0bytes", 9));
}

TEST(error_copies_share_and_outlive_the_original) {
  Error* original = new Error("KeyError", "k", "bt");
  Error copy = *original;
  Error assigned("RuntimeError", "other");
  assigned = copy;
  delete original;
  EXPECT_EQ(copy.message(), std::string("k"));
  EXPECT_EQ(assigned.kind(), std::string("KeyError"));
  EXPECT_EQ(std::string(assigned.what()), std::string("KeyError: k"));
  Error moved = std::move(copy);  // a copy: the source stays usable
  EXPECT_EQ(copy.message(), std::string("k"));
  EXPECT_EQ(moved.backtrace(), std::string("bt"));
}
