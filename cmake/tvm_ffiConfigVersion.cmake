# Version check for find_package(tvm_ffi <version> CONFIG).
#
# The version has one source, python/tvm_ffi/_version.py. A source checkout and a
# wheel carry that file at a known place relative to this one; `cmake --install`
# writes the value into tvm_ffiVersionValue.cmake beside this file instead.
#
# Compatibility follows semantic versioning: same major version and not older than
# requested; while the major version is 0, the minor version must match as well.

set(PACKAGE_VERSION "")
if(EXISTS "${CMAKE_CURRENT_LIST_DIR}/tvm_ffiVersionValue.cmake")
  include("${CMAKE_CURRENT_LIST_DIR}/tvm_ffiVersionValue.cmake")
  set(PACKAGE_VERSION "${TVM_FFI_PACKAGE_VERSION}")
  unset(TVM_FFI_PACKAGE_VERSION)
else()
  foreach(_tvm_ffi_version_py
          "${CMAKE_CURRENT_LIST_DIR}/../python/tvm_ffi/_version.py"  # source checkout
          "${CMAKE_CURRENT_LIST_DIR}/../../../_version.py")          # wheel
    if(EXISTS "${_tvm_ffi_version_py}")
      file(STRINGS "${_tvm_ffi_version_py}" _tvm_ffi_version_line
           REGEX "^__version__ *= *['\"][0-9]")
      # "0.1.0rc1" or "0.1.0.dev3" still compares as 0.1.0.
      string(REGEX MATCH "[0-9]+(\\.[0-9]+)*" PACKAGE_VERSION "${_tvm_ffi_version_line}")
      unset(_tvm_ffi_version_line)
      break()
    endif()
  endforeach()
  unset(_tvm_ffi_version_py)
endif()

if(NOT PACKAGE_VERSION)
  # No version known: say so instead of claiming compatibility with anything.
  set(PACKAGE_VERSION "0")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
  return()
endif()

string(REGEX MATCHALL "[0-9]+" _tvm_ffi_parts "${PACKAGE_VERSION}")
list(GET _tvm_ffi_parts 0 _tvm_ffi_major)
list(LENGTH _tvm_ffi_parts _tvm_ffi_count)
if(_tvm_ffi_count GREATER 1)
  list(GET _tvm_ffi_parts 1 _tvm_ffi_minor)
else()
  set(_tvm_ffi_minor 0)
endif()

set(PACKAGE_VERSION_COMPATIBLE FALSE)
set(PACKAGE_VERSION_EXACT FALSE)
if(PACKAGE_FIND_VERSION_RANGE)
  # find_package(tvm_ffi 0.1...0.3): inside the range, lower end included, upper end
  # as the range says.
  if(PACKAGE_VERSION VERSION_GREATER_EQUAL PACKAGE_FIND_VERSION_MIN
     AND ((PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL "INCLUDE"
           AND PACKAGE_VERSION VERSION_LESS_EQUAL PACKAGE_FIND_VERSION_MAX)
          OR (PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL "EXCLUDE"
              AND PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION_MAX)))
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  endif()
elseif(NOT DEFINED PACKAGE_FIND_VERSION OR PACKAGE_FIND_VERSION STREQUAL "")
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
else()
  # Compatible when the request names our major version (and, for 0.x, our minor
  # version) and is not newer than us.
  if(PACKAGE_FIND_VERSION_MAJOR EQUAL _tvm_ffi_major
     AND NOT PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION
     AND (NOT _tvm_ffi_major EQUAL 0 OR PACKAGE_FIND_VERSION_MINOR EQUAL _tvm_ffi_minor))
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  endif()
  if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()

unset(_tvm_ffi_parts)
unset(_tvm_ffi_major)
unset(_tvm_ffi_minor)
unset(_tvm_ffi_count)
