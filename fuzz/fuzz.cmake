# The fuzz stage of the main build (included from the top CMakeLists.txt):
# builds the nested clang project of fuzz/ into build/fuzz/ (target
# hvd_fuzz, part of ALL) and registers one ctest test per fuzz target,
# fuzz.<name> with label fuzz, which fuzzes for HVD_FUZZ_SECONDS from the
# checked-in seeds and runs every saved crash input (fuzz/README.md).
# HVD_BUILD_FUZZ: AUTO (the default) builds them with the tests
# (HVD_BUILD_TESTS=ON, README's test command) when clang++ and libFuzzer
# (libclang-rt-14-dev: deploy/install-deps.sh --tests) are installed; ON
# requires them; OFF skips them.

set(_hvd_fuzz_why "")
find_program(HVD_FUZZ_CXX NAMES clang++ clang++-16 clang++-15 clang++-14
             DOC "clang++ for the fuzz targets (fuzz/)")
if(NOT HVD_FUZZ_CXX)
  set(_hvd_fuzz_why "no clang++ found (apt-get install clang libclang-rt-14-dev)")
else()
  execute_process(COMMAND ${HVD_FUZZ_CXX} -print-runtime-dir
                  OUTPUT_VARIABLE _hvd_rt_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT EXISTS "${_hvd_rt_dir}/libclang_rt.fuzzer-${CMAKE_SYSTEM_PROCESSOR}.a" AND
     NOT EXISTS "${_hvd_rt_dir}/libclang_rt.fuzzer.a")
    set(_hvd_fuzz_why "${HVD_FUZZ_CXX} has no libFuzzer (libclang_rt.fuzzer in '${_hvd_rt_dir}'; "
                      "apt-get install libclang-rt-14-dev)")
  endif()
endif()
hvd_auto_option(HVD_BUILD_FUZZ
                "Build the libFuzzer targets of fuzz/ and their ctest tests (label fuzz)")
set(HVD_FUZZ_SECONDS 6 CACHE STRING "Seconds each fuzz.<name> test fuzzes")

if(HVD_BUILD_FUZZ STREQUAL "AUTO")
  if(NOT HVD_BUILD_TESTS)
    set(_hvd_fuzz_why "HVD_BUILD_TESTS=OFF")
  endif()
  if(NOT _hvd_fuzz_why STREQUAL "")
    message(STATUS "hvd: fuzz targets off: ${_hvd_fuzz_why}")
    return()
  endif()
elseif(NOT HVD_BUILD_FUZZ)
  message(STATUS "hvd: fuzz targets off: HVD_BUILD_FUZZ=OFF")
  return()
elseif(NOT _hvd_fuzz_why STREQUAL "")
  message(FATAL_ERROR "hvd: HVD_BUILD_FUZZ=ON but ${_hvd_fuzz_why}")
endif()

include(ExternalProject)
set(_hvd_fuzz_bin ${CMAKE_BINARY_DIR}/fuzz)
set(_hvd_fuzz_args -DCMAKE_CXX_COMPILER=${HVD_FUZZ_CXX} -DHVD_WERROR=${HVD_WERROR})
if(CMAKE_CXX_COMPILER_LAUNCHER)
  list(APPEND _hvd_fuzz_args -DCMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER})
endif()
# BUILD_ALWAYS: the nested build sees edits of the hvd sources it compiles.
ExternalProject_Add(hvd_fuzz
  SOURCE_DIR ${CMAKE_SOURCE_DIR}/fuzz
  BINARY_DIR ${_hvd_fuzz_bin}
  PREFIX ${_hvd_fuzz_bin}/external
  CMAKE_ARGS ${_hvd_fuzz_args}
  BUILD_ALWAYS ON
  INSTALL_COMMAND "")

if(NOT HVD_BUILD_TESTS)
  return()
endif()
include(${CMAKE_SOURCE_DIR}/fuzz/targets.cmake)
foreach(name IN LISTS HVD_FUZZ_TARGETS)
  # New inputs go to work/<name> (kept between runs, never the source tree);
  # a crash, timeout or leak to artifacts/<name>/, named in the test's log.
  set(work ${_hvd_fuzz_bin}/work/${name})
  set(artifacts ${_hvd_fuzz_bin}/artifacts/${name})
  file(MAKE_DIRECTORY ${work} ${artifacts})
  add_test(NAME fuzz.${name}
           COMMAND ${_hvd_fuzz_bin}/bin/fuzz_${name}
                   -max_total_time=${HVD_FUZZ_SECONDS} -timeout=5 -rss_limit_mb=1024
                   -artifact_prefix=${artifacts}/ -print_final_stats=1
                   ${work}
                   ${CMAKE_SOURCE_DIR}/fuzz/corpus/${name}
                   ${CMAKE_SOURCE_DIR}/fuzz/regressions/${name})
  math(EXPR timeout "${HVD_FUZZ_SECONDS} + 60")
  set_tests_properties(fuzz.${name} PROPERTIES LABELS fuzz TIMEOUT ${timeout})
endforeach()
