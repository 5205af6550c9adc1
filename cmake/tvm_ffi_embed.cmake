# Embedding a CUBIN (or fatbin, or PTX) image into C++ code, so that
# TVM_FFI_EMBED_CUBIN(<name>) finds it through the symbols __tvm_ffi__cubin_<name> and
# __tvm_ffi__cubin_<name>_end. Included by tvm_ffiConfig.cmake. No Python at build
# time: only the linker, objcopy and the consumer's C++ compiler run. Uses the helpers
# of tvm_ffi_cubin.cmake, which is included first.
#
#   tvm_ffi_embed_cubin(OUTPUT <obj> SOURCE <code.cc> CUBIN <file> NAME <name>
#                       [DEPENDS <files>...])
#       Compiles SOURCE and merges the image into the resulting object file, whose
#       symbols for the image are local (two libraries may embed the same NAME).
#
#   tvm_ffi_target_embed_cubin(<target> NAME <name> CUBIN <file> [DEPENDS <files>...])
#       Adds the image to an existing target; the target's own sources use it.
#
# In both the image is in a read-only section .rodata.tvm_ffi_cubin.<name>, aligned to
# 64 bytes (the driver parses it in place as an ELF or fatbin) and followed by one NUL
# byte (so a PTX image is a valid C string); objects carry .note.GNU-stack so the
# library does not ask for an executable stack.

# Fails naming <fn> unless <name> can be part of a C symbol.
function(_tvm_ffi_check_name fn name)
  if(NOT name MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "${fn}: NAME must be a C identifier (got \"${name}\")")
  endif()
endfunction()

# Fails naming <fn> when the consumer has not enabled C++ (we compile with its compiler).
function(_tvm_ffi_check_cxx fn)
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT "CXX" IN_LIST languages)
    message(FATAL_ERROR
      "${fn}: the CXX language is not enabled; add CXX to the LANGUAGES of project()")
  endif()
endfunction()

# Sets <out_var> to the program <cmake_var> names (CMAKE_LINKER, CMAKE_OBJCOPY), or
# searches for <names> under our own cache variable, leaving the consumer's alone.
function(_tvm_ffi_find_tool fn out_var cmake_var cache_var)
  if(${cmake_var})
    set(${out_var} "${${cmake_var}}" PARENT_SCOPE)
    return()
  endif()
  find_program(${cache_var} NAMES ${ARGN} DOC "used by ${fn}")
  if(NOT ${cache_var})
    message(FATAL_ERROR "${fn}: ${cmake_var} is not set and none of ${ARGN} was found")
  endif()
  set(${out_var} "${${cache_var}}" PARENT_SCOPE)
endfunction()

