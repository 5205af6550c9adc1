// tvm::ffi::String and tvm::ffi::Bytes: ownership, sizes with embedded NULs, sharing, comparison.
#include <tvm/ffi/string.h>

#include <cstring>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "testing.h"

using tvm::ffi::Bytes;
using tvm::ffi::String;

static_assert(std::is_convertible_v<const char*, String>);
static_assert(std::is_convertible_v<std::string, String>);
static_assert(std::is_convertible_v<std::string_view, String>);
static_assert(std::is_convertible_v<String, std::string_view>);
static_assert(std::is_convertible_v<String, std::string>);
// A C string usually ends before a binary blob does: Bytes must be built from it on purpose.
static_assert(!std::is_convertible_v<const char*, Bytes>);
static_assert(std::is_constructible_v<Bytes, const char*>);
static_assert(std::is_nothrow_copy_constructible_v<String>);
static_assert(std::is_nothrow_move_constructible_v<Bytes>);

TEST(string_constructors) {
  String empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_EQ(std::strcmp(empty.c_str(), ""), 0);

  String from_cstr("hello");
  EXPECT_EQ(from_cstr.size(), 5u);
  EXPECT_EQ(std::string(from_cstr.c_str()), std::string("hello"));
  EXPECT_EQ(from_cstr.c_str()[5], '\0');

  String from_null(static_cast<const char*>(nullptr));
  EXPECT_TRUE(from_null.empty());

  std::string s("std");
  String from_std(s);
  EXPECT_EQ(from_std, "std");
  String from_view(std::string_view("view"));
  EXPECT_EQ(from_view, "view");
  String implicit = "implicit";
  EXPECT_EQ(implicit.length(), 8u);
}

TEST(string_keeps_embedded_nuls) {
  const char raw[] = {'a', '\0', 'b', '\0', 'c'};
  String s(raw, sizeof(raw));
  EXPECT_EQ(s.size(), 5u);
  EXPECT_EQ(std::memcmp(s.data(), raw, 5), 0);
  EXPECT_EQ(s.c_str()[5], '\0');  // terminated after the last byte too
  std::string back = s;
  EXPECT_EQ(back.size(), 5u);
  EXPECT_EQ(back, std::string(raw, 5));
  String from_std(std::string("x\0y", 3));
  EXPECT_EQ(from_std.size(), 3u);
  EXPECT_EQ(s[2], 'b');
}

TEST(copies_share_one_buffer) {
  String a("shared text");
  String b = a;
  EXPECT_TRUE(a.data() == b.data());
  String c;
  c = b;
  EXPECT_TRUE(c.data() == a.data());
  String d = std::move(c);
  EXPECT_TRUE(d.data() == a.data());
  EXPECT_EQ(a, "shared text");
  {
    String scoped = a;
  }
  EXPECT_EQ(b, "shared text");
}

TEST(string_comparison) {
  String abc("abc");
  EXPECT_TRUE(abc == "abc");
  EXPECT_TRUE("abc" == abc);
  EXPECT_TRUE(abc == std::string("abc"));
  EXPECT_TRUE(std::string("abc") == abc);
  EXPECT_TRUE(abc == std::string_view("abc"));
  EXPECT_TRUE(abc == String("abc"));
  EXPECT_TRUE(abc != "abd");
  EXPECT_TRUE(abc < "abd");
  EXPECT_TRUE(abc <= String("abc"));
  EXPECT_TRUE(String("b") > abc);
  EXPECT_TRUE(String("b") >= "b");
  EXPECT_TRUE(String(std::string("a\0b", 3)) != "a");  // bytewise, NUL included
  EXPECT_TRUE(String("") == String());
}

TEST(string_conversions_and_hash) {
  String s("key");
  std::string_view view = s;
  EXPECT_EQ(view, std::string_view("key"));
  std::string str = s;
  EXPECT_EQ(str, std::string("key"));
  std::string direct(s);
  EXPECT_EQ(direct, std::string("key"));
  std::unordered_map<String, int> map;
  map[String("one")] = 1;
  map["two"] = 2;
  EXPECT_EQ(map.at("one"), 1);
  EXPECT_EQ(map.at(String("two")), 2);
  std::ostringstream os;
  os << s << "/" << String(std::string("a\0b", 3));
  EXPECT_EQ(os.str(), std::string("key/a\0b", 7));
  EXPECT_TRUE(String("abc") < std::string("abd") && String("b") >= "a" && "a" <= String("a"));
  EXPECT_TRUE(std::string("x") == String("x") && String("x") == std::string("x"));
}

TEST(bytes_with_nuls) {
  // The start of an ELF file (a CUBIN is one): NULs right away.
  const char elf[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0};
  Bytes b(elf, sizeof(elf));
  EXPECT_EQ(b.size(), sizeof(elf));
  EXPECT_EQ(std::memcmp(b.data(), elf, sizeof(elf)), 0);
  Bytes copy = b;
  EXPECT_TRUE(copy.data() == b.data());
  EXPECT_TRUE(copy == b);
  EXPECT_TRUE(b == std::string_view(elf, sizeof(elf)));
  EXPECT_TRUE(b != Bytes(elf, 4));
  std::string as_std = b;
  EXPECT_EQ(as_std.size(), sizeof(elf));

  Bytes truncated("ab\0cd");  // explicit C-string constructor stops at the NUL
  EXPECT_EQ(truncated.size(), 2u);
  Bytes from_std(std::string("ab\0cd", 5));
  EXPECT_EQ(from_std.size(), 5u);
  Bytes from_view(std::string_view("ab\0cd", 5));
  EXPECT_TRUE(from_view == from_std);
  EXPECT_TRUE(Bytes().empty());
  EXPECT_EQ(from_std[3], 'c');
}

TEST(copies_across_threads) {
  String s("contended");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([s]() {
      for (int i = 0; i < 20000; ++i) {
        String copy = s;
        String again = copy;
        (void)again;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(s, "contended");
}
