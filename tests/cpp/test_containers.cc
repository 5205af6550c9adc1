// Map and Dict (over detail/map_layout.h), List, WeakObjectPtr and Downcast.
#include <tvm/ffi/container/dict.h>
#include <tvm/ffi/container/list.h>
#include <tvm/ffi/container/map.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "testing.h"

using namespace tvm::ffi;  // NOLINT

namespace {
struct CounterObj : Object {
  int64_t value = 0;
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("testing.Counter", CounterObj, Object);
};
String Key(int i) { return String("key number " + std::to_string(i)); }  // not a small string
}  // namespace

TEST(map_lookup_and_insertion_order) {
  Map<String, int64_t> m{{"a", 1}, {"bb", 2}};
  EXPECT_EQ(m.size(), 2u);
  EXPECT_EQ(m["bb"], 2);
  EXPECT_EQ(m.count("zz"), 0u);
  EXPECT_TRUE(!m.Get("zz").has_value() && m.Get("a").value() == 1);
  for (int i = 0; i < 20; ++i) m.Set(Key(i), i);  // grows past the small layout
  EXPECT_EQ(m.size(), 22u);
  EXPECT_EQ(m.at(Key(13)), 13);
  std::vector<std::string> order;
  for (auto kv : m) order.push_back(std::string(kv.first));
  EXPECT_EQ(order.front(), std::string("a"));
  EXPECT_EQ(order.back(), std::string(Key(19)));
  EXPECT_EQ(m.erase(Key(0)), 1u);
  EXPECT_EQ(m.erase(Key(0)), 0u);
  EXPECT_EQ(m.size(), 21u);
}

TEST(map_is_copied_on_write) {
  Map<String, int64_t> a{{"x", 1}};
  Map<String, int64_t> b = a;
  b.Set("y", 2);
  EXPECT_EQ(a.size(), 1u);
  EXPECT_EQ(b.size(), 2u);
  EXPECT_TRUE(!a.same_as(b));
  Map<String, int64_t> c = b;
  c.erase("x");
  EXPECT_EQ(b.size(), 2u);
}

TEST(map_errors_name_the_key) {
  Map<String, int64_t> m{{"a", 1}};
  EXPECT_ERROR(m.at("missing"), "KeyError", "key 'missing' is not in the Map");
  Map<int64_t, int64_t> ints{{1, 2}};
  EXPECT_ERROR(ints.at(7), "KeyError", "key 7 is not in the Map");
}

TEST(map_through_any) {
  Map<String, int64_t> m{{"a", 1}, {"b", 2}};
  Any any = m;
  Map<String, Any> loose = any.cast<Map<String, Any>>();
  EXPECT_TRUE(loose.same_as(m));  // every entry converts to itself: shared, not copied
  EXPECT_EQ(loose["b"].cast<int64_t>(), 2);
  using StrMap = Map<String, String>;
  EXPECT_ERROR(any.cast<StrMap>(), "TypeError", "cannot convert int to str");
  std::unordered_map<String, int64_t> std_map{{"k", 3}};
  Map<String, int64_t> from_std = std_map;
  EXPECT_EQ(from_std["k"], 3);
}

TEST(dict_has_reference_semantics) {
  Dict<int64_t, String> d;
  Dict<int64_t, String> alias = d;
  alias.Set(5, "five");
  EXPECT_EQ(d.size(), 1u);
  EXPECT_EQ(d[5], "five");
  for (int i = 0; i < 10; ++i) d.Set(i, Key(i));
  EXPECT_EQ(alias.size(), 10u);  // 5 was replaced
  EXPECT_TRUE(alias.same_as(d));
  alias.clear();
  EXPECT_TRUE(d.empty());
  EXPECT_ERROR(d.at(1), "KeyError", "key 1 is not in the Dict");
  Any any = d;
  using IntDict = Dict<int64_t, String>;
  EXPECT_TRUE(any.cast<IntDict>().same_as(d));
}

TEST(list_has_reference_semantics) {
  List<int64_t> l{1, 2, 3};
  List<int64_t> alias = l;
  for (int i = 0; i < 20; ++i) alias.push_back(i);
  EXPECT_EQ(l.size(), 23u);
  EXPECT_EQ(l[22], 19);
  l.Set(0, 100);
  EXPECT_EQ(alias.front(), 100);
  alias.pop_back();
  EXPECT_EQ(l.back(), 18);
  EXPECT_ERROR(l[99], "IndexError", "List index 99 out of range for size 22");
  l.clear();
  EXPECT_ERROR(alias.pop_back(), "IndexError", "pop_back on an empty List");
  Any any = l;
  EXPECT_TRUE(any.cast<List<int64_t>>().same_as(l));
}

TEST(weak_pointer_follows_the_object) {
  ObjectPtr<CounterObj> strong = make_object<CounterObj>();
  WeakObjectPtr<CounterObj> weak(strong);
  WeakObjectPtr<CounterObj> copy = weak;
  EXPECT_TRUE(!weak.expired());
  EXPECT_TRUE(weak.lock().get() == strong.get());
  EXPECT_EQ(strong.use_count(), 1);  // the lock above was released
  strong.reset();
  EXPECT_TRUE(weak.expired() && copy.expired());
  EXPECT_TRUE(weak.lock() == nullptr);
  EXPECT_TRUE(WeakObjectPtr<CounterObj>().lock() == nullptr);
}

TEST(downcast_checks_the_type) {
  Map<String, int64_t> m{{"a", 1}};
  ObjectRef ref = m;
  using StrIntMap = Map<String, int64_t>;
  EXPECT_EQ(Downcast<StrIntMap>(ref).size(), 1u);
  EXPECT_ERROR(Downcast<List<int64_t>>(ref), "TypeError", "Downcast from ffi.Map to ffi.List failed");
  EXPECT_ERROR(Downcast<List<int64_t>>(ObjectRef()), "TypeError",
               "Downcast from None to ffi.List failed");
}
