// Unary elementwise ops: oneDNN eltwise for float32 tensors of a fixed shape, a plain loop for
// the ops oneDNN lacks (Erf, HardSigmoid, Selu, Softsign), for shapes known only at run time and
// for the integer forms of Abs, Neg, Relu and Clip. (Floor, Ceil and Round are shape_math's.)
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>
#include <type_traits>

#include "runtime/kernels/elementwise_common.h"

namespace memplan::rt::elt {
namespace {

enum class Un {
  Relu, LeakyRelu, Clip, Sigmoid, HardSigmoid, HardSwish, Tanh, Exp, Log, Sqrt, Abs, Neg, Erf, Pow, Elu,
  Softplus, Reciprocal, Selu, Softsign,
};

struct UnaryOp {
  Un op = Un::Relu;
  float alpha = 0, beta = 0, gamma = 0;  // per-op parameters (Clip: min, max; Pow: beta = exponent)
  int64_t ilo = std::numeric_limits<int64_t>::min(), ihi = std::numeric_limits<int64_t>::max();  // integer Clip
};

float apply(const UnaryOp& u, float x) {
  switch (u.op) {
    case Un::Relu: return x < 0 ? 0.f : x;  // NaN stays NaN, as in ONNX Runtime
    case Un::LeakyRelu: return x >= 0 ? x : u.alpha * x;
    case Un::Clip: return std::min(std::max(x, u.alpha), u.beta);
    case Un::Sigmoid: return 1.f / (1.f + std::exp(-x));
    case Un::HardSigmoid: return std::max(0.f, std::min(1.f, u.alpha * x + u.beta));
    case Un::HardSwish: return x * std::max(0.f, std::min(1.f, x / 6.f + 0.5f));
    case Un::Tanh: return std::tanh(x);
    case Un::Exp: return std::exp(x);
    case Un::Log: return std::log(x);
    case Un::Sqrt: return std::sqrt(x);
    case Un::Abs: return std::fabs(x);
    case Un::Neg: return -x;
    case Un::Erf: return std::erf(x);
    case Un::Pow: return std::pow(x, u.beta);
    case Un::Elu: return x >= 0 ? x : u.alpha * std::expm1(x);
    case Un::Softplus: return std::max(x, 0.f) + std::log1p(std::exp(-std::fabs(x)));
    case Un::Reciprocal: return 1.f / x;
    case Un::Selu: return x > 0 ? u.gamma * x : u.gamma * u.alpha * std::expm1(x);
    case Un::Softsign: return x / (1.f + std::fabs(x));
  }
  return x;
}

template <typename T>
T apply_int(const UnaryOp& u, T x) {
  using U = std::make_unsigned_t<T>;
  switch (u.op) {
    case Un::Abs: return x < 0 ? static_cast<T>(U(0) - static_cast<U>(x)) : x;  // wraps for the minimum
    case Un::Neg: return static_cast<T>(U(0) - static_cast<U>(x));
    case Un::Relu: return x > 0 ? x : T(0);
    case Un::Clip: return static_cast<T>(std::min<int64_t>(std::max<int64_t>(x, u.ilo), u.ihi));
    default: return x;
  }
}

// The oneDNN algorithm for an op, with its alpha and beta; nullopt when there is none.
std::optional<std::tuple<dnnl::algorithm, float, float>> dnnl_alg(const UnaryOp& u) {
  using a = dnnl::algorithm;
  switch (u.op) {
    // Relu and Clip run as plain loops: oneDNN's max/min-based kernels turn NaN into a number, and
    // these memory-bound loops are as fast (and allocate nothing per run).
    case Un::Relu: return std::nullopt;
    case Un::Clip: return std::nullopt;
    case Un::LeakyRelu: return std::tuple{a::eltwise_relu, u.alpha, 0.f};
    case Un::Sigmoid: return std::tuple{a::eltwise_logistic, 0.f, 0.f};
    case Un::HardSwish: return std::tuple{a::eltwise_hardswish, 0.f, 0.f};
    case Un::Tanh: return std::tuple{a::eltwise_tanh, 0.f, 0.f};
    case Un::Exp: return std::tuple{a::eltwise_exp, 0.f, 0.f};
    case Un::Log: return std::tuple{a::eltwise_log, 0.f, 0.f};
    case Un::Sqrt: return std::tuple{a::eltwise_sqrt, 0.f, 0.f};
    case Un::Abs: return std::tuple{a::eltwise_abs, 0.f, 0.f};
    case Un::Neg: return std::tuple{a::eltwise_linear, -1.f, 0.f};
    case Un::Pow: return std::tuple{a::eltwise_pow, 1.f, u.beta};
    case Un::Elu: return std::tuple{a::eltwise_elu, u.alpha, 0.f};
    case Un::Softplus: return std::tuple{a::eltwise_soft_relu, 0.f, 0.f};
    case Un::Reciprocal: return std::tuple{a::eltwise_pow, 1.f, -1.f};
    default: return std::nullopt;
  }
}

class UnaryKernel final : public Kernel {
 public:
  UnaryKernel(const Node& n, const KernelEnv& env, const UnaryOp& op) : op_(op), where_(where(n, env)) {
    dtype_ = n.inputs[0]->type.dtype;
    const auto alg = dnnl_alg(op);
    if (dtype_ != DType::Float32 || !alg || !env.dnnl || !fixed_shape(n.inputs[0]) || !fixed_shape(n.outputs[0]))
      return;
    compiled_ = static_shape(n.inputs[0]);
    if (compiled_.count() == 0 || !(static_shape(n.outputs[0]) == compiled_)) return;
    try {
      const auto md = plain_md(compiled_, dnnl::memory::data_type::f32);
      const auto& [algorithm, alpha, beta] = *alg;
      dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, algorithm, md, alpha, beta);
      dnnl::eltwise_forward::primitive_desc pd(d, user_scratchpad_attr(), env.dnnl->engine);
      step_.emplace(*env.dnnl, pd);
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
    if (step_ && s == compiled_) {
      step_->bind(src_, x.data);
      step_->bind(dst_, y.data);
      step_->execute(args.scratchpad);
      return;
    }
    const uint64_t n = s.count();
    switch (dtype_) {
      case DType::Float32: {
        const float* in = x.as<float>();
        float* out = y.as<float>();
        for (uint64_t i = 0; i < n; ++i) out[i] = apply(op_, in[i]);
        break;
      }
      case DType::Int64: loop<int64_t>(x, y, n); break;
      case DType::Int32: loop<int32_t>(x, y, n); break;
      default: fail_internal(where_ + ": unexpected dtype");
    }
  }

