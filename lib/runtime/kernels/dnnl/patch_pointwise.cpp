#include "runtime/kernels/dnnl/patch_pointwise.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ir/fused_activation.h"
#include "runtime/kernels/common/dnnl_common.h"
#include "runtime/kernels/common/eltwise_step.h"
#include "runtime/kernels/common/parallel_chunks.h"
#include "runtime/kernels/elementwise/binary_layout_loop.h"

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

// The layer in the forms memplan's other kernels share where they have one: eltwise steps (an
// activation, or arithmetic with one value: ir/fused_activation.h, as a Conv applies what it
// fused), the binary loop of elementwise ops (PRelu, a constant per channel, another tensor of the
// chain, a value divided by the tensor), and a loop of its own for Tanh alone.
class RowsPointwise final : public Kernel {
 public:
  RowsPointwise(PointwiseLayer p, int64_t channels, std::vector<EltwiseStep> steps, std::optional<elt::LayoutLoop> binary)
      : p_(std::move(p)), channels_(channels), steps_(std::move(steps)), binary_(binary) {}

  void run(const KernelArgs& args) override {
    const float* x = args.inputs[0].as<const float>();
    float* y = args.outputs[0].as<float>();
    const uint64_t count = args.outputs[0].capacity / sizeof(float);
    if (!steps_.empty()) {
      if (y != x) std::memmove(y, x, count * sizeof(float));
      for (const EltwiseStep& s : steps_) apply_step(s, y, count);
      return;
    }
    if (binary_) {
      elt::LayoutLoop rows = *binary_;
      rows.hw = static_cast<int64_t>(count) / channels_;
      rows.run(x, p_.operand >= 0 ? args.inputs[1].as<const float>() : p_.constant.data(), y);
      return;
    }
    // Tanh: no eltwise step or binary op computes it.
    parallel_chunks(count, kParallelChunkBytes / sizeof(float), [&](uint64_t begin, uint64_t end) {
      for (uint64_t i = begin; i < end; ++i) y[i] = std::tanh(x[i]);
    });
  }
  std::string implementation() const override { return "memplan's pointwise loop"; }

 private:
  PointwiseLayer p_;
  int64_t channels_;
  std::vector<EltwiseStep> steps_;
  std::optional<elt::LayoutLoop> binary_;
};

// The binary loop for a PRelu, or an Add, Sub, Mul or Div whose other operand is not one value (or
// is one dividing it, c / x), on channels-last rows of `channels` channels.
std::optional<elt::LayoutLoop> binary_loop(const PointwiseLayer& p, int64_t channels) {
  static const std::vector<std::pair<Op, elt::FlatBinOp>> kOps{{Op::Add, elt::FlatBinOp::Add},
                                                                {Op::Sub, elt::FlatBinOp::Sub},
                                                                {Op::Mul, elt::FlatBinOp::Mul},
                                                                {Op::Div, elt::FlatBinOp::Div},
                                                                {Op::PRelu, elt::FlatBinOp::PRelu}};
  const auto it = std::find_if(kOps.begin(), kOps.end(), [&](const auto& o) { return o.first == p.op; });
  if (it == kOps.end()) return std::nullopt;
  elt::LayoutLoop l;
  l.op = it->second;
  l.operand = p.operand >= 0 ? elt::Operand::Full : p.constant.size() == 1 ? elt::Operand::Scalar : elt::Operand::PerChannel;
  l.swapped = p.constant_first;
  l.c = channels;
  l.channels_last = true;
  return l;
}

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
  if (p.op == Op::Clip)
    for (size_t i : {size_t{1}, size_t{2}})
      if (i < n.inputs.size() && n.inputs[i] && !per_channel(n.inputs[i], 1)) {
        why = "a Clip whose bounds are not constants";
        return std::nullopt;
      }
  return p;
}

std::unique_ptr<Kernel> make_rows_pointwise(const Node& n, PointwiseLayer p, int64_t channels, const std::string& where) {
  if (p.constant_input >= 0)
    p.constant = constant_floats(n.inputs[static_cast<size_t>(p.constant_input)], where);
  if (!p.constant.empty() && p.constant.size() != 1 && static_cast<int64_t>(p.constant.size()) != channels)
    fail_internal(where + ": a constant of " + std::to_string(p.constant.size()) + " values for " + std::to_string(channels) + " channels");
  std::vector<EltwiseStep> steps = p.operand < 0 ? eltwise_steps(n, n.inputs[p.activation], false) : std::vector<EltwiseStep>{};
  const std::optional<elt::LayoutLoop> binary = steps.empty() ? binary_loop(p, channels) : std::nullopt;
  return std::make_unique<RowsPointwise>(std::move(p), channels, std::move(steps), binary);
}

}  // namespace memplan::rt::dnnl_kernels
