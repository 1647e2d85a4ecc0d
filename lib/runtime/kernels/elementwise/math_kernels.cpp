// Mod (broadcasting), Floor, Ceil, Round, Sign, IsNaN, IsInf and CumSum.
#include <cmath>

#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/elementwise/factories.h"

namespace memplan::rt::shape {
namespace {

// ---- Mod ----

// fmod = 1: the remainder has the dividend's sign (C's fmod and %); fmod = 0 (integers only):
// the divisor's sign (Python's %). Runs as a BinaryKernel (broadcasting, run-time shapes).
template <typename T, bool Fmod>
auto mod_of(std::string where) {
  return [where = std::move(where)](T u, T v) -> T {
    if constexpr (is_float_like_v<T>) {
      return static_cast<T>(std::fmod(static_cast<compute_t<T>>(u), static_cast<compute_t<T>>(v)));  // exact
    } else {
      if (v == 0) fail_at(where, "integer division by zero");
      if constexpr (std::is_signed_v<T>)
        if (v == -1) return 0;  // INT_MIN % -1 overflows in C++
      T r = static_cast<T>(u % v);
      if constexpr (!Fmod && std::is_signed_v<T>)
        if (r != 0 && ((r < 0) != (v < 0))) r = static_cast<T>(r + v);
      return r;
    }
  };
}

// ---- CumSum ----

template <typename T, bool Float>
struct AccOf {
  using type = T;
};
template <typename T>
struct AccOf<T, false> {
  using type = std::make_unsigned_t<T>;
};

template <typename T>
class CumSumKernel final : public Kernel {
 public:
  CumSumKernel(std::string where, const Node& n, IntsSource axis)
      : where_(std::move(where)), axis_(axis), exclusive_(n.attr_int("exclusive", 0) != 0), reverse_(n.attr_int("reverse", 0) != 0),
        dynamic_(any_dynamic(n)) {}
  void run(const KernelArgs& a) override {
    const TensorView& in = a.inputs[0];
    if (dynamic_) set_shape_like(a.outputs[0], in, where_);
    Ints scratch;
    const Ints* ax = axis_.get(a, scratch, where_);
    if (!ax || ax->size != 1) fail_at(where_, "axis must hold one value");
    const AxisSplit s = split_at(in, normalize_axis((*ax)[0], in.rank, where_));
    const T* x = in.as<const T>();
    T* y = a.outputs[0].as<T>();
    // Integers add modulo 2^n (no signed overflow).
    using Acc = typename AccOf<T, std::is_floating_point_v<T>>::type;
    for (uint64_t o = 0; o < s.outer; ++o)
      for (uint64_t i = 0; i < s.inner; ++i) {
        const uint64_t base = o * static_cast<uint64_t>(s.extent) * s.inner + i;
        Acc acc = 0;
        for (int64_t k = 0; k < s.extent; ++k) {
          const uint64_t at = base + static_cast<uint64_t>(reverse_ ? s.extent - 1 - k : k) * s.inner;
          if (exclusive_) {
            const Acc v = static_cast<Acc>(x[at]);
            y[at] = static_cast<T>(acc);
            acc = static_cast<Acc>(acc + v);
          } else {
            acc = static_cast<Acc>(acc + static_cast<Acc>(x[at]));
            y[at] = static_cast<T>(acc);
          }
        }
      }
  }

 private:
  std::string where_;
  IntsSource axis_;
  bool exclusive_, reverse_, dynamic_;
};

template <typename T>
T sign_of(T x) {
  if constexpr (is_float_like_v<T>) {
    if (x != x) return x;  // NaN stays NaN
  }
  if constexpr (std::is_signed_v<T> || is_float_like_v<T>) return static_cast<T>(x > 0 ? 1 : x < 0 ? -1 : 0);
  else return static_cast<T>(x > 0 ? 1 : 0);
}

void check_same_types(const Node& n, const std::string& where) {
  const DType t = n.inputs[0]->type.dtype;
  for (const Value* v : n.inputs)
    if (v && v != n.inputs[0] && n.op_type == "Mod" && v->type.dtype != t) fail_at(where, "inputs differ in type");
  if (n.outputs[0]->type.dtype != t)
    fail_at(where, "output type " + dtype_name(n.outputs[0]->type.dtype) + " differs from the input's " + dtype_name(t));
}

}  // namespace

Factory make_mod(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 2, 2);
  check_same_types(n, where);
  const DType t = n.inputs[0]->type.dtype;
  const bool fmod = n.attr_int("fmod", 0) != 0;
  if (one_of(t, AllFloatTypes{}) && !fmod) fail_at(where, "floating-point Mod requires fmod = 1");
  Factory k;
  dispatch(t, AllNumericTypes{}, [&](auto tag) {
    using T = decltype(tag);
    if (fmod) k = make_binary<T, T>(where, n, mod_of<T, true>(where));
    else k = make_binary<T, T>(where, n, mod_of<T, false>(where));
  });
  if (!k) unsupported_at(where, "inputs of type " + dtype_name(t) + " are not supported");
  return k;
}

Factory make_rounding(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 1, 1);
  check_same_types(n, where);
  const DType t = n.inputs[0]->type.dtype;
  const std::string& op = n.op_type;
  Factory k;
  if (op == "Sign") {
    dispatch(t, AllNumericTypes{}, [&](auto tag) {
      using T = decltype(tag);
      k = make_unary<T, T>(where, n, [](T x) { return sign_of(x); });
    });
  } else {
    dispatch(t, AllFloatTypes{}, [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;  // 16-bit floats round exactly through float
      if (op == "Floor") k = make_unary<T, T>(where, n, [](T x) { return T(std::floor(C(x))); });
      else if (op == "Ceil") k = make_unary<T, T>(where, n, [](T x) { return T(std::ceil(C(x))); });
      else if (op == "Round") k = make_unary<T, T>(where, n, [](T x) { return T(std::nearbyint(C(x))); });  // half to even
    });
  }
  if (!k) unsupported_at(where, "inputs of type " + dtype_name(t) + " are not supported");
  return k;
}

Factory make_float_class(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 1, 1);
  if (n.outputs[0]->type.dtype != DType::Bool)
    fail_at(where, "output must be bool, not " + dtype_name(n.outputs[0]->type.dtype));
  const DType t = n.inputs[0]->type.dtype;
  const bool nan = n.op_type == "IsNaN";
  const bool pos = n.attr_int("detect_positive", 1) != 0, neg = n.attr_int("detect_negative", 1) != 0;
  Factory k;
  dispatch(t, AllFloatTypes{}, [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    if (nan) k = make_unary<T, uint8_t>(where, n, [](T x) -> uint8_t { return std::isnan(C(x)); });
    else
      k = make_unary<T, uint8_t>(where, n, [pos, neg](T x) -> uint8_t {
        return std::isinf(C(x)) && (C(x) > 0 ? pos : neg);
      });
  });
  if (!k) unsupported_at(where, "inputs of type " + dtype_name(t) + " are not supported");
  return k;
}

Factory make_cumsum(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 2, 2);
  check_same_types(n, where);
  const DType t = n.inputs[0]->type.dtype;
  IntsSource axis = IntsSource::from_input(n, 1, where, "axis");
  Factory k;
  dispatch(t, Types<float, double, int64_t, int32_t, uint64_t, uint32_t>{},
           [&](auto tag) { k = std::make_unique<CumSumKernel<decltype(tag)>>(where, n, axis); });
  if (!k) unsupported_at(where, "inputs of type " + dtype_name(t) + " are not supported");
  return k;
}

}  // namespace memplan::rt::shape
