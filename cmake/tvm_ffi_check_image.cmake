# The build-time check of a CUDA code image before the embedding functions of
# tvm_ffi_embed.cmake embed it. Included by tvm_ffiConfig.cmake.
#
# The image is often a build output, so configure time is too early: the check is a command
# of the embedding rule. It runs `python -m tvm_ffi.utils.check_image`, which judges the
# image as every embedder of the package does (the C++ reader CubinModule runs at load
# time, under one policy): an empty file or a truncated or corrupt CUBIN or fatbin stops the
# build with a message naming the file; other bytes the loader refuses are embedded with a
# warning. The Python is TVM_FFI_PYTHON_EXECUTABLE, else
# the Python_EXECUTABLE or Python3_EXECUTABLE of find_package(Python), when it imports
# tvm_ffi. Without one, embedding needs no Python: the image is embedded unchecked, and
# CubinModule checks it when it loads it (a one-time message says so).

# Sets <out_var> to the Python that can run the check, or "" (found once per configure).
function(_tvm_ffi_image_checker out_var)
  get_property(known GLOBAL PROPERTY _TVM_FFI_IMAGE_CHECKER SET)
  if(NOT known)
    set(checker "")
    foreach(python IN ITEMS "${TVM_FFI_PYTHON_EXECUTABLE}" "${Python_EXECUTABLE}"
                            "${Python3_EXECUTABLE}")
      if(python)
        execute_process(COMMAND "${python}" -c "import tvm_ffi.utils.check_image"
                        RESULT_VARIABLE status OUTPUT_QUIET ERROR_QUIET)
        if(status EQUAL 0)
          set(checker "${python}")
          break()
        endif()
      endif()
    endforeach()
    if(NOT checker)
      message(STATUS
        "tvm_ffi: embedded images are not checked at build time (no Python that imports "
        "tvm_ffi: set TVM_FFI_PYTHON_EXECUTABLE); CubinModule checks each one when it loads it")
    endif()
    set_property(GLOBAL PROPERTY _TVM_FFI_IMAGE_CHECKER "${checker}")
  endif()
  get_property(checker GLOBAL PROPERTY _TVM_FFI_IMAGE_CHECKER)
  set(${out_var} "${checker}" PARENT_SCOPE)
endfunction()

# Sets <out_var> to the build-time command that checks <image> before <fn> embeds it as
# <name>. <image> may be a generator expression; it stays one argument, so an expansion to
# several files is reported.
function(_tvm_ffi_check_image_command out_var fn name image)
  _tvm_ffi_image_checker(python)
  if(python)
    set(${out_var} "${python}" -m tvm_ffi.utils.check_image --function ${fn} --name "${name}"
        "${image}" PARENT_SCOPE)
  else()
    set(${out_var} "${CMAKE_COMMAND}" -E true PARENT_SCOPE)
  endif()
endfunction()
