// Binary and variadic elementwise ops with numpy broadcasting: Add, Sub, Mul, Div, Max, Min, Sum,
// Mean, Pow, PRelu, BitShift. Float32 tensors of fixed shapes run as a chain of oneDNN binary
// primitives (src1 broadcast only: commutative ops put a full-shaped input first); everything else
// runs as a plain broadcasting loop per element type: float64, float16 and bfloat16 (computed as
// float), and integers, whose arithmetic wraps.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <type_traits>

#include "ir/fused_dequantize.h"
#include "plan/plan.h"
#include "runtime/kernels/common/element_types.h"
#include "runtime/kernels/common/elementwise_common.h"
#include "runtime/kernels/elementwise/binary_layout_loop.h"
#include "runtime/kernels/elementwise/factories.h"
#include "runtime/kernels/quantized/factories.h"

namespace memplan::rt::elt {
namespace {

enum class Bin { Add, Sub, Mul, Div, Max, Min, Pow, PRelu, ShiftLeft, ShiftRight };

struct BinSpec {
  Bin op;
  bool variadic = false;  // Sum, Mean, Max, Min take 1..N inputs
  bool mean = false;
};

bool commutative(Bin op) { return op == Bin::Add || op == Bin::Mul || op == Bin::Max || op == Bin::Min; }

// out = f(a, b) over `so`, a and b broadcast to it. `a` may be `out` (same shape): each element is
// read before it is written.
template <typename A, typename B, typename O, typename F>
void apply2(const A* a, const Shape& sa, const B* b, const Shape& sb, O* out, const Shape& so, F f) {
  const auto st_a = broadcast_strides(sa, so), st_b = broadcast_strides(sb, so);
  for_each_run(so, st_a, st_b, [&](int64_t o, int64_t oa, int64_t ob, int64_t n, int64_t da, int64_t db) {
    O* dst = out + o;
    const A* pa = a + oa;
    const B* pb = b + ob;
    if (da == 1 && db == 1)
      for (int64_t i = 0; i < n; ++i) dst[i] = f(pa[i], pb[i]);
    else if (da == 1)
      for (int64_t i = 0; i < n; ++i) dst[i] = f(pa[i], *pb);
    else if (db == 1)
      for (int64_t i = 0; i < n; ++i) dst[i] = f(*pa, pb[i]);
    else
      for (int64_t i = 0; i < n; ++i) dst[i] = f(*pa, *pb);
  });
}

// Integer arithmetic wraps around (two's complement) instead of overflowing into undefined
// behaviour: it is done in an unsigned type at least as wide as unsigned int (narrower unsigned
// types would promote to int, whose products can overflow), then truncated to T.
template <typename T>
using Unsigned = std::common_type_t<std::make_unsigned_t<T>, unsigned>;

// out = a op b for one element type T (not Pow: pow_loop).
template <typename T>
void combine(Bin op, const T* a, const Shape& sa, const T* b, const Shape& sb, T* out, const Shape& so,
             const std::string& what) {
  if constexpr (is_float_like_v<T>) {
    using C = compute_t<T>;
    switch (op) {
      case Bin::Add: return apply2(a, sa, b, sb, out, so, [](T x, T y) { return T(C(x) + C(y)); });
      case Bin::Sub: return apply2(a, sa, b, sb, out, so, [](T x, T y) { return T(C(x) - C(y)); });
      case Bin::Mul: return apply2(a, sa, b, sb, out, so, [](T x, T y) { return T(C(x) * C(y)); });
      case Bin::Div: return apply2(a, sa, b, sb, out, so, [](T x, T y) { return T(C(x) / C(y)); });
      case Bin::PRelu: return apply2(a, sa, b, sb, out, so, [](T x, T s) { return C(x) < 0 ? T(C(x) * C(s)) : x; });
      default: break;
    }
  } else {
    using U = Unsigned<T>;
    switch (op) {
      case Bin::Add: return apply2(a, sa, b, sb, out, so, [](T x, T y) { return T(U(x) + U(y)); });
      case Bin::Sub: return apply2(a, sa, b, sb, out, so, [](T x, T y) { return T(U(x) - U(y)); });
      case Bin::Mul: return apply2(a, sa, b, sb, out, so, [](T x, T y) { return T(U(x) * U(y)); });
      case Bin::PRelu:
        if constexpr (std::is_signed_v<T>)
          return apply2(a, sa, b, sb, out, so, [](T x, T s) { return x < 0 ? T(U(x) * U(s)) : x; });
        else
          return apply2(a, sa, b, sb, out, so, [](T x, T) { return x; });  // never negative
      case Bin::Div:
        return apply2(a, sa, b, sb, out, so, [&what](T x, T y) {
          if (y == 0) fail(what + ": integer division by zero");
          if constexpr (std::is_signed_v<T>)
            if (y == T(-1)) return T(U(0) - U(x));  // the minimum divided by -1 wraps
          return T(x / y);  // truncates toward zero, like C
        });
      // Unsigned only. A shift by the width or more gives 0 (in C++ it would be undefined).
      case Bin::ShiftLeft:
        if constexpr (std::is_unsigned_v<T>)
          return apply2(a, sa, b, sb, out, so, [](T x, T y) { return y >= T(sizeof(T) * 8) ? T(0) : T(x << y); });
        break;
      case Bin::ShiftRight:
        if constexpr (std::is_unsigned_v<T>)
          return apply2(a, sa, b, sb, out, so, [](T x, T y) { return y >= T(sizeof(T) * 8) ? T(0) : T(x >> y); });
        break;
      default: break;
    }
  }
  switch (op) {
    case Bin::Max: return apply2(a, sa, b, sb, out, so, [](T x, T y) { return std::max(x, y); });
    case Bin::Min: return apply2(a, sa, b, sb, out, so, [](T x, T y) { return std::min(x, y); });
    default: fail_internal(what + ": unexpected op for " + dtype_name(dtype_for<T>()));
  }
}

// base^exponent for an integer base and an integer exponent: exact, wrapping like the other
// integer ops; a negative exponent truncates 1 / base^-e toward zero.
template <typename T, typename E>
T int_pow(T base, E e, const std::string& what) {
  if constexpr (std::is_signed_v<E>) {
    if (e < 0) {
      if (base == 0) fail(what + ": integer 0 raised to the negative power " + std::to_string(e));
      if (base == 1) return 1;
      if constexpr (std::is_signed_v<T>)
        if (base == T(-1)) return (e % 2) ? T(-1) : T(1);
      return 0;
    }
  }
  using U = Unsigned<T>;
  U result = 1, b = static_cast<U>(base);
  for (auto n = static_cast<std::make_unsigned_t<E>>(e); n; n >>= 1) {
    if (n & 1) result = static_cast<U>(result * b);
    b = static_cast<U>(b * b);
  }
  return static_cast<T>(result);
}

// Pow with base type T and exponent type E (ONNX lets them differ; the output has T). Floats
// compute in double and round once; an integer base with a float exponent converts the result
// like Cast does (defined for every value).
template <typename T, typename E>
void pow_loop(const T* a, const Shape& sa, const E* b, const Shape& sb, T* out, const Shape& so, const std::string& what) {
  if constexpr (is_float_like_v<T>)
    apply2(a, sa, b, sb, out, so, [](T x, E y) { return T(std::pow(double(x), double(y))); });
  else if constexpr (is_float_like_v<E>)
    apply2(a, sa, b, sb, out, so, [](T x, E y) { return float_to_int<T>(std::pow(double(x), double(y))); });
  else
    apply2(a, sa, b, sb, out, so, [&what](T x, E y) { return int_pow(x, y, what); });
}

// The element types each op takes (by ONNX's type constraints).
using PowBaseTypes = Types<float, double, Float16, BFloat16, int64_t, int32_t>;
using PReluTypes = Types<float, double, Float16, BFloat16, int64_t, int32_t, uint64_t, uint32_t>;
using ShiftTypes = Types<uint8_t, uint16_t, uint32_t, uint64_t>;

bool takes(const BinSpec& spec, DType t) {
  if (spec.mean) return one_of(t, AllFloatTypes{});
  switch (spec.op) {
    case Bin::Pow: return one_of(t, PowBaseTypes{});
    case Bin::PRelu: return one_of(t, PReluTypes{});
    case Bin::ShiftLeft: case Bin::ShiftRight: return one_of(t, ShiftTypes{});
    default: return one_of(t, AllNumericTypes{});
  }
}

dnnl::algorithm dnnl_alg(Bin op) {
  switch (op) {
    case Bin::Add: return dnnl::algorithm::binary_add;
    case Bin::Sub: return dnnl::algorithm::binary_sub;
    case Bin::Mul: return dnnl::algorithm::binary_mul;
    case Bin::Div: return dnnl::algorithm::binary_div;
    case Bin::Max: return dnnl::algorithm::binary_max;
    case Bin::Min: return dnnl::algorithm::binary_min;
    default: return dnnl::algorithm::undef;
  }
}

// A 4-D float32 tensor in the layout `block` names: channel-blocked (nChw8c / nChw16c) or
// channels-last (Value::kChannelsLast, nhwc).
dnnl::memory::desc blocked_md(const Shape& s, int block) {
  using tag = dnnl::memory::format_tag;
  return dnnl::memory::desc(dnnl::memory::dims(s.dims.begin(), s.dims.begin() + 4), dnnl::memory::data_type::f32,
                            block == Value::kChannelsLast ? tag::nhwc : block == 16 ? tag::nChw16c : tag::nChw8c);
}

// The shapes oneDNN's binary is given for a plain output `out` and an operand `in` broadcast to it
// (same rank): adjacent axes where `in` is full, or broadcast, merge into one, as the bytes allow,
// and the axes of `in` that are full land on axis 1, the axis oneDNN's jit kernels broadcast a
// per-channel operand along. An image normalization's [3, 320, 320] - [3, 1, 1] becomes
// [1, 3, 102400] - [1, 3, 1], which oneDNN runs vectorized; as given, only its reference kernel
// takes it (85 ns an element). Unchanged where `in` is full in two separate runs of axes.
std::pair<Shape, Shape> broadcast_canonical(const Shape& out, const Shape& in) {
  Shape o, i;
  int runs_full = 0;
  for (int d = 0; d < out.rank; ++d) {
    if (out.dims[d] == 1) continue;  // neither full nor broadcast: joins its neighbours
    const bool full = in.dims[d] != 1;
    if (o.rank > 0 && (i.dims[o.rank - 1] != 1) == full) {
      o.dims[o.rank - 1] *= out.dims[d];
      i.dims[i.rank - 1] *= in.dims[d];
      continue;
    }
    if (full) ++runs_full;
    o.dims[o.rank] = out.dims[d];
    i.dims[i.rank] = in.dims[d];
    ++o.rank;
    ++i.rank;
  }
  if (runs_full > 1) return {out, in};
  if (o.rank == 0) o.dims[o.rank++] = 1, i.dims[i.rank++] = 1;
  // The full run (if any) on axis 1: a leading broadcast axis or a leading 1.
  if (i.dims[0] != 1 || o.dims[0] == 1) {
    for (Shape* s : {&o, &i}) {
      std::copy_backward(s->dims.begin(), s->dims.begin() + s->rank, s->dims.begin() + s->rank + 1);
      s->dims[0] = 1;
      ++s->rank;
    }
  }
  return {o, i};
}

// Outputs up to this size take memplan's layout loop where it applies, not oneDNN's primitive.
constexpr uint64_t kSmallBinaryBytes = 16 * 1024;

class BinaryKernel final : public Kernel {
 public:
  BinaryKernel(const Node& n, const KernelEnv& env, BinSpec spec)
      : spec_(spec), where_(where(n, env)), dtype_(n.inputs[0]->type.dtype), exp_dtype_(dtype_),
        block_(n.outputs[0] ? n.outputs[0]->channel_block : 0) {
    if (spec.op == Bin::Pow) exp_dtype_ = n.inputs[1]->type.dtype;
    if (all_fixed(n)) {
      for (const Value* v : n.inputs) compiled_.push_back(static_shape(v));
      out_shape_ = static_shape(n.outputs[0]);
    }
    const bool dnnl_op = dnnl_alg(spec.op) != dnnl::algorithm::undef || spec.op == Bin::PRelu;
    if (dtype_ == DType::Float32 && dnnl_op && env.dnnl && all_fixed(n)) build_dnnl(n, *env.dnnl);
    // oneDNN's reference kernel costs milliseconds where a vectorized pass takes microseconds, and
    // the broadcasting loops take a plain output in a fraction of its time (Swin's shifted-window
    // mask, [1, 64, 3, 49, 49] + [1, 64, 1, 49, 49]: 45 ms on ref:any).
    const bool reference = std::any_of(steps_.begin(), steps_.end(),
                                       [](const Step& s) { return is_reference_implementation(s.prim.implementation()); });
    // A small tensor (an LSTM cell's gates, [1, 512]) is a fraction of a microsecond's pass, where
    // calling a oneDNN primitive costs about two (an RNN-T predictor's 150 gate Adds and Muls).
    const bool small = all_fixed(n) && out_shape_.count() * sizeof(float) <= kSmallBinaryBytes;
    if (dtype_ == DType::Float32 && all_fixed(n) && (steps_.empty() || reference || small)) {
      layout_loop_ = make_layout_loop();
      if (layout_loop_ || (reference && !block_)) steps_.clear();
    }
    // The broadcasting loops index plain tensors; a blocked one (assign_layouts) needs oneDNN or
    // the layout loop.
    if (block_ && steps_.empty() && !layout_loop_)
      fail_internal(where_ + ": a channel-blocked output needs oneDNN's binary primitive or the layout loop");
  }

