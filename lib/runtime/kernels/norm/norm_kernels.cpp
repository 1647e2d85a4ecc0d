// LayerNormalization, InstanceNormalization, MeanVarianceNormalization and training-mode
// BatchNormalization. Each normalizes x over some of its axes: y = (x - mean) * inv(var) * scale +
// bias, where mean and var are taken over every group of elements that differ only on those axes.
// One kernel serves all four; they differ in the axes, in inv (1 / sqrt(var + epsilon); MVN's ONNX
// function body divides by sqrt(var) + 1e-9 instead), in how scale and bias broadcast and in their
// extra outputs. Statistics are accumulated in
// double, in two passes (the mean, then squared deviations from it: unlike E[x^2] - E[x]^2 the
// variance cannot come out negative).
#include <algorithm>
#include <cmath>

#include "runtime/kernels/common/parallel_chunks.h"
#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/common/simd_clones.h"
#include "runtime/kernels/norm/factories.h"

namespace memplan::rt::norm {
using namespace shape;

std::string dims_text(const TensorView& t) {
  std::string s = " [";
  for (int i = 0; i < t.rank; ++i) s += (i ? ", " : "") + std::to_string(t.dims[i]);
  return s + "]";
}

void require_float32_inputs(const Node& n, size_t count, const std::string& where) {
  for (size_t k = 0; k < count && k < n.inputs.size(); ++k)
    if (const Value* v = n.inputs[k]; v && v->type.dtype != DType::Float32)
      unsupported_at(where, "input '" + v->name + "' is " + dtype_name(v->type.dtype) + "; float32 only");
}

namespace {

enum class Kind { Layer, Instance, MeanVariance, Batch };

// A row's mean and 1 / sqrt(variance + epsilon). The mean is summed in double (vector lanes each
// summing a share of the row, then added: exact enough whatever the row's offset from zero); the
// squared deviations from it are summed in `Lane`, and since they are taken from the accurate
// mean their sum loses no digits to cancellation. Lane = float runs twice the lanes of double per
// instruction with no conversions (LayerNormalization's float rows: ConvNeXt-T's 23 layer norms
// 2.45 -> 1.37 ms at 1 thread). Inlined into the clones below, one per instruction set
// (target_clones takes no templates).
template <typename Lane>
struct RowMoments {
  Lane mean, inv;
};

template <typename Lane, typename T>
__attribute__((always_inline)) inline RowMoments<Lane> row_moments(const T* x, uint64_t n, double epsilon) {
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (uint64_t j = 0; j < n; ++j) sum += x[j];
  const auto mean = static_cast<Lane>(sum / static_cast<double>(n));
  Lane var = 0;
#pragma omp simd reduction(+ : var)
  for (uint64_t j = 0; j < n; ++j) {
    const Lane d = static_cast<Lane>(x[j]) - mean;
    var += d * d;
  }
  return {mean, static_cast<Lane>(1.0 / std::sqrt(static_cast<double>(var) / static_cast<double>(n) + epsilon))};
}

// One row of LayerNormalization, y = (x - mean) * inv * scale + bias, in T's own lanes.
template <typename T>
__attribute__((always_inline)) inline void normalize_row_of(const T* x, const T* scale, const T* bias, T* y, uint64_t n,
                                                            double epsilon) {
  const auto [mean, inv] = row_moments<T>(x, n, epsilon);
  if (scale && bias) {
#pragma omp simd
    for (uint64_t j = 0; j < n; ++j) y[j] = (x[j] - mean) * (inv * scale[j]) + bias[j];
  } else {
#pragma omp simd
    for (uint64_t j = 0; j < n; ++j) y[j] = (x[j] - mean) * (inv * (scale ? scale[j] : T(1))) + (bias ? bias[j] : T(0));
  }
}

MEMPLAN_SIMD_CLONES void normalize_row(const float* x, const float* scale, const float* bias, float* y, uint64_t n,
                                       double epsilon) {
  normalize_row_of(x, scale, bias, y, n, epsilon);
}

MEMPLAN_SIMD_CLONES void normalize_row(const double* x, const double* scale, const double* bias, double* y, uint64_t n,
                                       double epsilon) {
  normalize_row_of(x, scale, bias, y, n, epsilon);
}

// One row of InstanceNormalization, a channel of one image: one scale and one bias for the row.
template <typename T>
__attribute__((always_inline)) inline void normalize_channel_of(const T* x, T scale, T bias, T* y, uint64_t n,
                                                                double epsilon) {
  const auto [mean, inv] = row_moments<double>(x, n, epsilon);
  const double a = inv * scale, b = bias - mean * a;
#pragma omp simd
  for (uint64_t j = 0; j < n; ++j) y[j] = static_cast<T>(x[j] * a + b);
}

MEMPLAN_SIMD_CLONES void normalize_channel(const float* x, float scale, float bias, float* y, uint64_t n,
                                           double epsilon) {
  normalize_channel_of(x, scale, bias, y, n, epsilon);
}

MEMPLAN_SIMD_CLONES void normalize_channel(const double* x, double scale, double bias, double* y, uint64_t n,
                                           double epsilon) {
  normalize_channel_of(x, scale, bias, y, n, epsilon);
}

struct NormSpec {
  Kind kind = Kind::Layer;
  int64_t axis = -1;  // LayerNormalization: normalize axes [axis, rank)
  Ints axes;          // MeanVarianceNormalization
  double epsilon = 0;
  double momentum = 0;  // BatchNormalization: running = input * momentum + batch * (1 - momentum)
};

// Broadcast plans of one run: x against its statistics (the group of each element), then also
// against scale, and the output against bias.
struct Plans {
  TensorView stats;  // x's dims with 1 on the normalized axes (no data: only its shape is used)
  uint64_t groups = 0;
  Broadcast by_group, with_scale, with_bias;
};

// A rank-0 view of a constant, standing for an omitted scale (1) or bias (0): it broadcasts.
template <typename T>
TensorView scalar_view(const T& v) {
  TensorView t;
  t.data = reinterpret_cast<std::byte*>(const_cast<T*>(&v));  // read only
  t.dtype = dtype_of<T>();
  return t;
}

template <typename T>
class NormKernel final : public Kernel {
 public:
  // The scratchpad holds a mean and an inverse deviation per group: for a dynamic input, at most
  // one group per element (`max_elements`).
  NormKernel(std::string where, const Node& n, NormSpec spec, uint64_t max_elements)
      : where_(std::move(where)), spec_(spec), max_groups_(max_elements), dynamic_(any_dynamic(n)),
        has_scale_(input_at(n, 1) != nullptr), has_bias_(input_at(n, 2) != nullptr),
        has_stats_{output_at(n, 1) != nullptr, output_at(n, 2) != nullptr} {
    if (!dynamic_) {
      TensorView x = static_view(n.inputs[0], where_);
      TensorView scale = has_scale_ ? static_view(n.inputs[1], where_) : TensorView{};
      TensorView bias = has_bias_ ? static_view(n.inputs[2], where_) : TensorView{};
      plans_ = make_plans(x, scale, bias);
      max_groups_ = plans_.groups;  // exact for a static input
      row_ = contiguous_rows(x, has_scale_ ? &scale : nullptr, has_bias_ ? &bias : nullptr, plans_.groups);
    }
  }

