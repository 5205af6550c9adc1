/*
 * compat: apache-tvm-ffi. The standard headers that apache-tvm-ffi's public headers bring
 * through their own includes (its error.h alone brings <iostream> and <sstream>): code written
 * for it names std::ostringstream, std::invalid_argument or std::unordered_map after including
 * only a tvm/ffi header. tests/cpp/apache_std_headers.json lists them per header path and
 * tests/cpp/test_apache_std_headers.py checks that ours bring at least as much. Every name is
 * listed, not only the ones that bring the rest, so that the promise holds on any standard
 * library. The cost is in benchmarks/README.md (header_cost.py).
 */
#ifndef TVM_FFI_DETAIL_STD_COMPAT_H_
#define TVM_FFI_DETAIL_STD_COMPAT_H_

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <clocale>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <cwchar>
#include <cwctype>
#include <exception>
#include <functional>
#include <initializer_list>
#include <iomanip>
#include <ios>
#include <iosfwd>
#include <iostream>
#include <istream>
#include <iterator>
#include <limits>
#include <locale>
#include <memory>
#include <new>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <vector>
// C++20 headers that libstdc++ also brings in C++17 mode (their names then need C++20).
#if defined(__has_include)
#if __has_include(<bit>)
#include <bit>
#endif
#if __has_include(<compare>)
#include <compare>
#endif
#endif

#endif  // TVM_FFI_DETAIL_STD_COMPAT_H_