  void run(const KernelArgs& args) override {
    const bool compiled_shapes = shapes_match(args);
    if (block_ && !compiled_shapes) fail(where_ + ": the run-time shapes differ from the compile-time shapes");
    if (!steps_.empty() && compiled_shapes) {
      for (size_t i = 0; i < steps_.size(); ++i) {
        const Step& s = steps_[i];
        DnnlStep::State& st = step_state(args, i, where_);
        s.prim.bind(st, s.src0, s.in0 < 0 ? args.outputs[0].data : args.inputs[s.in0].data);
        s.prim.bind(st, s.src1, args.inputs[s.in1].data);
        s.prim.bind(st, s.dst, args.outputs[0].data);
        s.prim.execute(st, args.scratchpad, args.stream);
      }
      return;
    }
    if (layout_loop_ && compiled_shapes) {
      layout_loop_->run(args.inputs[static_cast<size_t>(loop_full_)].as<float>(),
                        args.inputs[static_cast<size_t>(1 - loop_full_)].as<float>(), args.outputs[0].as<float>());
      return;
    }
    run_loops(args);
  }

  std::string implementation() const override {
    if (layout_loop_) return "memplan layout loop";
    if (steps_.empty()) return "memplan";
    std::string out;
    for (const Step& s : steps_) out += (out.empty() ? "" : ", ") + s.prim.implementation();
    return out;
  }