  uint64_t scratchpad_bytes() const override { return 2 * max_groups_ * sizeof(double); }
  // Every path takes its statistics from x before it writes, then writes each element of y after
  // reading the same element of x: y may take x's bytes.
  bool may_overwrite_input(size_t input) const override { return input == 0; }
  std::string implementation() const override {
    if (has_stats_[0] || has_stats_[1]) return "memplan broadcast loop";
    if (!dynamic_) return row_ > 0 ? "memplan row loop" : "memplan broadcast loop";
    return spec_.kind == Kind::Instance ? "memplan row loop"
           : spec_.kind == Kind::Layer  ? "memplan row loop where each run's rows are contiguous, else broadcast loop"
                                        : "memplan broadcast loop";
  }

  void run(const KernelArgs& a) override {
    const TensorView& x = a.inputs[0];
    TensorView& y = a.outputs[0];
    const TensorView* scale = has_scale_ ? &a.inputs[1] : nullptr;
    const TensorView* bias = has_bias_ ? &a.inputs[2] : nullptr;
    Plans local;
    const Plans* p = &plans_;
    if (dynamic_) {
      local = make_plans(x, scale ? *scale : TensorView{}, bias ? *bias : TensorView{});
      p = &local;
      set_shape_like(y, x, where_);
      // Mean and InvStdDev keep x's rank; running_mean and running_var are [C].
      const bool batch = spec_.kind == Kind::Batch;
      const int64_t channels[] = {static_cast<int64_t>(p->groups)};
      for (size_t i = 1; i < 3; ++i)
        if (has_stats_[i - 1])
          set_shape(a.outputs[i], batch ? 1 : p->stats.rank, batch ? channels : p->stats.dims.data(), where_);
    }
    if (x.element_count() == 0) return;
    if (p->groups > max_groups_)
      fail_at(where_, std::to_string(p->groups) + " groups to normalize exceed the bound of " + std::to_string(max_groups_));
    double* mean = reinterpret_cast<double*>(a.scratchpad);
    double* inv = mean + max_groups_;
    // Contiguous rows, one by one: known at load for a static input, found each run for another.
    const uint64_t row = has_stats_[0] || has_stats_[1] ? 0 : dynamic_ ? contiguous_rows(x, scale, bias, p->groups) : row_;
    if (row > 0) {
      if (spec_.kind == Kind::Instance)
        normalize_channels(x.as<const T>(), scale->as<const T>(), bias->as<const T>(), y.as<T>(), row, p->groups,
                           static_cast<uint64_t>(x.dims[1]));
      else
        normalize_rows(x.as<const T>(), scale ? scale->as<const T>() : nullptr, bias ? bias->as<const T>() : nullptr,
                       y.as<T>(), row, p->groups);
      return;
    }
    moments(x.as<const T>(), *p, mean, inv);  // inv holds the variances for now
    if (spec_.kind == Kind::Batch) running_stats(a, mean, inv, p->groups);
    for (uint64_t g = 0; g < p->groups; ++g)
      inv[g] = spec_.kind == Kind::MeanVariance ? 1.0 / (std::sqrt(inv[g]) + spec_.epsilon) : 1.0 / std::sqrt(inv[g] + spec_.epsilon);
    normalize(x.as<const T>(), scale, bias, y.as<T>(), *p, mean, inv);
    // LayerNormalization's optional Mean and InvStdDev outputs, in their own (stash) type.
    if (spec_.kind == Kind::Layer)
      for (size_t i = 1; i < 3; ++i)
        if (has_stats_[i - 1]) store(a.outputs[i], p->groups, [&](uint64_t g) { return i == 1 ? mean[g] : inv[g]; });
  }