  uint64_t scratchpad_bytes() const override { return step_ ? step_->scratchpad_bytes() : 0; }

 private:
  template <typename T>
  void loop(const TensorView& x, TensorView& y, uint64_t n) const {
    const T* in = x.as<T>();
    T* out = y.as<T>();
    for (uint64_t i = 0; i < n; ++i) out[i] = apply_int<T>(op_, in[i]);
  }

  UnaryOp op_;
  DType dtype_ = DType::Float32;
  std::string where_;
  Shape compiled_;
  std::optional<DnnlStep> step_;
  size_t src_ = 0, dst_ = 0;
};

void check_arity(const Node& n, const KernelEnv& env) {
  if (n.inputs.empty() || !n.inputs[0]) fail(where(n, env) + ": the input is missing");
  if (n.outputs.empty() || !n.outputs[0]) fail(where(n, env) + ": the output is missing");
}

// Clip's bound from input k (opset >= 11), which must be a scalar constant if present.
const Tensor* clip_bound(const Node& n, const KernelEnv& env, size_t k) {
  if (n.inputs.size() <= k || !n.inputs[k]) return nullptr;
  const Value* v = n.inputs[k];
  if (!v->constant)
    fail_unsupported(where(n, env) + ": input '" + v->name + "' (" + (k == 1 ? "min" : "max") +
                     ") is computed at run time; only constant bounds are supported");
  if (v->constant->element_count() != 1)
    fail(where(n, env) + ": input '" + v->name + "' must be a scalar, it has " +
         std::to_string(v->constant->element_count()) + " elements");
  return v->constant.get();
}

std::unique_ptr<Kernel> make_unary(const Node& n, const KernelEnv& env, Un which) {
  check_arity(n, env);
  const DType dt = n.inputs[0]->type.dtype;
  const bool int_ok = which == Un::Abs || which == Un::Neg || which == Un::Relu || which == Un::Clip;
  const bool is_int = dt == DType::Int64 || dt == DType::Int32;
  if (dt != DType::Float32 && !(is_int && int_ok))
    fail_unsupported(where(n, env) + ": " + dtype_name(dt) + " input is not supported (float32" +
                     (int_ok ? ", int32 and int64" : "") + " only)");
  if (n.outputs[0]->type.dtype != dt)
    fail(where(n, env) + ": the output is " + dtype_name(n.outputs[0]->type.dtype) + ", the input " + dtype_name(dt));
  UnaryOp u;
  u.op = which;
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
    case Un::Clip: {
      u.alpha = -std::numeric_limits<float>::infinity();
      u.beta = std::numeric_limits<float>::infinity();
      if (n.opset < 11) {
        u.alpha = n.attr_float("min", -std::numeric_limits<float>::max());
        u.beta = n.attr_float("max", std::numeric_limits<float>::max());
      } else {
        if (const Tensor* lo = clip_bound(n, env, 1)) {
          u.alpha = static_cast<float>(lo->float_at(0));
          u.ilo = lo->int_at(0);
        }
        if (const Tensor* hi = clip_bound(n, env, 2)) {
          u.beta = static_cast<float>(hi->float_at(0));
          u.ihi = hi->int_at(0);
        }
      }
      break;
    }
    default: break;
  }
  return std::make_unique<UnaryKernel>(n, env, u);
}

template <Un which>
std::unique_ptr<Kernel> factory(const Node& n, const KernelEnv& env) {
  return make_unary(n, env, which);
}

}  // namespace

std::unique_ptr<Kernel> make_unary_pow(const Node& n, const KernelEnv& env, float exponent) {
  check_arity(n, env);
  UnaryOp u;
  u.op = Un::Pow;
  u.beta = exponent;
  return std::make_unique<UnaryKernel>(n, env, u);
}

void register_unary_kernels(KernelRegistry& r) {
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
}

}  // namespace memplan::rt::elt
