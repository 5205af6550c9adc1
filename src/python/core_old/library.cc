// dlopen with reload-on-rebuild, and the per-library Function cache.
#include "library.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "call_frame.h"
#include "function.h"
#include "object.h"

namespace tvm_ffi_py {
namespace {

// What identifies the file's content: a rebuild writes a new inode or at least a new mtime.
struct FileId {
  dev_t dev;
  ino_t ino;
  int64_t mtime_ns;
  off_t size;
  bool operator==(const FileId& o) const {
    return dev == o.dev && ino == o.ino && mtime_ns == o.mtime_ns && size == o.size;
  }
};

FileId MakeFileId(const struct stat& st) {
  return FileId{st.st_dev, st.st_ino, int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec,
                st.st_size};
}

// What a library's TVM_FFI_STATIC_INIT_BLOCKs could not do while dlopen ran them: they record
// it in the registry (a static initialiser has no caller to throw to), and loading raises it.
struct InitFailure {
  std::string loaded;  // the file dlopen was given: its own failures need no "in '<library>'"
  std::string kind;    // of the first failure
  std::string text;    // every failure's message, joined by "; "
};

struct Loaded {
  FileId id;
  std::shared_ptr<Library> library;
  InitFailure init_failure;  // raised again by each load of the same file: it stays broken
};

void AppendInitError(const char* library, const char* kind, const char* message, void* handle) {
  auto* failure = static_cast<InitFailure*>(handle);
  if (failure->kind.empty()) failure->kind = kind;
  if (!failure->text.empty()) failure->text += "; ";
  if (library == nullptr || failure->loaded != library) {  // a library it depends on
    failure->text += std::string("in '") + (library != nullptr ? library : "?") + "': ";
  }
  failure->text += message;
}

void RaiseInitFailure(const std::string& path, const InitFailure& failure) {
  PyErr_Format(ExceptionForKind(failure.kind.c_str()),
               "library '%s' was loaded, but a TVM_FFI_STATIC_INIT_BLOCK of it failed: %s (what "
               "the block registered before it failed stays registered)",
               path.c_str(), failure.text.c_str());
}

// Keyed by real path. Guarded by the GIL (every caller holds it).
std::unordered_map<std::string, Loaded>& Registry() {
  static auto* registry = new std::unordered_map<std::string, Loaded>();
  return *registry;
}

// A copy of a rebuilt library under a fresh name: the dynamic loader matches an already
// loaded object by path and by inode, so the copy is the only way to get the new image.
// The copy is deleted right after dlopen; the mapping stays valid.
class PrivateCopy {
 public:
  ~PrivateCopy() {
    if (!file_.empty()) unlink(file_.c_str());
    if (!dir_.empty()) rmdir(dir_.c_str());
  }
  // Returns false with errno-based OSError set.
  bool Make(const std::string& source) {
    // Beside the library first: code evidently may run from there, while TMPDIR may be
    // mounted noexec. TMPDIR only when the library's directory is not writable.
    const size_t slash = source.rfind('/');
    std::string tmpl = source.substr(0, slash == std::string::npos ? 0 : slash + 1) +
                       ".tvm_ffi_reload_XXXXXX";
    if (mkdtemp(&tmpl[0]) == nullptr) {
      const char* tmp = getenv("TMPDIR");
      tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/tvm_ffi_reload_XXXXXX";
      if (mkdtemp(&tmpl[0]) == nullptr) return SetError(tmpl);
    }
    dir_ = tmpl;
    file_ = dir_ + "/" + source.substr(slash == std::string::npos ? 0 : slash + 1);
    int in = open(source.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) return SetError(source);
    int out = open(file_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
    if (out < 0) {
      close(in);
      file_.clear();
      return SetError(dir_);
    }
    char buf[1 << 16];
    bool ok = true;
    for (;;) {
      ssize_t n = read(in, buf, sizeof(buf));
      if (n == 0) break;
      if (n < 0) {
        if (errno == EINTR) continue;
        ok = false;
        break;
      }
      for (ssize_t done = 0; done < n;) {
        ssize_t w = write(out, buf + done, static_cast<size_t>(n - done));
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) {
          ok = false;
          break;
        }
        done += w;
      }
      if (!ok) break;
    }
    int saved = errno;
    close(in);
    close(out);
    errno = saved;
    return ok ? true : SetError(file_);
  }
  const std::string& path() const { return file_; }

