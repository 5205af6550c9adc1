"""Registered fields of an object type (reflection's def_ro/def_rw) as Python attributes:
reading through the field's getter, assigning through its setter (the value converted to the
field's type, as under apache-tvm-ffi), and refusing to assign a def_ro field."""

from __future__ import annotations

import numpy as np
import pytest

import tvm_ffi

SOURCE = r"""
#include <tvm/ffi/any.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/object.h>
#include <tvm/ffi/reflection/registry.h>
#include <tvm/ffi/string.h>

#include <cstdint>
#include <string>

namespace ffi = tvm::ffi;

struct ItemObj : public ffi::Object {
  int64_t id;
  int64_t count = 0;
  double scale = 1.0;
  ffi::String label;
  ffi::Array<int64_t> dims;
  ffi::Any any;
  ItemObj(int64_t id, ffi::String label) : id(id), label(std::move(label)) {}
  // What C++ sees, to tell an assignment that reached the object from one that did not.
  ffi::String Describe() const {
    std::string out = std::string(label) + ":" + std::to_string(count) + "x" +
                      std::to_string(scale) + "[";
    for (int64_t d : dims) out += std::to_string(d) + ",";
    return out + "]";
  }
  static constexpr bool _type_mutable = true;
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("test.fields.Item", ItemObj, ffi::Object);
};

TVM_FFI_STATIC_INIT_BLOCK() {
  namespace refl = tvm::ffi::reflection;
  refl::ObjectDef<ItemObj>()
      .def(refl::init<int64_t, ffi::String>(), "__init__")
      .def("describe", &ItemObj::Describe)
      .def_ro("id", &ItemObj::id)
      .def_rw("count", &ItemObj::count)
      .def_rw("scale", &ItemObj::scale)
      .def_rw("label", &ItemObj::label)
      .def_rw("dims", &ItemObj::dims)
      .def_rw("any", &ItemObj::any);
  // A field whose setter is a Function (kTVMFFIFieldFlagBitSetterIsFunctionObj), as apache's
  // Python-defined fields register it: `doubled` stores twice the value into `count`.
  auto item = ffi::make_object<ItemObj>(0, "");
  const char* base = reinterpret_cast<const char*>(static_cast<const ffi::Object*>(item.get()));
  ffi::Function setter = ffi::Function::FromTyped([](void* field, int64_t v) {
    *static_cast<int64_t*>(field) = 2 * v;
  });
  TVMFFIFieldInfo info{};
  info.name = TVMFFIByteArray{"doubled", 7};
  info.flags = kTVMFFIFieldFlagBitMaskWritable | kTVMFFIFieldFlagBitSetterIsFunctionObj;
  info.size = sizeof(int64_t);
  info.alignment = alignof(int64_t);
  info.offset = reinterpret_cast<const char*>(&item->count) - base;
  info.getter = [](void* field, TVMFFIAny* out) {
    out->type_index = kTVMFFIInt;
    out->zero_padding = 0;
    out->v_int64 = *static_cast<int64_t*>(field);
    return 0;
  };
  info.setter = tvm::ffi::details::ObjectUnsafe::HeaderOf(setter);
  info.default_value_or_factory.type_index = kTVMFFINone;
  info.field_static_type_index = kTVMFFIAny;
  TVMFFITypeRegisterField(ItemObj::RuntimeTypeIndex(), &info);
}
"""


@pytest.fixture(scope="module")
def item_cls(build_library):
    tvm_ffi.load_module(build_library("fields", SOURCE))

    @tvm_ffi.register_object("test.fields.Item")
    class Item(tvm_ffi.Object):
        __slots__ = ("__dict__",)  # as sglang's classes: a per-instance dict of its own

    return Item


def test_def_rw_fields_assign_through_the_setter(item_cls):
    item = item_cls(7, "a")
    item.count = 3
    item.scale = 2  # converted to the field's type: a double
    item.label = "b"
    item.dims = (4, 5)
    assert (item.count, item.scale, item.label, list(item.dims)) == (3, 2.0, "b", [4, 5])
    assert type(item.scale) is float
    assert item.describe() == "b:3x2.000000[4,5,]"  # C++ sees the new values
    assert "count" not in vars(item)  # nothing landed in the Python object's own dict
    item.note = "python side"  # names that are no field stay Python attributes
    assert item.note == "python side" and vars(item) == {"note": "python side"}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("count", "x", "test.fields.Item.count must be int, not str"),
        ("count", 1.5, "test.fields.Item.count must be int, not float"),
        ("label", 1, "test.fields.Item.label must be str, not int"),
        ("scale", None, "test.fields.Item.scale must be float, not None"),
        ("dims", [1, "x"], "test.fields.Item.dims[1] must be int, not str"),
    ],
)
def test_a_wrong_type_names_the_field_and_its_type(item_cls, field, value, message):
    item = item_cls(1, "keep")
    item.count, item.dims = 2, [3]
    with pytest.raises(TypeError) as info:
        setattr(item, field, value)
    assert str(info.value) == message
    assert item.describe() == "keep:2x1.000000[3,]"  # unchanged


def test_an_unconvertible_value_names_the_field(item_cls):
    with pytest.raises(OverflowError) as info:
        item_cls(1, "a").count = 2**64
    assert str(info.value) == f"test.fields.Item.count: int {2**64} does not fit in int64"


def test_a_function_setter_takes_the_field_address_and_the_value(item_cls):
    item = item_cls(7, "a")
    item.doubled = 21
    assert item.count == 42 and item.doubled == 42
    with pytest.raises(TypeError) as info:
        item.doubled = "x"
    # Another setter's message follows the field's name.
    assert str(info.value) == "test.fields.Item.doubled: function() argument 2 must be int, not str"
    assert item.count == 42


def test_def_ro_fields_refuse_assignment(item_cls):
    item = item_cls(7, "a")
    with pytest.raises(AttributeError) as info:
        item.id = 8
    assert str(info.value) == "test.fields.Item.id is read-only (registered with def_ro)"
    assert item.id == 7 and "id" not in vars(item)


def test_fields_cannot_be_deleted(item_cls):
    item = item_cls(7, "a")
    with pytest.raises(AttributeError) as info:
        del item.count
    assert str(info.value) == "test.fields.Item.count is a registered field and cannot be deleted"


def test_a_tensor_kept_by_a_field_owns_its_memory(item_cls):
    item = item_cls(1, "h")
    data = np.random.default_rng(0).standard_normal(5).astype(np.float32)
    expected = data.copy()
    item.any = data  # borrowed for the assignment: the field keeps the tensor alive
    del data
    np.testing.assert_array_equal(np.from_dlpack(item.any), expected)
