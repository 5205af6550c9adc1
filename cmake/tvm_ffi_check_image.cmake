# Checks a CUDA code image before it is embedded. Run at build time, in script mode, by
# the embedding functions of tvm_ffi_embed.cmake (the image is often a build output, so
# configure time is too early); it is not include()d by the package.
#
#   cmake -DTVM_FFI_FUNCTION=<fn> -DTVM_FFI_NAME=<name> -DTVM_FFI_IMAGE=<file>
#         -P tvm_ffi_check_image.cmake
#
# A truncated or corrupt CUBIN or fatbin stops the build (the driver trusts the sizes
# inside an image and would read past it); bytes of no known format are embedded with a
# warning, since any bytes may be embedded on purpose. The rules are those of
# python/tvm_ffi/utils/_image.py and include/tvm/ffi/extra/cuda/detail/cubin_image.h,
# written in CMake so that embedding never needs Python.

cmake_minimum_required(VERSION 3.20)

set(_fn "${TVM_FFI_FUNCTION}")
set(_name "${TVM_FFI_NAME}")
set(_images "${TVM_FFI_IMAGE}")

# A value read from an image may be anything; capping it keeps the sums below inside
# CMake's 64-bit integers while any capped value still lies past the end of the file.
set(_TVM_FFI_HUGE 1152921504606846976)  # 2^60

# Sets <out_var> to the little-endian unsigned integer of <nbytes> bytes at <byte_offset>
# of <hex> (a string from file(READ ... HEX)), in decimal.
function(_tvm_ffi_le out_var hex byte_offset nbytes)
  math(EXPR start "(${byte_offset}) * 2")
  set(big "")
  foreach(i RANGE 1 ${nbytes})
    math(EXPR at "${start} + (${nbytes} - ${i}) * 2")
    string(SUBSTRING "${hex}" ${at} 2 byte)
    string(APPEND big "${byte}")
  endforeach()
  string(REGEX REPLACE "^0+" "" significant "${big}")
  string(LENGTH "${significant}" digits)
  if(digits GREATER 15)
    set(${out_var} ${_TVM_FFI_HUGE} PARENT_SCOPE)
  elseif(digits EQUAL 0)
    set(${out_var} 0 PARENT_SCOPE)
  else()
    math(EXPR value "0x${significant}" OUTPUT_FORMAT DECIMAL)
    set(${out_var} ${value} PARENT_SCOPE)
  endif()
endfunction()

# Reads <nbytes> bytes at <offset> of the image as hex into <out_var>.
function(_tvm_ffi_read out_var offset nbytes)
  file(READ "${_image}" hex OFFSET ${offset} LIMIT ${nbytes} HEX)
  set(${out_var} "${hex}" PARENT_SCOPE)
endfunction()

# The reason may come in several quoted pieces (long lines), joined as they are; so it
# must hold no semicolon.
function(_tvm_ffi_refuse)
  list(JOIN ARGV "" reason)
  message(FATAL_ERROR "${_fn}: cannot embed ${_image} as \"${_name}\": ${reason}")
endfunction()

# Sets <out_var> to <value> for a message: a capped value is not shown as a made-up number.
function(_tvm_ffi_shown out_var value)
  if(value GREATER_EQUAL _TVM_FFI_HUGE)
    set(value "2^60 or more")
  endif()
  set(${out_var} "${value}" PARENT_SCOPE)
endfunction()

# Fails when <what> of a CUBIN ends past the end of the file.
function(_tvm_ffi_cubin_bound what end size)
  if(end GREATER size)
    _tvm_ffi_shown(end ${end})
    _tvm_ffi_refuse("truncated or corrupt CUBIN image: ${what} ends at byte ${end} but the "
                    "image has ${size} bytes")
  endif()
endfunction()

