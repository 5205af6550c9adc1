// A minimal test harness for the header tests: TEST(name) registers a case, EXPECT_* record
// failures without stopping, main() runs everything and prints "<n> passed, <m> failed".
// The pytest driver (test_core_headers.py) asserts the exit code and that summary line.
#ifndef TVM_FFI_TESTS_CPP_TESTING_H_
#define TVM_FFI_TESTS_CPP_TESTING_H_

#include <tvm/ffi/error.h>

#include <cstdio>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace testing {

struct Case {
  const char* name;
  void (*body)();
};

inline std::vector<Case>& Registry() {
  static std::vector<Case> cases;
  return cases;
}
inline int& Failures() {
  static int failures = 0;
  return failures;
}
struct Registrar {
  Registrar(const char* name, void (*body)()) { Registry().push_back({name, body}); }
};

inline void Fail(const char* file, int line, const std::string& what) {
  std::cout << file << ":" << line << ": FAILED: " << what << std::endl;
  ++Failures();
}

/*! \brief Runs stmt, expecting tvm::ffi::Error with exactly this kind and message. */
inline void ExpectError(const std::function<void()>& stmt, const std::string& kind,
                        const std::string& message, const char* file, int line) {
  try {
    stmt();
  } catch (const tvm::ffi::Error& e) {
    if (e.kind() != kind || e.message() != message) {
      Fail(file, line,
           "expected " + kind + ": " + message + "\n    got      " + e.kind() + ": " + e.message());
    }
    return;
  }
  Fail(file, line, "expected " + kind + " to be thrown");
}

}  // namespace testing

#define TEST(name)                                                       \
  static void test_##name();                                             \
  static ::testing::Registrar test_registrar_##name(#name, test_##name); \
  static void test_##name()

#define EXPECT_TRUE(cond)                                                       \
  do {                                                                          \
    if (!(cond)) ::testing::Fail(__FILE__, __LINE__, "EXPECT_TRUE(" #cond ")"); \
  } while (0)

#define EXPECT_EQ(a, b)                                                   \
  do {                                                                    \
    const auto& expect_a_ = (a);                                          \
    const auto& expect_b_ = (b);                                          \
    if (!(expect_a_ == expect_b_)) {                                      \
      std::ostringstream expect_os_;                                      \
      expect_os_ << "EXPECT_EQ(" #a ", " #b ")\n    left:  " << expect_a_ \
                 << "\n    right: " << expect_b_;                         \
      ::testing::Fail(__FILE__, __LINE__, expect_os_.str());              \
    }                                                                     \
  } while (0)

#define EXPECT_ERROR(stmt, kind, message) \
  ::testing::ExpectError([&]() { stmt; }, kind, message, __FILE__, __LINE__)

int main() {  // renamed by drivers that need arguments
  int failed_cases = 0;
  for (const auto& c : ::testing::Registry()) {
    int before = ::testing::Failures();
    try {
      c.body();
    } catch (const std::exception& e) {
      ::testing::Fail(__FILE__, __LINE__, std::string("uncaught exception: ") + e.what());
    }
    bool ok = ::testing::Failures() == before;
    if (!ok) ++failed_cases;
    std::cout << (ok ? "PASS " : "FAIL ") << c.name << std::endl;
  }
  std::cout << (::testing::Registry().size() - failed_cases) << " passed, " << failed_cases
            << " failed" << std::endl;
  return failed_cases == 0 ? 0 : 1;
}

#endif  // TVM_FFI_TESTS_CPP_TESTING_H_
