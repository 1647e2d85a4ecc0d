// Unary elementwise ops: oneDNN eltwise for float32 tensors of a fixed shape where oneDNN has the
// op and is exact enough; a plain loop for the rest (Erf, trigonometric ops, Log, ...), for shapes
// known only at run time, for float64, float16 and bfloat16 (computed as float) and for the integer
// forms of Abs, Neg, Relu and Clip. (Floor, Ceil, Round, Sign, IsNaN and IsInf are
// math_kernels.cpp's.)
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <tuple>
#include <type_traits>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "ir/fused_activation.h"
#include "ir/tensor.h"
#include "runtime/kernels/common/element_types.h"
#include "runtime/kernels/common/eltwise_step.h"
#include "runtime/kernels/common/elementwise_common.h"
#include "runtime/kernels/common/parallel_chunks.h"
#include "runtime/kernels/common/simd_clones.h"
#include "runtime/kernels/elementwise/factories.h"

namespace memplan::rt::elt {
namespace {

enum class Un {
  Relu, LeakyRelu, Clip, Sigmoid, HardSigmoid, HardSwish, Tanh, Exp, Log, Sqrt, Abs, Neg, Erf, Pow, Elu,
  Softplus, Reciprocal, Selu, Softsign, Celu, ThresholdedRelu, Shrink,
  Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh,
  Gelu, Mish,  // opsets 20 and 18 (onnx/opset_adapter.h); Gelu's alpha: 0 erf, 1 tanh
};

struct UnaryOp {
  Un op = Un::Relu;
  float alpha = 0, beta = 0, gamma = 0;  // per-op parameters (Pow: beta = exponent; Shrink: lambd, bias)
  // Clip's bounds, as elements of the input's type (any numeric type), when present.
  bool has_lo = false, has_hi = false;
  std::array<std::byte, 8> lo{}, hi{};
};

// The float ops on C = float or double (16-bit floats compute as float).
template <typename C>
C apply(const UnaryOp& u, C x) {
  const C a = u.alpha, b = u.beta, g = u.gamma;
  switch (u.op) {
    case Un::Relu: return x < 0 ? C(0) : x;  // NaN stays NaN, as in ONNX Runtime
    case Un::LeakyRelu: return x >= 0 ? x : a * x;
    case Un::Sigmoid: return C(1) / (C(1) + std::exp(-x));
    case Un::HardSigmoid: return std::max(C(0), std::min(C(1), a * x + b));
    case Un::HardSwish: return x * std::max(C(0), std::min(C(1), x / C(6) + C(0.5)));
    case Un::Tanh: return std::tanh(x);
    case Un::Exp: return std::exp(x);
    case Un::Log: return std::log(x);
    case Un::Sqrt: return std::sqrt(x);
    case Un::Abs: return std::fabs(x);
    case Un::Neg: return -x;
    case Un::Erf: return std::erf(x);
    case Un::Pow: return std::pow(x, b);
    case Un::Elu: return x >= 0 ? x : a * std::expm1(x);
    case Un::Softplus: return std::max(x, C(0)) + std::log1p(std::exp(-std::fabs(x)));
    case Un::Reciprocal: return C(1) / x;
    case Un::Selu: return x > 0 ? g * x : g * a * std::expm1(x);
    case Un::Softsign: return x / (C(1) + std::fabs(x));
    // max(0, x) + min(0, alpha * (exp(x / alpha) - 1)): one of the two terms is 0 for any
    // alpha != 0; this form keeps NaN (std::max(0, NaN) would drop it).
    case Un::Celu: return x > 0 ? x : a * std::expm1(x / a);
    case Un::ThresholdedRelu: return x > a ? x : C(0);
    case Un::Shrink: return x < -a ? x + b : x > a ? x - b : C(0);
    case Un::Sin: return std::sin(x);
    case Un::Cos: return std::cos(x);
    case Un::Tan: return std::tan(x);
    case Un::Asin: return std::asin(x);
    case Un::Acos: return std::acos(x);
    case Un::Atan: return std::atan(x);
    case Un::Sinh: return std::sinh(x);
    case Un::Cosh: return std::cosh(x);
    case Un::Asinh: return std::asinh(x);
    case Un::Acosh: return std::acosh(x);
    case Un::Atanh: return std::atanh(x);
    // x * Phi(x), the normal CDF exactly (erf) or as tanh approximates it.
    case Un::Gelu:
      return a == 0 ? C(0.5) * x * (C(1) + std::erf(x * C(0.70710678118654752440)))
                    : C(0.5) * x * (C(1) + std::tanh(C(0.79788456080286535588) * (x + C(0.044715) * x * x * x)));
    case Un::Mish: return x * std::tanh(std::max(x, C(0)) + std::log1p(std::exp(-std::fabs(x))));
    case Un::Clip: break;  // clip_loop's
  }
  return x;
}

// The integer ops; integer arithmetic wraps (two's complement) instead of overflowing.
template <typename T>
T apply_int(const UnaryOp& u, T x) {
  using U = std::make_unsigned_t<T>;
  switch (u.op) {
    case Un::Abs:
      if constexpr (std::is_signed_v<T>) return x < 0 ? static_cast<T>(U(0) - static_cast<U>(x)) : x;  // wraps for the minimum
      return x;
    case Un::Neg: return static_cast<T>(U(0) - static_cast<U>(x));
    case Un::Relu: return x > 0 ? x : T(0);
    default: return x;
  }
}

// min(max(x, lo), hi) for any element type; NaN stays NaN.
// float32 Relu and Clip, vectorized for the CPU at hand: the per-element switch of the generic
// loop keeps the compiler from it (a MediaPipe block's Relu of 115k elements: 0.27 ms). NaN
// stays NaN: every comparison with it is false.
MEMPLAN_SIMD_CLONES void relu_f32(const float* x, float* y, uint64_t n) {
#pragma omp simd
  for (uint64_t i = 0; i < n; ++i) y[i] = x[i] < 0.f ? 0.f : x[i];
}

MEMPLAN_SIMD_CLONES void clip_f32(const float* x, float* y, uint64_t n, float lo,
                                                                          float hi) {
#pragma omp simd
  for (uint64_t i = 0; i < n; ++i) {
    const float v = x[i] < lo ? lo : x[i];  // min(max(x, lo), hi), as ONNX defines it when lo > hi
    y[i] = v > hi ? hi : v;
  }
}

template <typename T>
void clip_loop(const UnaryOp& u, const T* in, T* out, uint64_t n) {
  T lo{}, hi{};
  std::memcpy(&lo, u.lo.data(), sizeof(T));
  std::memcpy(&hi, u.hi.data(), sizeof(T));
  for (uint64_t i = 0; i < n; ++i) {
    T x = in[i];
    if (u.has_lo && x < lo) x = lo;
    if (u.has_hi && x > hi) x = hi;
    out[i] = x;
  }
}

// erf of float32s as a rational function of x clamped to [-4, 4] (|erf| rounds to 1 past 4), the
// approximation TensorFlow and Eigen use: within 5e-7 of std::erf, four at a time with SSE2 where
// std::erf is a call per element (a transformer's GELU: 1 ms for 131,072 elements). max(-4, x) and
// min(4, x) return x when it is NaN, so NaN stays NaN. The same steps in scalar for the tail.
template <typename V, typename Ops>
V erf_steps(V x, const Ops& o) {
  x = o.min(o.max(x, -4.f), 4.f);
  const V x2 = o.mul(x, x);
  V p = o.set(-2.72614225801306e-10f);
  for (float c : {2.77068142495902e-08f, -2.10102402082508e-06f, -5.69250639462346e-05f, -7.34990630326855e-04f,
                  -2.95459980854025e-03f, -1.60960333262415e-02f})
    p = o.add(o.mul(p, x2), c);
  V q = o.set(-1.45660718464996e-05f);
  for (float c : {-2.13374055278905e-04f, -1.68282697438203e-03f, -7.37332916720468e-03f, -1.42647390514189e-02f})
    q = o.add(o.mul(q, x2), c);
  return o.div(o.mul(x, p), q);
}

struct ScalarOps {
  static float set(float c) { return c; }
  static float max(float x, float lo) { return lo > x ? lo : x; }
  static float min(float x, float hi) { return hi < x ? hi : x; }
  static float mul(float a, float b) { return a * b; }
  static float add(float a, float c) { return a + c; }
  static float div(float a, float b) { return a / b; }
};

#if defined(__SSE2__)
struct SseOps {
  static __m128 set(float c) { return _mm_set1_ps(c); }
  static __m128 max(__m128 x, float lo) { return _mm_max_ps(_mm_set1_ps(lo), x); }  // (lo > x) ? lo : x
  static __m128 min(__m128 x, float hi) { return _mm_min_ps(_mm_set1_ps(hi), x); }  // (hi < x) ? hi : x
  static __m128 mul(__m128 a, __m128 b) { return _mm_mul_ps(a, b); }
  static __m128 add(__m128 a, float c) { return _mm_add_ps(a, _mm_set1_ps(c)); }
  static __m128 div(__m128 a, __m128 b) { return _mm_div_ps(a, b); }
};
#endif

// HardSigmoid: min(1, max(0, alpha * x + beta)), NaN kept, in the same steps (mobilenet_v3's
// squeeze-excitation gates: 28 of them took 12.6 ms an SSDLite inference one element at a time).
template <typename V, typename Ops>
V hard_sigmoid_steps(V x, float alpha, float beta, const Ops& o) {
  return o.min(o.max(o.add(o.mul(x, o.set(alpha)), beta), 0.f), 1.f);
}

// y[i] = steps(x[i]), four at a time where SSE2 is.
template <typename Steps>
void float_loop(const float* x, float* y, uint64_t n, const Steps& steps) {
  uint64_t i = 0;
#if defined(__SSE2__)
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(y + i, steps(_mm_loadu_ps(x + i), SseOps{}));
#endif
  for (; i < n; ++i) y[i] = steps(x[i], ScalarOps{});
}

template <typename T>
void unary_loop(const UnaryOp& u, const std::byte* in, std::byte* out, uint64_t n) {
  const T* x = reinterpret_cast<const T*>(in);
  T* y = reinterpret_cast<T*>(out);
  if constexpr (std::is_same_v<T, float>) {
    if (u.op == Un::Relu) return relu_f32(x, y, n);
    if (u.op == Un::Clip) {
      float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
      if (u.has_lo) std::memcpy(&lo, u.lo.data(), sizeof lo);
      if (u.has_hi) std::memcpy(&hi, u.hi.data(), sizeof hi);
      return clip_f32(x, y, n, lo, hi);
    }
  }
  if (u.op == Un::Clip) return clip_loop(u, x, y, n);
  if constexpr (std::is_same_v<T, float>) {
    if (u.op == Un::Erf) return float_loop(x, y, n, [](auto v, const auto& o) { return erf_steps(v, o); });
    if (u.op == Un::HardSigmoid)
      return float_loop(x, y, n, [&u](auto v, const auto& o) { return hard_sigmoid_steps(v, u.alpha, u.beta, o); });
  }
  if constexpr (is_float_like_v<T>) {
    using C = compute_t<T>;
    for (uint64_t i = 0; i < n; ++i) y[i] = T(apply<C>(u, C(x[i])));
  } else {
    for (uint64_t i = 0; i < n; ++i) y[i] = apply_int<T>(u, x[i]);
  }
}

using Loop = void (*)(const UnaryOp&, const std::byte*, std::byte*, uint64_t);

// The oneDNN algorithm for an op, with its alpha and beta; nullopt when there is none.
std::optional<std::tuple<dnnl::algorithm, float, float>> dnnl_alg(const UnaryOp& u) {
  using a = dnnl::algorithm;
  switch (u.op) {
    // Relu and Clip run as plain loops: oneDNN's max/min-based kernels turn NaN into a number, and
    // these memory-bound loops are as fast (and allocate nothing per run).
    case Un::Relu: return std::nullopt;
    case Un::Clip: return std::nullopt;
    // oneDNN's log is approximate (log(1) = -1e-6 where ONNX expects 0): std::log is exact enough.
    case Un::Log: return std::nullopt;
    case Un::LeakyRelu: return std::tuple{a::eltwise_relu, u.alpha, 0.f};
    case Un::Sigmoid: return std::tuple{a::eltwise_logistic, 0.f, 0.f};
    case Un::HardSwish: return std::tuple{a::eltwise_hardswish, 0.f, 0.f};
    case Un::Tanh: return std::tuple{a::eltwise_tanh, 0.f, 0.f};
    case Un::Exp: return std::tuple{a::eltwise_exp, 0.f, 0.f};
    case Un::Sqrt: return std::tuple{a::eltwise_sqrt, 0.f, 0.f};
    case Un::Abs: return std::tuple{a::eltwise_abs, 0.f, 0.f};
    case Un::Neg: return std::tuple{a::eltwise_linear, -1.f, 0.f};
    case Un::Pow: return std::tuple{a::eltwise_pow, 1.f, u.beta};
    case Un::Elu: return std::tuple{a::eltwise_elu, u.alpha, 0.f};
    case Un::Softplus: return std::tuple{a::eltwise_soft_relu, 0.f, 0.f};
    case Un::Reciprocal: return std::tuple{a::eltwise_pow, 1.f, -1.f};
    case Un::Gelu: return std::tuple{u.alpha == 0 ? a::eltwise_gelu_erf : a::eltwise_gelu_tanh, 0.f, 0.f};
    case Un::Mish: return std::tuple{a::eltwise_mish, 0.f, 0.f};
    default: return std::nullopt;
  }
}

// Float tensors up to this size run an op that a fused step computes (Sigmoid, LeakyRelu,
// HardSwish, HardSigmoid) as that step, not as a oneDNN primitive.
constexpr uint64_t kSmallUnaryBytes = 16 * 1024;

class UnaryKernel final : public Kernel {
 public:
  // lo_input / hi_input: Clip's bound inputs read at run time (0 when constant or absent).
  UnaryKernel(const Node& n, const KernelEnv& env, const UnaryOp& op, size_t lo_input = 0, size_t hi_input = 0)
      : op_(op), where_(where(n, env)), lo_input_(lo_input), hi_input_(hi_input) {
    const DType dtype = n.inputs[0]->type.dtype;
    dispatch(dtype, AllNumericTypes{}, [&](auto tag) { loop_ = &unary_loop<decltype(tag)>; });
    if (!loop_) fail_internal(where_ + ": unexpected dtype " + dtype_name(dtype));
    if (dtype != DType::Float32 || !fixed_shape(n.inputs[0]) || !fixed_shape(n.outputs[0])) return;
    compiled_ = static_shape(n.inputs[0]);
    if (compiled_.count() == 0 || !(static_shape(n.outputs[0]) == compiled_)) return;
    // A small tensor (an LSTM cell's gates, [1, 512]) is a fraction of a microsecond's pass, where
    // calling a oneDNN primitive costs about two: the ops a fused step computes run as one.
    if (compiled_.count() * sizeof(float) <= kSmallUnaryBytes) {
      small_steps_ = eltwise_steps(n, n.inputs[0], false);
      if (!small_steps_.empty()) return;
    }
    const auto alg = dnnl_alg(op);
    if (!alg || !env.dnnl) return;
    try {
      const auto md = plain_md(compiled_, dnnl::memory::data_type::f32);
      const auto& [algorithm, alpha, beta] = *alg;
      dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, algorithm, md, alpha, beta);
      dnnl::eltwise_forward::primitive_desc pd(d, user_scratchpad_attr(), env.dnnl->engine);
      step_.emplace(*env.dnnl, pd, StepThreads::Streamed);
      src_ = step_->arg(DNNL_ARG_SRC, md);
      dst_ = step_->arg(DNNL_ARG_DST, md);
    } catch (const dnnl::error&) {
      step_.reset();  // the plain loop does the job
    }
  }

