// ScatterElements (and Scatter, its opset 9/10 name) and ScatterND: the output is a copy of the
// data with the updates written (or added, or multiplied) at the given indices. Every index is
// checked before it is used; duplicates are applied in order, so the last write wins.
#include <type_traits>

#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/shape/factories.h"

namespace memplan::rt::shape {
namespace {

enum class Reduction { None, Add, Mul, Max, Min };  // max and min: opset 18

Reduction reduction_of(const Node& n, const std::string& where) {
  const std::string r = n.attr_string("reduction", "none");
  if (r == "none") return Reduction::None;
  if (r == "add") return Reduction::Add;
  if (r == "mul") return Reduction::Mul;
  if (r == "max") return Reduction::Max;
  if (r == "min") return Reduction::Min;
  unsupported_at(where, "reduction '" + r + "' is not supported (none, add, mul, max and min only)");
}

// `old` combined with `v`. Integers wrap around (computed in uint64_t: no signed overflow).
template <typename T>
T combine(Reduction r, T old, T v) {
  if (r == Reduction::None) return v;
  if (r == Reduction::Max) return v > old ? v : old;
  if (r == Reduction::Min) return v < old ? v : old;
  if constexpr (std::is_integral_v<T>) {
    const uint64_t a = static_cast<uint64_t>(old), b = static_cast<uint64_t>(v);
    return static_cast<T>(r == Reduction::Add ? a + b : a * b);
  } else {
    return r == Reduction::Add ? old + v : old * v;
  }
}

// Calls f(T{}) with the arithmetic type for add/mul, or an unsigned type of the element's size
// for plain writes (any dtype moves as bytes).
template <typename F>
void dispatch_reduction(Reduction r, DType t, F&& f) {
  if (r != Reduction::None) {
    dispatch(t, NumericTypes{}, f);
    return;
  }
  dispatch_size(dtype_size(t), [&](auto es) {
    using U = uint_of_size<decltype(es)::value>;
    f(U{});
  });
}

// Checks the types at load: data movable, int indices, updates like data; add/mul need numbers.
void check_scatter_types(const Node& n, Reduction r, const std::string& where) {
  const DType t = n.inputs[0]->type.dtype;
  movable_size(t, where);
  check_indices_type(n.inputs[1], where);
  if (n.inputs[2]->type.dtype != t) fail_at(where, "updates and data differ in type");
  if (r != Reduction::None && !dispatch(t, NumericTypes{}, [](auto) {}))
    unsupported_at(where, "reduction on " + dtype_name(t) + " data is not supported");
}

// The output starts as a copy of the data (memmove: harmless should the buffers ever coincide).
void copy_data(const TensorView& data, TensorView& out, bool dynamic, const std::string& where) {
  if (dynamic) set_shape_like(out, data, where);
  if (out.data != data.data) std::memmove(out.data, data.data, data.byte_size());
}

// ---- ScatterElements ----

void check_elements_shapes(const TensorView& data, const TensorView& idx, const TensorView& upd, int axis, const std::string& where) {
  if (data.rank == 0 || idx.rank != data.rank || upd.rank != idx.rank)
    fail_at(where, "data, indices and updates must have the same rank, 1 or more");
  for (int d = 0; d < idx.rank; ++d) {
    if (upd.dims[d] != idx.dims[d]) fail_at(where, "updates and indices differ in shape");
    if (d != axis && idx.dims[d] > data.dims[d])
      fail_at(where, "indices dimension " + std::to_string(d) + " (" + std::to_string(idx.dims[d]) + ") exceeds the data's (" +
                         std::to_string(data.dims[d]) + ")");
  }
}

template <typename T>
void scatter_elements(Reduction r, int axis, const TensorView& data, const TensorView& idx, const TensorView& upd, T* out,
                      const std::string& where) {
  const uint64_t count = idx.element_count();
  if (count == 0) return;
  const auto strides = strides_of(data.rank, data.dims.data());
  const int64_t extent = data.dims[axis];
  const T* u = upd.as<const T>();
  std::array<int64_t, kMaxRank> coord{};
  int64_t base = 0;  // output offset of coord with the axis coordinate at 0
  for (uint64_t k = 0;; ++k) {
    const int64_t i = wrap_index(int_at(idx, k), extent, axis, where);
    T& dst = out[base + i * strides[axis]];
    dst = combine(r, dst, u[k]);
    if (!next_index(coord, idx.dims, idx.rank, [&](int d, int64_t by) { base += (d == axis ? 0 : strides[d]) * by; }))
      return;
  }
}

class ScatterElementsKernel final : public Kernel {
 public:
  ScatterElementsKernel(std::string where, const Node& n, Reduction r)
      : where_(std::move(where)), r_(r), axis_attr_(n.attr_int("axis", 0)), dtype_(n.inputs[0]->type.dtype), dynamic_(any_dynamic(n)) {
    if (!dynamic_) {
      const TensorView data = static_view(n.inputs[0], where_);
      check_elements_shapes(data, static_view(n.inputs[1], where_), static_view(n.inputs[2], where_),
                            normalize_axis(axis_attr_, data.rank, where_), where_);
    }
  }
  void run(const KernelArgs& a) override {
    const TensorView &data = a.inputs[0], &idx = a.inputs[1], &upd = a.inputs[2];
    if (data.rank == 0) fail_at(where_, "data must have rank 1 or more");
    const int axis = normalize_axis(axis_attr_, data.rank, where_);
    if (dynamic_) check_elements_shapes(data, idx, upd, axis, where_);
    copy_data(data, a.outputs[0], dynamic_, where_);
    dispatch_reduction(r_, dtype_, [&](auto tag) {
      using T = decltype(tag);
      scatter_elements<T>(r_, axis, data, idx, upd, a.outputs[0].as<T>(), where_);
    });
  }

