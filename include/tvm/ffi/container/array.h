/*
 * tvm::ffi::Array<T>: an immutable-looking sequence with copy-on-write. Its object (ArrayObj,
 * type index kTVMFFIArray) is the header, the TVMFFISeqCell at offset 24, and the elements
 * (TVMFFIAny, 16 bytes each) inline from offset 56. Mutators copy the object first unless
 * this handle is its only owner, so an array a caller passed in is never changed under it.
 */
#ifndef TVM_FFI_CONTAINER_ARRAY_H_
#define TVM_FFI_CONTAINER_ARRAY_H_

#include <tvm/ffi/any.h>
#include <tvm/ffi/object.h>
#include <tvm/ffi/optional.h>

#include <cstring>
#include <initializer_list>
#include <iterator>
#include <vector>

// compat: apache-tvm-ffi. The standard headers its array.h brings along, which code written
// for it names without including them (tests/cpp/test_apache_std_headers.py).
#include <algorithm>

namespace tvm {
namespace ffi {

/*! \brief The array object; elements are owned TVMFFIAny values at `data`. */
class TVM_FFI_HIDDEN_MEMBERS ArrayObj : public Object, protected TVMFFISeqCell {
 public:
  TVM_FFI_DETAIL_DECLARE_STATIC_OBJECT_INFO("ffi.Array", ArrayObj, Object, kTVMFFIArray);
  static constexpr bool _type_final = true;

  TVM_FFI_HIDDEN ArrayObj() noexcept : TVMFFISeqCell{nullptr, 0, 0, nullptr} {}
  TVM_FFI_HIDDEN ~ArrayObj() {
    for (int64_t i = 0; i < size; ++i) Elements()[i].~Any();
  }
  TVM_FFI_HIDDEN size_t size_() const noexcept { return static_cast<size_t>(size); }  // NOLINT
  TVM_FFI_HIDDEN const Any* begin() const noexcept { return Elements(); }
  TVM_FFI_HIDDEN const Any* end() const noexcept { return Elements() + size; }
  TVM_FFI_HIDDEN const Any& operator[](size_t i) const noexcept { return Elements()[i]; }

  /*! \brief An empty array with room for `capacity` elements. */
  TVM_FFI_HIDDEN static ObjectPtr<ArrayObj> Empty(int64_t capacity) {
    ObjectPtr<ArrayObj> obj =
        make_inplace_array_object<ArrayObj, Any>(static_cast<size_t>(capacity));
    obj->data = reinterpret_cast<char*>(obj.get()) + sizeof(ArrayObj);
    obj->capacity = capacity;
    return obj;
  }
  /*! \brief Appends; the caller made sure there is room. */
  TVM_FFI_HIDDEN void EmplaceBack(Any value) noexcept {
    new (Elements() + size) Any(std::move(value));
    ++size;
  }
  TVM_FFI_HIDDEN Any* MutableElements() noexcept { return Elements(); }
  TVM_FFI_HIDDEN void PopBack() noexcept { Elements()[--size].~Any(); }
  TVM_FFI_HIDDEN int64_t Capacity() const noexcept { return capacity; }

 private:
  TVM_FFI_HIDDEN Any* Elements() const noexcept { return static_cast<Any*>(data); }
};
static_assert(sizeof(ArrayObj) == 56, "ArrayObj: elements start at offset 56");

template <typename T>
class TVM_FFI_HIDDEN_MEMBERS Array : public ObjectRef {
 public:
  using value_type = T;
  using ContainerType = ArrayObj;
  static constexpr bool _type_is_nullable = false;

  /*! \brief Reads elements as T (a copy each); an iterator over values, not references. */
  class TVM_FFI_HIDDEN_MEMBERS iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = T;
    TVM_FFI_HIDDEN explicit iterator(const Any* p) noexcept : p_(p) {}
    TVM_FFI_HIDDEN T operator*() const { return p_->template cast<T>(); }
    TVM_FFI_HIDDEN iterator& operator++() noexcept { return ++p_, *this; }
    TVM_FFI_HIDDEN iterator& operator--() noexcept { return --p_, *this; }
    TVM_FFI_HIDDEN iterator operator+(difference_type n) const noexcept { return iterator(p_ + n); }
    TVM_FFI_HIDDEN difference_type operator-(const iterator& o) const noexcept { return p_ - o.p_; }
    TVM_FFI_HIDDEN bool operator==(const iterator& o) const noexcept { return p_ == o.p_; }
    TVM_FFI_HIDDEN bool operator!=(const iterator& o) const noexcept { return p_ != o.p_; }

