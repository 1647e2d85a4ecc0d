#include "runtime/kernels/dnnl/patch_pointwise.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/kernels/common/dnnl_common.h"

namespace memplan::rt::dnnl_kernels {

namespace {

using Op = PointwiseLayer::Op;

bool image(const Value* v) {
  return v && !v->dynamic && v->type.dtype == DType::Float32 && !v->type.is_container() && v->type.is_static() &&
         v->type.dims.size() == 4;
}

// Whether `v` is a constant of one value, or one per channel of an [N, C, H, W] tensor (dims
// aligned right: [C, 1, 1], [1, C, 1, 1]). Its shape alone: the bytes may be released already.
bool per_channel(const Value* v, int64_t channels) {
  if (!v || !v->is_constant() || v->type.dtype != DType::Float32 || !v->type.is_static() || v->type.dims.size() > 4)
    return false;
  const std::vector<int64_t> d = v->type.static_dims();
  for (size_t i = 0; i < d.size(); ++i) {
    const size_t axis = 4 - d.size() + i;  // its axis in [N, C, H, W]
    if (d[i] != 1 && !(axis == 1 && d[i] == channels)) return false;
  }
  return true;
}

// Channel c's constant.
float at(const std::vector<float>& k, int64_t c) { return k.size() == 1 ? k[0] : k[static_cast<size_t>(c)]; }

float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

// One output element from x (and the other operand w).
float apply(const PointwiseLayer& p, float x, float w) {
  switch (p.op) {
    case Op::Relu: return x < 0.f ? 0.f : x;
    case Op::LeakyRelu: return x < 0.f ? p.alpha * x : x;
    case Op::Clip: return x < p.alpha ? p.alpha : x > p.beta ? p.beta : x;
    case Op::Sigmoid: return sigmoid(x);
    case Op::HardSigmoid: return std::clamp(p.alpha * x + p.beta, 0.f, 1.f);
    case Op::HardSwish: return x * std::clamp(x + 3.f, 0.f, 6.f) / 6.f;
    case Op::Tanh: return std::tanh(x);
    case Op::PRelu: return x < 0.f ? w * x : x;
    case Op::Add: return x + w;
    case Op::Sub: return p.constant_first ? w - x : x - w;
    case Op::Mul: return x * w;
    case Op::Div: return p.constant_first ? w / x : x / w;
  }
  return x;
}

class RowsPointwise final : public Kernel {
 public:
  RowsPointwise(PointwiseLayer p, int64_t channels) : p_(std::move(p)), channels_(channels) {}

  void run(const KernelArgs& args) override {
    const float* x = args.inputs[0].as<const float>();
    const float* w = p_.operand >= 0 ? args.inputs[1].as<const float>() : nullptr;
    float* y = args.outputs[0].as<float>();
    const int64_t c = channels_, pixels = static_cast<int64_t>(args.outputs[0].capacity / sizeof(float)) / c;
    const PointwiseLayer& p = p_;
    const float none = 0.f;
#pragma omp parallel for schedule(static) if (pixels * c > (1 << 15))
    for (int64_t px = 0; px < pixels; ++px) {
      const int64_t base = px * c;
      for (int64_t k = 0; k < c; ++k)
        y[base + k] = apply(p, x[base + k], w ? w[base + k] : p.constant.empty() ? none : at(p.constant, k));
    }
  }
  std::string implementation() const override { return "memplan's pointwise loop"; }

