# Every dependency comes from Debian 12's apt (tools/setup.sh installs them).
# Protobuf must be found before ONNX: ONNX's exported targets refer to protobuf::libprotobuf.
find_package(Protobuf REQUIRED)
find_package(ONNX CONFIG REQUIRED)   # targets onnx, onnx_proto (ONNX_ML=1, ONNX_NAMESPACE=onnx)
find_package(dnnl CONFIG REQUIRED)   # target DNNL::dnnl (oneDNN 2.x)
find_package(CLI11 CONFIG REQUIRED)
find_package(spdlog CONFIG REQUIRED)
find_package(Threads REQUIRED)
# Debian's oneDNN runs on GNU libgomp. With clang (the sanitizer and fuzz build), link that same
# runtime rather than LLVM's libomp, so the process has one OpenMP runtime and --threads reaches it.
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND NOT DEFINED OpenMP_CXX_FLAGS)
  set(OpenMP_CXX_FLAGS "-fopenmp=libgomp" CACHE STRING "OpenMP flags (GNU libgomp, as oneDNN uses)")
endif()
find_package(OpenMP REQUIRED)  # oneDNN's threading; --threads sets it
if(MEMPLAN_BUILD_TESTS)
  find_package(Catch2 2 CONFIG REQUIRED)
endif()
# The Python module (python3-dev, pybind11-dev; the tests also need python3-numpy). Not in the
# sanitizer build: an ASan-instrumented extension loads into Debian's uninstrumented python only
# with libasan preloaded (LD_PRELOAD), and LeakSanitizer then reports the interpreter's own
# allocations that live until exit, so every Python test would fail for python's sake. The C++
# tests run the same library code under ASan and UBSan.
if(MEMPLAN_BUILD_PYTHON AND NOT MEMPLAN_SANITIZE)
  set(MEMPLAN_BUILD_PYTHON_MODULE ON)
  # Debian's python3 (the one python3-numpy and pybind11 are packaged for), not whichever python3
  # comes first on PATH (pyenv, a venv); -DPython_EXECUTABLE=... picks another.
  if(NOT DEFINED Python_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python_EXECUTABLE /usr/bin/python3 CACHE FILEPATH "The python the module is built for and tested with")
  endif()
  find_package(Python 3 REQUIRED COMPONENTS Interpreter Development.Module)
  find_package(pybind11 2.6 CONFIG REQUIRED)  # -DMEMPLAN_BUILD_PYTHON=OFF builds without it
else()
  set(MEMPLAN_BUILD_PYTHON_MODULE OFF)
  if(MEMPLAN_BUILD_PYTHON)
    message(STATUS "memplan: no Python module in the sanitizer build (MEMPLAN_SANITIZE)")
  endif()
endif()
