// Reduce*: oneDNN reduction for float32 tensors of a fixed shape, a plain accumulating loop
// otherwise (and always for ReduceLogSum and ReduceLogSumExp, for float64, and for int32/int64 Sum,
// Mean, Max, Min, Prod).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <type_traits>

#include "runtime/kernels/common/elementwise_common.h"
#include "runtime/kernels/common/line_ops.h"
#include "runtime/kernels/reduce/factories.h"

namespace memplan::rt::elt {
namespace {

// Integer sums and products wrap around (two's complement) instead of overflowing.
template <typename T, bool = std::is_integral_v<T>>
struct Wrapping {
  using type = T;
};
template <typename T>
struct Wrapping<T, true> {
  using type = std::make_unsigned_t<T>;
};

enum class Red { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

std::optional<std::pair<dnnl::algorithm, float>> dnnl_alg(Red op) {
  using a = dnnl::algorithm;
  switch (op) {
    case Red::Sum: return std::pair{a::reduction_sum, 0.f};
    case Red::Mean: return std::pair{a::reduction_mean, 0.f};
    case Red::Max: return std::pair{a::reduction_max, 0.f};
    case Red::Min: return std::pair{a::reduction_min, 0.f};
    case Red::Prod: return std::pair{a::reduction_mul, 0.f};
    case Red::L1: return std::pair{a::reduction_norm_lp_sum, 1.f};
    case Red::L2: return std::pair{a::reduction_norm_lp_sum, 2.f};
    case Red::SumSquare: return std::pair{a::reduction_norm_lp_power_p_sum, 2.f};
    case Red::LogSum:
    case Red::LogSumExp: return std::nullopt;
  }
  return std::nullopt;
}

class ReduceKernel final : public Kernel {
 public:
  // `runtime_axes`: the axes are input 1, read at each run (then the output shape varies too).
  ReduceKernel(const Node& n, const KernelEnv& env, Red op, std::vector<int64_t> axes, bool runtime_axes)
      : op_(op), where_(where(n, env)), dtype_(n.inputs[0]->type.dtype), axes_(std::move(axes)), runtime_axes_(runtime_axes),
        keepdims_(n.attr_int("keepdims", 1) != 0), noop_(n.attr_int("noop_with_empty_axes", 0) != 0) {
    if (op == Red::LogSumExp) scratch_ = n.outputs[0]->capacity_bytes;
    const auto alg = dnnl_alg(op);
    if (dtype_ != DType::Float32 || !alg || !env.dnnl || !all_fixed(n) || runtime_axes_) return;
    compiled_ = static_shape(n.inputs[0]);
    Shape kept;
    std::array<bool, kMaxRank> reduced{};
    if (!reduced_shape(compiled_, axes_, kept, reduced) || compiled_ == kept || compiled_.count() == 0) return;
    try {
      const auto src = plain_md(compiled_, dnnl::memory::data_type::f32);
      const auto dst = plain_md(kept, dnnl::memory::data_type::f32);
      dnnl::reduction::desc d(alg->first, src, dst, alg->second, 0.f);
      dnnl::reduction::primitive_desc pd(d, user_scratchpad_attr(), env.dnnl->engine);
      // oneDNN 2.6 reduces on jit kernels only where the reduced axes end the shape; elsewhere
      // (a middle axis: a Conformer's or an LSTM decoder's mean over time) its reference kernel,
      // an index computation per element, is slower than the loop below, which runs along the
      // tensor's contiguous runs.
      if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) return;
      step_.emplace(*env.dnnl, pd, StepThreads::Streamed);
      src_ = step_->arg(DNNL_ARG_SRC, src);
      dst_ = step_->arg(DNNL_ARG_DST, dst);
    } catch (const dnnl::error&) {
      step_.reset();
    }
  }

  void run(const KernelArgs& args) override {
    const TensorView& x = args.inputs[0];
    TensorView& y = args.outputs[0];
    const Shape in = Shape::of(x);
    std::array<int64_t, kMaxRank> runtime{};
    std::span<const int64_t> axes = axes_;
    if (runtime_axes_) axes = read_axes(args.inputs[1], in.rank, runtime);
    Shape kept;
    std::array<bool, kMaxRank> reduced{};  // a local: sessions run this kernel concurrently
    if (!reduced_shape(in, axes, kept, reduced)) {  // noop_with_empty_axes and no axes: the input unchanged
      set_output_shape(y, in, where_);
      if (y.data != x.data) std::memmove(y.data, x.data, x.byte_size());
      return;
    }
    Shape out = kept;
    if (!keepdims_) {
      out.rank = 0;
      for (int d = 0; d < in.rank; ++d)
        if (!reduced[d]) out.dims[out.rank++] = in.dims[d];
    }
    set_output_shape(y, out, where_);
    if (step_ && in == compiled_) {
      DnnlStep::State& st = step_state(args, 0, where_);
      step_->bind(st, src_, x.data);
      step_->bind(st, dst_, y.data);
      step_->execute(st, args.scratchpad, args.stream);
      return;
    }
    switch (dtype_) {
      case DType::Float32: return loop<float>(x, in, y.as<float>(), kept, args.scratchpad);
      case DType::Float64: return loop<double>(x, in, y.as<double>(), kept, args.scratchpad);
      case DType::Int64: return loop<int64_t>(x, in, y.as<int64_t>(), kept, args.scratchpad);
      case DType::Int32: return loop<int32_t>(x, in, y.as<int32_t>(), kept, args.scratchpad);
      default: fail_internal(where_ + ": unexpected dtype");
    }
  }

