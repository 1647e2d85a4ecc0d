# MEMPLAN_FUZZ: libFuzzer targets (test/fuzz), with clang only. The same build tree serves the
# sanitizer tests: memplan's own code is compiled with -fsanitize=fuzzer-no-link (coverage
# instrumentation, no libFuzzer main), the tests link ASan+UBSan as usual, and only the fuzz
# targets link libFuzzer itself (-fsanitize=fuzzer, from libclang-rt-14-dev).
if(MEMPLAN_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "memplan: MEMPLAN_FUZZ=ON needs clang's libFuzzer, but the C++ compiler is "
      "${CMAKE_CXX_COMPILER_ID} (${CMAKE_CXX_COMPILER}). Configure a new build directory with "
      "CC=clang CXX=clang++ (apt-get install clang libclang-rt-14-dev), or drop -DMEMPLAN_FUZZ=ON.")
  endif()
  if(NOT MEMPLAN_SANITIZE)
    message(FATAL_ERROR "memplan: MEMPLAN_FUZZ=ON runs the fuzz targets under ASan and UBSan: "
      "add -DMEMPLAN_SANITIZE=ON.")
  endif()
  include(CheckCXXSourceCompiles)
  set(CMAKE_REQUIRED_LINK_OPTIONS -fsanitize=fuzzer)
  check_cxx_source_compiles([[
    #include <cstddef>
    #include <cstdint>
    extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }
  ]] MEMPLAN_HAVE_LIBFUZZER)
  unset(CMAKE_REQUIRED_LINK_OPTIONS)
  if(NOT MEMPLAN_HAVE_LIBFUZZER)
    message(FATAL_ERROR "memplan: MEMPLAN_FUZZ=ON: ${CMAKE_CXX_COMPILER} cannot link -fsanitize=fuzzer "
      "(apt-get install libclang-rt-14-dev, which holds libclang_rt.fuzzer-x86_64.a)")
  endif()
endif()

# memplan_fuzz_target(NAME SOURCE): a libFuzzer binary linking the library.
function(memplan_fuzz_target name source)
  add_executable(${name} ${source})
  target_link_libraries(${name} PRIVATE memplan)
  memplan_target_options(${name})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
endfunction()