 private:
  static bool SetError(const std::string& path) {
    PyErr_SetFromErrnoWithFilename(PyExc_OSError, path.c_str());
    return false;
  }
  std::string dir_;
  std::string file_;
};

}  // namespace

std::shared_ptr<Library> LoadLibrary(const std::string& path) {
  char resolved[PATH_MAX];
  struct stat st;
  if (realpath(path.c_str(), resolved) == nullptr || stat(resolved, &st) != 0) {
    PyErr_SetFromErrnoWithFilename(PyExc_OSError, path.c_str());
    return nullptr;
  }
  const FileId id = MakeFileId(st);
  auto& registry = Registry();
  auto it = registry.find(resolved);
  if (it != registry.end() && it->second.id == id) {
    if (it->second.init_failure.text.empty()) return it->second.library;
    RaiseInitFailure(path, it->second.init_failure);
    return nullptr;
  }
  const RegistryApi* api = EnsureRegistry();
  if (api == nullptr) return nullptr;

  PrivateCopy copy;
  std::string load_path = resolved;
  if (it != registry.end()) {
    if (!copy.Make(resolved)) return nullptr;
    load_path = copy.path();
  }
  // A file we cannot parse still loads; its functions are then found by name only.
  std::vector<std::string> functions;
  std::string ignored;
  bool exports_cxx_runtime = false;
  const bool listed = ListExportedFunctions(load_path, &functions, &ignored, &exports_cxx_runtime);
  // A library that carries its own libstdc++ and exports it binds its C++ runtime partly to
  // itself and partly (the unique template members) to a libstdc++.so.6 already loaded, and
  // crashes at its first iostream use. With that libstdc++ in the global scope every such
  // reference binds to it alone; NOLOAD: where none is loaded there is no second copy.
  if (exports_cxx_runtime) dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
  dlerror();
  api->take_init_errors(nullptr, nullptr);  // earlier loads' on this thread are not this one's
  void* handle = dlopen(load_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  InitFailure init_failure{load_path, "", ""};
  api->take_init_errors(AppendInitError, &init_failure);
  if (handle == nullptr) {
    const char* why = dlerror();
    PyErr_Format(PyExc_OSError, "cannot load library '%s': %s", path.c_str(),
                 why ? why : "unknown dlopen error");
    return nullptr;
  }
  auto library = std::make_shared<Library>(resolved, handle, std::move(functions), listed);
  registry[resolved] = Loaded{id, library, init_failure};
  if (init_failure.text.empty()) return library;
  RaiseInitFailure(path, init_failure);
  return nullptr;
}

std::string Library::FunctionList() const {
  if (functions_.empty()) return "(none)";
  std::string out;
  for (const std::string& f : functions_) {
    if (!out.empty()) out += ", ";
    out += f;
  }
  return out;
}

PyObject* Library::GetFunction(const std::string& name) {
  auto it = cache_.find(name);
  if (it != cache_.end()) {
    Py_INCREF(it->second);
    return it->second;
  }
  if (listed_ && !std::binary_search(functions_.begin(), functions_.end(), name)) return nullptr;
  if (name.compare(0, 7, "_cubin_") == 0) return nullptr;  // "__tvm_ffi__cubin_*" is data
  auto entry =
      reinterpret_cast<TVMFFIFunctionEntry>(dlsym(handle_, (TVM_FFI_SYMBOL_PREFIX + name).c_str()));
  if (entry == nullptr) return nullptr;

  TVMFFIResult result;
  std::memset(&result, 0, sizeof(result));
  const int rc = entry(nullptr, nullptr, TVM_FFI_QUERY_INFO, &result);
  const auto* info = static_cast<const TVMFFIFunctionInfo*>(result.value.v_ptr);
  if (rc != 0 || result.value.type_code != kTVMFFIOpaquePtr || info == nullptr) {
    if (result.owner != nullptr) result.owner->deleter(result.owner);
    PyErr_Format(PyExc_RuntimeError,
                 "function '%s' in '%s' did not answer the TVM-FFI info query; was it "
                 "exported with TVM_FFI_DLL_EXPORT_TYPED_FUNC?",
                 name.c_str(), path_.c_str());
    return nullptr;
  }
  // Each version is a subset of the next (an older library never reads nor returns what came
  // later), so every version up to ours is accepted.
  if (info->abi_version < 1 || info->abi_version > TVM_FFI_ABI_VERSION) {
    PyErr_Format(PyExc_RuntimeError,
                 "function '%s' in '%s' was built for TVM-FFI ABI version %d, but this "
                 "tvm_ffi speaks ABI version %d; rebuild the library against this tvm_ffi's "
                 "headers",
                 name.c_str(), path_.c_str(), static_cast<int>(info->abi_version),
                 TVM_FFI_ABI_VERSION);
    return nullptr;
  }
  PyObject* func = NewFunction(entry, info, name.c_str());
  if (func == nullptr) return nullptr;
  Py_INCREF(func);
  cache_.emplace(name, func);
  return func;
}

}  // namespace tvm_ffi_py
