// Unique: the distinct elements (or slices along `axis`) of X, sorted or in order of first
// occurrence, with the optional first-occurrence indices, inverse indices and counts. Positions
// are sorted in the scratchpad (std::sort allocates nothing); NaNs sort last and equal each other.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/shape/factories.h"

namespace memplan::rt::shape {
namespace {

template <typename T>
int compare(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) - std::isnan(b);
  }
  return a < b ? -1 : b < a ? 1 : 0;
}

// The n positions of X compared as elements or slices: position i is X[o, i, e] for every
// outer o and inner e.
template <typename T>
struct Slices {
  const T* x;
  uint64_t outer, inner, extent;
  int compare_at(int64_t i, int64_t j) const {
    for (uint64_t o = 0; o < outer; ++o) {
      const T* a = x + (o * extent + static_cast<uint64_t>(i)) * inner;
      const T* b = x + (o * extent + static_cast<uint64_t>(j)) * inner;
      for (uint64_t e = 0; e < inner; ++e)
        if (int c = compare(a[e], b[e])) return c;
    }
    return 0;
  }
};

constexpr uint64_t kScratchArrays = 6;

class UniqueKernel final : public Kernel {
 public:
  UniqueKernel(std::string where, const Node& n, bool has_axis, int64_t axis, bool sorted, uint64_t max_positions)
      : where_(std::move(where)), dtype_(n.inputs[0]->type.dtype), has_axis_(has_axis), axis_(axis), sorted_(sorted),
        scratch_(max_positions * kScratchArrays * sizeof(int64_t)) {}

  uint64_t scratchpad_bytes() const override { return scratch_; }

  void run(const KernelArgs& a) override {
    const TensorView& x = a.inputs[0];
    int axis = 0;
    const AxisSplit s = split_optional_axis(x, has_axis_, axis_, where_, axis);
    const uint64_t n = static_cast<uint64_t>(s.extent);
    if (n > scratch_ / (kScratchArrays * sizeof(int64_t)))
      fail_at(where_, std::to_string(n) + " positions exceed the planned scratchpad");
    dispatch(dtype_ == DType::Bool ? DType::Uint8 : dtype_, NumericTypes{}, [&](auto tag) {
      using T = decltype(tag);
      unique(Slices<T>{x.as<const T>(), s.outer, s.inner, n}, x, axis, a);
    });
  }

 private:
  template <typename T>
  void unique(const Slices<T>& sl, const TensorView& x, int axis, const KernelArgs& a) const {
    const uint64_t n = sl.extent;
    int64_t* perm = reinterpret_cast<int64_t*>(a.scratchpad);
    int64_t *run_of = perm + n, *first = run_of + n, *count = first + n, *ord = count + n, *rank = ord + n;
    for (uint64_t i = 0; i < n; ++i) perm[i] = static_cast<int64_t>(i);
    // Equal slices end up adjacent, each run in position order: its first entry is the first occurrence.
    std::sort(perm, perm + n, [&](int64_t i, int64_t j) {
      const int c = sl.compare_at(i, j);
      return c < 0 || (c == 0 && i < j);
    });
    int64_t u = 0;
    for (uint64_t k = 0; k < n; ++k) {
      if (k == 0 || sl.compare_at(perm[k - 1], perm[k]) != 0) {
        first[u] = perm[k];
        count[u++] = 0;
      }
      run_of[perm[k]] = u - 1;
      ++count[u - 1];
    }
    if (sorted_) {
      for (int64_t r = 0; r < u; ++r) ord[r] = r;
    } else {  // runs in order of first occurrence: scan positions, reusing perm as position -> run
      std::fill(perm, perm + n, int64_t{-1});
      for (int64_t r = 0; r < u; ++r) perm[first[r]] = r;
      int64_t j = 0;
      for (uint64_t i = 0; i < n; ++i)
        if (perm[i] >= 0) ord[j++] = perm[i];
    }
    for (int64_t j = 0; j < u; ++j) rank[ord[j]] = j;

    TensorView& y = a.outputs[0];
    std::array<int64_t, kMaxRank> dims = x.dims;
    if (has_axis_) {
      dims[axis] = u;
      set_shape(y, x.rank, dims.data(), where_);
    } else {
      set_shape(y, 1, &u, where_);
    }
    T* out = y.as<T>();
    for (uint64_t o = 0; o < sl.outer; ++o)
      for (int64_t j = 0; j < u; ++j)
        std::memcpy(out + (o * static_cast<uint64_t>(u) + static_cast<uint64_t>(j)) * sl.inner,
                    sl.x + (o * n + static_cast<uint64_t>(first[ord[j]])) * sl.inner, sl.inner * sizeof(T));
    auto write = [&](size_t k, int64_t len, auto value_at) {
      if (k >= a.outputs.size() || !a.outputs[k].data) return;  // an omitted optional output
      TensorView& t = a.outputs[k];
      set_shape(t, 1, &len, where_);
      for (int64_t i = 0; i < len; ++i) t.as<int64_t>()[i] = value_at(i);
    };
    write(1, u, [&](int64_t j) { return first[ord[j]]; });
    write(2, static_cast<int64_t>(n), [&](int64_t i) { return rank[run_of[i]]; });
    write(3, u, [&](int64_t j) { return count[ord[j]]; });
  }

  std::string where_;
  DType dtype_;
  bool has_axis_;
  int64_t axis_;
  bool sorted_;
  uint64_t scratch_;
};

}  // namespace

Factory make_unique_op(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 1, 1);
  const Value* x = n.inputs[0];
  const DType t = x->type.dtype;
  if (t != DType::Bool && !dispatch(t, NumericTypes{}, [](auto) {}))
    unsupported_at(where, "input of type " + dtype_name(t) + " is not supported");
  for (size_t k = 1; k < n.outputs.size(); ++k)
    if (n.outputs[k] && n.outputs[k]->type.dtype != DType::Int64) fail_at(where, "output " + std::to_string(k) + " must be int64");
  const bool has_axis = n.attr("axis") != nullptr;
  const int64_t axis = n.attr_int("axis", 0);
  // Positions to sort: the axis's extent, or every element; bounded by the buffer for a run-time shape.
  uint64_t positions = x->capacity_bytes / dtype_size(t);
  if (!shape_is_dynamic(x)) {
    const TensorView v = static_view(x, where);
    positions = has_axis && v.rank > 0 ? static_cast<uint64_t>(v.dims[normalize_axis(axis, v.rank, where)]) : v.element_count();
  }
  if (positions > (uint64_t{1} << 50)) unsupported_at(where, "the input is too large");
  return std::make_unique<UniqueKernel>(where, n, has_axis, axis, n.attr_int("sorted", 1) != 0, positions);
}

}  // namespace memplan::rt::shape
