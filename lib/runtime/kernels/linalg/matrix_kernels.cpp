// Ops on the last two axes, seen as a batch of matrices: Trilu (keep a triangle, zero the rest),
// EyeLike (a 2-D identity shifted by k) and Det (determinant by LU decomposition with partial
// pivoting, in double).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/linalg/factories.h"

namespace memplan::rt::norm {
using namespace shape;
namespace {

// batch x rows x cols of a view of rank >= 2.
struct Matrices {
  uint64_t batch = 0;
  int64_t rows = 0, cols = 0;
};

Matrices matrices_of(const TensorView& t, const std::string& where) {
  if (t.rank < 2) fail_at(where, "the input must have rank 2 or more");
  return {product(t.dims.data(), 0, t.rank - 2), t.dims[t.rank - 2], t.dims[t.rank - 1]};
}

// ---- Trilu ----

// Moves bytes only, so one kernel serves every element type.
class TriluKernel final : public Kernel {
 public:
  TriluKernel(std::string where, const Node& n, IntsSource k, uint32_t elem_size)
      : where_(std::move(where)), upper_(n.attr_int("upper", 1) != 0), k_(k), size_(elem_size) {}

  void run(const KernelArgs& a) override {
    const TensorView& x = a.inputs[0];
    TensorView& y = a.outputs[0];
    set_shape_like(y, x, where_);  // also checks y holds x
    const Matrices m = matrices_of(x, where_);
    Ints scratch;
    const Ints* kl = k_.get(a, scratch, where_);
    if (kl && kl->size != 1) fail_at(where_, "k must hold one value");
    // Beyond [-rows, cols] every k keeps (or zeroes) the same elements: clamping avoids overflow.
    const int64_t k = std::clamp<int64_t>(kl ? (*kl)[0] : 0, -m.rows, m.cols);
    const std::byte* src = x.data;
    std::byte* dst = y.data;
    const uint64_t row_bytes = static_cast<uint64_t>(m.cols) * size_;
    for (uint64_t b = 0; b < m.batch; ++b)
      for (int64_t i = 0; i < m.rows; ++i, src += row_bytes, dst += row_bytes) {
        // Kept columns [lo, hi): j >= i + k for the upper triangle, j <= i + k for the lower.
        const int64_t lo = upper_ ? std::clamp<int64_t>(i + k, 0, m.cols) : 0;
        const int64_t hi = upper_ ? m.cols : std::clamp<int64_t>(i + k + 1, 0, m.cols);
        const uint64_t l = static_cast<uint64_t>(lo) * size_, h = static_cast<uint64_t>(hi) * size_;
        std::memset(dst, 0, l);
        if (dst != src && h > l) std::memcpy(dst + l, src + l, h - l);
        std::memset(dst + h, 0, row_bytes - h);
      }
  }

 private:
  std::string where_;
  bool upper_;
  IntsSource k_;
  uint32_t size_;
};

// ---- EyeLike ----

class EyeLikeKernel final : public Kernel {
 public:
  EyeLikeKernel(std::string where, const Node& n, std::array<std::byte, 8> one, uint32_t elem_size)
      : where_(std::move(where)), k_(n.attr_int("k", 0)), one_(one), size_(elem_size) {}

  void run(const KernelArgs& a) override {
    const TensorView& x = a.inputs[0];
    TensorView& y = a.outputs[0];
    if (x.rank != 2) fail_at(where_, "the input must be 2-D");
    set_shape_like(y, x, where_);  // also checks y holds x's shape
    const int64_t rows = x.dims[0], cols = x.dims[1];
    std::memset(y.data, 0, y.byte_size());
    // Row i holds its one at column i + k; only rows with 0 <= i + k < cols have one. (Clamping k
    // first keeps -k and cols - k from overflowing.)
    const int64_t k = std::clamp<int64_t>(k_, -rows, cols);
    const int64_t first = std::clamp<int64_t>(-k, 0, rows), last = std::clamp<int64_t>(cols - k, 0, rows);
    for (int64_t i = first; i < last; ++i)
      std::memcpy(y.data + static_cast<uint64_t>(i * cols + i + k) * size_, one_.data(), size_);
  }

 private:
  std::string where_;
  int64_t k_;
  std::array<std::byte, 8> one_;
  uint32_t size_;
};

// The bytes of the number 1 in type t; false for types without one.
bool one_of(DType t, std::array<std::byte, 8>& one) {
  one.fill(std::byte{0});
  if (t == DType::Float16 || t == DType::BFloat16) {
    const uint16_t bits = t == DType::Float16 ? 0x3C00 : 0x3F80;
    std::memcpy(one.data(), &bits, 2);
    return true;
  }
  const bool numeric = dispatch(t, NumericTypes{}, [](auto) {}) || t == DType::Bool;
  if (numeric) store_number(one.data(), t, 1.0);
  return numeric;
}

// ---- Det ----

template <typename T>
class DetKernel final : public Kernel {
 public:
  DetKernel(std::string where, const Node& n, uint64_t max_elems)
      : where_(std::move(where)), max_elems_(max_elems), dynamic_(any_dynamic(n)) {}