 private:
  PointwiseLayer p_;
  int64_t channels_;
};

}  // namespace

std::optional<PointwiseLayer> pointwise_layer(const Node& n, std::string& why) {
  static const std::vector<std::pair<std::string, Op>> kOps{
      {"Relu", Op::Relu},   {"LeakyRelu", Op::LeakyRelu}, {"Clip", Op::Clip}, {"Sigmoid", Op::Sigmoid},
      {"HardSigmoid", Op::HardSigmoid}, {"HardSwish", Op::HardSwish}, {"Tanh", Op::Tanh}, {"PRelu", Op::PRelu},
      {"Add", Op::Add},     {"Sub", Op::Sub},             {"Mul", Op::Mul},   {"Div", Op::Div}};
  auto it = std::find_if(kOps.begin(), kOps.end(), [&](const auto& o) { return o.first == n.op_type; });
  if (!n.domain.empty() || it == kOps.end()) {
    why = "a " + n.op_type + " (only Conv, MaxPool and pointwise ops run in patches)";
    return std::nullopt;
  }
  PointwiseLayer p;
  p.op = it->second;
  const bool binary = p.op == Op::PRelu || p.op == Op::Add || p.op == Op::Sub || p.op == Op::Mul || p.op == Op::Div;
  if (binary && (n.inputs.size() != 2 || !n.inputs[0] || !n.inputs[1])) {
    why = "a " + n.op_type + " of " + std::to_string(n.inputs.size()) + " inputs";
    return std::nullopt;
  }
  if (binary && p.op != Op::PRelu && !image(n.inputs[0]) && image(n.inputs[1])) {  // a constant first
    p.activation = 1;
    p.constant_first = true;
  }
  const Value* x = n.inputs.empty() ? nullptr : n.inputs[p.activation];
  const Value* y = n.outputs.empty() ? nullptr : n.outputs[0];
  if (!image(x) || x->is_constant() || !image(y) || x->type.static_dims() != y->type.static_dims()) {
    why = "a " + n.op_type + " that does not keep its input's shape";
    return std::nullopt;
  }
  const int64_t channels = x->type.dims[1].value;
  if (binary) {
    const Value* other = n.inputs[1 - p.activation];
    if (per_channel(other, channels)) {
      p.constant_input = 1 - p.activation;
    } else if (p.op != Op::PRelu && image(other) && !other->is_constant() && other->type.static_dims() == x->type.static_dims()) {
      p.operand = static_cast<int>(1 - p.activation);
    } else {
      why = "a " + n.op_type + " whose other operand is neither one value or one per channel, nor a tensor of its shape";
      return std::nullopt;
    }
  }
  switch (p.op) {
    case Op::LeakyRelu: p.alpha = n.attr_float("alpha", 0.01f); break;
    case Op::HardSigmoid:
      p.alpha = n.attr_float("alpha", 0.2f);
      p.beta = n.attr_float("beta", 0.5f);
      break;
    case Op::Clip: {
      p.alpha = n.attr_float("min", -std::numeric_limits<float>::max());
      p.beta = n.attr_float("max", std::numeric_limits<float>::max());
      for (size_t i : {size_t{1}, size_t{2}}) {
        if (i >= n.inputs.size() || !n.inputs[i]) continue;
        if (!per_channel(n.inputs[i], 1)) {
          why = "a Clip whose bounds are not constants";
          return std::nullopt;
        }
      }
      break;
    }
    default: break;
  }
  return p;
}

std::unique_ptr<Kernel> make_rows_pointwise(const Node& n, PointwiseLayer p, int64_t channels, const std::string& where) {
  if (p.constant_input >= 0)
    p.constant = constant_floats(n.inputs[static_cast<size_t>(p.constant_input)], where);
  if (p.op == Op::Clip)
    for (size_t i : {size_t{1}, size_t{2}})
      if (i < n.inputs.size() && n.inputs[i]) (i == 1 ? p.alpha : p.beta) = constant_floats(n.inputs[i], where).at(0);
  if (!p.constant.empty() && p.constant.size() != 1 && static_cast<int64_t>(p.constant.size()) != channels)
    fail_internal(where + ": a constant of " + std::to_string(p.constant.size()) + " values for " + std::to_string(channels) + " channels");
  return std::make_unique<RowsPointwise>(std::move(p), channels);
}

}  // namespace memplan::rt::dnnl_kernels
