// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss over [N, C, d1, ..., dk] inputs and
// [N, d1, ..., dk] targets. Each element's loss is -log_prob[n, target, d...] * weight[target]
// (0, with weight 0, where the target is ignore_index); reduction "none" keeps them, "sum" adds
// them, "mean" divides the sum by the sum of the weights used (as ONNX's reference and ONNX
// Runtime do). SoftmaxCrossEntropyLoss takes log_prob = LogSoftmax(scores) over axis 1: into its
// optional second output when present, else computed where the loss needs it (no scratchpad).
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/loss/factories.h"

namespace memplan::rt::norm {
using namespace shape;
namespace {

enum class Reduction { None, Sum, Mean };

struct LossSpec {
  Reduction reduction = Reduction::Mean;
  bool has_ignore = false;
  int64_t ignore = 0;
  bool softmax = false;  // SoftmaxCrossEntropyLoss
  bool has_weight = false;
  bool has_log_prob = false;  // SoftmaxCrossEntropyLoss's optional second output
};

// log(sum_c exp(row[c * stride])) over c < C, shifted by the maximum so exp cannot overflow.
template <typename T>
double log_sum_exp(const T* row, int64_t C, uint64_t stride) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < C; ++c) m = std::max(m, static_cast<double>(row[static_cast<uint64_t>(c) * stride]));
  if (!std::isfinite(m)) return m;
  double sum = 0;
  for (int64_t c = 0; c < C; ++c) sum += std::exp(row[static_cast<uint64_t>(c) * stride] - m);
  return m + std::log(sum);
}

template <typename T>
class LossKernel final : public Kernel {
 public:
  LossKernel(std::string where, const Node& n, LossSpec spec)
      : where_(std::move(where)), spec_(spec), dynamic_(any_dynamic(n)) {}

  void run(const KernelArgs& a) override {
    const TensorView& x = a.inputs[0];
    const TensorView& target = a.inputs[1];
    const T* weight = spec_.has_weight ? a.inputs[2].as<const T>() : nullptr;
    check_shapes(x, target, spec_.has_weight ? &a.inputs[2] : nullptr);
    const uint64_t N = static_cast<uint64_t>(x.dims[0]), D = product(x.dims.data(), 2, x.rank);
    const int64_t C = x.dims[1];
    TensorView& loss = a.outputs[0];
    TensorView* log_prob = spec_.has_log_prob ? &a.outputs[1] : nullptr;
    if (dynamic_) {
      if (spec_.reduction == Reduction::None) set_shape_like(loss, target, where_);
      else set_shape(loss, 0, nullptr, where_);
      if (log_prob) set_shape_like(*log_prob, x, where_);
    }
    const T* in = x.as<const T>();
    T* out = loss.as<T>();
    auto at = [D](uint64_t base, int64_t c) { return base + static_cast<uint64_t>(c) * D; };
    if (spec_.softmax && !log_prob) {  // the log-probability of the target only
      accumulate(target, weight, N, C, D, out, [&](uint64_t base, int64_t t) { return in[at(base, t)] - log_sum_exp(in + base, C, D); });
      return;
    }
    const T* lp = in;
    if (log_prob) {
      T* y = log_prob->as<T>();
      for (uint64_t n = 0; n < N; ++n)
        for (uint64_t d = 0; d < D; ++d) {
          const uint64_t base = n * static_cast<uint64_t>(C) * D + d;
          const double lse = log_sum_exp(in + base, C, D);
          for (int64_t c = 0; c < C; ++c) y[at(base, c)] = static_cast<T>(in[at(base, c)] - lse);
        }
      lp = y;
    }
    accumulate(target, weight, N, C, D, out, [&](uint64_t base, int64_t t) { return static_cast<double>(lp[at(base, t)]); });
  }