  // oneDNN's binary runs in place over its first operand (src0 = dst), the full-shape input; PRelu
  // is not offered.
  bool may_overwrite_input(size_t input) const override {
    if (layout_loop_)  // reads each element of the full operands before it writes the same one
      return static_cast<int>(input) == loop_full_ || (layout_loop_->operand == Operand::Full && input < 2);
    return !steps_.empty() && spec_.op != Bin::PRelu && steps_.front().in0 == static_cast<int>(input);
  }

  std::unique_ptr<KernelState> make_state() const override {
    return make_step_states(steps_.begin(), steps_.end(), [](const Step& s) -> const DnnlStep& { return s.prim; });
  }

  uint64_t scratchpad_bytes() const override {
    uint64_t b = 0;
    for (const Step& s : steps_) b = std::max(b, s.prim.scratchpad_bytes());
    return b;
  }

 private:
  struct Step {
    DnnlStep prim;
    int in0 = -1, in1 = -1;  // input indices; in0 = -1 reads the output (accumulating steps)
    size_t src0 = 0, src1 = 0, dst = 0;
  };

  void build_dnnl(const Node& n, DnnlContext& ctx) {
    const Shape out = static_shape(n.outputs[0]);
    if (out.count() == 0) return;
    const size_t count = compiled_.size();
    // The first operand must have the output's shape (oneDNN broadcasts src1 only).
    std::vector<int> order;
    for (size_t i = 0; i < count; ++i) order.push_back(static_cast<int>(i));
    if (!(pad_rank(compiled_[0], out.rank) == out)) {
      if (!commutative(spec_.op)) return;  // Sub, Div, PRelu: the loops broadcast their first input
      auto full = std::find_if(order.begin(), order.end(),
                               [&](int i) { return pad_rank(compiled_[static_cast<size_t>(i)], out.rank) == out; });
      if (full == order.end()) return;
      std::rotate(order.begin(), full, full + 1);
    }
    const auto f32 = dnnl::memory::data_type::f32;
    const auto out_md = block_ ? blocked_md(out, block_) : plain_md(out, f32);
    // With a blocked output, a full-shape operand is blocked too; a per-channel [N, C, 1, 1] one
    // has the same bytes either way, and oneDNN's fast kernels want it tagged alike (blocked
    // against blocked; plain against channels-last).
    auto operand_md = [&](const Shape& s) {
      if (!block_) return plain_md(s, f32);
      if (s == out) return out_md;
      const bool per_channel = s.rank == 4 && s.dims[1] == out.dims[1] && s.dims[2] == 1 && s.dims[3] == 1;
      return per_channel && block_ > 0 ? blocked_md(s, block_) : plain_md(s, f32);
    };
    try {
      if (spec_.op == Bin::PRelu) {
        const auto w_md = operand_md(pad_rank(compiled_[1], out.rank));
        dnnl::prelu_forward::desc d(dnnl::prop_kind::forward_inference, out_md, w_md);
        dnnl::prelu_forward::primitive_desc pd(d, user_scratchpad_attr(), ctx.engine);
        Step s{DnnlStep(ctx, pd, StepThreads::Streamed), 0, 1, 0, 0, 0};
        s.src0 = s.prim.arg(DNNL_ARG_SRC, out_md);
        s.src1 = s.prim.arg(DNNL_ARG_WEIGHTS, w_md);
        s.dst = s.prim.arg(DNNL_ARG_DST, out_md);
        steps_.push_back(std::move(s));
        return;
      }
      for (size_t k = 1; k < count; ++k) {
        const Shape in = pad_rank(compiled_[static_cast<size_t>(order[k])], out.rank);
        dnnl::memory::desc dst_md = out_md, src1_md = operand_md(in);
        if (!block_) {
          const auto [o, i] = broadcast_canonical(out, in);
          dst_md = plain_md(o, f32);
          src1_md = plain_md(i, f32);
        }
        dnnl::binary::desc d(dnnl_alg(spec_.op), dst_md, src1_md, dst_md);
        dnnl::primitive_attr attr = user_scratchpad_attr();
        if (spec_.mean && k + 1 == count) {
          dnnl::post_ops po;
          po.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, 1.f / static_cast<float>(count), 0.f);
          attr.set_post_ops(po);
        }
        dnnl::binary::primitive_desc pd(d, attr, ctx.engine);
        Step s{DnnlStep(ctx, pd, StepThreads::Streamed), k == 1 ? order[0] : -1, order[k], 0, 0, 0};
        s.src0 = s.prim.arg(DNNL_ARG_SRC_0, dst_md);
        s.src1 = s.prim.arg(DNNL_ARG_SRC_1, src1_md);
        s.dst = s.prim.arg(DNNL_ARG_DST, dst_md);
        steps_.push_back(std::move(s));
      }
    } catch (const dnnl::error&) {
      steps_.clear();  // the loops do the job
    }
  }

