/*
 * tvm::ffi::List<T>: a growable sequence with reference semantics (type index kTVMFFIList):
 * every handle to one List sees every change, as a Python list's names do. Its object
 * (ListObj) is the header and the TVMFFISeqCell at offset 24; the elements (TVMFFIAny, 16
 * bytes each) live in a separate buffer that the cell's data_deleter frees, so a list made by
 * another library is grown by replacing its buffer through its own deleter.
 */
#ifndef TVM_FFI_CONTAINER_LIST_H_
#define TVM_FFI_CONTAINER_LIST_H_

#include <tvm/ffi/any.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/object.h>

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <new>
#include <vector>

namespace tvm {
namespace ffi {

/*! \brief The list object; elements are owned TVMFFIAny values in a buffer of their own. */
class TVM_FFI_HIDDEN_MEMBERS ListObj : public Object, protected TVMFFISeqCell {
 public:
  TVM_FFI_DETAIL_DECLARE_STATIC_OBJECT_INFO("ffi.List", ListObj, Object, kTVMFFIList);
  static constexpr bool _type_final = true;

  TVM_FFI_HIDDEN ListObj() noexcept : TVMFFISeqCell{nullptr, 0, 0, nullptr} {}
  TVM_FFI_HIDDEN ~ListObj() {
    Clear();
    if (data_deleter != nullptr) data_deleter(data);
  }
  TVM_FFI_HIDDEN size_t size_() const noexcept { return static_cast<size_t>(size); }  // NOLINT
  TVM_FFI_HIDDEN Any* begin() const noexcept { return static_cast<Any*>(data); }
  TVM_FFI_HIDDEN Any* end() const noexcept { return begin() + size; }
  TVM_FFI_HIDDEN void Clear() noexcept {
    while (size > 0) begin()[--size].~Any();
  }
  /*! \brief Room for at least n elements; the elements move to a new buffer when needed. */
  TVM_FFI_HIDDEN void Reserve(int64_t n) {
    if (n <= capacity) return;
    const int64_t grown = capacity * 2 > n ? capacity * 2 : n;
    Any* buffer = static_cast<Any*>(std::malloc(static_cast<size_t>(grown) * sizeof(Any)));
    if (buffer == nullptr) throw std::bad_alloc();
    // Any is its 16-byte C value: moving the bytes moves the references.
    if (size > 0) std::memcpy(static_cast<void*>(buffer), data, size * sizeof(Any));
    if (data_deleter != nullptr) data_deleter(data);
    data = buffer;
    capacity = grown;
    data_deleter = &FreeBuffer;
  }
  TVM_FFI_HIDDEN void PushBack(Any value) {
    Reserve(size + 1);
    new (end()) Any(std::move(value));
    ++size;
  }
  TVM_FFI_HIDDEN void PopBack() noexcept { begin()[--size].~Any(); }

 private:
  TVM_FFI_HIDDEN static void FreeBuffer(void* buffer) noexcept { std::free(buffer); }
};
static_assert(sizeof(ListObj) == 56, "ListObj: the header and the sequence cell");

template <typename T>
class TVM_FFI_HIDDEN_MEMBERS List : public ObjectRef {
 public:
  using value_type = T;
  using ContainerType = ListObj;
  static constexpr bool _type_is_nullable = false;
  // Reads elements as T (a copy each), as Array's iterator does.
  using iterator = typename Array<T>::iterator;
  using const_iterator = iterator;

  TVM_FFI_HIDDEN List() : ObjectRef(make_object<ListObj>()) {}
  TVM_FFI_HIDDEN explicit List(UnsafeInit tag) noexcept : ObjectRef(tag) {}
  TVM_FFI_HIDDEN List(std::initializer_list<T> values) : List(values.begin(), values.end()) {}
  TVM_FFI_HIDDEN List(const std::vector<T>& values)  // NOLINT: implicit, as Array's
      : List(values.begin(), values.end()) {}
  template <typename It, typename = decltype(*std::declval<It>())>
  TVM_FFI_HIDDEN List(It first, It last) : List() {
    Obj()->Reserve(static_cast<int64_t>(std::distance(first, last)));
    for (; first != last; ++first) Obj()->PushBack(Any(T(*first)));
  }
  TVM_FFI_DETAIL_COPY_MOVE_HIDDEN(List);
  TVM_FFI_HIDDEN ~List() = default;

