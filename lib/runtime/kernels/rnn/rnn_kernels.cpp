// RNN, LSTM and GRU (forward, reverse, bidirectional; layout 0 and 1 (batch first); LSTM
// peepholes) on oneDNN's vanilla_rnn_forward, lstm_forward, gru_forward and lbr_gru_forward.
// Weights are rearranged from ONNX's gate order (LSTM iofc, GRU zrh) to oneDNN's (LSTM ifco, GRU
// u r o) and from ONNX's [dirs, gates*H, K] to oneDNN's ldigo; the two ONNX biases are summed
// (lbr_gru keeps Rbh apart). Constant weights are rearranged once at load and reordered into the
// format the primitive prefers; weights computed at run time are rearranged on every run into the
// scratchpad, and the primitive is then made for the plain ldigo format.
#include <algorithm>
#include <cstring>
#include <optional>

#include "runtime/kernels/common/elementwise_common.h"
#include "runtime/kernels/rnn/factories.h"

namespace memplan::rt::elt {
namespace {

using tag = dnnl::memory::format_tag;
constexpr auto f32 = dnnl::memory::data_type::f32;

uint64_t align64(uint64_t n) { return (n + 63) / 64 * 64; }

enum class Cell { Rnn, Lstm, Gru };

struct RnnSpec {
  Cell cell = Cell::Lstm;
  bool lbr = false;  // GRU with linear_before_reset
  bool batch_first = false;  // layout 1: X [N, T, I], Y [N, T, D, H], states [N, D, H]
  bool peephole = false;     // LSTM input P
  dnnl::algorithm activation = dnnl::algorithm::eltwise_tanh;  // RNN only
  int64_t dirs = 1;
  dnnl::rnn_direction direction = dnnl::rnn_direction::unidirectional_left2right;
  int64_t T = 0, N = 0, I = 0, H = 0;
  int64_t gates() const { return cell == Cell::Lstm ? 4 : cell == Cell::Gru ? 3 : 1; }
  int64_t bias_gates() const { return lbr ? 4 : gates(); }
  // ONNX gate index of oneDNN gate g.
  int64_t onnx_gate(int64_t g) const {
    static const int64_t lstm[4] = {0, 2, 3, 1};  // oneDNN i f c o <- ONNX i o f c
    return cell == Cell::Lstm ? lstm[g] : g;
  }
};

// The weights and their shapes: ONNX input index, ONNX dims, oneDNN's packed dims.
enum class Part { Layer, Iter, Bias, Peephole };
constexpr size_t kParts = 4;

size_t input_of(Part p) {
  switch (p) {
    case Part::Layer: return 1;
    case Part::Iter: return 2;
    case Part::Bias: return 3;
    case Part::Peephole: return 7;
  }
  return 0;
}

std::vector<int64_t> onnx_dims(const RnnSpec& s, Part p) {
  const int64_t D = s.dirs, G = s.gates(), H = s.H;
  switch (p) {
    case Part::Layer: return {D, G * H, s.I};
    case Part::Iter: return {D, G * H, H};
    case Part::Bias: return {D, 2 * G * H};
    case Part::Peephole: return {D, 3 * H};
  }
  return {};
}

dnnl::memory::dims packed_dims(const RnnSpec& s, Part p) {
  const int64_t D = s.dirs, G = s.gates(), H = s.H;
  switch (p) {
    case Part::Layer: return {1, D, s.I, G, H};
    case Part::Iter: return {1, D, H, G, H};
    case Part::Bias: return {1, D, s.bias_gates(), H};
    case Part::Peephole: return {1, D, 3, H};
  }
  return {};
}

uint64_t count(const std::vector<int64_t>& dims) {
  uint64_t n = 1;
  for (int64_t d : dims) n *= static_cast<uint64_t>(d);
  return n;
}

dnnl::memory::desc plain_packed_md(const RnnSpec& s, Part p) {
  return {packed_dims(s, p), f32, p == Part::Layer || p == Part::Iter ? tag::ldigo : tag::ldgo};
}

// Rearranges ONNX's `src` (onnx_dims; null for an omitted bias: zeros) into oneDNN's plain
// packed layout at `dst`. Used at load for constants and on each run for run-time weights.
void pack(const RnnSpec& s, Part p, const float* src, float* dst) {
  const int64_t D = s.dirs, G = s.gates(), H = s.H;
  switch (p) {
    case Part::Layer:
    case Part::Iter: {
      const int64_t K = p == Part::Layer ? s.I : H;  // ONNX [D, G*H, K] -> ldigo [D, K, G, H]
      for (int64_t d = 0; d < D; ++d)
        for (int64_t g = 0; g < G; ++g)
          for (int64_t h = 0; h < H; ++h) {
            const float* row = src + ((d * G + s.onnx_gate(g)) * H + h) * K;
            for (int64_t k = 0; k < K; ++k) dst[((d * K + k) * G + g) * H + h] = row[k];
          }
      return;
    }
    case Part::Bias: {
      const int64_t GB = s.bias_gates();
      for (int64_t d = 0; d < D; ++d)
        for (int64_t g = 0; g < G; ++g)
          for (int64_t h = 0; h < H; ++h) {
            const float wb = src ? src[(d * 2 * G + s.onnx_gate(g)) * H + h] : 0.f;
            const float rb = src ? src[(d * 2 * G + G + s.onnx_gate(g)) * H + h] : 0.f;
            const bool split = s.lbr && g == 2;  // lbr_gru: Wbh in gate 2, Rbh in the extra gate 3
            dst[(d * GB + g) * H + h] = split ? wb : wb + rb;
            if (split) dst[(d * GB + 3) * H + h] = rb;
          }
      return;
    }
    case Part::Peephole: {
      // ONNX P is [D, 3H] in the order i o f; oneDNN's peephole gates are i f o.
      const int64_t map[3] = {0, 2, 1};
      for (int64_t d = 0; d < D; ++d)
        for (int64_t g = 0; g < 3; ++g)
          std::memcpy(dst + (d * 3 + g) * H, src + (d * 3 + map[g]) * H, static_cast<size_t>(H) * sizeof(float));
      return;
    }
  }
}

// [outer, a, b, inner] -> [outer, b, a, inner]: ONNX's [T, D, N, H] from oneDNN's [T, N, D*H],
// and batch-first states [N, D, H] to and from oneDNN's [D, N, H].
void swap_middle(const float* src, float* dst, int64_t outer, int64_t a, int64_t b, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < a; ++i)
      for (int64_t j = 0; j < b; ++j)
        std::memcpy(dst + ((o * b + j) * a + i) * inner, src + ((o * a + i) * b + j) * inner,
                    static_cast<size_t>(inner) * sizeof(float));
}

class RnnKernel final : public Kernel {
 public:
  RnnKernel(const Node& n, const KernelEnv& env, const RnnSpec& s) : s_(s), where_(where(n, env)), ctx_(env.dnnl) {
    // Activations: X and Y in tnc (layout 0) or ntc (layout 1, which is ONNX's [N, T, D, H] for
    // Y with the directions concatenated); states always in oneDNN's [1, D, N, H].
    const tag seq = s.batch_first ? tag::ntc : tag::tnc;
    const ActivationDescs md{{{s.T, s.N, s.I}, f32, seq}, {{1, s.dirs, s.N, s.H}, f32, tag::ldnc},
                             {{s.T, s.N, s.dirs * s.H}, f32, seq}};
    const PartDescs want = wanted_weights(n);
    PartDescs chosen = want;
    step_.emplace(*ctx_, make_primitive(n, md, want, chosen));
    reserve_scratchpad();
    bind_weights(n, chosen);
    bind_activations(md);
  }