 private:
  // Which axes of a rank-`rank` input are normalized.
  std::array<bool, kMaxRank> normalized_axes(int rank) const {
    std::array<bool, kMaxRank> on{};
    switch (spec_.kind) {
      case Kind::Layer:
        for (int d = normalize_axis(spec_.axis, rank, where_); d < rank; ++d) on[d] = true;
        break;
      case Kind::Instance:
      case Kind::Batch:  // over every axis but the channels'
        if (rank < 2) fail_at(where_, "the input must have rank 2 or more (N, C, ...)");
        for (int d = spec_.kind == Kind::Batch ? 0 : 2; d < rank; ++d) on[d] = d != 1;
        break;
      case Kind::MeanVariance:
        for (int i = 0; i < spec_.axes.size; ++i) on[normalize_axis(spec_.axes[i], rank, where_)] = true;
        break;
    }
    return on;
  }

  Plans make_plans(const TensorView& x, const TensorView& scale_in, const TensorView& bias_in) const {
    Plans p;
    check_rank(x.rank, where_);
    p.stats = x;
    p.stats.data = nullptr;
    const auto on = normalized_axes(x.rank);
    for (int d = 0; d < x.rank; ++d)
      if (on[d]) p.stats.dims[d] = 1;
    p.groups = p.stats.element_count();
    const TensorView* xs[] = {&x, &p.stats};
    p.by_group = make_broadcast(xs, 2, where_);
    // InstanceNormalization's and BatchNormalization's scale and bias are per channel: [C]
    // stands for [C, 1, ..., 1].
    TensorView scale = scale_in, bias = bias_in;
    if (spec_.kind == Kind::Instance || spec_.kind == Kind::Batch) {
      for (TensorView* t : {&scale, &bias}) {
        if (t->rank != 1 || t->dims[0] != x.dims[1])
          fail_at(where_, "scale and B must have shape [" + std::to_string(x.dims[1]) + "] (the channels), not" + dims_text(*t));
        t->rank = x.rank - 1;
        for (int d = 1; d < t->rank; ++d) t->dims[d] = 1;
      }
    }
    const TensorView* xss[] = {&x, &p.stats, &scale};
    p.with_scale = make_broadcast(xss, 3, where_);
    const TensorView* xb[] = {&x, &bias};
    p.with_bias = make_broadcast(xb, 2, where_);
    // scale and bias must broadcast to x, not x to them.
    for (const Broadcast* b : {&p.with_scale, &p.with_bias})
      if (b->out_rank != x.rank || !std::equal(x.dims.begin(), x.dims.begin() + x.rank, b->out_dims.begin()))
        fail_at(where_, "scale" + dims_text(scale_in) + " or B" + dims_text(bias_in) + " does not broadcast to the input's" +
                            dims_text(x));
    return p;
  }

