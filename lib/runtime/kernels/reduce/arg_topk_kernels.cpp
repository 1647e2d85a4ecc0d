// ArgMax, ArgMin, Hardmax and TopK. NaN ranks above every number (numpy's order): ArgMax and
// TopK(largest) pick NaNs first, ArgMin picks a NaN too (as numpy's argmin does), TopK(smallest)
// puts them last. Ties go to the lower index (ArgMax/ArgMin: the higher one with
// select_last_index). Hardmax marks the element ArgMax picks with 1, the others 0.
#include <algorithm>

#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/reduce/factories.h"

namespace memplan::rt::shape {
namespace {

template <typename T>
bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return x != x;
  else return false;
}

// a > b in numpy's sort order (NaN largest).
template <typename T>
bool greater(T a, T b) {
  if (is_nan(a)) return !is_nan(b);
  if (is_nan(b)) return false;
  return a > b;
}

// ---- ArgMax / ArgMin / Hardmax ----

// True when v replaces best as the row's pick (a later element, so ties keep best unless `last`).
template <typename T, bool Max>
bool better(T v, T best, bool last) {
  if (is_nan(best)) return last && is_nan(v);
  if (is_nan(v)) return true;
  if constexpr (Max) return last ? v >= best : v > best;
  else return last ? v <= best : v < best;
}

// The index of the pick among the `extent` (> 0) elements of a row, `stride` elements apart.
template <typename T, bool Max>
int64_t pick(const T* row, int64_t extent, uint64_t stride, bool last) {
  T best = row[0];
  int64_t at = 0;
  for (int64_t k = 1; k < extent; ++k) {
    const T v = row[static_cast<uint64_t>(k) * stride];
    if (better<T, Max>(v, best, last)) {
      best = v;
      at = k;
    }
  }
  return at;
}

template <typename T, bool Max>
class ArgKernel final : public Kernel {
 public:
  ArgKernel(std::string where, const Node& n)
      : where_(std::move(where)), axis_(n.attr_int("axis", 0)), keepdims_(n.attr_int("keepdims", 1) != 0),
        last_(n.attr_int("select_last_index", 0) != 0), dynamic_(any_dynamic(n)) {}

  void run(const KernelArgs& a) override {
    const TensorView& in = a.inputs[0];
    const int axis = normalize_axis(axis_, in.rank, where_);
    const AxisSplit s = split_at(in, axis);
    if (s.extent == 0 && s.outer * s.inner > 0) fail_at(where_, "cannot reduce an empty axis");
    if (dynamic_) {
      std::array<int64_t, kMaxRank> dims{};
      int r = 0;
      for (int d = 0; d < in.rank; ++d)
        if (d != axis) dims[r++] = in.dims[d];
        else if (keepdims_) dims[r++] = 1;
      set_shape(a.outputs[0], r, dims.data(), where_);
    }
    const T* x = in.as<const T>();
    int64_t* y = a.outputs[0].as<int64_t>();
    for (uint64_t o = 0; o < s.outer; ++o)
      for (uint64_t i = 0; i < s.inner; ++i)
        y[o * s.inner + i] = pick<T, Max>(x + o * static_cast<uint64_t>(s.extent) * s.inner + i, s.extent, s.inner, last_);
  }

 private:
  std::string where_;
  int64_t axis_;
  bool keepdims_, last_, dynamic_;
};

// Hardmax-13 works along `axis`; before opset 13 the input is seen as 2-D, [dims before axis,
// dims from axis on], and the pick is along the second.
template <typename T>
class HardmaxKernel final : public Kernel {
 public:
  HardmaxKernel(std::string where, const Node& n)
      : where_(std::move(where)), coerce_(n.opset < 13), axis_(n.attr_int("axis", coerce_ ? 1 : -1)), dynamic_(any_dynamic(n)) {}

  void run(const KernelArgs& a) override {
    const TensorView& in = a.inputs[0];
    TensorView& out = a.outputs[0];
    if (dynamic_) set_shape_like(out, in, where_);
    const int axis = normalize_axis(axis_, in.rank, where_);
    AxisSplit s = split_at(in, axis);
    if (coerce_) s = {s.outer, static_cast<int64_t>(product(in.dims.data(), axis, in.rank)), 1};
    const T* x = in.as<const T>();
    T* y = out.as<T>();
    std::fill(y, y + in.element_count(), T(0));
    if (s.extent == 0) return;
    for (uint64_t o = 0; o < s.outer; ++o)
      for (uint64_t i = 0; i < s.inner; ++i) {
        const uint64_t base = o * static_cast<uint64_t>(s.extent) * s.inner + i;
        y[base + static_cast<uint64_t>(pick<T, true>(x + base, s.extent, s.inner, false)) * s.inner] = T(1);
      }
  }

 private:
  std::string where_;
  bool coerce_;
  int64_t axis_;
  bool dynamic_;
};

// ---- TopK ----

template <typename T>
class TopKKernel final : public Kernel {
 public:
  TopKKernel(std::string where, const Node& n, IntsSource k, uint64_t max_extent)
      : where_(std::move(where)), axis_(n.attr_int("axis", -1)), largest_(n.attr_int("largest", 1) != 0), k_(k),
        dynamic_(any_dynamic(n) || k.runtime()), max_extent_(max_extent) {}

  uint64_t scratchpad_bytes() const override { return max_extent_ * sizeof(int64_t); }