# ELF64 with EM_CUDA whose header tables and sections lie inside the file.
function(_tvm_ffi_check_cubin size)
  if(size LESS 64)
    _tvm_ffi_refuse("truncated CUBIN image: ${size} bytes, smaller than an ELF header (64 bytes)")
  endif()
  _tvm_ffi_read(header 0 64)
  _tvm_ffi_le(elf_class "${header}" 4 1)
  if(NOT elf_class EQUAL 2)
    _tvm_ffi_refuse("not a 64-bit ELF image (CUBINs are ELF64)")
  endif()
  _tvm_ffi_le(machine "${header}" 18 2)
  if(NOT machine EQUAL 190)
    _tvm_ffi_refuse("ELF image is not a CUBIN (e_machine ${machine}, expected 190 for "
                    "NVIDIA CUDA)")
  endif()
  _tvm_ffi_le(phoff "${header}" 32 8)
  _tvm_ffi_le(shoff "${header}" 40 8)
  _tvm_ffi_le(phentsize "${header}" 54 2)
  _tvm_ffi_le(phnum "${header}" 56 2)
  _tvm_ffi_le(shentsize "${header}" 58 2)
  _tvm_ffi_le(shnum "${header}" 60 2)
  if(shnum GREATER 0 AND NOT shentsize EQUAL 64)
    _tvm_ffi_refuse("corrupt CUBIN image: bad section entry size")
  endif()
  math(EXPR end "${shoff} + ${shnum} * ${shentsize}")
  _tvm_ffi_cubin_bound("the section table" ${end} ${size})
  math(EXPR end "${phoff} + ${phnum} * ${phentsize}")
  _tvm_ffi_cubin_bound("the program header table" ${end} ${size})
  if(shnum EQUAL 0)
    return()
  endif()
  math(EXPR table_bytes "${shnum} * 64")
  _tvm_ffi_read(table ${shoff} ${table_bytes})
  math(EXPR last "${shnum} - 1")
  foreach(i RANGE ${last})
    math(EXPR entry "${i} * 64")
    _tvm_ffi_le(type "${table}" "${entry} + 4" 4)
    _tvm_ffi_le(offset "${table}" "${entry} + 24" 8)
    _tvm_ffi_le(bytes "${table}" "${entry} + 32" 8)
    math(EXPR end "${offset} + ${bytes}")
    # SHT_NULL and SHT_NOBITS (8) occupy no bytes of the file.
    if(NOT type EQUAL 0 AND NOT type EQUAL 8)
      _tvm_ffi_cubin_bound("section ${i}" ${end} ${size})
    endif()
  endforeach()
endfunction()

# One or more fatbins back to back, each entry inside its fatbin.
function(_tvm_ffi_check_fatbin size)
  set(pos 0)
  while(TRUE)
    math(EXPR left "${size} - ${pos}")
    if(left LESS 16)
      break()
    endif()
    _tvm_ffi_read(header ${pos} 16)
    if(NOT header MATCHES "^50ed55ba")
      break()
    endif()
    _tvm_ffi_le(header_bytes "${header}" 6 2)
    _tvm_ffi_le(body_bytes "${header}" 8 8)
    math(EXPR end "${pos} + ${header_bytes} + ${body_bytes}")
    if(header_bytes LESS 16 OR end GREATER size)
      math(EXPR declared "${header_bytes} + ${body_bytes}")
      _tvm_ffi_shown(declared ${declared})
      _tvm_ffi_refuse("truncated fatbin image: its header declares ${declared} bytes but "
                      "the image has ${left} bytes")
    endif()
    math(EXPR at "${pos} + ${header_bytes}")
    while(TRUE)
      math(EXPR room "${end} - ${at}")
      if(room LESS 16)
        break()
      endif()
      _tvm_ffi_read(entry ${at} 16)
      _tvm_ffi_le(entry_header "${entry}" 4 4)
      _tvm_ffi_le(payload "${entry}" 8 8)
      math(EXPR entry_end "${at} + ${entry_header} + ${payload}")
      if(entry_header LESS 16 OR entry_end GREATER end)
        _tvm_ffi_refuse("corrupt fatbin image: the entry at byte ${at} runs past the end "
                        "of the fatbin")
      endif()
      set(at ${entry_end})
    endwhile()
    set(pos ${end})
  endwhile()
  if(pos EQUAL 0)
    _tvm_ffi_refuse("truncated fatbin image: ${size} bytes")
  endif()
endfunction()

list(LENGTH _images _count)
if(NOT _count EQUAL 1)
  # BIN "$<TARGET_OBJECTS:...>" of an object library with several sources.
  message(FATAL_ERROR
    "${_fn}: the image for \"${_name}\" must be one file, got ${_count}: \"${_images}\"")
endif()
set(_image "${_images}")
if(NOT EXISTS "${_image}" OR IS_DIRECTORY "${_image}")
  message(FATAL_ERROR "${_fn}: the image for \"${_name}\", ${_image}, does not exist")
endif()

file(SIZE "${_image}" _size)
if(_size EQUAL 0)
  _tvm_ffi_refuse("empty image (0 bytes)")
endif()
_tvm_ffi_read(_magic 0 4)
if(_magic STREQUAL "7f454c46")
  _tvm_ffi_check_cubin(${_size})
elseif(_magic STREQUAL "50ed55ba")
  _tvm_ffi_check_fatbin(${_size})
else()
  # PTX is text that carries both a .version and a .target directive.
  file(STRINGS "${_image}" _directives LIMIT_INPUT 65536
       REGEX "^[ \t]*\\.(version|target)[ \t]")
  if(NOT _directives MATCHES "\\.version" OR NOT _directives MATCHES "\\.target")
    string(REGEX REPLACE "(..)" "\\1 " _first "${_magic}")
    string(STRIP "${_first}" _first)
    message(WARNING
      "${_fn}: ${_image} (embedded as \"${_name}\") is not a CUBIN, PTX or fatbin image "
      "(first bytes: ${_first}); its bytes are embedded as they are, and the CUDA driver "
      "will refuse to load them")
  endif()
endif()
