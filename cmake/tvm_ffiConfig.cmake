# Package configuration for find_package(tvm_ffi CONFIG).
#
# This one file serves three layouts, so it must not be configured at build time:
#   source checkout:  <repo>/cmake/                  headers in <repo>/include
#   pip wheel:        tvm_ffi/share/cmake/tvm_ffi/   headers in tvm_ffi/include
#   cmake --install:  <prefix>/lib/cmake/tvm_ffi/    headers in <prefix>/include
#
# Defines the INTERFACE target tvm_ffi_header (alias tvm_ffi::header), the runtime library
# target tvm_ffi_shared (alias tvm_ffi::shared), the variables tvm_ffi_INCLUDE_DIR,
# tvm_ffi_DLPACK_INCLUDE_DIR and tvm_ffi_LIBRARY, and the functions of tvm_ffi_cubin.cmake,
# tvm_ffi_check_image.cmake and tvm_ffi_embed.cmake. It sets no global flags, enables no
# language and changes no CMAKE_* variable of the consumer.

if(CMAKE_VERSION VERSION_LESS 3.20)
  set(tvm_ffi_FOUND FALSE)
  set(tvm_ffi_NOT_FOUND_MESSAGE "tvm_ffi needs CMake 3.20 or newer (this is ${CMAKE_VERSION})")
  return()
endif()

# Our policy settings stay inside this file; functions defined here keep them.
cmake_policy(PUSH)
cmake_policy(VERSION 3.20...3.31)

set(_tvm_ffi_include_dir "")
# Each layout's include directory and the folder of its libtvm_ffi.so (a checkout's is the
# one the package build writes).
foreach(_tvm_ffi_layout
        "../include|../python/tvm_ffi/lib"   # source checkout
        "../../../include|../../../lib")     # wheel (tvm_ffi/lib) and cmake --install
  string(REPLACE "|" ";" _tvm_ffi_layout "${_tvm_ffi_layout}")
  list(GET _tvm_ffi_layout 0 _tvm_ffi_candidate)
  if(EXISTS "${CMAKE_CURRENT_LIST_DIR}/${_tvm_ffi_candidate}/tvm/ffi/c_api.h")
    get_filename_component(_tvm_ffi_include_dir "${CMAKE_CURRENT_LIST_DIR}/${_tvm_ffi_candidate}"
                           REALPATH)
    list(GET _tvm_ffi_layout 1 _tvm_ffi_lib_dir)
    set(_tvm_ffi_lib_dir "${CMAKE_CURRENT_LIST_DIR}/${_tvm_ffi_lib_dir}")
    break()
  endif()
endforeach()
unset(_tvm_ffi_candidate)
unset(_tvm_ffi_layout)

if(NOT _tvm_ffi_include_dir)
  set(tvm_ffi_FOUND FALSE)
  set(tvm_ffi_NOT_FOUND_MESSAGE
      "tvm_ffi: no tvm/ffi/c_api.h in ${CMAKE_CURRENT_LIST_DIR}/../include or "
      "${CMAKE_CURRENT_LIST_DIR}/../../../include; this package directory is incomplete")
  unset(_tvm_ffi_include_dir)
  cmake_policy(POP)
  return()
endif()

set(tvm_ffi_INCLUDE_DIR "${_tvm_ffi_include_dir}")
unset(_tvm_ffi_include_dir)
# apache-tvm-ffi keeps DLPack in a directory of its own; here <dlpack/dlpack.h> sits in
# the same include directory, so every target below already makes it includable.
set(tvm_ffi_DLPACK_INCLUDE_DIR "${tvm_ffi_INCLUDE_DIR}")

# The top-level CMakeLists defines a real tvm_ffi_header when the repository is
# used through add_subdirectory; a second find_package must not redefine it either.
if(NOT TARGET tvm_ffi_header)
  # IMPORTED: the consumer's install(EXPORT) never tries to export it, and its include
  # directory is a system one, so our headers do not trip the consumer's -Werror.
  add_library(tvm_ffi_header INTERFACE IMPORTED)
  set_target_properties(tvm_ffi_header PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${tvm_ffi_INCLUDE_DIR}"
    INTERFACE_COMPILE_FEATURES cxx_std_17)
endif()
if(NOT TARGET tvm_ffi::header)
  add_library(tvm_ffi::header ALIAS tvm_ffi_header)
endif()
# apache-tvm-ffi's runtime library target: the package's libtvm_ffi.so (the tvm-ffi C ABI),
# an IMPORTED SHARED library whose soname (libtvm_ffi.so) is what a library linking it
# records, so that it binds to whichever libtvm_ffi.so the process loaded first (this
# package's or apache-tvm-ffi's). Looked for where the layout found above keeps it.
if(NOT TARGET tvm_ffi_shared)
  # A runtime the consumer names (-Dtvm_ffi_LIBRARY=<path>: a source checkout whose package
  # was installed elsewhere) wins over the layout's.
  if(NOT tvm_ffi_LIBRARY OR NOT EXISTS "${tvm_ffi_LIBRARY}")
    set(tvm_ffi_LIBRARY "tvm_ffi_LIBRARY-NOTFOUND")
    if(EXISTS "${_tvm_ffi_lib_dir}/libtvm_ffi.so")
      get_filename_component(tvm_ffi_LIBRARY "${_tvm_ffi_lib_dir}/libtvm_ffi.so" REALPATH)
    endif()
  endif()
  if(tvm_ffi_LIBRARY)
    add_library(tvm_ffi_shared SHARED IMPORTED)
    set_target_properties(tvm_ffi_shared PROPERTIES
      IMPORTED_LOCATION "${tvm_ffi_LIBRARY}"
      IMPORTED_SONAME "libtvm_ffi.so"
      INTERFACE_LINK_LIBRARIES tvm_ffi_header)
  else()
    # Headers without the runtime (an install of the header-only CMake project, a checkout
    # not built): the target stands for the headers, and a library that calls the runtime
    # finds libtvm_ffi.so when it is loaded (tvm_ffi, or apache-tvm-ffi, loads it first).
    get_filename_component(_tvm_ffi_lib_dir "${_tvm_ffi_lib_dir}" ABSOLUTE)
    message(STATUS "tvm_ffi: no libtvm_ffi.so in ${_tvm_ffi_lib_dir}: tvm_ffi::shared links "
                   "the headers only")
    add_library(tvm_ffi_shared INTERFACE IMPORTED)
    set_target_properties(tvm_ffi_shared PROPERTIES INTERFACE_LINK_LIBRARIES tvm_ffi_header)
  endif()
endif()
if(NOT TARGET tvm_ffi::shared)
  add_library(tvm_ffi::shared ALIAS tvm_ffi_shared)
endif()
unset(_tvm_ffi_lib_dir)

include("${CMAKE_CURRENT_LIST_DIR}/tvm_ffi_cubin.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/tvm_ffi_check_image.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/tvm_ffi_embed.cmake")

cmake_policy(POP)
