// LSTM and GRU (forward, reverse, bidirectional; layout 0) on oneDNN's lstm_forward, gru_forward
// and lbr_gru_forward. Weights are reordered once at load: ONNX's gate order (LSTM iofc, GRU zrh)
// to oneDNN's (LSTM ifco, GRU u r o), ONNX's [dirs, gates*H, I] to oneDNN's ldigo and then to the
// format the primitive prefers; the two ONNX biases are summed (lbr_gru keeps Rbh apart).
#include <algorithm>
#include <cstring>
#include <optional>

#include "runtime/kernels/elementwise_common.h"

namespace memplan::rt::elt {
namespace {

using tag = dnnl::memory::format_tag;
constexpr auto f32 = dnnl::memory::data_type::f32;

uint64_t align64(uint64_t n) { return (n + 63) / 64 * 64; }

struct RnnSpec {
  bool lstm = true;
  bool lbr = false;         // GRU with linear_before_reset
  int dirs = 1;
  dnnl::rnn_direction direction = dnnl::rnn_direction::unidirectional_left2right;
  int64_t T = 0, N = 0, I = 0, H = 0;
  int gates() const { return lstm ? 4 : 3; }
};

// Reads a float32 constant input, checking its shape.
std::vector<float> weights(const Node& n, const KernelEnv& env, size_t k, std::vector<int64_t> dims) {
  const Value* v = n.inputs[k];
  const std::string at = where(n, env);
  if (!v->constant)
    fail_unsupported(at + ": input '" + v->name + "' is computed at run time; only constant weights are supported");
  if (v->constant->dtype != DType::Float32)
    fail_unsupported(at + ": input '" + v->name + "' is " + dtype_name(v->constant->dtype) + " (float32 only)");
  if (v->constant->dims != dims) {
    Shape want;
    want.rank = static_cast<int>(dims.size());
    std::copy(dims.begin(), dims.end(), want.dims.begin());
    fail(at + ": input '" + v->name + "' should have shape " + want.str());
  }
  const std::vector<std::byte> bytes = v->constant->materialize();
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

class RnnKernel final : public Kernel {
 public:
  RnnKernel(const Node& n, const KernelEnv& env, const RnnSpec& s) : s_(s), where_(where(n, env)), ctx_(env.dnnl) {
    const int64_t G = s.gates(), H = s.H, I = s.I, D = s.dirs;
    // ONNX gate index for each oneDNN gate.
    const int lstm_map[4] = {0, 2, 3, 1}, gru_map[3] = {0, 1, 2};
    const int* map = s.lstm ? lstm_map : gru_map;
    const std::vector<float> W = weights(n, env, 1, {D, G * H, I});
    const std::vector<float> R = weights(n, env, 2, {D, G * H, H});
    std::vector<float> B(static_cast<size_t>(D * 2 * G * H), 0.f);
    if (n.inputs.size() > 3 && n.inputs[3]) B = weights(n, env, 3, {D, 2 * G * H});

    std::vector<float> wl(static_cast<size_t>(D * I * G * H)), wi(static_cast<size_t>(D * H * G * H));
    const int64_t GB = s.lbr ? 4 : G;
    std::vector<float> bias(static_cast<size_t>(D * GB * H));
    for (int64_t d = 0; d < D; ++d)
      for (int64_t g = 0; g < G; ++g)
        for (int64_t h = 0; h < H; ++h) {
          const int64_t row = (d * G + map[g]) * H + h;  // row of W/R in ONNX's layout
          for (int64_t i = 0; i < I; ++i) wl[static_cast<size_t>(((d * I + i) * G + g) * H + h)] = W[static_cast<size_t>(row * I + i)];
          for (int64_t k = 0; k < H; ++k) wi[static_cast<size_t>(((d * H + k) * G + g) * H + h)] = R[static_cast<size_t>(row * H + k)];
          const float wb = B[static_cast<size_t>((d * 2 * G + map[g]) * H + h)];
          const float rb = B[static_cast<size_t>((d * 2 * G + G + map[g]) * H + h)];
          const bool split = s.lbr && g == 2;  // lbr_gru: Wbh in gate 2, Rbh in the extra gate 3
          bias[static_cast<size_t>((d * GB + g) * H + h)] = split ? wb : wb + rb;
          if (split) bias[static_cast<size_t>((d * GB + 3) * H + h)] = rb;
        }

    const dnnl::memory::desc x_md({s.T, s.N, I}, f32, tag::tnc);
    const dnnl::memory::desc state_md({1, D, s.N, H}, f32, tag::ldnc);
    const dnnl::memory::desc y_md({s.T, s.N, D * H}, f32, tag::tnc);
    const dnnl::memory::desc wl_any({1, D, I, G, H}, f32, tag::any), wi_any({1, D, H, G, H}, f32, tag::any);
    const dnnl::memory::desc b_md({1, D, GB, H}, f32, tag::ldgo);
    const auto prop = dnnl::prop_kind::forward_inference;
    const dnnl::primitive_attr attr = user_scratchpad_attr();
    dnnl::primitive_desc pd;
    dnnl::memory::desc wl_md, wi_md;
    try {
      if (s.lstm) {
        dnnl::lstm_forward::desc d(prop, s.direction, x_md, state_md, state_md, wl_any, wi_any, b_md, y_md, state_md,
                                   state_md);
        dnnl::lstm_forward::primitive_desc p(d, attr, ctx_->engine);
        wl_md = p.weights_layer_desc();
        wi_md = p.weights_iter_desc();
        pd = p;
      } else if (s.lbr) {
        dnnl::lbr_gru_forward::desc d(prop, s.direction, x_md, state_md, wl_any, wi_any, b_md, y_md, state_md);
        dnnl::lbr_gru_forward::primitive_desc p(d, attr, ctx_->engine);
        wl_md = p.weights_layer_desc();
        wi_md = p.weights_iter_desc();
        pd = p;
      } else {
        dnnl::gru_forward::desc d(prop, s.direction, x_md, state_md, wl_any, wi_any, b_md, y_md, state_md);
        dnnl::gru_forward::primitive_desc p(d, attr, ctx_->engine);
        wl_md = p.weights_layer_desc();
        wi_md = p.weights_iter_desc();
        pd = p;
      }
    } catch (const dnnl::error& e) {
      fail_unsupported(where_ + ": oneDNN has no implementation for this " + n.op_type + " (" + e.what() + ")");
    }
    step_.emplace(*ctx_, pd);
    step_->fixed_arg(DNNL_ARG_WEIGHTS_LAYER, reordered(wl, {1, D, I, G, H}, wl_md));
    step_->fixed_arg(DNNL_ARG_WEIGHTS_ITER, reordered(wi, {1, D, H, G, H}, wi_md));
    step_->fixed_arg(DNNL_ARG_BIAS, reordered(bias, {1, D, GB, H}, b_md));
    src_layer_ = step_->arg(DNNL_ARG_SRC_LAYER, x_md);
    src_iter_ = step_->arg(DNNL_ARG_SRC_ITER, state_md);
    dst_layer_ = step_->arg(DNNL_ARG_DST_LAYER, y_md);
    dst_iter_ = step_->arg(DNNL_ARG_DST_ITER, state_md);
    if (s.lstm) {
      src_iter_c_ = step_->arg(DNNL_ARG_SRC_ITER_C, state_md);
      dst_iter_c_ = step_->arg(DNNL_ARG_DST_ITER_C, state_md);
    }
    // Our part of the scratchpad, after oneDNN's: zero initial states and the outputs the node
    // omits (or, for two directions, Y in oneDNN's [T, N, 2H] layout before it is rearranged).
    state_bytes_ = static_cast<uint64_t>(D * s.N * H) * sizeof(float);
    uint64_t off = align64(step_->scratchpad_bytes());
    zero_off_ = off;
    off += align64(state_bytes_);
    y_tmp_off_ = off;
    off += align64(static_cast<uint64_t>(s.T * s.N * D * H) * sizeof(float));
    sink_h_off_ = off;
    off += align64(state_bytes_);
    sink_c_off_ = off;
    off += align64(state_bytes_);
    scratch_ = off;
  }

  void run(const KernelArgs& args) override {
    const TensorView& x = args.inputs[0];
    if (x.rank != 3 || x.dims[0] != s_.T || x.dims[1] != s_.N || x.dims[2] != s_.I)
      fail(where_ + ": input X has shape " + Shape::of(x).str() + ", the kernel was made for [" +
           std::to_string(s_.T) + ", " + std::to_string(s_.N) + ", " + std::to_string(s_.I) + "]");
    if (args.inputs.size() > 4 && args.inputs[4].data) {
      const TensorView& lens = args.inputs[4];
      for (uint64_t i = 0; i < lens.element_count(); ++i) {
        const int64_t len = lens.dtype == DType::Int64 ? lens.as<int64_t>()[i] : lens.as<int32_t>()[i];
        if (len != s_.T)
          fail_unsupported(where_ + ": sequence_lens[" + std::to_string(i) + "] is " + std::to_string(len) +
                           "; only full-length sequences (" + std::to_string(s_.T) + ") are supported");
      }
    }
    std::byte* sp = args.scratchpad;
    std::memset(sp + zero_off_, 0, state_bytes_);
    auto input = [&](size_t k) -> const void* {
      return args.inputs.size() > k && args.inputs[k].data ? args.inputs[k].data : sp + zero_off_;
    };
    auto output = [&](size_t k) -> void* {
      if (args.outputs.size() > k && args.outputs[k].data) return args.outputs[k].data;
      return sp + (k == 1 ? sink_h_off_ : sink_c_off_);
    };
    const bool y_direct = s_.dirs == 1 && args.outputs.size() > 0 && args.outputs[0].data;
    void* y = y_direct ? args.outputs[0].data : sp + y_tmp_off_;
    step_->bind(src_layer_, x.data);
    step_->bind(src_iter_, input(5));
    step_->bind(dst_layer_, y);
    step_->bind(dst_iter_, output(1));
    if (s_.lstm) {
      step_->bind(src_iter_c_, input(6));
      step_->bind(dst_iter_c_, output(2));
    }
    step_->execute(sp);
    if (s_.dirs == 2 && args.outputs.size() > 0 && args.outputs[0].data) {
      // [T, N, 2H] -> ONNX's [T, 2, N, H]
      const float* src = reinterpret_cast<const float*>(sp + y_tmp_off_);
      float* dst = args.outputs[0].as<float>();
      const int64_t N = s_.N, H = s_.H;
      for (int64_t t = 0; t < s_.T; ++t)
        for (int64_t d = 0; d < 2; ++d)
          for (int64_t b = 0; b < N; ++b)
            std::memcpy(dst + ((t * 2 + d) * N + b) * H, src + (t * N + b) * 2 * H + d * H, H * sizeof(float));
    }
  }

  uint64_t scratchpad_bytes() const override { return scratch_; }

 private:
  // The weights in `md` (the primitive's choice), from `data` in the plain layout `dims`.
  dnnl::memory reordered(std::vector<float>& data, const dnnl::memory::dims& dims, const dnnl::memory::desc& md) {
    const tag plain = dims.size() == 5 ? tag::ldigo : tag::ldgo;
    dnnl::memory user(dnnl::memory::desc(dims, f32, plain), ctx_->engine, data.data());
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
  uint64_t state_bytes_ = 0, zero_off_ = 0, y_tmp_off_ = 0, sink_h_off_ = 0, sink_c_off_ = 0, scratch_ = 0;
};

std::unique_ptr<Kernel> make_rnn(const Node& n, const KernelEnv& env) {
  const std::string at = where(n, env);
  RnnSpec s;
  s.lstm = n.op_type == "LSTM";
  if (!env.dnnl) fail_internal(at + ": no oneDNN context");
  if (n.inputs.size() < 3 || !n.inputs[0] || !n.inputs[1] || !n.inputs[2])
    fail(at + ": X, W and R are required");
  const Value* X = n.inputs[0];
  if (X->type.dtype != DType::Float32)
    fail_unsupported(at + ": " + dtype_name(X->type.dtype) + " input is not supported (float32 only)");
  if (!fixed_shape(X) || X->type.dims.size() != 3)
    fail_unsupported(at + ": input X needs a fixed rank-3 shape, it has " + X->type.shape_string());
  if (n.attr_int("layout", 0) != 0) fail_unsupported(at + ": layout=1 (batch first) is not supported");
  const std::string dir = n.attr_string("direction", "forward");
  if (dir == "forward") s.direction = dnnl::rnn_direction::unidirectional_left2right;
  else if (dir == "reverse") s.direction = dnnl::rnn_direction::unidirectional_right2left;
  else if (dir == "bidirectional") s.direction = dnnl::rnn_direction::bidirectional_concat, s.dirs = 2;
  else fail(at + ": unknown direction '" + dir + "'");
  const std::vector<std::string> defaults =
      s.lstm ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"} : std::vector<std::string>{"Sigmoid", "Tanh"};
  if (const Attribute* a = n.attr("activations")) {
    for (size_t i = 0; i < a->strings.size(); ++i)
      if (a->strings[i] != defaults[i % defaults.size()])
        fail_unsupported(at + ": activation '" + a->strings[i] + "' is not supported (only the defaults)");
  }
  if (n.attr("clip")) fail_unsupported(at + ": the clip attribute is not supported");
  if (n.attr_int("input_forget", 0) != 0) fail_unsupported(at + ": input_forget=1 is not supported");
  s.lbr = !s.lstm && n.attr_int("linear_before_reset", 0) != 0;
  if (s.lstm && n.inputs.size() > 7 && n.inputs[7]) {
    const Value* P = n.inputs[7];
    bool zero = P->constant != nullptr;
    for (uint64_t i = 0; zero && i < P->constant->element_count(); ++i) zero = P->constant->float_at(i) == 0.0;
    if (!zero) fail_unsupported(at + ": peepholes (input P) are not supported");
  }
  if (n.inputs.size() > 4 && n.inputs[4] && n.inputs[4]->constant) {
    const Tensor& lens = *n.inputs[4]->constant;
    for (uint64_t i = 0; i < lens.element_count(); ++i)
      if (lens.int_at(i) != X->type.dims[0].value)
        fail_unsupported(at + ": sequence_lens[" + std::to_string(i) + "] is " + std::to_string(lens.int_at(i)) +
                         "; only full-length sequences are supported");
  }
  s.T = X->type.dims[0].value;
  s.N = X->type.dims[1].value;
  s.I = X->type.dims[2].value;
  const Value* W = n.inputs[1];
  if (W->type.dims.size() != 3 || !W->type.is_static()) fail(at + ": W must have rank 3");
  s.H = W->type.dims[1].value / s.gates();
  if (const Attribute* hs = n.attr("hidden_size"); hs && hs->i != s.H)
    fail(at + ": hidden_size " + std::to_string(hs->i) + " does not match W's shape");
  for (size_t k : {5u, 6u})
    if (n.inputs.size() > k && n.inputs[k] && n.inputs[k]->type.dtype != DType::Float32)
      fail_unsupported(at + ": initial state '" + n.inputs[k]->name + "' is not float32");
  return std::make_unique<RnnKernel>(n, env, s);
}

}  // namespace

void register_rnn_kernels(KernelRegistry& r) {
  r.add("LSTM", make_rnn);
  r.add("GRU", make_rnn);
}

}  // namespace memplan::rt::elt