function(tvm_ffi_embed_cubin)
  set(fn tvm_ffi_embed_cubin)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "OUTPUT;SOURCE;CUBIN;NAME" "DEPENDS")

  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${fn}: unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  foreach(required OUTPUT SOURCE CUBIN NAME)
    if(NOT arg_${required})
      message(FATAL_ERROR "${fn}: ${required} is required")
    endif()
  endforeach()
  _tvm_ffi_check_name(${fn} "${arg_NAME}")
  _tvm_ffi_abs_path(source "${arg_SOURCE}" "${CMAKE_CURRENT_SOURCE_DIR}")
  _tvm_ffi_check_input(${fn} SOURCE "${source}")
  _tvm_ffi_abs_path(cubin "${arg_CUBIN}" "${CMAKE_CURRENT_BINARY_DIR}")
  if(NOT EXISTS "${cubin}")
    # A relative CUBIN is usually a build output; accept a source-tree file as well.
    _tvm_ffi_abs_path(cubin_in_source "${arg_CUBIN}" "${CMAKE_CURRENT_SOURCE_DIR}")
    if(EXISTS "${cubin_in_source}")
      set(cubin "${cubin_in_source}")
    endif()
  endif()
  _tvm_ffi_check_input(${fn} CUBIN "${cubin}")
  _tvm_ffi_check_cxx(${fn})
  # find_package(CUDAToolkit) sets the first; enable_language(CUDA) the second.
  set(cuda_include_dirs ${CUDAToolkit_INCLUDE_DIRS})
  if(NOT cuda_include_dirs)
    set(cuda_include_dirs ${CMAKE_CUDA_TOOLKIT_INCLUDE_DIRECTORIES})
  endif()
  if(NOT cuda_include_dirs)
    message(FATAL_ERROR
      "${fn}: the CUDA headers are not known; call find_package(CUDAToolkit REQUIRED) first")
  endif()
  _tvm_ffi_find_tool(${fn} linker CMAKE_LINKER TVM_FFI_LINKER_EXECUTABLE ld ld.bfd ld.lld)
  _tvm_ffi_find_tool(${fn} objcopy CMAKE_OBJCOPY TVM_FFI_OBJCOPY_EXECUTABLE objcopy llvm-objcopy)

  _tvm_ffi_abs_path(output "${arg_OUTPUT}" "${CMAKE_CURRENT_BINARY_DIR}")
  string(MD5 key "${output}")
  string(SUBSTRING "${key}" 0 8 key)
  set(work "${CMAKE_CURRENT_BINARY_DIR}/tvm_ffi_embed/${arg_NAME}_${key}")
  set(section ".rodata.tvm_ffi_cubin.${arg_NAME}")
  set(symbol "__tvm_ffi__cubin_${arg_NAME}")

  # SOURCE is compiled by a target of the consumer's own, so its compiler, the flags
  # of this directory and header dependency scanning all apply. LTO stays off: the
  # object must be machine code for `ld -r` to merge it.
  set(objects "tvm_ffi_embed_${arg_NAME}_${key}")
  if(TARGET ${objects})
    message(FATAL_ERROR "${fn}: OUTPUT ${arg_OUTPUT} is already made by another call")
  endif()
  add_library(${objects} OBJECT "${source}")
  target_link_libraries(${objects} PRIVATE tvm_ffi_header)
  target_include_directories(${objects} SYSTEM PRIVATE ${cuda_include_dirs})
  # -fno-lto also overrides an -flto that came in through CMAKE_CXX_FLAGS.
  target_compile_options(${objects} PRIVATE $<$<CXX_COMPILER_ID:GNU,Clang>:-fno-lto>)
  set_target_properties(${objects} PROPERTIES
    POSITION_INDEPENDENT_CODE ON
    INTERPROCEDURAL_OPTIMIZATION OFF)

  # `ld -b binary` names the image by its path; the script re-anchors it under our
  # symbols, aligns it and appends the NUL byte.
  file(CONFIGURE OUTPUT "${work}/embed.ld" @ONLY CONTENT
"/* Generated by tvm_ffi_embed_cubin: lays out the image embedded as @arg_NAME@. */
SECTIONS
{
  @section@ ALIGN(64) : ALIGN(64)
  {
    @symbol@ = .;
    *(.data)
    @symbol@_end = .;
    BYTE(0)
  }
}
")
  file(CONFIGURE OUTPUT "${work}/empty" CONTENT "")

  add_custom_command(
    OUTPUT "${output}"
    COMMAND "${linker}" -r -b binary -o "${work}/image.o" "${cubin}"
    COMMAND "${linker}" -r -T "${work}/embed.ld" -o "${work}/placed.o" "${work}/image.o"
    COMMAND "${objcopy}"
            --set-section-flags "${section}=alloc,load,readonly,data,contents"
            --wildcard --strip-symbol=_binary_*
            --add-section ".note.GNU-stack=${work}/empty"
            "${work}/placed.o"
    COMMAND "${linker}" -r -o "${output}" "$<TARGET_OBJECTS:${objects}>" "${work}/placed.o"
    # Local symbols: two libraries embedding the same NAME never bind to each other.
    COMMAND "${objcopy}" "--localize-symbol=${symbol}" "--localize-symbol=${symbol}_end"
            "${output}"
    DEPENDS "${cubin}" "${work}/embed.ld" ${objects} "$<TARGET_OBJECTS:${objects}>"
            ${arg_DEPENDS}
    COMMENT "tvm_ffi: embedding ${arg_CUBIN} as ${arg_NAME} into ${arg_OUTPUT}"
    VERBATIM COMMAND_EXPAND_LISTS)
  set_source_files_properties("${output}" PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
endfunction()

function(tvm_ffi_target_embed_cubin target)
  set(fn tvm_ffi_target_embed_cubin)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "NAME;CUBIN" "DEPENDS")

  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${fn}: unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "${fn}: no target named \"${target}\"")
  endif()
  get_target_property(type ${target} TYPE)
  get_target_property(imported ${target} IMPORTED)
  get_target_property(aliased ${target} ALIASED_TARGET)
  if(imported OR aliased OR NOT type MATCHES
     "^(EXECUTABLE|SHARED_LIBRARY|MODULE_LIBRARY|STATIC_LIBRARY|OBJECT_LIBRARY)$")
    message(FATAL_ERROR
      "${fn}: target \"${target}\" does not compile sources of its own (${type}); "
      "embed into an executable or a library")
  endif()
  foreach(required NAME CUBIN)
    if(NOT arg_${required})
      message(FATAL_ERROR "${fn}: ${required} is required")
    endif()
  endforeach()
  _tvm_ffi_check_name(${fn} "${arg_NAME}")
  get_target_property(embedded ${target} TVM_FFI_EMBEDDED_CUBINS)
  if(embedded AND arg_NAME IN_LIST embedded)
    message(FATAL_ERROR
      "${fn}: target \"${target}\" already embeds a CUBIN named \"${arg_NAME}\"")
  endif()
  _tvm_ffi_abs_path(cubin "${arg_CUBIN}" "${CMAKE_CURRENT_BINARY_DIR}")
  if(NOT EXISTS "${cubin}")
    _tvm_ffi_abs_path(cubin_in_source "${arg_CUBIN}" "${CMAKE_CURRENT_SOURCE_DIR}")
    if(EXISTS "${cubin_in_source}")
      set(cubin "${cubin_in_source}")
    endif()
  endif()
  _tvm_ffi_check_input(${fn} CUBIN "${cubin}")
  _tvm_ffi_check_cxx(${fn})

  # The image comes in through the assembler's .incbin in a generated C++ file that
  # the target compiles like any other source. Unlike tvm_ffi_embed_cubin the symbols
  # cannot be local (the target's other objects refer to them), so they are hidden:
  # the final link turns them local and a shared library never exports them.
  set(symbol "__tvm_ffi__cubin_${arg_NAME}")
  set(section ".rodata.tvm_ffi_cubin.${arg_NAME}")
  # The path sits in an assembler string inside a C++ string: escape for both.
  string(REPLACE "\\" "\\\\\\\\" path "${cubin}")
  string(REPLACE "\"" "\\\\\\\"" path "${path}")
  get_target_property(binary_dir ${target} BINARY_DIR)
  set(generated "${binary_dir}/tvm_ffi_embed/${target}/${arg_NAME}.embed.cc")
  file(CONFIGURE OUTPUT "${generated}" @ONLY CONTENT
"// Generated by tvm_ffi_target_embed_cubin: embeds @cubin@
// into target @target@ as \"@arg_NAME@\" (see TVM_FFI_EMBED_CUBIN).
__asm__(
    \".pushsection @section@,\\\"a\\\",%progbits\\n\"
    \".balign 64\\n\"
    \".globl @symbol@\\n\"
    \".hidden @symbol@\\n\"
    \".type @symbol@, %object\\n\"
    \"@symbol@:\\n\"
    \".incbin \\\"@path@\\\"\\n\"
    \".globl @symbol@_end\\n\"
    \".hidden @symbol@_end\\n\"
    \"@symbol@_end:\\n\"
    \".size @symbol@, @symbol@_end - @symbol@\\n\"
    \".byte 0\\n\"
    \".popsection\\n\");
")
  set(object_depends "${cubin}" ${arg_DEPENDS})
  # The compiler does not see .incbin inputs, so the object's dependency is explicit;
  # listing the image among the sources also attaches the rule that generates it.
  set_source_files_properties("${generated}" TARGET_DIRECTORY ${target} PROPERTIES
    LANGUAGE CXX
    GENERATED TRUE
    OBJECT_DEPENDS "${object_depends}")
  target_sources(${target} PRIVATE "${generated}" "${cubin}")
  set_property(TARGET ${target} APPEND PROPERTY TVM_FFI_EMBEDDED_CUBINS "${arg_NAME}")
endfunction()
