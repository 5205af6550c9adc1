# Embedding a CUBIN (or fatbin, or PTX) image into C++ code, so that
# TVM_FFI_EMBED_CUBIN(<name>) finds it through the symbols __tvm_ffi__cubin_<name> and
# __tvm_ffi__cubin_<name>_end. Included by tvm_ffiConfig.cmake. At build time only the
# linker, objcopy, the consumer's C++ compiler and cmake itself run, and the image check
# of tvm_ffi_check_image.cmake when it knows a Python that imports tvm_ffi. Uses the
# helpers of tvm_ffi_cubin.cmake and tvm_ffi_check_image.cmake, which are included first.
#
#   tvm_ffi_embed_cubin(OUTPUT <obj> SOURCE <code.cc> CUBIN <file> NAME <name>
#                       [DEPENDS <files>...])
#       Compiles SOURCE and merges the image into the resulting object file, whose
#       symbols for the image are local (two libraries may embed the same NAME).
#
#   tvm_ffi_target_embed_cubin(<target> NAME <name> CUBIN <file> [DEPENDS <files>...])
#   tvm_ffi_embed_bin_into(<target> SYMBOL <name> BIN <file> [DEPENDS <files>...])
#       Add the image to an existing target; the target's own sources use it. The second
#       is apache-tvm-ffi's spelling; its BIN may be a generator expression such as
#       $<TARGET_OBJECTS:kernels> (see add_tvm_ffi_cubin).
#
# In all of them the image is laid out by tvm_ffi_embed_image.s.in, next to this file,
# which the Python embedders fill too: a read-only section .rodata.tvm_ffi_cubin.<name>,
# aligned to 64 bytes (the driver parses it in place as an ELF or fatbin), followed by
# one NUL byte (so a PTX image is a valid C string), and .note.GNU-stack so the library
# does not ask for an executable stack. Where a Python that imports tvm_ffi is known,
# every image is checked at build time before it is embedded: an empty file or a truncated
# or corrupt CUBIN or fatbin stops the build, other bytes the loader refuses are embedded
# with a warning (tvm_ffi_check_image.cmake).

# Fails naming <fn> unless <name> (given as <label>: NAME or SYMBOL) can be part of a
# C symbol.
function(_tvm_ffi_check_name fn label name)
  if(NOT name MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "${fn}: ${label} must be a C identifier (got \"${name}\")")
  endif()
endfunction()

# Sets <out_var> to the absolute path of the image <path> (<label>: CUBIN or BIN): a
# relative one is usually a build output, so the binary directory comes first, then the
# source directory. A generator expression is left to be evaluated at build time.
function(_tvm_ffi_resolve_image fn label out_var path)
  if(path MATCHES "\\$<")
    set(${out_var} "${path}" PARENT_SCOPE)
    return()
  endif()
  _tvm_ffi_abs_path(image "${path}" "${CMAKE_CURRENT_BINARY_DIR}")
  if(NOT EXISTS "${image}")
    _tvm_ffi_abs_path(image_in_source "${path}" "${CMAKE_CURRENT_SOURCE_DIR}")
    if(EXISTS "${image_in_source}")
      set(image "${image_in_source}")
    endif()
  endif()
  _tvm_ffi_check_input(${fn} ${label} "${image}")
  set(${out_var} "${image}" PARENT_SCOPE)
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
  _tvm_ffi_check_name(${fn} NAME "${arg_NAME}")
  _tvm_ffi_abs_path(source "${arg_SOURCE}" "${CMAKE_CURRENT_SOURCE_DIR}")
  _tvm_ffi_check_input(${fn} SOURCE "${source}")
  _tvm_ffi_resolve_image(${fn} CUBIN cubin "${arg_CUBIN}")
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
  set(symbol "__tvm_ffi__cubin_${arg_NAME}")

  # SOURCE and the image (as tvm_ffi_target_embed_cubin puts it into a target) are
  # compiled by a target of the consumer's own, so its compiler, the flags of this
  # directory and header dependency scanning all apply. LTO stays off: the objects must
  # be machine code for `ld -r` to merge them.
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
  _tvm_ffi_embed_into_target(${fn} ${objects} "${arg_NAME}" "${cubin}" ${arg_DEPENDS})

  add_custom_command(
    OUTPUT "${output}"
    COMMAND "${linker}" -r -o "${output}" "$<TARGET_OBJECTS:${objects}>"
    # Local symbols: two libraries embedding the same NAME never bind to each other.
    COMMAND "${objcopy}" "--localize-symbol=${symbol}" "--localize-symbol=${symbol}_end"
            "${output}"
    DEPENDS ${objects} "$<TARGET_OBJECTS:${objects}>" ${arg_DEPENDS}
    COMMENT "tvm_ffi: embedding ${arg_CUBIN} as ${arg_NAME} into ${arg_OUTPUT}"
    VERBATIM COMMAND_EXPAND_LISTS)
  # LANGUAGE CXX states what the object holds: C++ compiled by the C++ compiler. CMake
  # links an EXTERNAL_OBJECT as it is (the property compiles nothing), but counts its
  # language when it picks the linker, so a library made of this object alone links
  # as C++ (`add_library(mylib SHARED <OUTPUT>)` needs no LINKER_LANGUAGE). Putting it on
  # the object, not on tvm_ffi_header, keeps the header target free of anything that
  # changes how other consumers build.
  set_source_files_properties("${output}" PROPERTIES
    EXTERNAL_OBJECT TRUE
    GENERATED TRUE
    LANGUAGE CXX)