  void run(const KernelArgs& args) override {
    const TensorView& x = args.inputs[0];
    const int64_t t_dim = s_.batch_first ? 1 : 0;
    if (x.rank != 3 || x.dims[t_dim] != s_.T || x.dims[1 - t_dim] != s_.N || x.dims[2] != s_.I)
      fail(where_ + ": input X has shape " + Shape::of(x).str() + ", the kernel was made for T " +
           std::to_string(s_.T) + ", batch " + std::to_string(s_.N) + ", input size " + std::to_string(s_.I));
    check_sequence_lens(args);
    std::byte* sp = args.scratchpad;
    DnnlStep::State& st = step_state(args, 0, where_);
    for (size_t p = 0; p < kParts; ++p) {
      if (!runtime_[p]) continue;
      const Part part = static_cast<Part>(p);
      const size_t k = input_of(part);
      float* dst = reinterpret_cast<float*>(sp + weight_off_[p]);
      const bool given = args.inputs.size() > k && args.inputs[k].data;
      if (given && args.inputs[k].element_count() != count(onnx_dims(s_, part)))
        fail(where_ + ": input " + std::to_string(k) + " has shape " + Shape::of(args.inputs[k]).str() +
             ", the kernel was made for " + std::to_string(count(onnx_dims(s_, part))) + " elements");
      pack(s_, part, given ? args.inputs[k].as<const float>() : nullptr, dst);
      step_->bind(st, weight_slot_[p], dst);
    }
    std::memset(sp + zero_off_, 0, state_bytes_);
    // Batch-first states with two directions and several rows are [N, D, H]: rearranged.
    const bool swap_states = s_.batch_first && s_.dirs > 1 && s_.N > 1;
    auto state_in = [&](size_t k, int slot) -> const void* {
      if (args.inputs.size() <= k || !args.inputs[k].data) return sp + zero_off_;
      if (!swap_states) return args.inputs[k].data;
      float* tmp = reinterpret_cast<float*>(sp + state_off_[slot]);
      swap_middle(args.inputs[k].as<const float>(), tmp, 1, s_.N, s_.dirs, s_.H);
      return tmp;
    };
    auto has_output = [&](size_t k) { return args.outputs.size() > k && args.outputs[k].data; };
    auto state_out = [&](size_t k, int slot) -> void* {
      return has_output(k) && !swap_states ? args.outputs[k].data : sp + state_off_[slot];
    };
    // Y: ONNX's layout is oneDNN's unless two directions of several rows come time first.
    const bool y_direct = has_output(0) && (s_.batch_first || s_.dirs == 1 || s_.N == 1);
    void* y = y_direct ? args.outputs[0].data : sp + y_tmp_off_;
    step_->bind(st, src_layer_, x.data);
    step_->bind(st, src_iter_, state_in(5, 0));
    step_->bind(st, dst_layer_, y);
    step_->bind(st, dst_iter_, state_out(1, 2));
    if (s_.cell == Cell::Lstm) {
      step_->bind(st, src_iter_c_, state_in(6, 1));
      step_->bind(st, dst_iter_c_, state_out(2, 3));
    }
    step_->execute(st, sp, args.stream);
    if (has_output(0) && !y_direct)  // [T, N, D, H] -> [T, D, N, H]
      swap_middle(reinterpret_cast<const float*>(sp + y_tmp_off_), args.outputs[0].as<float>(), s_.T, s_.N, s_.dirs,
                  s_.H);
    for (size_t k = 1; k <= 2; ++k)
      if (swap_states && has_output(k))  // [D, N, H] -> [N, D, H]
        swap_middle(reinterpret_cast<const float*>(sp + state_off_[k + 1]), args.outputs[k].as<float>(), 1, s_.dirs,
                    s_.N, s_.H);
  }

