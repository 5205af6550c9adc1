/* Prints the sizes, offsets and enum values of the C ABI that inline code on either side
 * reads; tests/cpp/test_abi_layout.py compares them with abi_layout_facts.txt. */
#include <stdio.h>
#include <stddef.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>
#define S(t) printf(#t " %zu\n", sizeof(t));
#define O(t,f) printf(#t "." #f " %zu\n", offsetof(t,f));
#define E(e) printf(#e " %d\n", (int)e);
int main(){S(TVMFFIAny)S(TVMFFIObject)S(TVMFFIVersion)S(TVMFFIByteArray)S(TVMFFIShapeCell)S(TVMFFISeqCell)S(TVMFFIErrorCell)S(TVMFFIFunctionCell)S(TVMFFIOpaqueObjectCell)S(TVMFFIObjectAllocHeader)S(TVMFFICustomAllocator)S(TVMFFIFieldInfo)S(TVMFFIMethodInfo)S(TVMFFITypeMetadata)S(TVMFFITypeAttrColumn)S(TVMFFITypeInfo)S(DLTensor)S(DLManagedTensorVersioned)S(DLPackExchangeAPI)
O(TVMFFIAny,small_str_len)O(TVMFFIAny,v_bytes)O(TVMFFIObject,deleter)O(TVMFFIErrorCell,cause_chain)O(TVMFFIErrorCell,extra_context)O(TVMFFIFieldInfo,flags)O(TVMFFIFieldInfo,getter)O(TVMFFIFieldInfo,setter)O(TVMFFIFieldInfo,field_static_type_index)O(TVMFFIMethodInfo,method)O(TVMFFITypeMetadata,creator)O(TVMFFITypeMetadata,total_size)O(TVMFFITypeMetadata,structural_eq_hash_kind)O(TVMFFITypeInfo,type_ancestors)O(TVMFFITypeInfo,type_key_hash)O(TVMFFITypeInfo,num_methods)O(TVMFFITypeInfo,fields)O(TVMFFITypeInfo,methods)O(TVMFFICustomAllocator,context)O(TVMFFITypeAttrColumn,begin_index)
E(kTVMFFIAny)E(kTVMFFIUnchanged)E(kTVMFFISmallBytes)E(kTVMFFIStaticObjectEnd)E(kTVMFFIBigInt)E(kTVMFFIDict)E(kTVMFFIDynObjectBegin)E(kTVMFFIObjectDeleterFlagBitMaskBoth)E(kTVMFFIFieldFlagBitMaskSEqHashDefSimple)E(kTVMFFIFieldFlagBitSetterIsFunctionObj)E(kTVMFFISEqHashKindUniqueInstance)E(kTVMFFIDefRegionKindSimple)E(kTVMFFIBacktraceUpdateModeAppend)E(TVM_FFI_VERSION_PATCH)E(DLPACK_MINOR_VERSION)
return 0;}