   private:
    const Any* p_;
  };
  using const_iterator = iterator;

  TVM_FFI_HIDDEN Array() : ObjectRef(ArrayObj::Empty(0)) {}
  TVM_FFI_HIDDEN explicit Array(ObjectPtr<ArrayObj> obj) noexcept : ObjectRef(std::move(obj)) {}
  TVM_FFI_HIDDEN explicit Array(UnsafeInit tag) noexcept : ObjectRef(tag) {}
  TVM_FFI_HIDDEN Array(std::initializer_list<T> values) : Array(values.begin(), values.end()) {}
  TVM_FFI_HIDDEN Array(const std::vector<T>& values)  // NOLINT: implicit, as apache-tvm-ffi's
      : Array(values.begin(), values.end()) {}
  TVM_FFI_HIDDEN Array(size_t n, const T& value) : ObjectRef(ArrayObj::Empty(n)) {
    for (size_t i = 0; i < n; ++i) Obj()->EmplaceBack(Any(value));
  }
  template <typename It, typename = decltype(*std::declval<It>())>
  TVM_FFI_HIDDEN Array(It first, It last)
      : ObjectRef(ArrayObj::Empty(static_cast<int64_t>(std::distance(first, last)))) {
    for (; first != last; ++first) Obj()->EmplaceBack(Any(T(*first)));
  }
  TVM_FFI_DETAIL_COPY_MOVE_HIDDEN(Array);
  TVM_FFI_HIDDEN ~Array() = default;

  TVM_FFI_HIDDEN size_t size() const noexcept { return Obj() == nullptr ? 0 : Obj()->size_(); }
  TVM_FFI_HIDDEN bool empty() const noexcept { return size() == 0; }
  TVM_FFI_HIDDEN T operator[](int64_t i) const {
    return (*Obj())[CheckIndex(i)].template cast<T>();
  }
  TVM_FFI_HIDDEN T at(int64_t i) const { return operator[](i); }
  TVM_FFI_HIDDEN T front() const { return operator[](0); }
  TVM_FFI_HIDDEN T back() const { return operator[](static_cast<int64_t>(size()) - 1); }
  TVM_FFI_HIDDEN iterator begin() const noexcept { return iterator(Obj()->begin()); }
  TVM_FFI_HIDDEN iterator end() const noexcept { return iterator(Obj()->end()); }
  TVM_FFI_HIDDEN const ArrayObj* get() const noexcept { return Obj(); }
  TVM_FFI_HIDDEN const ArrayObj* operator->() const noexcept { return Obj(); }

  TVM_FFI_HIDDEN void push_back(const T& value) { Reserve(size() + 1)->EmplaceBack(Any(value)); }
  template <typename... Args>
  TVM_FFI_HIDDEN void emplace_back(Args&&... args) {
    push_back(T(std::forward<Args>(args)...));
  }
  TVM_FFI_HIDDEN void pop_back() {
    if (TVM_FFI_UNLIKELY(empty())) TVM_FFI_THROW(IndexError) << "pop_back on an empty Array";
    CopyOnWrite()->PopBack();
  }
  TVM_FFI_HIDDEN void Set(int64_t i, const T& value) {
    const size_t at = CheckIndex(i);
    CopyOnWrite()->MutableElements()[at] = Any(value);
  }
  TVM_FFI_HIDDEN void clear() { data_ = ArrayObj::Empty(0); }
  TVM_FFI_HIDDEN void reserve(size_t n) { Reserve(n); }
  TVM_FFI_HIDDEN std::vector<T> to_vector() const { return std::vector<T>(begin(), end()); }