  uint64_t scratchpad_bytes() const override { return max_elems_ * sizeof(double); }

  void run(const KernelArgs& a) override {
    const TensorView& x = a.inputs[0];
    const Matrices m = matrices_of(x, where_);
    if (m.rows != m.cols)
      fail_at(where_, "the matrices must be square, not " + std::to_string(m.rows) + " x " + std::to_string(m.cols));
    if (dynamic_) set_shape(a.outputs[0], x.rank - 2, x.dims.data(), where_);
    const uint64_t M = static_cast<uint64_t>(m.rows), size = M * M;
    if (m.batch > 0 && size > max_elems_)
      fail_at(where_, "a " + std::to_string(M) + " x " + std::to_string(M) + " matrix exceeds the bound of " +
                          std::to_string(max_elems_) + " elements");
    double* lu = reinterpret_cast<double*>(a.scratchpad);
    const T* in = x.as<const T>();
    T* out = a.outputs[0].as<T>();
    for (uint64_t b = 0; b < m.batch; ++b) {
      std::copy(in + b * size, in + (b + 1) * size, lu);
      out[b] = static_cast<T>(determinant(lu, M));
    }
  }

 private:
  // Gaussian elimination with partial pivoting on the M x M matrix `a` (destroyed).
  static double determinant(double* a, uint64_t M) {
    double det = 1;
    for (uint64_t c = 0; c < M; ++c) {
      uint64_t p = c;
      for (uint64_t r = c + 1; r < M; ++r)
        if (std::fabs(a[r * M + c]) > std::fabs(a[p * M + c])) p = r;
      if (a[p * M + c] == 0) return 0;
      if (p != c) {
        std::swap_ranges(a + p * M, a + (p + 1) * M, a + c * M);
        det = -det;
      }
      const double pivot = a[c * M + c];
      det *= pivot;
      for (uint64_t r = c + 1; r < M; ++r) {
        const double f = a[r * M + c] / pivot;
        for (uint64_t k = c + 1; k < M; ++k) a[r * M + k] -= f * a[c * M + k];
      }
    }
    return det;
  }

  std::string where_;
  uint64_t max_elems_;
  bool dynamic_;
};

}  // namespace

Factory make_trilu(const Node& n, const KernelEnv& env) {
  const std::string where = check_arity(n, env, 1, 2);
  const DType t = n.inputs[0]->type.dtype;
  if (n.outputs[0]->type.dtype != t) fail_at(where, "the output is not " + dtype_name(t));
  return std::make_unique<TriluKernel>(where, n, IntsSource::from_input(n, 1, where, "k"), movable_size(t, where));
}

Factory make_eye_like(const Node& n, const KernelEnv& env) {
  const std::string where = check_arity(n, env, 1, 1);
  const DType t = n.outputs[0]->type.dtype;
  if (const Attribute* d = n.attr("dtype"); d && d->i != static_cast<int64_t>(t))
    fail_at(where, "the output's type " + dtype_name(t) + " differs from the dtype attribute");
  std::array<std::byte, 8> one{};
  if (!one_of(t, one)) unsupported_at(where, "outputs of type " + dtype_name(t) + " are not supported");
  return std::make_unique<EyeLikeKernel>(where, n, one, dtype_size(t));
}

Factory make_det(const Node& n, const KernelEnv& env) {
  const std::string where = check_arity(n, env, 1, 1);
  const Value* x = n.inputs[0];
  const DType t = x->type.dtype;
  if (n.outputs[0]->type.dtype != t) fail_at(where, "the output is not " + dtype_name(t));
  // The scratchpad holds one matrix in double: exactly M x M for a static input, else bounded
  // by the whole input's size.
  uint64_t max_elems = element_bound(x, where), square = 0;
  if (!any_dynamic(n) && !x->type.dims.empty()) {
    const uint64_t M = static_cast<uint64_t>(x->type.dims.back().value);
    if (!__builtin_mul_overflow(M, M, &square)) max_elems = std::min(max_elems, square);
  }
  Factory k;
  dispatch(t, FloatTypes{}, [&](auto tag) { k = std::make_unique<DetKernel<decltype(tag)>>(where, n, max_elems); });
  if (!k) unsupported_at(where, "inputs of type " + dtype_name(t) + " are not supported (float32 and float64 only)");
  return k;
}

}  // namespace memplan::rt::norm