  // The layout loop for two float32 operands of fixed shapes, one of them the output's shape and
  // the other the same shape, a scalar or one value per channel (of a 4-D output; [1, C, 1, 1]
  // after rank padding); nullopt for any other case.
  std::optional<LayoutLoop> make_layout_loop() {
    std::optional<FlatBinOp> op;
    switch (spec_.op) {
      case Bin::Add: op = FlatBinOp::Add; break;
      case Bin::Sub: op = FlatBinOp::Sub; break;
      case Bin::Mul: op = FlatBinOp::Mul; break;
      case Bin::Div: op = FlatBinOp::Div; break;
      case Bin::Max: op = FlatBinOp::Max; break;
      case Bin::Min: op = FlatBinOp::Min; break;
      case Bin::PRelu: op = FlatBinOp::PRelu; break;
      default: break;
    }
    if (!op || spec_.mean || compiled_.size() != 2) return std::nullopt;
    const Shape& out = out_shape_;
    for (int full = 0; full < (spec_.op == Bin::PRelu ? 1 : 2); ++full) {  // PRelu's slope is never the full operand
      const Shape a = pad_rank(compiled_[static_cast<size_t>(full)], out.rank);
      const Shape b = pad_rank(compiled_[static_cast<size_t>(1 - full)], out.rank);
      if (!(a == out)) continue;
      LayoutLoop l;
      l.op = *op;
      l.swapped = full == 1;
      l.block = block_ > 0 ? block_ : 0;
      l.channels_last = block_ == Value::kChannelsLast;
      l.hw = static_cast<int64_t>(out.count());
      if (b == out) {
        l.operand = Operand::Full;
      } else if (b.count() == 1) {
        l.operand = Operand::Scalar;
      } else if (out.rank == 4 && b.dims[0] == 1 && b.dims[1] == out.dims[1] && b.dims[2] == 1 && b.dims[3] == 1) {
        l.operand = Operand::PerChannel;
        l.n = out.dims[0];
        l.c = out.dims[1];
        l.hw = out.dims[2] * out.dims[3];
      } else {
        continue;
      }
      loop_full_ = full;
      return l;
    }
    return std::nullopt;
  }