endfunction()

# Fails naming <fn> unless <target> is a target of this project that compiles sources.
function(_tvm_ffi_check_embed_target fn target)
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "${fn}: no target named \"${target}\"")
  endif()
  get_target_property(type ${target} TYPE)
  get_target_property(imported ${target} IMPORTED)
  get_target_property(aliased ${target} ALIASED_TARGET)
  if(imported OR aliased OR NOT type MATCHES
     "^(EXECUTABLE|SHARED_LIBRARY|MODULE_LIBRARY|STATIC_LIBRARY|OBJECT_LIBRARY)$")
    set(what "${type}")
    if(imported)
      set(what "IMPORTED ${type}")
    endif()
    if(aliased)
      set(what "alias of ${aliased}, ${what}")
    endif()
    message(FATAL_ERROR
      "${fn}: target \"${target}\" does not compile sources of its own (${what}); "
      "embed into an executable or a library")
  endif()
endfunction()

# Fails naming <fn> when <name> cannot join the images <target> already embeds: the same
# name twice, or X next to X_end, whose start symbol __tvm_ffi__cubin_X_end is the end
# symbol of X (the link would fail with "multiple definition").
function(_tvm_ffi_check_embed_name fn target name)
  get_target_property(embedded ${target} TVM_FFI_EMBEDDED_CUBINS)
  if(NOT embedded)
    return()
  endif()
  if(name IN_LIST embedded)
    message(FATAL_ERROR
      "${fn}: target \"${target}\" already embeds a CUBIN named \"${name}\"")
  endif()
  set(clash "")
  if("${name}_end" IN_LIST embedded)
    set(clash "${name}" "${name}_end")
  elseif(name MATCHES "^(.+)_end$" AND CMAKE_MATCH_1 IN_LIST embedded)
    set(clash "${CMAKE_MATCH_1}" "${name}")
  endif()
  if(clash)
    list(GET clash 0 base)
    list(GET clash 1 ending)
    message(FATAL_ERROR
      "${fn}: target \"${target}\" cannot embed both \"${base}\" and \"${ending}\": "
      "__tvm_ffi__cubin_${ending} would be both where \"${ending}\" starts and where "
      "\"${base}\" ends; rename one of them")
  endif()
endfunction()

