// Helpers shared by the plain C++ kernels of most families (shape/, elementwise/, reduce/, norm/,
// detection/, ...): integer lists read from attributes / constants / run-time inputs, output-shape
// checks, strided copies and numpy broadcasting over TensorViews. Everything a kernel's run()
// calls here works on fixed arrays: no heap.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "memplan/error.h"
#include "runtime/kernel.h"
#include "runtime/kernels/common/kernel_common.h"
#include "runtime/kernels/common/element_types.h"

namespace memplan::rt::shape {

// Loops of Tile and friends split each dimension in two.
constexpr int kMaxLoopRank = 2 * kMaxRank;

// ---- Messages and node access (factory time) ----

// where(), input_at(), output_at() and check_arity() are kernel_common.h's.
[[noreturn]] void fail_at(const std::string& where, const std::string& what);         // InvalidInput
[[noreturn]] void unsupported_at(const std::string& where, const std::string& what);  // Unsupported

const Value* required_input(const Node& n, size_t i, const std::string& where);
const Value* required_output(const Node& n, size_t i, const std::string& where);

// True when the value's run-time shape may differ from (or is not given by) its compile-time type.
bool shape_is_dynamic(const Value* v);
// True when any input or output of n is dynamic.
bool any_dynamic(const Node& n);
// The compile-time type as a view without data (unknown dims are -1); fails past kMaxRank.
TensorView static_view(const Value* v, const std::string& where);
// Checks the rank of a run-time view (and of the static type) fits kMaxRank.
void check_rank(int rank, const std::string& where);

// Axis in [-rank, rank - 1] -> [0, rank - 1].
int normalize_axis(int64_t axis, int rank, const std::string& where);

// ---- Indices read from data (Gather*, Scatter*) ----

// Fails at load unless the indices value is int64 or int32.
void check_indices_type(const Value* v, const std::string& where);
[[noreturn]] void index_out_of_range(const std::string& where, int64_t idx, int axis, int64_t extent);
// An index in [-extent, extent - 1] made non-negative; anything else fails naming the node.
inline int64_t wrap_index(int64_t i, int64_t extent, int axis, const std::string& where) {
  if (i < -extent || i >= extent) index_out_of_range(where, i, axis, extent);
  return i < 0 ? i + extent : i;
}

// ---- Integer lists (axes, pads, starts, shapes) ----

struct Ints {
  int size = 0;
  std::array<int64_t, kMaxLoopRank> v{};
  int64_t operator[](int i) const { return v[static_cast<size_t>(i)]; }
};

// Element i of an int32/int64 view (unchecked).
inline int64_t int_at(const TensorView& t, uint64_t i) {
  if (t.dtype == DType::Int32) {
    int32_t x;
    std::memcpy(&x, t.data + i * 4, 4);
    return x;
  }
  int64_t x;
  std::memcpy(&x, t.data + i * 8, 8);
  return x;
}

Ints ints_of_view(const TensorView& t, const std::string& where, const char* what);
Ints ints_of_tensor(const Tensor& t, const std::string& where, const char* what);
Ints ints_of_list(const std::vector<int64_t>& v, const std::string& where, const char* what);

// Where an integer list comes from: absent, fixed at load (attribute or constant input), or an
// input read at run time.
class IntsSource {
 public:
  static IntsSource from_attr(const Node& n, const std::string& name, const std::string& where);
  static IntsSource from_input(const Node& n, size_t i, const std::string& where, const char* what);
  bool present() const { return present_; }
  bool runtime() const { return present_ && !fixed_; }
  // The list, or null when absent (an omitted input). `scratch` holds a run-time list.
  const Ints* get(const KernelArgs& args, Ints& scratch, const std::string& where) const;
  const Ints* fixed() const { return present_ && fixed_ ? &value_ : nullptr; }