  uint64_t scratchpad_bytes() const override { return step_ ? step_->scratchpad_bytes() : scratch_; }
  std::string implementation() const override { return step_ ? step_->implementation() : "memplan"; }

  std::unique_ptr<KernelState> make_state() const override {
    return step_ ? make_step_states(&*step_, &*step_ + 1, [](const DnnlStep& s) -> const DnnlStep& { return s; })
                 : nullptr;
  }

 private:
  // Marks the reduced axes of `in` and gives its shape with 1 on them; false when nothing is
  // reduced because the axes are empty and noop_with_empty_axes is set.
  bool reduced_shape(const Shape& in, std::span<const int64_t> axes, Shape& kept,
                     std::array<bool, kMaxRank>& reduced) const {
    reduced.fill(axes.empty());
    if (axes.empty() && noop_) return false;
    for (int64_t a : axes) {
      if (a < -in.rank || a >= in.rank)
        fail(where_ + ": axis " + std::to_string(a) + " is out of range for an input of rank " +
             std::to_string(in.rank));
      reduced[static_cast<size_t>(a < 0 ? a + in.rank : a)] = true;
    }
    kept = in;
    for (int d = 0; d < in.rank; ++d)
      if (reduced[d]) kept.dims[d] = 1;
    return true;
  }

  // Run-time axes (int64 or int32) copied into `buf`; more than `rank` of them must repeat one.
  std::span<const int64_t> read_axes(const TensorView& t, int rank, std::array<int64_t, kMaxRank>& buf) const {
    if (t.rank > 1) fail(where_ + ": axes must be a 1-D tensor");
    const uint64_t n = t.element_count();
    if (n > static_cast<uint64_t>(rank)) fail(where_ + ": " + std::to_string(n) + " axes for an input of rank " + std::to_string(rank));
    for (uint64_t i = 0; i < n; ++i) {
      int64_t a;
      if (t.dtype == DType::Int32) {
        int32_t v;
        std::memcpy(&v, t.data + i * 4, 4);
        a = v;
      } else {
        std::memcpy(&a, t.data + i * 8, 8);
      }
      const int64_t norm = a < 0 ? a + rank : a;
      for (uint64_t j = 0; j < i; ++j)
        if ((buf[j] < 0 ? buf[j] + rank : buf[j]) == norm) fail(where_ + ": axes repeat");
      buf[i] = a;
    }
    return {buf.data(), static_cast<size_t>(n)};
  }