  uint64_t scratchpad_bytes() const override { return scratch_; }
  std::string implementation() const override { return step_ ? step_->implementation() : "memplan"; }

  std::unique_ptr<KernelState> make_state() const override {
    return make_step_states(&*step_, &*step_ + 1, [](const DnnlStep& st) -> const DnnlStep& { return st; });
  }

 private:
  struct ActivationDescs {
    dnnl::memory::desc x, state, y;
  };
  using PartDescs = std::array<dnnl::memory::desc, kParts>;

  // Whether the node has weight part p: the bias may be omitted (zeros), the peephole is LSTM's P.
  bool present(size_t p) const { return static_cast<Part>(p) != Part::Peephole || s_.peephole; }

  // The layouts to ask the primitive for; notes which weights are computed at run time.
  PartDescs wanted_weights(const Node& n) {
    PartDescs want;
    for (size_t p = 0; p < kParts; ++p) {
      if (!present(p)) continue;
      const Part part = static_cast<Part>(p);
      const Value* v = input_at(n, input_of(part));
      runtime_[p] = v && !v->constant;
      // The primitive picks the layout of constant weights; run-time ones are packed plain.
      const bool matrix = part == Part::Layer || part == Part::Iter;
      want[p] = matrix && !runtime_[p] ? dnnl::memory::desc(packed_dims(s_, part), f32, tag::any)
                                       : plain_packed_md(s_, part);
    }
    return want;
  }

