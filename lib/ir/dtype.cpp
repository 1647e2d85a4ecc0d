#include "ir/dtype.h"

namespace memplan {

uint32_t dtype_size(DType t) {
  switch (t) {
    case DType::Float32: case DType::Int32: case DType::Uint32: return 4;
    case DType::Uint8: case DType::Int8: case DType::Bool: return 1;
    case DType::Uint16: case DType::Int16: case DType::Float16: case DType::BFloat16: return 2;
    case DType::Int64: case DType::Uint64: case DType::Float64: case DType::Complex64: return 8;
    case DType::Complex128: return 16;
    case DType::Undefined: case DType::String: return 0;
  }
  return 0;
}

std::string dtype_name(DType t) {
  switch (t) {
    case DType::Undefined: return "undefined";
    case DType::Float32: return "float32";
    case DType::Uint8: return "uint8";
    case DType::Int8: return "int8";
    case DType::Uint16: return "uint16";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::String: return "string";
    case DType::Bool: return "bool";
    case DType::Float16: return "float16";
    case DType::Float64: return "float64";
    case DType::Uint32: return "uint32";
    case DType::Uint64: return "uint64";
    case DType::Complex64: return "complex64";
    case DType::Complex128: return "complex128";
    case DType::BFloat16: return "bfloat16";
  }
  // Types of ONNX 1.14 and later (IR 9-11) that no memplan kernel takes: named, for refusals.
  switch (static_cast<int32_t>(t)) {
    case 17: return "float8e4m3fn";
    case 18: return "float8e4m3fnuz";
    case 19: return "float8e5m2";
    case 20: return "float8e5m2fnuz";
    case 21: return "uint4";
    case 22: return "int4";
    case 23: return "float4e2m1";
    default: break;
  }
  return "dtype(" + std::to_string(static_cast<int32_t>(t)) + ")";
}

bool dtype_is_known(int32_t v) { return v >= 0 && v <= 16; }

bool dtype_is_newer_than_onnx_1_12(int32_t v) { return v >= 17 && v <= 23; }

}  // namespace memplan