  void run(const KernelArgs& a) override {
    const TensorView& in = a.inputs[0];
    const int axis = normalize_axis(axis_, in.rank, where_);
    const AxisSplit s = split_at(in, axis);
    Ints scratch;
    const Ints* kl = k_.get(a, scratch, where_);
    if (!kl || kl->size != 1) fail_at(where_, "K must hold one value");
    const int64_t k = (*kl)[0];
    if (k < 0 || k > s.extent)
      fail_at(where_, "K = " + std::to_string(k) + " is out of range for an axis of size " + std::to_string(s.extent));
    if (static_cast<uint64_t>(s.extent) > max_extent_)
      fail_at(where_, "axis of size " + std::to_string(s.extent) + " exceeds the bound of " + std::to_string(max_extent_));
    if (dynamic_) {
      std::array<int64_t, kMaxRank> dims = in.dims;
      dims[axis] = k;
      for (size_t o = 0; o < 2 && o < a.outputs.size(); ++o)
        if (a.outputs[o].data) set_shape(a.outputs[o], in.rank, dims.data(), where_);
    }
    T* values = a.outputs.size() > 0 ? a.outputs[0].as<T>() : nullptr;
    int64_t* indices = a.outputs.size() > 1 ? a.outputs[1].as<int64_t>() : nullptr;
    int64_t* order = reinterpret_cast<int64_t*>(a.scratchpad);
    const int64_t n = s.extent;
    for (uint64_t o = 0; o < s.outer; ++o)
      for (uint64_t i = 0; i < s.inner; ++i) {
        const T* row = in.as<const T>() + o * static_cast<uint64_t>(n) * s.inner + i;
        auto at = [&](int64_t j) { return row[static_cast<uint64_t>(j) * s.inner]; };
        for (int64_t j = 0; j < n; ++j) order[j] = j;
        // A strict total order: by value, ties by index (lower first).
        auto cmp = [&](int64_t p, int64_t q) {
          const T u = at(p), v = at(q);
          const bool before = largest_ ? greater(u, v) : greater(v, u);
          const bool after = largest_ ? greater(v, u) : greater(u, v);
          return before || (!after && p < q);
        };
        if (k < n) std::partial_sort(order, order + k, order + n, cmp);
        else std::sort(order, order + n, cmp);
        const uint64_t out_base = o * static_cast<uint64_t>(k) * s.inner + i;
        for (int64_t j = 0; j < k; ++j) {
          const uint64_t w = out_base + static_cast<uint64_t>(j) * s.inner;
          if (values) values[w] = at(order[j]);
          if (indices) indices[w] = order[j];
        }
      }
  }

 private:
  std::string where_;
  int64_t axis_;
  bool largest_;
  IntsSource k_;
  bool dynamic_;
  uint64_t max_extent_;
};

}  // namespace

Factory make_arg(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 1, 1);
  if (n.outputs[0]->type.dtype != DType::Int64) fail_at(where, "output must be int64");
  const DType t = n.inputs[0]->type.dtype;
  const bool max = n.op_type == "ArgMax";
  Factory k;
  dispatch(t, NumericTypes{}, [&](auto tag) {
    using T = decltype(tag);
    if (max) k = std::make_unique<ArgKernel<T, true>>(where, n);
    else k = std::make_unique<ArgKernel<T, false>>(where, n);
  });
  if (!k) unsupported_at(where, "inputs of type " + dtype_name(t) + " are not supported");
  return k;
}

Factory make_hardmax(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 1, 1);
  const DType t = n.inputs[0]->type.dtype;
  if (n.outputs[0]->type.dtype != t) fail_at(where, "the output is not " + dtype_name(t));
  Factory k;
  dispatch(t, FloatTypes{}, [&](auto tag) { k = std::make_unique<HardmaxKernel<decltype(tag)>>(where, n); });
  if (!k) unsupported_at(where, "inputs of type " + dtype_name(t) + " are not supported (float32 and float64 only)");
  return k;
}

Factory make_topk(const Node& n, const KernelEnv& env) {
  const bool input = n.opset >= 10;
  std::string where = check_arity(n, env, input ? 2 : 1, input ? 2 : 1);
  const Value* in = n.inputs[0];
  const DType t = in->type.dtype;
  if (n.outputs[0]->type.dtype != t) fail_at(where, "values type differs from the input's");
  if (const Value* idx = output_at(n, 1); idx && idx->type.dtype != DType::Int64) fail_at(where, "indices must be int64");
  IntsSource k = input ? IntsSource::from_input(n, 1, where, "K") : IntsSource::from_attr(n, "k", where);
  if (!k.present()) fail_at(where, "K is missing");
  // The sort's scratch holds one index per element of the axis: its bound decides the size.
  uint64_t max_extent = 0;
  const int64_t rank = static_cast<int64_t>(in->type.dims.size());
  const int64_t axis = n.attr_int("axis", -1);
  if (!in->shape_varies && in->type.has_rank && axis >= -rank && axis < rank && in->type.dims[axis < 0 ? axis + rank : axis].known())
    max_extent = static_cast<uint64_t>(in->type.dims[axis < 0 ? axis + rank : axis].value);
  else if (dtype_size(t) && in->capacity_bytes)
    max_extent = in->capacity_bytes / dtype_size(t);
  else
    unsupported_at(where, "the input's size has no bound");
  Factory kernel;
  dispatch(t, NumericTypes{}, [&](auto tag) { kernel = std::make_unique<TopKKernel<decltype(tag)>>(where, n, k, max_extent); });
  if (!kernel) unsupported_at(where, "inputs of type " + dtype_name(t) + " are not supported");
  return kernel;
}

}  // namespace memplan::rt::shape
