/*
 * Storage behind String and Bytes: one immutable, reference-counted heap block holding the
 * size and the characters. Copies share the block, so passing strings around is cheap.
 */
#ifndef TVM_FFI_DETAIL_SHARED_CHARS_H_
#define TVM_FFI_DETAIL_SHARED_CHARS_H_

#include <tvm/ffi/base.h>
#include <tvm/ffi/detail/ref_count.h>

#include <cstddef>
#include <cstring>
#include <new>
#include <string_view>
#include <type_traits>
#include <utility>

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace detail {

class SharedChars {
 public:
  SharedChars() noexcept = default;
  SharedChars(const char* data, size_t size) {
    if (size == 0) return;  // the empty value allocates nothing
    void* mem = ::operator new(sizeof(Block) + size + 1);
    block_ = new (mem) Block{{1}, size};
    std::memcpy(block_->chars(), data, size);
    // Always NUL-terminated, so String::c_str() is free; the NUL is not part of size().
    block_->chars()[size] = '\0';
  }
  SharedChars(const SharedChars& other) noexcept : block_(other.block_) {
    if (block_ != nullptr) block_->refs.Increment();
  }
  SharedChars(SharedChars&& other) noexcept : block_(other.block_) { other.block_ = nullptr; }
  SharedChars& operator=(SharedChars other) noexcept {
    std::swap(block_, other.block_);
    return *this;
  }
  ~SharedChars() {
    if (block_ != nullptr && block_->refs.Decrement()) {
      block_->~Block();
      ::operator delete(block_);
    }
  }

  const char* data() const noexcept { return block_ != nullptr ? block_->chars() : ""; }
  size_t size() const noexcept { return block_ != nullptr ? block_->size : 0; }
  std::string_view view() const noexcept { return std::string_view(data(), size()); }

 private:
  struct Block {
    RefCount<size_t> refs;
    size_t size;
    char* chars() noexcept { return reinterpret_cast<char*>(this + 1); }
  };
  Block* block_ = nullptr;
};

/*! \brief Enables the mixed comparisons of String/Bytes with anything viewable as chars. */
template <typename T, typename Self>
using EnableIfComparableChars =
    std::enable_if_t<std::is_convertible_v<const T&, std::string_view> && !std::is_same_v<T, Self>,
                     int>;

}  // namespace detail
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_DETAIL_SHARED_CHARS_H_
