// Constant tensor data: initializers, Constant nodes and values folded at compile time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace memplan {

struct Tensor {
  DType dtype = DType::Undefined;
  std::vector<int64_t> dims;
  // The element bytes, little-endian, C order. When `splat` is set it holds one element that
  // stands for every element (ConstantOfShape weights stay small until the runtime needs them).
  std::vector<std::byte> bytes;
  bool splat = false;

  uint64_t element_count() const;  // product of dims (dims are checked when the tensor is made)
  uint64_t byte_size() const;      // element_count * element size, the size once materialized
  // Element i converted to int64 / double (any numeric dtype); i is bounds-checked.
  int64_t int_at(uint64_t i) const;
  double float_at(uint64_t i) const;
  std::vector<int64_t> to_ints() const;
  // The full element bytes (expands a splat).
  std::vector<std::byte> materialize() const;
};

// Builders for folded values.
Tensor make_int64_tensor(std::vector<int64_t> dims, std::span<const int64_t> values);
Tensor make_scalar_bool(bool v);

// Writes `v` converted to `dtype` (a numeric type) at `p`.
void store_number(std::byte* p, DType dtype, double v);

// Product of dims with overflow and sign checks; `what` names the tensor in the error.
uint64_t checked_element_count(std::span<const int64_t> dims, const std::string& what);

}  // namespace memplan