  bool shapes_match(const KernelArgs& args) const {
    for (size_t i = 0; i < compiled_.size(); ++i)
      if (!(Shape::of(args.inputs[i]) == compiled_[i])) return false;
    return true;
  }

  void run_loops(const KernelArgs& args) const {
    TensorView& y = args.outputs[0];
    Shape out = Shape::of(args.inputs[0]);
    for (size_t i = 1; i < args.inputs.size(); ++i) {
      Shape next;
      if (!broadcast(out, Shape::of(args.inputs[i]), next))
        fail(where_ + ": input shapes " + out.str() + " and " + Shape::of(args.inputs[i]).str() +
             " do not broadcast");
      out = next;
    }
    if (spec_.op == Bin::PRelu && !(out == Shape::of(args.inputs[0])))
      fail(where_ + ": slope of shape " + Shape::of(args.inputs[1]).str() + " does not broadcast to the input's " +
           Shape::of(args.inputs[0]).str());
    set_output_shape(y, out, where_);
    if (args.inputs.size() == 1) {
      if (y.data != args.inputs[0].data) std::memmove(y.data, args.inputs[0].data, y.byte_size());
      return;
    }
    if (spec_.op == Bin::Pow) return pow_any(args, out);
    if (!dispatch(dtype_, AllNumericTypes{}, [&](auto tag) { fold<decltype(tag)>(args, out); }))
      fail_internal(where_ + ": unexpected dtype");
  }

