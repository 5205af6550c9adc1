/*
 * Loading a library that exports TVM-FFI functions and finding its entries.
 * Libraries are never unloaded: a Function may outlive every Module that handed it out.
 */
#ifndef TVM_FFI_PY_LIBRARY_H_
#define TVM_FFI_PY_LIBRARY_H_

#include <Python.h>
#include <tvm/ffi/c_api.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace tvm_ffi_py {

class Library {
 public:
  Library(std::string path, void* handle, std::vector<std::string> functions, bool listed)
      : path_(std::move(path)),
        handle_(handle),
        functions_(std::move(functions)),
        listed_(listed) {}

  const std::string& path() const { return path_; }
  /*! \brief Exported function names (sorted), read from the file's .dynsym at load time. */
  const std::vector<std::string>& functions() const { return functions_; }

  /*!
   * \brief The Function object for `name` (a new reference), or NULL without an error
   *        set when the library has no such export. NULL with an error set when the
   *        export fails the ABI check.
   */
  PyObject* GetFunction(const std::string& name);

  /*! \brief "add_one, mul_two" (or "(none)"), for error messages. */
  std::string FunctionList() const;

 private:
  std::string path_;
  void* handle_;
  std::vector<std::string> functions_;
  // Whether functions_ came from a successful .dynsym read. Then only those names are looked
  // up: dlsym alone would also find data symbols, embedded CUBINs and exports of dependencies,
  // and calling any of those as an entry would crash.
  bool listed_;
  // Function objects by name; owned references, kept for the life of the process
  // like the library itself.
  std::unordered_map<std::string, PyObject*> cache_;
};

/*!
 * \brief dlopen `path` (RTLD_NOW | RTLD_LOCAL), or reuse the handle loaded earlier from the
 *        same file. A file rebuilt since it was loaded is loaded again from a private copy,
 *        because the dynamic loader would hand back the stale image for the same path.
 * \return NULL with OSError set on failure.
 */
std::shared_ptr<Library> LoadLibrary(const std::string& path);

/*!
 * \brief Names (without the prefix) of the defined, exported STT_FUNC symbols of an ELF
 *        file that start with TVM_FFI_SYMBOL_PREFIX, excluding embedded-CUBIN symbols.
 *        Sorted. False (and `error` set) when the file is not a readable ELF64 file.
 *        `exports_cxx_runtime`: the file defines and exports libstdc++'s own functions (it
 *        linked libstdc++.a without hiding it), see docs/dev/cxx_runtime.md.
 */
bool ListExportedFunctions(const std::string& path, std::vector<std::string>* out,
                           std::string* error, bool* exports_cxx_runtime);
/*! rief The same for the `size` bytes of an ELF file at `data` (the fuzz target's entry,
 *         tests/cpp/fuzz/fuzz_elf.cc). */
bool ListExportedFunctions(const char* data, size_t size, std::vector<std::string>* out,
                           std::string* error, bool* exports_cxx_runtime);

}  // namespace tvm_ffi_py

#endif  // TVM_FFI_PY_LIBRARY_H_