  // The cell's primitive; `chosen` gets the weight layouts it picked.
  dnnl::primitive_desc make_primitive(const Node& n, const ActivationDescs& md, const PartDescs& want,
                                      PartDescs& chosen) const {
    const auto& [wl, wi, b, peep] = want;
    const auto prop = dnnl::prop_kind::forward_inference;
    const dnnl::primitive_attr attr = user_scratchpad_attr();
    auto chose = [&](const auto& p) -> dnnl::primitive_desc {
      chosen[0] = p.weights_layer_desc();
      chosen[1] = p.weights_iter_desc();
      return p;
    };
    const dnnl::memory::desc& st = md.state;
    try {
      if (s_.cell == Cell::Lstm) {
        dnnl::lstm_forward::desc d(prop, s_.direction, md.x, st, st, wl, wi, s_.peephole ? peep : dnnl::memory::desc(),
                                   dnnl::memory::desc(), b, md.y, st, st);
        return chose(dnnl::lstm_forward::primitive_desc(d, attr, ctx_->engine));
      }
      if (s_.cell == Cell::Rnn) {
        dnnl::vanilla_rnn_forward::desc d(prop, s_.activation, s_.direction, md.x, st, wl, wi, b, md.y, st);
        return chose(dnnl::vanilla_rnn_forward::primitive_desc(d, attr, ctx_->engine));
      }
      if (s_.lbr) {
        dnnl::lbr_gru_forward::desc d(prop, s_.direction, md.x, st, wl, wi, b, md.y, st);
        return chose(dnnl::lbr_gru_forward::primitive_desc(d, attr, ctx_->engine));
      }
      dnnl::gru_forward::desc d(prop, s_.direction, md.x, st, wl, wi, b, md.y, st);
      return chose(dnnl::gru_forward::primitive_desc(d, attr, ctx_->engine));
    } catch (const dnnl::error& e) {
      fail_unsupported(where_ + ": oneDNN has no implementation for this " + n.op_type + " (" + e.what() + ")");
    }
  }

  // Our part of the scratchpad, after oneDNN's: zero initial states, states in oneDNN's layout
  // (batch-first inputs, outputs the node omits), Y before it is rearranged, and run-time weights.
  void reserve_scratchpad() {
    const int64_t D = s_.dirs, H = s_.H;
    scratch_ = align64(step_->scratchpad_bytes());
    state_bytes_ = static_cast<uint64_t>(D * s_.N * H) * sizeof(float);
    zero_off_ = reserve(static_cast<uint64_t>(D * s_.N * H));
    for (uint64_t& o : state_off_) o = reserve(static_cast<uint64_t>(D * s_.N * H));
    y_tmp_off_ = reserve(static_cast<uint64_t>(s_.T * s_.N * D * H));
    for (size_t p = 0; p < kParts; ++p)
      if (present(p) && runtime_[p]) weight_off_[p] = reserve(count(packed_dims(s_, static_cast<Part>(p))));
  }
  // `floats` more of the scratchpad, 64-byte aligned; returns their offset.
  uint64_t reserve(uint64_t floats) {
    const uint64_t at = scratch_;
    scratch_ += align64(floats * sizeof(float));
    return at;
  }

  // Run-time weights are bound to their scratchpad at each run; constants (and an omitted bias:
  // zeros) are packed and reordered once.
  void bind_weights(const Node& n, const PartDescs& chosen) {
    const int dnnl_arg[kParts] = {DNNL_ARG_WEIGHTS_LAYER, DNNL_ARG_WEIGHTS_ITER, DNNL_ARG_BIAS,
                                  DNNL_ARG_WEIGHTS_PEEPHOLE};
    for (size_t p = 0; p < kParts; ++p) {
      if (!present(p)) continue;
      const Part part = static_cast<Part>(p);
      if (runtime_[p]) {
        weight_slot_[p] = step_->arg(dnnl_arg[p], chosen[p]);
        continue;
      }
      std::vector<float> packed(count(packed_dims(s_, part)));
      const Value* v = input_at(n, input_of(part));
      std::vector<float> onnx;
      if (v) {
        const std::vector<std::byte> bytes = v->constant->materialize();
        onnx.resize(bytes.size() / sizeof(float));
        std::memcpy(onnx.data(), bytes.data(), onnx.size() * sizeof(float));
      }
      pack(s_, part, v ? onnx.data() : nullptr, packed.data());
      step_->fixed_arg(dnnl_arg[p], reordered(packed, plain_packed_md(s_, part), chosen[p]));
    }
  }

