// Loads libraries built with the headers through the runtime's loader (ffi.ModuleLoadFromFile),
// as a frontend does, and prints one line per step for test_rebuilt_library.py: the first
// build of a library, a rebuild whose object type has another layout, and a library whose
// load-time registrations fail.
#include <tvm/ffi/any.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>

#include <cstdio>
#include <string>

using tvm::ffi::Any;
using tvm::ffi::Error;
using tvm::ffi::Function;
using tvm::ffi::String;

static Any Load(const char* path) {
  return Function::GetGlobalRequired("ffi.ModuleLoadFromFile")(String(path));
}

static Function Get(const Any& module, const char* name) {
  return Function::GetGlobalRequired("ffi.ModuleGetFunction")(module, String(name), false)
      .cast<Function>();
}

static const char* Registered(const char* name) {
  return Function::GetGlobal(name).has_value() ? "yes" : "no";
}

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s libpoint_v1.so libpoint_v2.so libfailing.so\n", argv[0]);
    return 2;
  }
  Any v1 = Load(argv[1]);
  Any point = Get(v1, "make")(5);
  std::printf("v1 get_x %lld\n", static_cast<long long>(Get(v1, "get_x")(point).cast<int64_t>()));
  std::printf("v1 version %lld\n", static_cast<long long>(
                                       Function::GetGlobalRequired("rebuilt.version")().cast<int64_t>()));
  // The rebuild loads (its types register on first use), but its type key is taken by another
  // layout: making or reading its objects is refused, naming the key and both sizes.
  Any v2 = Load(argv[2]);
  for (const char* step : {"make", "get_x"}) {
    try {
      if (std::string(step) == "make") {
        Get(v2, "make")(7);
      } else {
        Get(v2, "get_x")(point);
      }
      std::printf("v2 %s passed\n", step);
    } catch (const Error& e) {
      std::printf("v2 %s: %s\n", step, e.what());
    }
  }
  // The first library still works after the rebuild was refused.
  std::printf("v1 again %lld\n", static_cast<long long>(Get(Load(argv[1]), "get_x")(point).cast<int64_t>()));
  std::fflush(stdout);
  Any failing = Load(argv[3]);
  std::printf("failing one %lld\n", static_cast<long long>(Get(failing, "one")().cast<int64_t>()));
  std::printf("failing.first %s, failing.twice %s, failing.never %s\n", Registered("failing.first"),
              Registered("failing.twice"), Registered("failing.never"));
  return 0;
}