 private:
  bool present_ = false;
  bool fixed_ = false;
  size_t input_ = 0;
  const char* what_ = "";
  Ints value_;
};

// ---- Output shapes ----

// Sets an output's run-time shape; fails naming the node when it does not fit the buffer.
void set_shape(TensorView& out, int rank, const int64_t* dims, const std::string& where);
inline void set_shape_like(TensorView& out, const TensorView& in, const std::string& where) {
  set_shape(out, in.rank, in.dims.data(), where);
}
// Fails naming the node when `bytes` do not fit the output's buffer.
void check_fits(uint64_t bytes, const TensorView& out, const std::string& where);

// Row-major element strides of a shape.
std::array<int64_t, kMaxRank> strides_of(int rank, const int64_t* dims);
inline uint64_t product(const int64_t* dims, int from, int to) {
  uint64_t n = 1;
  for (int i = from; i < to; ++i) n *= static_cast<uint64_t>(dims[i]);
  return n;
}

// ---- Strided copy: a contiguous output read from `src` through element strides ----

struct CopyPlan {
  int rank = 0;
  std::array<int64_t, kMaxLoopRank> dims{};
  std::array<int64_t, kMaxLoopRank> strides{};  // elements; 0 repeats, negative walks backwards
  int64_t base = 0;                             // element offset of the first element read
  uint64_t count = 0;
  // Computes count, drops size-1 dims and merges dims the strides walk contiguously.
  void finish();
};

void strided_copy(std::byte* dst, const std::byte* src, uint32_t elem_size, const CopyPlan& p);

// ---- Numpy broadcasting of up to three inputs ----

struct Broadcast {
  int out_rank = 0;
  std::array<int64_t, kMaxRank> out_dims{};
  uint64_t count = 0;
  int rank = 1;  // loop rank after merging
  std::array<int64_t, kMaxRank> dims{};
  std::array<std::array<int64_t, kMaxRank>, 3> strides{};  // per input, elements (0: broadcast)
};

Broadcast make_broadcast(const TensorView* const* in, int n, const std::string& where);

// Calls f(out_index, offsets) for each output element, offsets[k] indexing input k.
template <size_t N, typename F>
void for_each_broadcast(const Broadcast& b, F&& f) {
  if (b.count == 0) return;
  const int r = b.rank;
  const int64_t inner = b.dims[r - 1];
  std::array<int64_t, N> step{}, base{};
  for (size_t k = 0; k < N; ++k) step[k] = b.strides[k][r - 1];
  std::array<int64_t, kMaxRank> coord{};
  uint64_t out = 0;
  for (;;) {
    std::array<int64_t, N> off = base;
    for (int64_t j = 0; j < inner; ++j) {
      f(out++, off);
      for (size_t k = 0; k < N; ++k) off[k] += step[k];
    }
    auto moved = [&](int d, int64_t by) {
      for (size_t k = 0; k < N; ++k) base[k] += b.strides[k][d] * by;
    };
    if (!next_index(coord, b.dims, r - 1, moved)) return;
  }
}

// ---- Typed element access (element_types.h: BoolTag, Types, dispatch, dispatch_size) ----

template <typename T>
constexpr DType dtype_of() {
  return dtype_for<T>();
}

// The unsigned integer of N bytes: elements moved or tested as raw bits.
template <size_t N>
using uint_of_size =
    std::conditional_t<N == 1, uint8_t, std::conditional_t<N == 2, uint16_t, std::conditional_t<N == 4, uint32_t, uint64_t>>>;

// The element size of a byte-moving op's dtype; fails for strings and unknown types.
uint32_t movable_size(DType t, const std::string& where);

// ---- Generic element-wise kernels ----

// out = f(in) element by element, same shape. Out/In are storage types (bool as uint8_t).
template <typename In, typename Out, typename F>
class UnaryKernel final : public Kernel {
 public:
  UnaryKernel(std::string where, bool dynamic, F f) : where_(std::move(where)), dynamic_(dynamic), f_(f) {}
  void run(const KernelArgs& a) override {
    const TensorView& in = a.inputs[0];
    TensorView& out = a.outputs[0];
    if (dynamic_) set_shape_like(out, in, where_);
    const In* x = in.as<const In>();
    Out* y = out.as<Out>();
    const uint64_t n = in.element_count();
    // A function with a whole-array form (a vectorized conversion) takes the array at once.
    if constexpr (requires { f_.all(x, y, n); }) f_.all(x, y, n);
    else for (uint64_t i = 0; i < n; ++i) y[i] = f_(x[i]);
  }

 private:
  std::string where_;
  bool dynamic_;
  F f_;
};

template <typename In, typename Out, typename F>
std::unique_ptr<Kernel> make_unary(const std::string& where, const Node& n, F f) {
  return std::make_unique<UnaryKernel<In, Out, F>>(where, any_dynamic(n), f);
}

// out = f(a, b) with numpy broadcasting.
template <typename In, typename Out, typename F>
class BinaryKernel final : public Kernel {
 public:
  BinaryKernel(std::string where, const Node& n, F f) : where_(std::move(where)), dynamic_(any_dynamic(n)), f_(f) {
    if (!dynamic_) {
      TensorView a = static_view(n.inputs[0], where_), b = static_view(n.inputs[1], where_);
      const TensorView* in[] = {&a, &b};
      plan_ = make_broadcast(in, 2, where_);
    }
  }
  void run(const KernelArgs& a) override {
    const Broadcast* p = &plan_;
    Broadcast local;
    if (dynamic_) {
      const TensorView* in[] = {&a.inputs[0], &a.inputs[1]};
      local = make_broadcast(in, 2, where_);
      set_shape(a.outputs[0], local.out_rank, local.out_dims.data(), where_);
      p = &local;
    }
    const In* x = a.inputs[0].as<const In>();
    const In* z = a.inputs[1].as<const In>();
    Out* y = a.outputs[0].as<Out>();
    for_each_broadcast<2>(*p, [&](uint64_t i, const std::array<int64_t, 2>& o) { y[i] = f_(x[o[0]], z[o[1]]); });
  }

 private:
  std::string where_;
  bool dynamic_;
  F f_;
  Broadcast plan_;
};

template <typename In, typename Out, typename F>
std::unique_ptr<Kernel> make_binary(const std::string& where, const Node& n, F f) {
  return std::make_unique<BinaryKernel<In, Out, F>>(where, n, f);
}

// outer x extent x inner around one axis.
struct AxisSplit {
  uint64_t outer = 1;
  int64_t extent = 0;
  uint64_t inner = 1;
};
inline AxisSplit split_at(const TensorView& t, int axis) {
  return {product(t.dims.data(), 0, axis), t.dims[axis], product(t.dims.data(), axis + 1, t.rank)};
}

// Compress and Unique: around `axis` when the node has one (set to its normalized value), else
// over the whole tensor flattened (axis 0 of a 1-D view).
inline AxisSplit split_optional_axis(const TensorView& t, bool has_axis, int64_t axis_attr, const std::string& where,
                                     int& axis) {
  axis = 0;
  if (!has_axis) return {1, static_cast<int64_t>(t.element_count()), 1};
  if (t.rank == 0) fail_at(where, "the input must have rank 1 or more");
  axis = normalize_axis(axis_attr, t.rank, where);
  return split_at(t, axis);
}

// The factory type of the kernels that build on these helpers.
using Factory = std::unique_ptr<Kernel>;

}  // namespace memplan::rt::shape