 private:
  std::string where_;
  Reduction r_;
  int64_t axis_attr_;
  DType dtype_;
  bool dynamic_;
};

// ---- ScatterND ----

// updates must have the shape indices.shape[:-1] + data.shape[k:], k = indices.shape[-1].
void check_nd_shapes(const TensorView& data, const TensorView& idx, const TensorView& upd, const std::string& where) {
  if (data.rank == 0 || idx.rank == 0) fail_at(where, "data and indices must have rank 1 or more");
  const int64_t k = idx.dims[idx.rank - 1];
  if (k < 1 || k > data.rank)
    fail_at(where, "the last dimension of indices (" + std::to_string(k) + ") must be in [1, " + std::to_string(data.rank) + "]");
  const int want = idx.rank - 1 + data.rank - static_cast<int>(k);
  bool ok = upd.rank == want;
  for (int d = 0; ok && d < idx.rank - 1; ++d) ok = upd.dims[d] == idx.dims[d];
  for (int d = static_cast<int>(k); ok && d < data.rank; ++d) ok = upd.dims[idx.rank - 1 + d - k] == data.dims[d];
  if (!ok) fail_at(where, "updates must have the shape indices.shape[:-1] + data.shape[indices.shape[-1]:]");
}

template <typename T>
void scatter_nd(Reduction r, const TensorView& data, const TensorView& idx, const TensorView& upd, T* out, const std::string& where) {
  const int k = static_cast<int>(idx.dims[idx.rank - 1]);
  const auto strides = strides_of(data.rank, data.dims.data());
  const uint64_t tuples = product(idx.dims.data(), 0, idx.rank - 1);
  const uint64_t slice = product(data.dims.data(), k, data.rank);
  const T* u = upd.as<const T>();
  for (uint64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (int j = 0; j < k; ++j) off += wrap_index(int_at(idx, t * k + j), data.dims[j], j, where) * strides[j];
    T* dst = out + off;
    const T* src = u + t * slice;
    for (uint64_t e = 0; e < slice; ++e) dst[e] = combine(r, dst[e], src[e]);
  }
}

class ScatterNDKernel final : public Kernel {
 public:
  ScatterNDKernel(std::string where, const Node& n, Reduction r)
      : where_(std::move(where)), r_(r), dtype_(n.inputs[0]->type.dtype), dynamic_(any_dynamic(n)) {
    if (!dynamic_) check_nd_shapes(static_view(n.inputs[0], where_), static_view(n.inputs[1], where_), static_view(n.inputs[2], where_), where_);
  }
  void run(const KernelArgs& a) override {
    const TensorView &data = a.inputs[0], &idx = a.inputs[1], &upd = a.inputs[2];
    if (dynamic_) check_nd_shapes(data, idx, upd, where_);
    copy_data(data, a.outputs[0], dynamic_, where_);
    dispatch_reduction(r_, dtype_, [&](auto tag) {
      using T = decltype(tag);
      scatter_nd<T>(r_, data, idx, upd, a.outputs[0].as<T>(), where_);
    });
  }

 private:
  std::string where_;
  Reduction r_;
  DType dtype_;
  bool dynamic_;
};

}  // namespace

Factory make_scatter_elements(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 3, 3);
  const Reduction r = reduction_of(n, where);
  check_scatter_types(n, r, where);
  return std::make_unique<ScatterElementsKernel>(where, n, r);
}

Factory make_scatter_nd(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 3, 3);
  const Reduction r = reduction_of(n, where);
  check_scatter_types(n, r, where);
  return std::make_unique<ScatterNDKernel>(where, n, r);
}

}  // namespace memplan::rt::shape