  // The length of the rows normalized one by one, when they are contiguous: InstanceNormalization's
  // (a channel of an image; scale and bias are one value per channel), or LayerNormalization's
  // (the axes from `axis` on) where scale and bias are one value per element of a row (ONNX's
  // [x.shape[axis:]], perhaps with leading 1s) or absent; 0 otherwise.
  // `groups`: the number of rows (Plans::groups).
  uint64_t contiguous_rows(const TensorView& x, const TensorView* scale, const TensorView* bias, uint64_t groups) const {
    if (spec_.kind == Kind::Instance && groups > 0 && scale && bias) return x.element_count() / groups;
    if (spec_.kind != Kind::Layer || groups == 0) return 0;
    const int first = normalize_axis(spec_.axis, x.rank, where_);
    const int k = x.rank - first;
    const uint64_t row = x.element_count() / groups;
    for (const TensorView* t : {scale, bias}) {
      if (!t) continue;
      if (t->rank < k || t->element_count() != row) return 0;
      for (int d = 0; d < k; ++d)
        if (t->dims[t->rank - k + d] != x.dims[first + d]) return 0;
    }
    return row;
  }

  // LayerNormalization row by row, vectorized and the rows split across the run's threads: the
  // same operations as moments() and normalize() but for the order of the sums (ConvNeXt-T's 23
  // layer norms of 96 to 768 channels: 8.7 ms at 1 and at 2 threads before, walked one element at
  // a time on one thread).
  void normalize_rows(const T* x, const T* scale, const T* bias, T* y, uint64_t n, uint64_t rows) const {
    parallel_chunks(rows, std::max<uint64_t>(kParallelChunkBytes / sizeof(T) / n, 1), [&](uint64_t begin, uint64_t end) {
      for (uint64_t r = begin; r < end; ++r) normalize_row(x + r * n, scale, bias, y + r * n, n, spec_.epsilon);
    });
  }