  void run(const KernelArgs& args) override {
    const TensorView& x = args.inputs[0];
    TensorView& y = args.outputs[0];
    const Shape s = Shape::of(x);
    set_output_shape(y, s, where_);
    if (!small_steps_.empty() && s == compiled_) {
      if (y.data != x.data) std::memcpy(y.data, x.data, x.byte_size());
      for (const EltwiseStep& step : small_steps_) apply_step(step, y.as<float>(), s.count());
      return;
    }
    if (step_ && s == compiled_) {
      DnnlStep::State& st = step_state(args, 0, where_);
      step_->bind(st, src_, x.data);
      step_->bind(st, dst_, y.data);
      step_->execute(st, args.scratchpad, args.stream);
      return;
    }
    UnaryOp op = op_;
    if (lo_input_) op.has_lo = read_bound(args, lo_input_, op.lo);
    if (hi_input_) op.has_hi = read_bound(args, hi_input_, op.hi);
    // Every element on its own: a large tensor in a chunk per thread.
    const uint64_t esize = dtype_size(x.dtype);
    parallel_chunks(s.count(), kParallelChunkBytes / esize,
                    [&](uint64_t begin, uint64_t end) { loop_(op, x.data + begin * esize, y.data + begin * esize, end - begin); });
  }

  uint64_t scratchpad_bytes() const override { return step_ ? step_->scratchpad_bytes() : 0; }
  std::string implementation() const override {
    if (!small_steps_.empty()) return "memplan step loop";
    return step_ ? step_->implementation() : "memplan";
  }