  // out = in0 op in1 op in2 ... (broadcasting commutes with elementwise ops, so each step may
  // broadcast both operands to the final shape). Mean then scales by 1 / count.
  template <typename T>
  void fold(const KernelArgs& args, const Shape& out) const {
    T* y = args.outputs[0].as<T>();
    combine<T>(spec_.op, args.inputs[0].as<T>(), Shape::of(args.inputs[0]), args.inputs[1].as<T>(),
               Shape::of(args.inputs[1]), y, out, where_);
    for (size_t i = 2; i < args.inputs.size(); ++i)
      combine<T>(spec_.op, y, out, args.inputs[i].as<T>(), Shape::of(args.inputs[i]), y, out, where_);
    if constexpr (is_float_like_v<T>) {
      if (!spec_.mean) return;
      using C = compute_t<T>;
      const C scale = C(1) / static_cast<C>(args.inputs.size());
      for (uint64_t i = 0, n = out.count(); i < n; ++i) y[i] = T(C(y[i]) * scale);
    }
  }

  void pow_any(const KernelArgs& args, const Shape& out) const {
    const TensorView &x = args.inputs[0], &e = args.inputs[1];
    dispatch(dtype_, PowBaseTypes{}, [&](auto base) {
      using T = decltype(base);
      dispatch(exp_dtype_, AllNumericTypes{}, [&](auto exponent) {
        using E = decltype(exponent);
        pow_loop<T, E>(x.as<T>(), Shape::of(x), e.as<E>(), Shape::of(e), args.outputs[0].as<T>(), out, where_);
      });
    });
  }