  // InstanceNormalization channel by channel (the row of channel r % channels), the rows split
  // across the run's threads: wav2vec2's GroupNorm of 512 groups over 3199 samples, 12.8 ms
  // walked one element at a time by normalize(), is such rows.
  void normalize_channels(const T* x, const T* scale, const T* bias, T* y, uint64_t n, uint64_t rows,
                          uint64_t channels) const {
    parallel_chunks(rows, std::max<uint64_t>(kParallelChunkBytes / sizeof(T) / n, 1), [&](uint64_t begin, uint64_t end) {
      for (uint64_t r = begin; r < end; ++r)
        normalize_channel(x + r * n, scale[r % channels], bias[r % channels], y + r * n, n, spec_.epsilon);
    });
  }

  // The mean and the (population) variance of each group.
  void moments(const T* x, const Plans& p, double* mean, double* var) const {
    std::fill(mean, mean + p.groups, 0.0);
    std::fill(var, var + p.groups, 0.0);
    for_each_broadcast<2>(p.by_group, [&](uint64_t, const std::array<int64_t, 2>& o) { mean[o[1]] += x[o[0]]; });
    const double size = static_cast<double>(p.by_group.count / p.groups);
    for (uint64_t g = 0; g < p.groups; ++g) mean[g] /= size;
    for_each_broadcast<2>(p.by_group, [&](uint64_t, const std::array<int64_t, 2>& o) {
      const double d = x[o[0]] - mean[o[1]];
      var[o[1]] += d * d;
    });
    for (uint64_t g = 0; g < p.groups; ++g) var[g] /= size;
  }

  // BatchNormalization's running_mean and running_var outputs (the groups are the channels),
  // from its input_mean and input_var inputs.
  void running_stats(const KernelArgs& a, const double* mean, const double* var, uint64_t channels) const {
    for (size_t i = 3; i < 5; ++i)
      if (a.inputs[i].rank != 1 || static_cast<uint64_t>(a.inputs[i].dims[0]) != channels)
        fail_at(where_, "input_mean and input_var must have shape [" + std::to_string(channels) + "] (the channels)");
    const double m = spec_.momentum;
    for (size_t i = 1; i < 3; ++i) {
      if (!has_stats_[i - 1]) continue;
      const T* in = a.inputs[i + 2].as<const T>();
      const double* batch = i == 1 ? mean : var;
      store(a.outputs[i], channels, [&](uint64_t c) { return in[c] * m + batch[c] * (1 - m); });
    }
  }

  void normalize(const T* x, const TensorView* scale, const TensorView* bias, T* y, const Plans& p, const double* mean,
                 const double* inv) const {
    static const T one = 1;
    const T* s = scale ? scale->as<const T>() : &one;
    for_each_broadcast<3>(p.with_scale, [&](uint64_t i, const std::array<int64_t, 3>& o) {
      y[i] = static_cast<T>((x[o[0]] - mean[o[1]]) * inv[o[1]] * s[o[2]]);
    });
    if (!bias) return;
    const T* b = bias->as<const T>();
    for_each_broadcast<2>(p.with_bias, [&](uint64_t i, const std::array<int64_t, 2>& o) { y[i] += b[o[1]]; });
  }

  // out[i] = v(i) for i < n, out being float32 or float64.
  template <typename F>
  static void store(TensorView& out, uint64_t n, F v) {
    for (uint64_t i = 0; i < n; ++i)
      if (out.dtype == DType::Float64) out.as<double>()[i] = v(i);
      else out.as<float>()[i] = static_cast<float>(v(i));
  }

