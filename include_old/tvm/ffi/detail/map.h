/*
 * The implementation behind tvm/ffi/container/map.h (the public header).
 *
 * tvm::ffi::Map<K, V>: a mapping. As a parameter it accepts a Python dict; as a result it
 * comes back as a dict. Entries keep insertion order (as Python's dict does); lookups are
 * linear, which is the fast choice for the handful of options a kernel wrapper receives.
 */
#ifndef TVM_FFI_DETAIL_MAP_H_
#define TVM_FFI_DETAIL_MAP_H_

#include <tvm/ffi/base.h>
#include <tvm/ffi/detail/error.h>
#include <tvm/ffi/detail/optional.h>

#include <cstddef>
#include <initializer_list>
#include <utility>
#include <vector>

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {

template <typename K, typename V>
class Map {
 public:
  using key_type = K;
  using mapped_type = V;
  using value_type = std::pair<K, V>;
  using iterator = typename std::vector<value_type>::const_iterator;
  using const_iterator = iterator;

  Map() = default;
  Map(std::initializer_list<value_type> entries) {
    for (const value_type& e : entries) Set(e.first, e.second);
  }

  size_t size() const noexcept { return entries_.size(); }
  bool empty() const noexcept { return entries_.empty(); }
  iterator begin() const noexcept { return entries_.begin(); }
  iterator end() const noexcept { return entries_.end(); }

  template <typename Q>
  iterator find(const Q& key) const {
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first == key) return it;
    }
    return entries_.end();
  }
  template <typename Q>
  size_t count(const Q& key) const {
    return find(key) == end() ? 0 : 1;
  }
  template <typename Q>
  bool contains(const Q& key) const {
    return find(key) != end();
  }
  /*! \brief The value for `key`; KeyError when absent. */
  template <typename Q>
  const V& at(const Q& key) const {
    iterator it = find(key);
    if (TVM_FFI_UNLIKELY(it == end())) {
      TVM_FFI_THROW(KeyError) << "key not found in Map";
    }
    return it->second;
  }
  template <typename Q>
  const V& operator[](const Q& key) const {
    return at(key);
  }
  /*! \brief The value for `key`, or None. */
  template <typename Q>
  Optional<V> Get(const Q& key) const {
    iterator it = find(key);
    if (it == end()) return std::nullopt;
    return it->second;
  }
  /*! \brief Inserts or replaces. */
  void Set(const K& key, V value) {
    for (value_type& e : entries_) {
      if (e.first == key) {
        e.second = std::move(value);
        return;
      }
    }
    entries_.emplace_back(key, std::move(value));
  }
  template <typename Q>
  void erase(const Q& key) {
    iterator it = find(key);
    if (it != end()) entries_.erase(it);
  }
  void clear() noexcept { entries_.clear(); }

 private:
  std::vector<value_type> entries_;
};

}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_DETAIL_MAP_H_
