# cmake -DFILES="a;b" -P no_cuda_needed.cmake: fails when one of FILES has a
# CUDA or NCCL library among its NEEDED entries (libhvd.so and hvdrun must
# run on machines without CUDA; only libhvd_nccl.so may need it).
foreach(file IN LISTS FILES)
  execute_process(COMMAND readelf -d ${file} OUTPUT_VARIABLE dynamic RESULT_VARIABLE failed)
  if(failed)
    message(FATAL_ERROR "readelf -d ${file} failed")
  endif()
  string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*" needed "${dynamic}")
  foreach(line IN LISTS needed)
    if(line MATCHES "cuda|nccl|nvidia")
      message(FATAL_ERROR "${file} needs a CUDA library: ${line}")
    endif()
  endforeach()
  list(LENGTH needed count)
  message(STATUS "${file}: ${count} NEEDED entries, none of CUDA")
endforeach()
