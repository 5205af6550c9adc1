// libtvm_ffi.so: the process-wide registry of ABI version 3 (c_api.h), its one implementation.
// Global functions by name and the members of object types by (type key, name), each entry
// holding one reference to its object; the errors of load-time registrations, per thread; and
// the library an address belongs to, for messages. Plain C++17: libraries written in C++ and
// the Python core reach it alike, the first through their weak references to these symbols.
// Strong definitions here; every other library declares the registry weak (c_api.h).
#define TVM_FFI_REGISTRY_API
#include <dlfcn.h>
#include <tvm/ffi/c_api.h>

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#define TVM_FFI_REGISTRY_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// An owned reference: the registry keeps every registered object alive.
class Ref {
 public:
  explicit Ref(TVMFFIRefObject* obj) : obj_(obj) { obj_->type->inc_ref(obj_); }
  Ref(Ref&& other) noexcept : obj_(std::exchange(other.obj_, nullptr)) {}
  Ref& operator=(Ref&& other) noexcept {
    std::swap(obj_, other.obj_);
    return *this;
  }
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  ~Ref() {
    if (obj_ != nullptr) obj_->type->dec_ref(obj_);
  }
  // A new reference for a caller.
  TVMFFIRefObject* NewRef() const {
    obj_->type->inc_ref(obj_);
    return obj_;
  }

 private:
  TVMFFIRefObject* obj_;
};

struct Registry {
  std::mutex mutex;
  std::map<std::string, Ref> globals;  // ordered: ListGlobalNames visits in name order
  std::map<std::pair<std::string, std::string>, Ref> members;  // (type key, name)
  std::set<std::string> paths;  // library paths handed out by LibraryPathOf, never freed
};

struct InitError {
  std::string library;  // "" when unknown
  std::string kind;
  std::string message;
};

// A library's static initialisers run on the thread that loads it, so the loader finds the
// errors of its own dlopen here, and concurrent loads on other threads never mix in.
thread_local std::vector<InitError> t_init_errors;

// Never destroyed: objects made by Python or by libraries must not be released after their
// runtime has shut down at process exit.
Registry& GetRegistry() {
  static Registry* registry = new Registry();
  return *registry;
}

// Puts `obj` under `key`; a replaced entry's reference is dropped after the lock is released,
// because dropping it may run arbitrary code (a destructor, a Python finaliser).
template <typename Key>
int SetEntry(std::map<Key, Ref>* map, Key key, TVMFFIRefObject* obj, int allow_override) {
  if (obj == nullptr || obj->type == nullptr) return -1;
  Ref added(obj);
  Registry& r = GetRegistry();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = map->find(key);
    if (it == map->end()) {
      map->emplace(std::move(key), std::move(added));
      return 0;
    }
    if (allow_override == 0) return -1;
    std::swap(it->second, added);  // `added` now holds the old entry, released below
  }
  return 0;
}

template <typename Key>
TVMFFIRefObject* GetEntry(const std::map<Key, Ref>& map, const Key& key) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = map.find(key);
  return it == map.end() ? nullptr : it->second.NewRef();
}

// The path of the library that holds `address` (dladdr), copied into storage kept for the
// process: the loader's own string goes away if the library is ever unloaded.
const char* PathOf(const void* address) {
  Dl_info info;
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) {
    return nullptr;
  }
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.paths.insert(info.dli_fname).first->c_str();
}

}  // namespace

TVM_FFI_REGISTRY_EXPORT int TVMFFIFunctionSetGlobal(const char* name, TVMFFIRefObject* func,
                                                    int allow_override) {
  if (name == nullptr) return -1;
  return SetEntry(&GetRegistry().globals, std::string(name), func, allow_override);
}

TVM_FFI_REGISTRY_EXPORT TVMFFIRefObject* TVMFFIFunctionGetGlobal(const char* name) {
  if (name == nullptr) return nullptr;
  return GetEntry(GetRegistry().globals, std::string(name));
}

TVM_FFI_REGISTRY_EXPORT int64_t TVMFFIFunctionListGlobalNames(void (*visit)(const char* name,
                                                                              void* handle),
                                                                void* handle) {
  std::vector<std::string> names;
  {
    Registry& r = GetRegistry();
    std::lock_guard<std::mutex> lock(r.mutex);
    names.reserve(r.globals.size());
    for (const auto& entry : r.globals) names.push_back(entry.first);
  }
  // Visited without the lock: a visitor may look names up or register more.
  if (visit != nullptr) {
    for (const std::string& name : names) visit(name.c_str(), handle);
  }
  return static_cast<int64_t>(names.size());
}

TVM_FFI_REGISTRY_EXPORT int TVMFFITypeSetMember(const char* type_key, const char* name,
                                                TVMFFIRefObject* func, int allow_override) {
  if (type_key == nullptr || name == nullptr) return -1;
  return SetEntry(&GetRegistry().members, std::make_pair(std::string(type_key), std::string(name)),
                  func, allow_override);
}

TVM_FFI_REGISTRY_EXPORT TVMFFIRefObject* TVMFFITypeGetMember(const char* type_key,
                                                             const char* name) {
  if (type_key == nullptr || name == nullptr) return nullptr;
  return GetEntry(GetRegistry().members, std::make_pair(std::string(type_key), std::string(name)));
}

TVM_FFI_REGISTRY_EXPORT const char* TVMFFILibraryPathOf(const void* address) {
  return PathOf(address);
}

TVM_FFI_REGISTRY_EXPORT void TVMFFIInitErrorRecord(const void* address, const char* kind,
                                                   const char* message) {
  // Called from a static initialiser, where an escaping exception would end the process.
  try {
    const char* library = PathOf(address);
    t_init_errors.push_back(InitError{library != nullptr ? library : "",
                                      kind != nullptr ? kind : "RuntimeError",
                                      message != nullptr ? message : ""});
  } catch (...) {  // out of memory: the error is lost, the process lives
  }
}

TVM_FFI_REGISTRY_EXPORT int64_t TVMFFIInitErrorsTake(void (*visit)(const char* library,
                                                                   const char* kind,
                                                                   const char* message,
                                                                   void* handle),
                                                     void* handle) {
  std::vector<InitError> errors;
  errors.swap(t_init_errors);  // a visitor may load libraries, which record anew
  if (visit != nullptr) {
    for (const InitError& e : errors) {
      visit(e.library.empty() ? nullptr : e.library.c_str(), e.kind.c_str(), e.message.c_str(),
            handle);
    }
  }
  return static_cast<int64_t>(errors.size());
}