 private:
  TVM_FFI_HIDDEN ArrayObj* Obj() const noexcept {
    return static_cast<ArrayObj*>(const_cast<Object*>(ObjectRef::get()));
  }
  TVM_FFI_HIDDEN size_t CheckIndex(int64_t i) const {
    if (TVM_FFI_UNLIKELY(i < 0 || static_cast<size_t>(i) >= size())) {
      TVM_FFI_THROW(IndexError) << "Array index " << i << " out of range for size " << size();
    }
    return static_cast<size_t>(i);
  }
  /*! \brief This handle's own object with room for n elements (a copy when shared). */
  TVM_FFI_HIDDEN ArrayObj* Reserve(size_t n) {
    ArrayObj* obj = Obj();
    if (obj->unique() && static_cast<int64_t>(n) <= obj->Capacity()) return obj;
    int64_t capacity = obj->Capacity();
    if (static_cast<int64_t>(n) > capacity) {
      capacity = capacity * 2 > static_cast<int64_t>(n) ? capacity * 2 : static_cast<int64_t>(n);
    }
    ObjectPtr<ArrayObj> copy = ArrayObj::Empty(capacity);
    if (obj->unique()) {  // nobody else sees the old object: move the elements over
      for (size_t i = 0; i < obj->size_(); ++i) {
        copy->EmplaceBack(std::move(obj->MutableElements()[i]));
      }
    } else {
      for (const Any& v : *obj) copy->EmplaceBack(v);
    }
    data_ = std::move(copy);
    return Obj();
  }
  TVM_FFI_HIDDEN ArrayObj* CopyOnWrite() { return Reserve(size()); }
};

}  // namespace ffi
}  // namespace tvm

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

template <typename T>
struct HasOwnTraits<Array<T>> : std::true_type {};

/*! \brief Whether converting v to T and back gives v itself (the array can be shared). A
 *  probe: a value that does not convert is false here, and the element-wise conversion after
 *  it raises the error with the whole path ("[1][2]", where the probe knows only "[2]"). */
template <typename T>
bool ConvertsToItself(const TVMFFIAny& v) {
  if constexpr (std::is_same_v<T, Any>) {
    return true;
  } else {
    Maybe<T> value = [&v]() -> Maybe<T> {
      try {
        return TypeTraits<T>::TryFromView(v);
      } catch (const ConversionError&) {
        return std::nullopt;
      }
    }();
    if (!value.has_value()) return false;
    TVMFFIAny back;
    TypeTraits<T>::MoveToAny(std::move(*value), &back);
    const bool same = back.type_index == v.type_index && back.v_uint64 == v.v_uint64;
    if (IsObjectIndex(back.type_index)) DecRef(back.v_obj);
    return same;
  }
}

/*! \brief Converts element i, naming it in the error: "[1]" before any inner path. */
template <typename T>
T ConvertElement(const TVMFFIAny& v, size_t i) {
  try {
    return ConvertFromView<T>(v);
  } catch (ConversionError& e) {
    e.path = Concat({"[", DecimalText(i), "]", e.path});
    throw;
  }
}

template <typename T>
struct TypeTraits<Array<T>> {
  static constexpr bool kEnabled = TypeTraits<T>::kEnabled;
  static void CopyToView(const Array<T>& v, TVMFFIAny* out) noexcept {
    ObjectHeaderToAny(ObjectUnsafe::HeaderOf(v), out);
  }
  static void MoveToAny(Array<T> v, TVMFFIAny* out) noexcept {
    ObjectHeaderToAny(ObjectUnsafe::MoveRefToOwned(&v), out);
  }
  static Maybe<Array<T>> TryFromView(const TVMFFIAny& v) {
    if (v.type_index != kTVMFFIArray) return std::nullopt;
    const auto* src = static_cast<const ArrayObj*>(ObjectUnsafe::FromHeader(v.v_obj));
    bool shareable = true;
    for (const Any& e : *src) shareable = shareable && ConvertsToItself<T>(AnyUnsafe::View(e));
    if (shareable) return ObjectUnsafe::RefFromBorrowed<Array<T>>(v.v_obj);
    ObjectPtr<ArrayObj> copy = ArrayObj::Empty(static_cast<int64_t>(src->size_()));
    for (size_t i = 0; i < src->size_(); ++i) {
      copy->EmplaceBack(Any(ConvertElement<T>(AnyUnsafe::View((*src)[i]), i)));
    }
    return Array<T>(std::move(copy));
  }
  static void TypeName(std::string* out) {
    *out += "Array[";
    TypeTraits<T>::TypeName(out);
    *out += "]";
  }
  static void Schema(std::string* out) {
    *out += R"({"type":"ffi.Array","args":[)";
    TypeTraits<T>::Schema(out);
    *out += "]}";
  }
};

}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_CONTAINER_ARRAY_H_