  TVM_FFI_HIDDEN size_t size() const noexcept { return Obj()->size_(); }
  TVM_FFI_HIDDEN bool empty() const noexcept { return size() == 0; }
  TVM_FFI_HIDDEN T operator[](int64_t i) const {
    return Obj()->begin()[CheckIndex(i)].template cast<T>();
  }
  TVM_FFI_HIDDEN T at(int64_t i) const { return operator[](i); }
  TVM_FFI_HIDDEN T front() const { return operator[](0); }
  TVM_FFI_HIDDEN T back() const { return operator[](static_cast<int64_t>(size()) - 1); }
  TVM_FFI_HIDDEN iterator begin() const noexcept { return iterator(Obj()->begin()); }
  TVM_FFI_HIDDEN iterator end() const noexcept { return iterator(Obj()->end()); }
  TVM_FFI_HIDDEN const ListObj* get() const noexcept { return Obj(); }
  TVM_FFI_HIDDEN const ListObj* operator->() const noexcept { return Obj(); }

  TVM_FFI_HIDDEN void push_back(const T& value) { Obj()->PushBack(Any(value)); }
  template <typename... Args>
  TVM_FFI_HIDDEN void emplace_back(Args&&... args) {
    push_back(T(std::forward<Args>(args)...));
  }
  TVM_FFI_HIDDEN void pop_back() {
    if (TVM_FFI_UNLIKELY(empty())) TVM_FFI_THROW(IndexError) << "pop_back on an empty List";
    Obj()->PopBack();
  }
  TVM_FFI_HIDDEN void Set(int64_t i, const T& value) { Obj()->begin()[CheckIndex(i)] = Any(value); }
  TVM_FFI_HIDDEN void clear() noexcept { Obj()->Clear(); }
  TVM_FFI_HIDDEN void reserve(size_t n) { Obj()->Reserve(static_cast<int64_t>(n)); }
  TVM_FFI_HIDDEN std::vector<T> to_vector() const { return std::vector<T>(begin(), end()); }

 private:
  TVM_FFI_HIDDEN ListObj* Obj() const noexcept {
    return static_cast<ListObj*>(const_cast<Object*>(ObjectRef::get()));
  }
  TVM_FFI_HIDDEN size_t CheckIndex(int64_t i) const {
    if (TVM_FFI_UNLIKELY(i < 0 || static_cast<size_t>(i) >= size())) {
      TVM_FFI_THROW(IndexError) << "List index " << i << " out of range for size " << size();
    }
    return static_cast<size_t>(i);
  }
};

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace details {

template <typename T>
struct HasOwnTraits<List<T>> : std::true_type {};

template <typename T>
struct TypeTraits<List<T>> {
  static constexpr bool kEnabled = TypeTraits<T>::kEnabled;
  static void CopyToView(const List<T>& v, TVMFFIAny* out) noexcept {
    ObjectHeaderToAny(ObjectUnsafe::HeaderOf(v), out);
  }
  static void MoveToAny(List<T> v, TVMFFIAny* out) noexcept {
    ObjectHeaderToAny(ObjectUnsafe::MoveRefToOwned(&v), out);
  }
  // A reference: never converted into a copy, whose changes the caller would not see.
  static Maybe<List<T>> TryFromView(const TVMFFIAny& v) {
    if (v.type_index != kTVMFFIList) return std::nullopt;
    const auto* src = static_cast<const ListObj*>(ObjectUnsafe::FromHeader(v.v_obj));
    for (const Any* e = src->begin(); e != src->end(); ++e) {
      if (!ConvertsToItself<T>(AnyUnsafe::View(*e))) return std::nullopt;
    }
    return ObjectUnsafe::RefFromBorrowed<List<T>>(v.v_obj);
  }
  static void TypeName(std::string* out) {
    *out += "List[";
    TypeTraits<T>::TypeName(out);
    *out += "]";
  }
  static void Schema(std::string* out) {
    *out += R"({"type":"ffi.List","args":[)";
    TypeTraits<T>::Schema(out);
    *out += "]}";
  }
};

}  // namespace details
TVM_FFI_DETAIL_HIDDEN_END

}  // namespace ffi
}  // namespace tvm

#endif  // TVM_FFI_CONTAINER_LIST_H_