  // oneDNN's eltwise runs in place (src = dst), and so do the step loop and the Relu and Clip
  // loops; the other loops are not offered (some change the type).
  bool may_overwrite_input(size_t input) const override {
    return input == 0 && (step_.has_value() || !small_steps_.empty() || op_.op == Un::Relu || op_.op == Un::Clip);
  }
  std::unique_ptr<KernelState> make_state() const override {
    return step_ ? make_step_states(&*step_, &*step_ + 1, [](const DnnlStep& s) -> const DnnlStep& { return s; })
                 : nullptr;
  }

 private:
  // Copies Clip's run-time bound (input k, of the input's type) into `to`; false when omitted.
  bool read_bound(const KernelArgs& args, size_t k, std::array<std::byte, 8>& to) const {
    if (k >= args.inputs.size() || !args.inputs[k].data) return false;
    const TensorView& b = args.inputs[k];
    if (b.element_count() != 1)
      fail(where_ + ": the " + (k == 1 ? "min" : "max") + " bound must be a scalar, it has " +
           std::to_string(b.element_count()) + " elements");
    std::memcpy(to.data(), b.data, dtype_size(b.dtype));
    return true;
  }

  UnaryOp op_;
  std::string where_;
  size_t lo_input_, hi_input_;
  Loop loop_ = nullptr;
  Shape compiled_;
  std::optional<DnnlStep> step_;
  size_t src_ = 0, dst_ = 0;
  std::vector<EltwiseStep> small_steps_;  // a small float tensor's op as fused steps (apply_step)
};

// Clip's bound from input k (opset >= 11), of the input's type and a scalar. A constant is copied
// into `to` now (returns 0); a run-time bound returns k, for the kernel to read at each run.
size_t clip_bound(const Node& n, const KernelEnv& env, size_t k, bool& has, std::array<std::byte, 8>& to) {
  if (n.inputs.size() <= k || !n.inputs[k]) return 0;
  const Value* v = n.inputs[k];
  const std::string what = "input '" + v->name + "' (" + (k == 1 ? "min" : "max") + ")";
  if (v->type.dtype != n.inputs[0]->type.dtype)
    fail(where(n, env) + ": " + what + " is " + dtype_name(v->type.dtype) + ", the input " +
         dtype_name(n.inputs[0]->type.dtype));
  if (!v->constant) return k;
  const Tensor& t = *v->constant;
  if (t.element_count() != 1 || t.bytes.size() < dtype_size(t.dtype))
    fail(where(n, env) + ": " + what + " must be a scalar, it has " + std::to_string(t.element_count()) + " elements");
  std::memcpy(to.data(), t.bytes.data(), dtype_size(t.dtype));
  has = true;
  return 0;
}

// Which element types an op takes (by ONNX's type constraints).
enum class Takes { Floats, FloatsAndSigned, Numeric };

Takes takes(Un which) {
  switch (which) {
    case Un::Abs: case Un::Clip: return Takes::Numeric;
    case Un::Neg: case Un::Relu: return Takes::FloatsAndSigned;
    default: return Takes::Floats;
  }
}

std::unique_ptr<Kernel> make_unary(const Node& n, const KernelEnv& env, Un which) {
  check_arity(n, env, 1, which == Un::Clip ? 3 : 1);  // Clip-11's min and max are inputs
  const DType dt = n.inputs[0]->type.dtype;
  const Takes t = takes(which);
  const bool ok = one_of(dt, AllFloatTypes{}) || (t == Takes::FloatsAndSigned && one_of(dt, SignedIntTypes{})) ||
                  (t == Takes::Numeric && one_of(dt, IntTypes{}));
  if (!ok)
    fail_unsupported(where(n, env) + ": " + dtype_name(dt) + " input is not supported (" +
                     (t == Takes::Floats            ? "floating-point types only)"
                      : t == Takes::FloatsAndSigned ? "floating-point and signed integer types only)"
                                                    : "numeric types only)"));
  if (n.outputs[0]->type.dtype != dt)
    fail(where(n, env) + ": the output is " + dtype_name(n.outputs[0]->type.dtype) + ", the input " + dtype_name(dt));
  UnaryOp u;
  u.op = which;
  size_t lo_input = 0, hi_input = 0;
  switch (which) {
    case Un::LeakyRelu: u.alpha = n.attr_float("alpha", 0.01f); break;
    case Un::Elu: u.alpha = n.attr_float("alpha", 1.0f); break;
    case Un::HardSigmoid:
      u.alpha = n.attr_float("alpha", 0.2f);
      u.beta = n.attr_float("beta", 0.5f);
      break;
    case Un::Selu:
      u.alpha = n.attr_float("alpha", 1.67326319217681884765625f);
      u.gamma = n.attr_float("gamma", 1.05070102214813232421875f);
      break;
    case Un::Celu:
      u.alpha = n.attr_float("alpha", 1.0f);
      if (u.alpha == 0) fail(where(n, env) + ": alpha must not be 0");
      break;
    case Un::ThresholdedRelu: u.alpha = n.attr_float("alpha", 1.0f); break;
    case Un::Gelu: {
      const std::string approximate = n.attr_string("approximate", "none");
      if (approximate != "none" && approximate != "tanh")
        fail(where(n, env) + ": approximate must be 'none' or 'tanh', not '" + approximate + "'");
      u.alpha = approximate == "tanh" ? 1.f : 0.f;
      break;
    }
    case Un::Shrink:
      u.alpha = n.attr_float("lambd", 0.5f);
      u.beta = n.attr_float("bias", 0.0f);
      break;
    case Un::Clip:
      if (n.opset < 11) {  // float attributes; absent, they are float's extremes
        if (!one_of(dt, AllFloatTypes{}))
          fail_unsupported(where(n, env) + ": " + dtype_name(dt) + " input is not supported before opset 11");
        u.has_lo = u.has_hi = true;
        store_number(u.lo.data(), dt, n.attr_float("min", std::numeric_limits<float>::lowest()));
        store_number(u.hi.data(), dt, n.attr_float("max", std::numeric_limits<float>::max()));
      } else {
        lo_input = clip_bound(n, env, 1, u.has_lo, u.lo);
        hi_input = clip_bound(n, env, 2, u.has_hi, u.hi);
      }
      break;
    default: break;
  }
  return std::make_unique<UnaryKernel>(n, env, u, lo_input, hi_input);
}

template <Un which>
std::unique_ptr<Kernel> factory(const Node& n, const KernelEnv& env) {
  return make_unary(n, env, which);
}

}  // namespace