  void bind_activations(const ActivationDescs& md) {
    src_layer_ = step_->arg(DNNL_ARG_SRC_LAYER, md.x);
    src_iter_ = step_->arg(DNNL_ARG_SRC_ITER, md.state);
    dst_layer_ = step_->arg(DNNL_ARG_DST_LAYER, md.y);
    dst_iter_ = step_->arg(DNNL_ARG_DST_ITER, md.state);
    if (s_.cell == Cell::Lstm) {
      src_iter_c_ = step_->arg(DNNL_ARG_SRC_ITER_C, md.state);
      dst_iter_c_ = step_->arg(DNNL_ARG_DST_ITER_C, md.state);
    }
  }

  // oneDNN runs whole sequences only.
  void check_sequence_lens(const KernelArgs& args) const {
    if (args.inputs.size() <= 4 || !args.inputs[4].data) return;
    const TensorView& lens = args.inputs[4];
    for (uint64_t i = 0; i < lens.element_count(); ++i) {
      const int64_t len = lens.dtype == DType::Int64 ? lens.as<int64_t>()[i] : lens.as<int32_t>()[i];
      if (len != s_.T)
        fail_unsupported(where_ + ": sequence_lens[" + std::to_string(i) + "] is " + std::to_string(len) +
                         "; only full-length sequences (" + std::to_string(s_.T) + ") are supported");
    }
  }

  // The weights in `md` (the primitive's choice), from `data` in the plain layout `plain`.
  dnnl::memory reordered(std::vector<float>& data, const dnnl::memory::desc& plain, const dnnl::memory::desc& md) {
    dnnl::memory user(plain, ctx_->engine, data.data());
    dnnl::memory dst(md, ctx_->engine);
    dnnl::reorder(user, dst).execute(ctx_->stream, user, dst);
    ctx_->stream.wait();
    return dst;
  }

