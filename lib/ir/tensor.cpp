#include "ir/tensor.h"

#include <cstring>

#include "ir/float16.h"
#include "ir/float_to_int.h"
#include "memplan/error.h"
#include "util/checked.h"

namespace memplan {

uint64_t checked_element_count(std::span<const int64_t> dims, const std::string& what) {
  uint64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) fail(what + ": dimension " + std::to_string(d) + " is negative");
    n = checked_mul(n, static_cast<uint64_t>(d), what);
  }
  return n;
}

uint64_t Tensor::element_count() const {
  uint64_t n = 1;
  for (int64_t d : dims) n *= static_cast<uint64_t>(d);
  return n;
}

uint64_t Tensor::byte_size() const { return element_count() * dtype_size(dtype); }

namespace {
template <typename T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
}  // namespace

double Tensor::float_at(uint64_t i) const {
  if (i >= element_count()) fail_internal("tensor element index out of range");
  const uint64_t size = dtype_size(dtype);
  const std::byte* p = bytes.data() + (splat ? 0 : i * size);
  if (bytes.size() < (splat ? size : (i + 1) * size)) fail_internal("tensor data shorter than its shape");
  switch (dtype) {
    case DType::Float32: return load<float>(p);
    case DType::Float64: return load<double>(p);
    case DType::Int64: return static_cast<double>(load<int64_t>(p));
    case DType::Int32: return load<int32_t>(p);
    case DType::Int16: return load<int16_t>(p);
    case DType::Int8: return load<int8_t>(p);
    case DType::Uint8: return load<uint8_t>(p);
    case DType::Uint16: return load<uint16_t>(p);
    case DType::Uint32: return load<uint32_t>(p);
    case DType::Uint64: return static_cast<double>(load<uint64_t>(p));
    case DType::Bool: return load<uint8_t>(p) != 0;
    case DType::Float16: return half_to_float(load<uint16_t>(p));
    case DType::BFloat16: return bfloat16_to_float(load<uint16_t>(p));
    default: fail_unsupported("cannot read a " + dtype_name(dtype) + " constant as a number");
  }
}

int64_t Tensor::int_at(uint64_t i) const {
  if (dtype == DType::Int64) {
    if (i >= element_count()) fail_internal("tensor element index out of range");
    const uint64_t at = splat ? 0 : i * 8;
    if (bytes.size() < at + 8) fail_internal("tensor data shorter than its shape");
    return load<int64_t>(bytes.data() + at);
  }
  return float_to_int<int64_t>(float_at(i));  // a float constant read as an index or size: defined for any value
}

std::vector<int64_t> Tensor::to_ints() const {
  std::vector<int64_t> out(element_count());
  for (uint64_t i = 0; i < out.size(); ++i) out[i] = int_at(i);
  return out;
}

std::vector<std::byte> Tensor::materialize() const {
  if (!splat) return bytes;
  const uint64_t size = dtype_size(dtype);
  std::vector<std::byte> out(byte_size());
  if (bytes.size() < size) return out;  // an empty tensor
  for (uint64_t off = 0; off < out.size(); off += size) std::memcpy(out.data() + off, bytes.data(), size);
  return out;
}

void store_number(std::byte* p, DType dtype, double v) {
  auto put = [p](auto x) { std::memcpy(p, &x, sizeof(x)); };
  switch (dtype) {
    case DType::Float32: put(static_cast<float>(v)); break;
    case DType::Float64: put(v); break;
    case DType::Int64: put(float_to_int<int64_t>(v)); break;
    case DType::Int32: put(float_to_int<int32_t>(v)); break;
    case DType::Int16: put(float_to_int<int16_t>(v)); break;
    case DType::Int8: put(float_to_int<int8_t>(v)); break;
    case DType::Uint8: put(float_to_int<uint8_t>(v)); break;
    case DType::Uint16: put(float_to_int<uint16_t>(v)); break;
    case DType::Uint32: put(float_to_int<uint32_t>(v)); break;
    case DType::Uint64: put(float_to_int<uint64_t>(v)); break;
    case DType::Bool: put(static_cast<uint8_t>(v != 0)); break;
    case DType::Float16: put(half_from_double(v)); break;
    case DType::BFloat16: put(bfloat16_from_double(v)); break;
    default: fail_internal("cannot store a number as " + dtype_name(dtype));
  }
}

Tensor make_int64_tensor(std::vector<int64_t> dims, std::span<const int64_t> values) {
  Tensor t;
  t.dtype = DType::Int64;
  t.dims = std::move(dims);
  t.bytes.resize(values.size() * sizeof(int64_t));
  if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

Tensor make_scalar_bool(bool v) {
  Tensor t;
  t.dtype = DType::Bool;
  t.bytes.push_back(std::byte{v ? uint8_t{1} : uint8_t{0}});
  return t;
}

}  // namespace memplan
