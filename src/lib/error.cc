// Errors: the per-thread slot, error objects and the backtrace text of a throw site.
#include <cstdio>

#include "internal.h"

namespace tvm_ffi_runtime {
namespace {

// ErrorObj: the header, then the TVMFFIErrorCell at 24 (what inline code reads); the strings
// the cell points into follow, owned by the object.
struct ErrorObject {
  TVMFFIObject header;
  TVMFFIErrorCell cell;
  std::string kind;
  std::string message;
  std::string backtrace;
};

void SyncCell(ErrorObject* e) {
  e->cell.kind = TVMFFIByteArray{e->kind.data(), e->kind.size()};
  e->cell.message = TVMFFIByteArray{e->message.data(), e->message.size()};
  e->cell.backtrace = TVMFFIByteArray{e->backtrace.data(), e->backtrace.size()};
}

void UpdateBacktrace(TVMFFIObjectHandle self, const TVMFFIByteArray* text, int32_t mode) {
  auto* e = static_cast<ErrorObject*>(self);
  std::string_view add(text->data, text->size);
  if (mode == kTVMFFIBacktraceUpdateModeReplace) {
    e->backtrace.assign(add);
  } else {
    e->backtrace.append(add);
  }
  SyncCell(e);
}

void ErrorDeleter(void* self, int flags) {
  auto* e = static_cast<ErrorObject*>(self);
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) {
    if (e->cell.cause_chain != nullptr) DecRef(Header(e->cell.cause_chain));
    if (e->cell.extra_context != nullptr) DecRef(Header(e->cell.extra_context));
    e->~ErrorObject();
  }
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) FreeObjectSpace(self);
}

ErrorObject* NewError(std::string_view kind, std::string_view message, std::string_view backtrace) {
  void* mem = AllocObject(sizeof(ErrorObject), kTVMFFIError, &ErrorDeleter);
  auto* e = static_cast<ErrorObject*>(mem);
  TVMFFIObject header = e->header;
  new (e) ErrorObject{header, {}, std::string(kind), std::string(message), std::string(backtrace)};
  e->cell.update_backtrace = &UpdateBacktrace;
  SyncCell(e);
  return e;
}

// The slot owns one reference; a new error replaces (and releases) an unfetched one.
struct Slot {
  TVMFFIObject* error = nullptr;
  ~Slot() {
    if (error != nullptr) DecRef(error);
  }
  void Put(TVMFFIObject* e) {
    TVMFFIObject* old = error;
    error = e;
    if (old != nullptr) DecRef(old);
  }
};

thread_local Slot slot;
thread_local std::string backtrace_text;

std::string_view View(const TVMFFIByteArray* b) {
  return b == nullptr || b->data == nullptr ? std::string_view()
                                            : std::string_view(b->data, b->size);
}

}  // namespace

int RaiseInSlot(std::string_view kind, std::string_view message) {
  try {
    slot.Put(&NewError(kind, message, {})->header);
  } catch (...) {
    std::fprintf(stderr, "libtvm_ffi: out of memory raising %.*s: %.*s\n",
                 static_cast<int>(kind.size()), kind.data(), static_cast<int>(message.size()),
                 message.data());
  }
  return -1;
}

}  // namespace tvm_ffi_runtime

using namespace tvm_ffi_runtime;

extern "C" {

void TVMFFIErrorMoveFromRaised(TVMFFIObjectHandle* result) {
  *result = slot.error;
  slot.error = nullptr;
}

void TVMFFIErrorSetRaised(TVMFFIObjectHandle error) {
  // The slot takes its own reference; the caller keeps (and releases) its one, as apache's
  // export wrappers do right after this call.
  IncRef(Header(error));
  slot.Put(Header(error));
}

void TVMFFIErrorSetRaisedFromCStr(const char* kind, const char* message) {
  RaiseInSlot(kind, message == nullptr ? "" : message);
}

void TVMFFIErrorSetRaisedFromCStrParts(const char* kind, const char** message_parts,
                                       int32_t num_parts) {
  std::string message;
  for (int32_t i = 0; i < num_parts; ++i) {
    if (message_parts[i] != nullptr) message += message_parts[i];
  }
  RaiseInSlot(kind, message);
}

int TVMFFIErrorCreate(const TVMFFIByteArray* kind, const TVMFFIByteArray* message,
                      const TVMFFIByteArray* backtrace, TVMFFIObjectHandle* out) {
  return TVMFFIErrorCreateWithCauseAndExtraContext(kind, message, backtrace, nullptr, nullptr, out);
}

int TVMFFIErrorCreateWithCauseAndExtraContext(
    const TVMFFIByteArray* kind, const TVMFFIByteArray* message, const TVMFFIByteArray* backtrace,
    TVMFFIObjectHandle cause_chain, TVMFFIObjectHandle extra_context, TVMFFIObjectHandle* out) {
  TVM_FFI_RT_BEGIN();
  ErrorObject* e = NewError(View(kind), View(message), View(backtrace));
  // The error keeps its own references to the cause and the context.
  if (cause_chain != nullptr) IncRef(Header(cause_chain));
  if (extra_context != nullptr) IncRef(Header(extra_context));
  e->cell.cause_chain = cause_chain;
  e->cell.extra_context = extra_context;
  *out = e;
  TVM_FFI_RT_END();
}

const TVMFFIByteArray* TVMFFIBacktrace(const char* filename, int lineno, const char* func,
                                       int /*cross_ffi_boundary*/) {
  // The throw site only, in Python's traceback format: cheap, and what a reader needs most.
  // A full native backtrace (libbacktrace) is deliberately not linked in.
  thread_local TVMFFIByteArray result;
  backtrace_text.clear();
  if (filename != nullptr) {
    backtrace_text += "  File \"";
    backtrace_text += filename;
    backtrace_text += "\", line ";
    backtrace_text += std::to_string(lineno);
    backtrace_text += ", in ";
    backtrace_text += func != nullptr ? func : "<unknown>";
    backtrace_text += "\n";
  }
  result = TVMFFIByteArray{backtrace_text.data(), backtrace_text.size()};
  return &result;
}

}  // extern "C"
