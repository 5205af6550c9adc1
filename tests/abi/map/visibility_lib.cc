// A library that uses every entry of map_layout.h and exports one function of its own: none of
// the header's inline code may be exported (it would bind to another library's copy).
#include <tvm/ffi/detail/map_layout.h>

namespace md = tvm::ffi::details;

extern "C" __attribute__((visibility("default"))) int visibility_lib_entry(TVMFFIAny* key) {
  TVMFFIObject* map = nullptr;
  TVMFFIObject* copy = nullptr;
  TVMFFIAny* value = nullptr;
  uint64_t hash = 0, pos = 0;
  bool equal = false, erased = false;
  if (md::MapNew(kTVMFFIDict, 0, &map) != 0 || md::MapSet(&map, key, key) != 0) return -1;
  if (md::MapLookup(map, key, &value) != 0 || md::MapFind(map, key, &pos) != 0) return -1;
  if (md::MapKeyHash(key, &hash) != 0 || md::MapKeyEqual(key, key, &equal) != 0) return -1;
  if (md::MapCopy(map, kTVMFFIMap, &copy) != 0) return -1;
  for (pos = md::MapIterBegin(copy); pos != md::MapIterEnd(copy);
       pos = md::MapIterNext(copy, pos)) {
    md::MapIterItem(copy, pos);
  }
  pos = md::MapIterPrev(copy, md::MapIterEnd(copy));
  if (md::MapErase(&map, key, &erased) != 0) return -1;
  md::MapClear(copy);
  TVMFFIObjectDecRef(copy);
  TVMFFIObjectDecRef(map);
  return int(md::MapSize(map) + hash % 2);
}
