// Element types. The numeric values are ONNX's TensorProto.DataType, so conversion is a cast.
#pragma once

#include <cstdint>
#include <string>

namespace memplan {

enum class DType : int32_t {
  Undefined = 0,
  Float32 = 1,
  Uint8 = 2,
  Int8 = 3,
  Uint16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Float64 = 11,
  Uint32 = 12,
  Uint64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
};

// Bytes per element; 0 for types without a fixed size (Undefined, String).
uint32_t dtype_size(DType t);
// "float32", "int64", ... (numpy's names; ONNX's for the float8, int4 and float4 types of IR 9-11,
// which memplan reads but runs no kernel on); "dtype(N)" for unknown values.
std::string dtype_name(DType t);
// True for the values of DataType that ONNX 1.12 defines.
bool dtype_is_known(int32_t onnx_value);
// True for the element types IR 9-11 added (float8, int4, uint4, float4): known by name, run by
// no memplan kernel.
bool dtype_is_newer_than_onnx_1_12(int32_t onnx_value);

}  // namespace memplan