  RnnSpec s_;
  std::string where_;
  DnnlContext* ctx_;
  std::optional<DnnlStep> step_;
  size_t src_layer_ = 0, src_iter_ = 0, src_iter_c_ = 0, dst_layer_ = 0, dst_iter_ = 0, dst_iter_c_ = 0;
  std::array<bool, kParts> runtime_{};
  std::array<size_t, kParts> weight_slot_{};
  std::array<uint64_t, kParts> weight_off_{};
  std::array<uint64_t, 4> state_off_{};  // h in, c in, h out, c out
  uint64_t state_bytes_ = 0, zero_off_ = 0, y_tmp_off_ = 0, scratch_ = 0;
};

// ONNX activation name -> oneDNN's vanilla RNN activation.
dnnl::algorithm rnn_activation(const std::string& name, const std::string& at) {
  if (name == "Tanh") return dnnl::algorithm::eltwise_tanh;
  if (name == "Relu") return dnnl::algorithm::eltwise_relu;
  if (name == "Sigmoid") return dnnl::algorithm::eltwise_logistic;
  fail_unsupported(at + ": activation '" + name + "' is not supported (Tanh, Relu, Sigmoid)");
}

void check_activations(const Node& n, RnnSpec& s, const std::string& at) {
  const Attribute* a = n.attr("activations");
  if (s.cell == Cell::Rnn) {
    // One activation per direction; oneDNN applies one to both.
    if (!a || a->strings.empty()) return;
    s.activation = rnn_activation(a->strings[0], at);
    for (const std::string& name : a->strings)
      if (name != a->strings[0])
        fail_unsupported(at + ": different activations per direction ('" + a->strings[0] + "', '" + name +
                         "') are not supported");
    return;
  }
  const std::vector<std::string> defaults = s.cell == Cell::Lstm ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                                                  : std::vector<std::string>{"Sigmoid", "Tanh"};
  if (!a) return;
  for (size_t i = 0; i < a->strings.size(); ++i)
    if (a->strings[i] != defaults[i % defaults.size()])
      fail_unsupported(at + ": activation '" + a->strings[i] + "' is not supported (only the defaults)");
}

// A float32 weight input with a static shape equal to `dims`.
void check_weight(const Node& n, size_t k, const std::vector<int64_t>& dims, const std::string& at) {
  const Value* v = input_at(n, k);
  if (!v) return;
  if (v->type.dtype != DType::Float32)
    fail_unsupported(at + ": input '" + v->name + "' is " + dtype_name(v->type.dtype) + " (float32 only)");
  const bool ok = v->type.is_static() && !v->shape_varies && v->type.static_dims() == dims &&
                  (!v->constant || v->constant->dims == dims);
  if (!ok) {
    Shape want;
    want.rank = static_cast<int>(dims.size());
    std::copy(dims.begin(), dims.end(), want.dims.begin());
    fail(at + ": input '" + v->name + "' has shape " + v->type.shape_string() + ", expected " + want.str());
  }
}

// The cell, direction, layout and options of the node, and X's sizes.
RnnSpec read_spec(const Node& n, Cell cell, const std::string& at) {
  RnnSpec s;
  s.cell = cell;
  const Value* X = n.inputs[0];
  if (X->type.dtype != DType::Float32)
    fail_unsupported(at + ": " + dtype_name(X->type.dtype) + " input is not supported (float32 only)");
  if (!fixed_shape(X) || X->type.dims.size() != 3)
    fail_unsupported(at + ": input X needs a fixed rank-3 shape, it has " + X->type.shape_string());
  const int64_t layout = n.attr_int("layout", 0);
  if (layout != 0 && layout != 1) fail(at + ": layout " + std::to_string(layout) + " is not 0 or 1");
  s.batch_first = layout == 1;
  const std::string dir = n.attr_string("direction", "forward");
  if (dir == "forward") s.direction = dnnl::rnn_direction::unidirectional_left2right;
  else if (dir == "reverse") s.direction = dnnl::rnn_direction::unidirectional_right2left;
  else if (dir == "bidirectional") s.direction = dnnl::rnn_direction::bidirectional_concat, s.dirs = 2;
  else fail(at + ": unknown direction '" + dir + "'");
  check_activations(n, s, at);
  if (n.attr("clip")) fail_unsupported(at + ": the clip attribute is not supported");
  if (n.attr_int("input_forget", 0) != 0) fail_unsupported(at + ": input_forget=1 is not supported");
  s.lbr = s.cell == Cell::Gru && n.attr_int("linear_before_reset", 0) != 0;
  s.peephole = s.cell == Cell::Lstm && input_at(n, 7);
  if (const Value* lens_value = input_at(n, 4); lens_value && lens_value->constant) {
    const Tensor& lens = *lens_value->constant;
    const int64_t T = X->type.dims[s.batch_first ? 1 : 0].value;
    for (uint64_t i = 0; i < lens.element_count(); ++i)
      if (lens.int_at(i) != T)
        fail_unsupported(at + ": sequence_lens[" + std::to_string(i) + "] is " + std::to_string(lens.int_at(i)) +
                         "; only full-length sequences are supported");
  }
  s.T = X->type.dims[s.batch_first ? 1 : 0].value;
  s.N = X->type.dims[s.batch_first ? 0 : 1].value;
  s.I = X->type.dims[2].value;
  return s;
}

// The hidden size from W, and every weight and initial state checked against the sizes.
void read_hidden_size(const Node& n, RnnSpec& s, const std::string& at) {
  const Value* W = n.inputs[1];
  if (W->type.dims.size() != 3 || !W->type.is_static()) fail(at + ": W must have a static rank-3 shape");
  if (W->type.dims[1].value % s.gates() != 0)
    fail(at + ": W's second dimension " + std::to_string(W->type.dims[1].value) + " is not a multiple of " +
         std::to_string(s.gates()) + " gates");
  s.H = W->type.dims[1].value / s.gates();
  if (const Attribute* hs = n.attr("hidden_size"); hs && hs->i != s.H)
    fail(at + ": hidden_size " + std::to_string(hs->i) + " does not match W's shape");
  for (Part p : {Part::Layer, Part::Iter, Part::Bias, Part::Peephole})
    check_weight(n, input_of(p), onnx_dims(s, p), at);
  const std::vector<int64_t> state = s.batch_first ? std::vector<int64_t>{s.N, s.dirs, s.H}
                                                   : std::vector<int64_t>{s.dirs, s.N, s.H};
  for (size_t k : {5u, 6u})
    check_weight(n, k, state, at);
}

}  // namespace

std::unique_ptr<Kernel> make_rnn(const Node& n, const KernelEnv& env) {
  const Cell cell = n.op_type == "LSTM" ? Cell::Lstm : n.op_type == "GRU" ? Cell::Gru : Cell::Rnn;
  // X, W and R are required; every output is optional.
  const std::string at = check_arity(n, env, 3, cell == Cell::Lstm ? 8 : 6, 0);
  if (!env.dnnl) fail_internal(at + ": no oneDNN context");
  RnnSpec s = read_spec(n, cell, at);
  read_hidden_size(n, s, at);
  return std::make_unique<RnnKernel>(n, env, s);
}

}  // namespace memplan::rt::elt