  template <typename T>
  void loop(const TensorView& x, const Shape& in, T* out, const Shape& kept, std::byte* scratch) const {
    const T* src = x.as<T>();
    const uint64_t n_out = kept.count();
    const uint64_t group = n_out ? in.count() / n_out : 0;
    T init = 0;
    if (op_ == Red::Max || op_ == Red::LogSumExp)
      init = std::is_floating_point_v<T> ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
    else if (op_ == Red::Min)
      init = std::is_floating_point_v<T> ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
    else if (op_ == Red::Prod)
      init = 1;
    std::fill(out, out + n_out, init);
    const auto st_in = row_major_strides(in), st_out = broadcast_strides(kept, in);
    // Where the last axis is kept, each run of the input folds into a run of the output of its
    // own length, which float32 sums, maxima and minima do vectorized (common/line_ops.h).
    std::optional<LineOp> line;
    if constexpr (std::is_same_v<T, float>) {
      if (op_ == Red::Sum || op_ == Red::Mean || op_ == Red::LogSum) line = LineOp::Add;
      if (op_ == Red::Max || op_ == Red::LogSumExp) line = LineOp::Max;
      if (op_ == Red::Min) line = LineOp::Min;
      if (op_ == Red::L1) line = LineOp::AddAbs;
      if (op_ == Red::L2 || op_ == Red::SumSquare) line = LineOp::AddSquare;
    }
    auto accumulate = [&](auto f) {
      for_each_run(in, st_in, st_out, [&](int64_t, int64_t oi, int64_t oo, int64_t n, int64_t di, int64_t dout) {
        if constexpr (std::is_same_v<T, float>) {
          if (line && di == 1 && dout == 1) return fold_line(*line, out + oo, src + oi, n);
        }
        for (int64_t i = 0; i < n; ++i) f(out[oo + i * dout], src[oi + i * di]);
      });
    };
    using U = typename Wrapping<T>::type;
    switch (op_) {
      case Red::Sum:
      case Red::Mean:
      case Red::LogSum: accumulate([](T& acc, T v) { acc = T(U(acc) + U(v)); }); break;
      case Red::Prod: accumulate([](T& acc, T v) { acc = T(U(acc) * U(v)); }); break;
      case Red::Max: accumulate([](T& acc, T v) { acc = std::max(acc, v); }); break;
      case Red::Min: accumulate([](T& acc, T v) { acc = std::min(acc, v); }); break;
      case Red::L1: accumulate([](T& acc, T v) { acc += v < 0 ? -v : v; }); break;
      case Red::L2:
      case Red::SumSquare: accumulate([](T& acc, T v) { acc += v * v; }); break;
      case Red::LogSumExp: accumulate([](T& acc, T v) { acc = std::max(acc, v); }); break;
    }
    if (op_ == Red::Mean && group > 0)
      for (uint64_t i = 0; i < n_out; ++i) out[i] = static_cast<T>(out[i] / static_cast<T>(group));
    if constexpr (std::is_floating_point_v<T>) {
      if (op_ == Red::L2)
        for (uint64_t i = 0; i < n_out; ++i) out[i] = std::sqrt(out[i]);
      if (op_ == Red::LogSum)
        for (uint64_t i = 0; i < n_out; ++i) out[i] = std::log(out[i]);
      if (op_ == Red::LogSumExp) {
        // out holds the maxima; sum exp(x - max) in the scratchpad, then out = max + log(sum).
        T* sum = reinterpret_cast<T*>(scratch);
        std::fill(sum, sum + n_out, T(0));
        for_each_run(in, st_in, st_out, [&](int64_t, int64_t oi, int64_t oo, int64_t n, int64_t di, int64_t dout) {
          for (int64_t i = 0; i < n; ++i) {
            const T m = out[oo + i * dout];
            if (std::isfinite(m)) sum[oo + i * dout] += std::exp(src[oi + i * di] - m);
          }
        });
        for (uint64_t i = 0; i < n_out; ++i)
          if (std::isfinite(out[i])) out[i] += std::log(sum[i]);
      }
    }
  }

  Red op_;
  std::string where_;
  DType dtype_;
  std::vector<int64_t> axes_;
  bool runtime_axes_;
  bool keepdims_, noop_;
  uint64_t scratch_ = 0;
  Shape compiled_;
  std::optional<DnnlStep> step_;
  size_t src_ = 0, dst_ = 0;
};

std::unique_ptr<Kernel> make_reduce(const Node& n, const KernelEnv& env, Red op) {
  const std::string at = check_arity(n, env, 1, 2);
  const DType dt = n.inputs[0]->type.dtype;
  const bool int_ok = op == Red::Sum || op == Red::Mean || op == Red::Max || op == Red::Min || op == Red::Prod;
  if (dt != DType::Float32 && dt != DType::Float64 && !((dt == DType::Int64 || dt == DType::Int32) && int_ok))
    fail_unsupported(at + ": " + dtype_name(dt) + " input is not supported (float32, float64" +
                     (int_ok ? ", int32 and int64" : "") + " only)");
  if (n.outputs[0]->type.dtype != dt)
    fail(at + ": the output is " + dtype_name(n.outputs[0]->type.dtype) + ", the input " + dtype_name(dt));
  std::vector<int64_t> axes = n.attr_ints("axes");
  bool runtime_axes = false;
  if (n.inputs.size() > 1 && n.inputs[1]) {  // ReduceSum-13 (and every Reduce* from opset 18)
    const Value* a = n.inputs[1];
    if (a->type.dtype != DType::Int64 && a->type.dtype != DType::Int32)
      fail(at + ": axes must be int64, not " + dtype_name(a->type.dtype));
    if (a->constant) axes = a->constant->to_ints();
    else runtime_axes = true;
  }
  std::vector<int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) fail(at + ": axes repeat");
  return std::make_unique<ReduceKernel>(n, env, op, std::move(axes), runtime_axes);
}

template <Red op>
std::unique_ptr<Kernel> factory(const Node& n, const KernelEnv& env) {
  return make_reduce(n, env, op);
}

}  // namespace

void add_reduce_ops(KernelRegistry& r) {
  r.add("ReduceSum", factory<Red::Sum>);
  r.add("ReduceMean", factory<Red::Mean>);
  r.add("ReduceMax", factory<Red::Max>);
  r.add("ReduceMin", factory<Red::Min>);
  r.add("ReduceProd", factory<Red::Prod>);
  r.add("ReduceL1", factory<Red::L1>);
  r.add("ReduceL2", factory<Red::L2>);
  r.add("ReduceLogSum", factory<Red::LogSum>);
  r.add("ReduceLogSumExp", factory<Red::LogSumExp>);
  r.add("ReduceSumSquare", factory<Red::SumSquare>);
}

}  // namespace memplan::rt::elt