# Adds the image <image> (an absolute path, or a generator expression) to <target> under
# <name>, after the checks above. Shared by tvm_ffi_target_embed_cubin and
# tvm_ffi_embed_bin_into.
function(_tvm_ffi_embed_into_target fn target name image)
  set(depends ${ARGN})
  get_target_property(binary_dir ${target} BINARY_DIR)
  set(work "${binary_dir}/tvm_ffi_embed/${target}")
  # The image is checked, then copied to a path known now, which the generated source
  # names in .incbin: a generator expression (a path only known at build time, one per
  # configuration) needs nothing more, and what is embedded is what was checked.
  set(copy "${work}/${name}.image")
  # A target whose objects or file are the image must be built first; naming it in
  # DEPENDS orders the targets with every generator.
  string(REGEX MATCHALL "\\$<TARGET_(OBJECTS|FILE):[^>]+>" references "${image}")
  foreach(reference IN LISTS references)
    string(REGEX REPLACE "^\\$<TARGET_(OBJECTS|FILE):(.+)>$" "\\2" producer "${reference}")
    list(APPEND depends "${producer}")
  endforeach()
  _tvm_ffi_check_image_command(check ${fn} "${name}" "${image}")
  add_custom_command(
    OUTPUT "${copy}"
    COMMAND ${check}
    COMMAND "${CMAKE_COMMAND}" -E copy "${image}" "${copy}"
    DEPENDS "${image}" ${depends}
    COMMENT "tvm_ffi: checking the image embedded as ${name} into ${target}"
    VERBATIM)

  # The image comes in through the layout template, tvm_ffi_embed_image.s.in next to this
  # file (the one statement of the layout, which the Python embedders fill too), included
  # by a generated C++ file's top-level asm: the target compiles it like any other
  # source, and no ASM language is needed. The symbols are hidden: the final link turns
  # them local and a shared library never exports them.
  set(TVM_FFI_EMBED_NAME "${name}")
  # The paths sit in an assembler string (and the .include in a C++ string): escape.
  string(REPLACE "\\" "\\\\" TVM_FFI_EMBED_IMAGE "${copy}")
  string(REPLACE "\"" "\\\"" TVM_FFI_EMBED_IMAGE "${TVM_FFI_EMBED_IMAGE}")
  set(layout "${work}/${name}.embed.s")
  configure_file("${CMAKE_CURRENT_FUNCTION_LIST_DIR}/tvm_ffi_embed_image.s.in" "${layout}" @ONLY)
  string(REPLACE "\\" "\\\\\\\\" path "${layout}")
  string(REPLACE "\"" "\\\\\\\"" path "${path}")
  set(generated "${work}/${name}.embed.cc")
  file(CONFIGURE OUTPUT "${generated}" @ONLY CONTENT
"// Generated by @fn@: embeds @image@
// into target @target@ as \"@name@\" (see TVM_FFI_EMBED_CUBIN).
__asm__(\".include \\\"@path@\\\"\\n\");
")
  # The compiler does not see .include and .incbin inputs, so the object's dependencies
  # are explicit; listing the copy among the sources also attaches the rule that makes it.
  set_source_files_properties("${generated}" TARGET_DIRECTORY ${target} PROPERTIES
    LANGUAGE CXX
    GENERATED TRUE
    OBJECT_DEPENDS "${copy};${layout}")
  target_sources(${target} PRIVATE "${generated}" "${copy}")
  set_property(TARGET ${target} APPEND PROPERTY TVM_FFI_EMBEDDED_CUBINS "${name}")
endfunction()

# The checks and the embedding behind both spellings of "embed into a target", once <fn> has
# parsed its own keywords with cmake_parse_arguments(... arg ...): reads the caller's arg_*
# results; <name_kw> and <image_kw> are the keywords it spells (NAME and CUBIN, or SYMBOL and
# BIN), so every message names what the user wrote.
function(_tvm_ffi_embed_parsed_into_target fn target name_kw image_kw)
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${fn}: unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  _tvm_ffi_check_embed_target(${fn} "${target}")
  foreach(required ${name_kw} ${image_kw})
    if(NOT arg_${required})
      message(FATAL_ERROR "${fn}: ${required} is required")
    endif()
  endforeach()
  set(name "${arg_${name_kw}}")
  _tvm_ffi_check_name(${fn} ${name_kw} "${name}")
  _tvm_ffi_check_embed_name(${fn} ${target} "${name}")
  _tvm_ffi_resolve_image(${fn} ${image_kw} image "${arg_${image_kw}}")
  _tvm_ffi_check_cxx(${fn})
  _tvm_ffi_embed_into_target(${fn} ${target} "${name}" "${image}" ${arg_DEPENDS})
endfunction()

function(tvm_ffi_target_embed_cubin target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "NAME;CUBIN" "DEPENDS")
  _tvm_ffi_embed_parsed_into_target(tvm_ffi_target_embed_cubin "${target}" NAME CUBIN)
endfunction()

# apache-tvm-ffi's name and keywords for the same job. BIN is typically
# "$<TARGET_OBJECTS:kernels>" of an add_tvm_ffi_cubin/add_tvm_ffi_fatbin target.
function(tvm_ffi_embed_bin_into target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "SYMBOL;BIN" "DEPENDS")
  _tvm_ffi_embed_parsed_into_target(tvm_ffi_embed_bin_into "${target}" SYMBOL BIN)
endfunction()