std::unique_ptr<Kernel> make_unary_pow(const Node& n, const KernelEnv& env, float exponent) {
  check_arity(n, env, 1, 2);  // Pow's base and its constant exponent
  if (!one_of(n.inputs[0]->type.dtype, AllFloatTypes{}))
    fail_internal(where(n, env) + ": unary Pow of a " + dtype_name(n.inputs[0]->type.dtype) + " base");
  UnaryOp u;
  u.op = Un::Pow;
  u.beta = exponent;
  return std::make_unique<UnaryKernel>(n, env, u);
}

void add_unary_ops(KernelRegistry& r) {
  r.add("Relu", factory<Un::Relu>);
  r.add("LeakyRelu", factory<Un::LeakyRelu>);
  r.add("Clip", factory<Un::Clip>);
  r.add("Sigmoid", factory<Un::Sigmoid>);
  r.add("HardSigmoid", factory<Un::HardSigmoid>);
  r.add("HardSwish", factory<Un::HardSwish>);
  r.add("Tanh", factory<Un::Tanh>);
  r.add("Exp", factory<Un::Exp>);
  r.add("Log", factory<Un::Log>);
  r.add("Sqrt", factory<Un::Sqrt>);
  r.add("Abs", factory<Un::Abs>);
  r.add("Neg", factory<Un::Neg>);
  r.add("Erf", factory<Un::Erf>);
  r.add("Elu", factory<Un::Elu>);
  r.add("Softplus", factory<Un::Softplus>);
  r.add("Reciprocal", factory<Un::Reciprocal>);
  r.add("Selu", factory<Un::Selu>);
  r.add("Softsign", factory<Un::Softsign>);
  r.add("Celu", factory<Un::Celu>);
  r.add("ThresholdedRelu", factory<Un::ThresholdedRelu>);
  r.add("Shrink", factory<Un::Shrink>);
  r.add("Sin", factory<Un::Sin>);
  r.add("Cos", factory<Un::Cos>);
  r.add("Tan", factory<Un::Tan>);
  r.add("Asin", factory<Un::Asin>);
  r.add("Acos", factory<Un::Acos>);
  r.add("Atan", factory<Un::Atan>);
  r.add("Sinh", factory<Un::Sinh>);
  r.add("Cosh", factory<Un::Cosh>);
  r.add("Asinh", factory<Un::Asinh>);
  r.add("Acosh", factory<Un::Acosh>);
  r.add("Atanh", factory<Un::Atanh>);
  r.add("Gelu", factory<Un::Gelu>);
  r.add("Mish", factory<Un::Mish>);
}

}  // namespace memplan::rt::elt