 private:
  void check_shapes(const TensorView& x, const TensorView& target, const TensorView* weight) const {
    bool ok = x.rank >= 2 && target.rank == x.rank - 1 && target.dims[0] == x.dims[0];
    for (int d = 1; ok && d < target.rank; ++d) ok = target.dims[d] == x.dims[d + 1];
    if (!ok) fail_at(where_, "the target's shape does not match the input's [N, C, d1, ..., dk] without C");
    if (weight && (weight->rank != 1 || weight->dims[0] != x.dims[1]))
      fail_at(where_, "the weight must have one element per class (" + std::to_string(x.dims[1]) + ")");
  }

  // Visits every (n, d...) position; log_prob(base, t) is the log-probability of class t at the
  // position whose class 0 is element `base` of the input.
  template <typename LogProb>
  void accumulate(const TensorView& target, const T* weight, uint64_t N, int64_t C, uint64_t D, T* out, LogProb log_prob) const {
    double sum = 0, weights = 0;
    for (uint64_t n = 0; n < N; ++n)
      for (uint64_t d = 0; d < D; ++d) {
        const uint64_t i = n * D + d;
        const int64_t t = int_at(target, i);
        double l = 0, w = 0;
        if (!spec_.has_ignore || t != spec_.ignore) {
          if (t < 0 || t >= C)
            fail_at(where_, "target " + std::to_string(t) + " is out of range for " + std::to_string(C) + " classes");
          w = weight ? static_cast<double>(weight[t]) : 1.0;
          l = -log_prob(n * static_cast<uint64_t>(C) * D + d, t) * w;
        }
        if (spec_.reduction == Reduction::None) out[i] = static_cast<T>(l);
        sum += l;
        weights += w;
      }
    // A mean over no weight at all is 0 / 0 = NaN, as in ONNX's reference.
    if (spec_.reduction == Reduction::Sum) out[0] = static_cast<T>(sum);
    if (spec_.reduction == Reduction::Mean) out[0] = static_cast<T>(sum / weights);
  }

  std::string where_;
  LossSpec spec_;
  bool dynamic_;
};

Factory make_loss(const Node& n, const KernelEnv& env, bool softmax) {
  const std::string where = check_arity(n, env, 2, 3);
  LossSpec spec;
  spec.softmax = softmax;
  spec.has_weight = input_at(n, 2) != nullptr;
  const std::string reduction = n.attr_string("reduction", "mean");
  if (reduction == "none") spec.reduction = Reduction::None;
  else if (reduction == "sum") spec.reduction = Reduction::Sum;
  else if (reduction != "mean") fail_at(where, "reduction '" + reduction + "' is not none, sum or mean");
  if (n.attr("ignore_index")) {
    spec.has_ignore = true;
    spec.ignore = n.attr_int("ignore_index", 0);
  }
  const DType t = n.inputs[0]->type.dtype;
  if (t != DType::Float32 && t != DType::Float64)
    unsupported_at(where, "inputs of type " + dtype_name(t) + " are not supported (float32 and float64 only)");
  const DType target = n.inputs[1]->type.dtype;
  if (target != DType::Int64 && target != DType::Int32) fail_at(where, "the target must be int32 or int64, not " + dtype_name(target));
  if (spec.has_weight && n.inputs[2]->type.dtype != t) fail_at(where, "the weight is not " + dtype_name(t));
  if (n.outputs.size() > (softmax ? 2u : 1u)) fail_at(where, "has too many outputs");
  spec.has_log_prob = output_at(n, 1) != nullptr;
  for (const Value* o : n.outputs)
    if (o && o->type.dtype != t) fail_at(where, "output '" + o->name + "' is not " + dtype_name(t));
  Factory k;
  dispatch(t, FloatTypes{}, [&](auto tag) { k = std::make_unique<LossKernel<decltype(tag)>>(where, n, spec); });
  return k;
}

}  // namespace

Factory make_nll_loss(const Node& n, const KernelEnv& env) { return make_loss(n, env, false); }
bool loss_accepts(const Node& n) {
  const DType t = n.inputs.empty() || !n.inputs[0] ? DType::Undefined : n.inputs[0]->type.dtype;
  return t == DType::Float32 || t == DType::Float64;
}
Factory make_softmax_cross_entropy(const Node& n, const KernelEnv& env) { return make_loss(n, env, true); }

}  // namespace memplan::rt::norm
