// OneHot: output[..., d, ...] = on_value where indices[...] == d (negative indices count from the
// end), off_value elsewhere; indices outside [-depth, depth - 1] give a row of off_values.
// Indices and depth of any numeric type are converted to integers, as the spec says.
#include <algorithm>
#include <cstdint>

#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/shape/factories.h"

namespace memplan::rt::shape {
namespace {

// Element i of a numeric view as an integer; false for NaN or a value out of int64's range.
template <typename T>
bool integer_at(const TensorView& t, uint64_t i, int64_t& out) {
  const T v = t.as<const T>()[i];
  if constexpr (std::is_floating_point_v<T>) {
    if (!(v > -0x1p63 && v < 0x1p63)) return false;
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    if (v > static_cast<uint64_t>(INT64_MAX)) return false;
  }
  out = static_cast<int64_t>(v);
  return true;
}

class OneHotKernel final : public Kernel {
 public:
  OneHotKernel(std::string where, const Node& n, int64_t axis, uint32_t elem)
      : where_(std::move(where)), axis_(axis), elem_(elem), idx_type_(n.inputs[0]->type.dtype), depth_type_(n.inputs[1]->type.dtype),
        dynamic_(any_dynamic(n)), shape_(n.outputs[0]->type.shape_string()) {}

  void run(const KernelArgs& a) override {
    const TensorView &idx = a.inputs[0], &depth_in = a.inputs[1], &values = a.inputs[2];
    if (depth_in.element_count() != 1) fail_at(where_, "depth must hold exactly one element");
    if (values.element_count() != 2) fail_at(where_, "values must hold exactly two elements (off, on)");
    int64_t depth = 0;
    bool ok = false;
    dispatch(depth_type_, NumericTypes{}, [&](auto tag) { ok = integer_at<decltype(tag)>(depth_in, 0, depth); });
    if (!ok || depth < 1) fail_at(where_, "depth must be a positive number");
    const int rank = idx.rank + 1;
    check_rank(rank, where_);
    const int axis = normalize_axis(axis_, rank, where_);
    std::array<int64_t, kMaxRank> dims{};
    for (int d = 0, s = 0; d < rank; ++d) dims[d] = d == axis ? depth : idx.dims[s++];
    TensorView& out = a.outputs[0];
    if (!dynamic_ && (out.rank != rank || !std::equal(dims.begin(), dims.begin() + rank, out.dims.begin())))
      fail_at(where_, "depth " + std::to_string(depth) + " does not match the output shape " + shape_);
    set_shape(out, rank, dims.data(), where_);  // also checks depth against the buffer
    const uint64_t outer = product(idx.dims.data(), 0, axis), inner = product(idx.dims.data(), axis, idx.rank);
    const uint64_t total = outer * static_cast<uint64_t>(depth) * inner;
    const std::byte *off = values.data, *on = values.data + elem_;
    for (uint64_t i = 0; i < total; ++i) std::memcpy(out.data + i * elem_, off, elem_);
    dispatch(idx_type_, NumericTypes{}, [&](auto tag) {
      for (uint64_t o = 0; o < outer; ++o)
        for (uint64_t i = 0; i < inner; ++i) {
          int64_t v;
          if (!integer_at<decltype(tag)>(idx, o * inner + i, v) || v < -depth || v >= depth) continue;
          if (v < 0) v += depth;
          std::memcpy(out.data + ((o * static_cast<uint64_t>(depth) + static_cast<uint64_t>(v)) * inner + i) * elem_, on, elem_);
        }
    });
  }

 private:
  std::string where_;
  int64_t axis_;
  uint32_t elem_;
  DType idx_type_, depth_type_;
  bool dynamic_;       // else the output's compile-time shape must match depth
  std::string shape_;  // the compile-time shape, for messages
};

}  // namespace

Factory make_onehot(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 3, 3);
  for (int i = 0; i < 2; ++i)
    if (!dispatch(n.inputs[i]->type.dtype, NumericTypes{}, [](auto) {}))
      unsupported_at(where, std::string(i ? "depth" : "indices") + " of type " + dtype_name(n.inputs[i]->type.dtype) + " is not supported");
  const uint32_t elem = movable_size(n.inputs[2]->type.dtype, where);
  if (n.outputs[0]->type.dtype != n.inputs[2]->type.dtype) fail_at(where, "the output type differs from the values'");
  return std::make_unique<OneHotKernel>(where, n, n.attr_int("axis", -1), elem);
}

}  // namespace memplan::rt::shape