  BinSpec spec_;
  std::string where_;
  DType dtype_, exp_dtype_;
  int block_ = 0;  // the output's Value::channel_block
  std::vector<Shape> compiled_;  // the inputs' shapes, where all_fixed()
  Shape out_shape_;
  std::vector<Step> steps_;
  std::optional<LayoutLoop> layout_loop_;
  int loop_full_ = 0;  // the input the layout loop reads as its full operand
};

std::unique_ptr<Kernel> make_binary(const Node& n, const KernelEnv& env, BinSpec spec) {
  const std::string at = check_arity(n, env, spec.variadic ? 1 : 2, spec.variadic ? SIZE_MAX : 2);
  for (const Value* v : n.inputs)  // a variadic op's inputs are all required
    if (!v) fail(at + ": an input is missing");
  const DType dt = n.inputs[0]->type.dtype;
  if (!takes(spec, dt)) fail_unsupported(at + ": inputs of type " + dtype_name(dt) + " are not supported");
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    const DType di = n.inputs[i]->type.dtype;
    const bool pow_exp_ok = spec.op == Bin::Pow && one_of(di, AllNumericTypes{});  // any numeric exponent
    if (di != dt && !pow_exp_ok)
      fail(at + ": input '" + n.inputs[i]->name + "' is " + dtype_name(di) + ", input '" + n.inputs[0]->name +
           "' is " + dtype_name(dt));
  }
  if (n.outputs[0]->type.dtype != dt)
    fail(at + ": the output is " + dtype_name(n.outputs[0]->type.dtype) + ", the inputs " + dtype_name(dt));
  if (spec.op == Bin::Pow && one_of(dt, AllFloatTypes{})) {
    // A constant scalar exponent that float holds exactly: the unary kernel (oneDNN for float32).
    const Value* e = n.inputs[1];
    if (e->constant && e->constant->element_count() == 1 && e->type.dims.size() <= n.inputs[0]->type.dims.size() &&
        n.inputs[0]->type.has_rank) {
      const double p = e->constant->float_at(0);
      if (static_cast<double>(static_cast<float>(p)) == p) return make_unary_pow(n, env, static_cast<float>(p));
    }
  }
  return std::make_unique<BinaryKernel>(n, env, spec);
}

template <Bin op, bool variadic = false, bool mean = false>
std::unique_ptr<Kernel> factory(const Node& n, const KernelEnv& env) {
  if (op == Bin::Add && n.attr_int(kQuantizedAddAttr, 0) != 0) return quant::make_quantized_add(n, env);
  return make_binary(n, env, BinSpec{op, variadic, mean});
}

std::unique_ptr<Kernel> bitshift(const Node& n, const KernelEnv& env) {
  const std::string direction = n.attr_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    fail(where(n, env) + ": direction must be \"LEFT\" or \"RIGHT\", not \"" + direction + "\"");
  return make_binary(n, env, BinSpec{direction == "LEFT" ? Bin::ShiftLeft : Bin::ShiftRight});
}

}  // namespace

void add_binary_ops(KernelRegistry& r) {
  r.add("Add", factory<Bin::Add>);
  r.add("Sub", factory<Bin::Sub>);
  r.add("Mul", factory<Bin::Mul>);
  r.add("Div", factory<Bin::Div>);
  r.add("Pow", factory<Bin::Pow>);
  r.add("PRelu", factory<Bin::PRelu>);
  r.add("Max", factory<Bin::Max, true>);
  r.add("Min", factory<Bin::Min, true>);
  r.add("Sum", factory<Bin::Add, true>);
  r.add("Mean", factory<Bin::Add, true, true>);
  r.add("BitShift", bitshift);
}

}  // namespace memplan::rt::elt