  std::string where_;
  NormSpec spec_;
  uint64_t max_groups_;
  bool dynamic_, has_scale_, has_bias_;
  std::array<bool, 2> has_stats_;  // outputs 1 and 2: Mean and InvStdDev, or running_mean and running_var
  Plans plans_;
  uint64_t row_ = 0;  // contiguous_rows(), for a static input (a dynamic one finds its rows each run)
};

// Checks the types and makes the kernel.
Factory make_norm(const Node& n, const KernelEnv& env, NormSpec spec, size_t min_in, size_t max_in) {
  const std::string where = check_arity(n, env, min_in, max_in);
  const DType t = n.inputs[0]->type.dtype;
  if (t != DType::Float32 && t != DType::Float64)
    unsupported_at(where, "inputs of type " + dtype_name(t) + " are not supported (float32 and float64 only)");
  for (size_t i = 1; i < n.inputs.size(); ++i)
    if (n.inputs[i] && n.inputs[i]->type.dtype != t)
      unsupported_at(where, "input " + std::to_string(i) + " is " + dtype_name(n.inputs[i]->type.dtype) + ", not " + dtype_name(t) +
                                " like the input (mixed types are not supported)");
  if (n.outputs[0]->type.dtype != t) fail_at(where, "the output is not " + dtype_name(t));
  for (size_t i = 1; i < n.outputs.size(); ++i) {
    const Value* o = n.outputs[i];
    if (!o) continue;
    if (i > 2) fail_at(where, "has more than 3 outputs");
    if (o->type.dtype != DType::Float32 && o->type.dtype != DType::Float64)
      unsupported_at(where, "output " + std::to_string(i) + " of type " + dtype_name(o->type.dtype) + " is not supported");
  }
  const uint64_t max_elements = element_bound(n.outputs[0], where);  // y has x's shape
  Factory k;
  dispatch(t, FloatTypes{}, [&](auto tag) { k = std::make_unique<NormKernel<decltype(tag)>>(where, n, spec, max_elements); });
  return k;
}

}  // namespace

Factory make_layer_norm(const Node& n, const KernelEnv& env) {
  NormSpec s;
  s.kind = Kind::Layer;
  s.axis = n.attr_int("axis", -1);
  s.epsilon = n.attr_float("epsilon", 1e-5f);
  return make_norm(n, env, s, 2, 3);
}

Factory make_instance_norm(const Node& n, const KernelEnv& env) {
  NormSpec s;
  s.kind = Kind::Instance;
  s.epsilon = n.attr_float("epsilon", 1e-5f);
  if (n.outputs.size() > 1) fail_at(rt::where(n, env), "has more than one output");
  return make_norm(n, env, s, 3, 3);
}

Factory make_batch_norm_training(const Node& n, const KernelEnv& env) {
  NormSpec s;
  s.kind = Kind::Batch;
  s.epsilon = n.attr_float("epsilon", 1e-5f);
  s.momentum = n.attr_float("momentum", 0.9f);
  return make_norm(n, env, s, 5, 5);
}

bool norm_accepts(const Node& n) {
  if (n.inputs.empty() || !n.inputs[0]) return false;
  const DType t = n.inputs[0]->type.dtype;
  for (const Value* v : n.inputs)
    if (v && v->type.dtype != t) return false;
  const bool stats = n.outputs.size() > 1 &&
                     std::any_of(n.outputs.begin() + 1, n.outputs.end(), [](const Value* v) { return v != nullptr; });
  const bool stats_ok = !stats || n.attr_int("stash_type", 1) == static_cast<int64_t>(DType::Float32);
  return (t == DType::Float32 || t == DType::Float64) && stats_ok;
}

Factory make_mean_variance_norm(const Node& n, const KernelEnv& env) {
  NormSpec s;
  s.kind = Kind::MeanVariance;
  const std::string where = rt::where(n, env);
  s.axes = ints_of_list(n.attr("axes") ? n.attr_ints("axes") : std::vector<int64_t>{0, 2, 3}, where, "axes");
  s.epsilon = 1e-9;  // the constant of MVN's function body
  if (n.outputs.size() > 1) fail_at(where, "has more than one output");
  return make_norm(n, env, s, 1, 1);
}

}  // namespace memplan::rt::norm
