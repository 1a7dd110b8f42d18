# What the example CUDA programs (collective-bench, train-gpt) share in their builds. They are
# ordinary CUDA programs compiled by the toolkit's nvcc (custom commands, not CMake's CUDA
# language: no GPU or CUDA host compiler checks are needed to build them) against the shared CUDA
# runtime, so the same binaries run on real GPUs and under eidolon.

# Sets `out` to nvcc's -gencode flags: machine code for every SM architecture in `archs`, and PTX
# of the last one (so newer GPUs can run it too).
function(eidolon_cuda_gencode out archs)
  set(flags)
  foreach(arch IN LISTS archs)
    list(APPEND flags -gencode=arch=compute_${arch},code=sm_${arch})
    set(last ${arch})
  endforeach()
  list(APPEND flags -gencode=arch=compute_${last},code=compute_${last})
  set(${out} ${flags} PARENT_SCOPE)
endfunction()

# NCCL for a program named `program`: the header from the toolkit (or wherever nccl.h is); the
# library is NVIDIA's where installed, else eidolon's replacement (same soname, libnccl.so.2, so
# the binary is the same either way). Sets EIDOLON_NCCL_FOUND, EIDOLON_NCCL_INCLUDE_DIR,
# EIDOLON_NCCL_LINK (nvcc link flags) and EIDOLON_NCCL_DEPENDS (targets to build first) in the
# caller's scope; says why when the program cannot be built.
function(eidolon_find_nccl program)
  find_path(EIDOLON_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(EIDOLON_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  set(EIDOLON_NCCL_FOUND OFF PARENT_SCOPE)
  if(NOT EIDOLON_NCCL_INCLUDE_DIR)
    message(STATUS "${program}: nccl.h not found (install NCCL's headers): not built")
    return()
  endif()
  if(EIDOLON_NCCL_LIBRARY)
    get_filename_component(dir ${EIDOLON_NCCL_LIBRARY} DIRECTORY)
    set(EIDOLON_NCCL_LINK -L${dir} -lnccl PARENT_SCOPE)
    set(EIDOLON_NCCL_DEPENDS "" PARENT_SCOPE)
  elseif(TARGET eidolon-nccl)
    set(EIDOLON_NCCL_LINK $<TARGET_FILE:eidolon-nccl> PARENT_SCOPE)
    set(EIDOLON_NCCL_DEPENDS eidolon-nccl PARENT_SCOPE)
  else()
    message(STATUS "${program}: no libnccl to link against: not built")
    return()
  endif()
  set(EIDOLON_NCCL_INCLUDE_DIR ${EIDOLON_NCCL_INCLUDE_DIR} PARENT_SCOPE)
  set(EIDOLON_NCCL_FOUND ON PARENT_SCOPE)
endfunction()
