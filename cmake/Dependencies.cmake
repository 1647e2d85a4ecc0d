# Every dependency comes from Debian 12's apt (tools/setup.sh installs them).
# Protobuf must be found before ONNX: ONNX's exported targets refer to protobuf::libprotobuf.
find_package(Protobuf REQUIRED)
find_package(ONNX CONFIG REQUIRED)   # targets onnx, onnx_proto (ONNX_ML=1, ONNX_NAMESPACE=onnx)
find_package(dnnl CONFIG REQUIRED)   # target DNNL::dnnl (oneDNN 2.x)
find_package(CLI11 CONFIG REQUIRED)
find_package(spdlog CONFIG REQUIRED)
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED)  # oneDNN's threading; --threads sets it
if(MEMPLAN_BUILD_TESTS)
  find_package(Catch2 2 CONFIG REQUIRED)
endif()
