#include "passes/fuse_conv.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "ir/constant_operands.h"
#include "ir/fused_activation.h"

namespace memplan {
namespace {

std::vector<float> floats_of(const Tensor& t) {
  std::vector<float> out(t.element_count());
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(t.float_at(i));
  return out;
}

std::shared_ptr<Tensor> f32_tensor(std::vector<int64_t> dims, const std::vector<float>& v) {
  auto t = std::make_shared<Tensor>();
  t->dtype = DType::Float32;
  t->dims = std::move(dims);
  t->bytes.resize(v.size() * sizeof(float));
  std::memcpy(t->bytes.data(), v.data(), t->bytes.size());
  return t;
}

// The per-channel values of a constant operand broadcast against a [N, C, ...] tensor (a scalar,
// [C, 1, 1], [1, C, 1, 1], ...); empty when it varies along any other axis.
std::vector<float> per_channel(const Value* v, int64_t channels, size_t rank) {
  if (!is_const_f32(v) || v->constant->dims.size() > rank) return {};
  const std::vector<int64_t>& d = v->constant->dims;
  for (size_t k = 0; k < d.size(); ++k) {
    const size_t axis = rank - d.size() + k;
    if (d[k] != 1 && !(axis == 1 && d[k] == channels)) return {};
  }
  std::vector<float> values = floats_of(*v->constant);
  if (values.size() == 1) values.assign(static_cast<size_t>(channels), values[0]);
  return static_cast<int64_t>(values.size()) == channels ? values : std::vector<float>{};
}

// BatchNormalization -> Mul(per-channel constant) -> Add(per-channel constant)  ==>  one
// BatchNormalization with scale * m and (B * m) + a (Caffe's BatchNorm + Scale layers). The
// result is then folded into a preceding Conv, or runs as one oneDNN batch norm.
void fold_scale_shift(Graph& g, Node& bn, std::unordered_set<const Node*>& dead) {
  if (bn.op_type != "BatchNormalization" || !bn.domain.empty() || bn.inputs.size() != 5 || bn.outputs.empty() ||
      !bn.outputs[0] || bn.attr_int("training_mode", 0) != 0 || !is_const_f32(bn.inputs[1]) ||
      !is_const_f32(bn.inputs[2]) || !bn.outputs[0]->type.has_rank || bn.outputs[0]->type.dims.size() < 2)
    return;
  for (size_t k = 1; k < bn.outputs.size(); ++k)
    if (bn.outputs[k]) return;
  const size_t rank = bn.outputs[0]->type.dims.size();
  const int64_t channels = static_cast<int64_t>(bn.inputs[1]->constant->element_count());
  std::vector<float> scale = floats_of(*bn.inputs[1]->constant), shift = floats_of(*bn.inputs[2]->constant);
  if (static_cast<int64_t>(shift.size()) != channels) return;
  bool folded = false;
  for (Node* op = sole_consumer(bn.outputs[0]); op && (op->op_type == "Mul" || op->op_type == "Add") &&
                                                 op->domain.empty() && op->inputs.size() == 2 && op->outputs[0];
       op = sole_consumer(bn.outputs[0])) {
    const Value* other = op->inputs[0] == bn.outputs[0] ? op->inputs[1] : op->inputs[0];
    const std::vector<float> v = per_channel(other, channels, rank);
    if (v.empty() || !op->outputs[0]->type.has_rank || op->outputs[0]->type.dims.size() != rank) break;
    for (size_t c = 0; c < v.size(); ++c) {
      if (op->op_type == "Mul") {
        scale[c] *= v[c];
        shift[c] *= v[c];
      } else {
        shift[c] += v[c];
      }
    }
    g.absorb_output(bn, *op);
    dead.insert(op);
    folded = true;
  }
  if (!folded) return;
  for (auto [k, values, suffix] : {std::tuple{1, &scale, "_scaled_scale"}, std::tuple{2, &shift, "_scaled_B"}}) {
    Value* p = g.add_fresh_value(bn.name + suffix);
    p->constant = f32_tensor({channels}, *values);
    p->type = bn.inputs[static_cast<size_t>(k)]->type;
    p->type.dims = {Dim{channels, {}}};
    bn.inputs[static_cast<size_t>(k)] = p;
  }
}

// The output channel each weight of a Conv or ConvTranspose feeds, and how many there are: a
// Conv's weights are [M, C/group, k...], a ConvTranspose's [C, M/group, k...].
struct OutputChannels {
  int64_t count = 0;
  int64_t of(size_t weight) const {
    const auto e = static_cast<int64_t>(weight);
    if (!transposed) return e / per_channel;
    const int64_t c = e / (mg * taps), mo = e / taps % mg;
    return c / cg * mg + mo;
  }
  bool transposed = false;
  int64_t per_channel = 1, mg = 1, cg = 1, taps = 1;
};
std::optional<OutputChannels> output_channels(const Node& conv) {
  const Value* w = conv.inputs.size() > 1 ? conv.inputs[1] : nullptr;
  if (!is_const_f32(w) || w->constant->dims.size() < 2) return std::nullopt;
  const std::vector<int64_t>& d = w->constant->dims;
  const int64_t elements = static_cast<int64_t>(w->constant->element_count());
  OutputChannels oc;
  if (conv.op_type == "Conv") {
    oc.count = d[0];
    if (oc.count < 1) return std::nullopt;
    oc.per_channel = elements / oc.count;
    return oc;
  }
  const int64_t group = conv.attr_int("group", 1);
  if (group < 1 || d[0] < 1 || d[1] < 1 || d[0] % group != 0) return std::nullopt;
  oc.transposed = true;
  oc.mg = d[1];
  oc.cg = d[0] / group;
  oc.taps = elements / (d[0] * d[1]);
  oc.count = oc.mg * group;
  return oc;
}

// Conv -> Add of a per-channel constant  ==>  the Conv with it in its bias (Paddle2ONNX writes a
// ConvTranspose's bias so).
bool fold_bias_add(Graph& g, Node& conv, std::unordered_set<const Node*>& dead) {
  Node* add = sole_consumer(conv.outputs[0]);
  const std::optional<OutputChannels> oc = output_channels(conv);
  if (!oc || !add || add->op_type != "Add" || !add->domain.empty() || add->inputs.size() != 2 || !add->outputs[0] ||
      conv.inputs.size() > 3 || has_fused_activation(conv) || !conv.outputs[0]->type.has_rank)
    return false;
  const TensorType& y = conv.outputs[0]->type;
  const TensorType& sum = add->outputs[0]->type;
  if (!y.is_static() || !sum.is_static() || sum.static_dims() != y.static_dims()) return false;
  const std::vector<float> v = per_channel(other_input(*add, conv.outputs[0]), oc->count, y.dims.size());
  const Value* b = conv.inputs.size() > 2 ? conv.inputs[2] : nullptr;
  if (v.empty() || (b && !is_const_f32(b))) return false;
  std::vector<float> bias = b ? floats_of(*b->constant) : std::vector<float>(v.size(), 0.f);
  if (bias.size() != v.size()) return false;
  for (size_t c = 0; c < v.size(); ++c) bias[c] += v[c];
  Value* new_b = g.add_fresh_value(conv.name + "_add_folded_B");
  new_b->constant = f32_tensor({oc->count}, bias);
  new_b->type.dtype = DType::Float32;
  new_b->type.has_rank = true;
  new_b->type.dims = {Dim{oc->count, {}}};
  conv.inputs.resize(3);
  conv.inputs[2] = new_b;
  g.absorb_output(conv, *add);
  dead.insert(add);
  return true;
}

// Conv(X, W, B) -> BatchNormalization  ==>  Conv(X, W * s, (B - mean) * s + beta), s = scale / sqrt(var + eps).
bool fold_batch_norm(Graph& g, Node& conv, std::unordered_set<const Node*>& dead) {
  Node* bn = sole_consumer(conv.outputs[0]);
  if (!bn || bn->op_type != "BatchNormalization" || !bn->domain.empty() || bn->inputs.size() != 5) return false;
  if (bn->attr_int("training_mode", 0) != 0 || bn->outputs.size() < 1 || bn->inputs[0] != conv.outputs[0]) return false;
  for (size_t k = 1; k < bn->outputs.size(); ++k)
    if (bn->outputs[k]) return false;
  for (size_t k = 1; k < 5; ++k)
    if (!is_const_f32(bn->inputs[k])) return false;
  const Value* w = conv.inputs[1];
  const Value* b = conv.inputs.size() > 2 ? conv.inputs[2] : nullptr;
  const std::optional<OutputChannels> oc = output_channels(conv);
  if (!oc || (b && !is_const_f32(b))) return false;
  const int64_t channels = oc->count;
  const std::vector<float> scale = floats_of(*bn->inputs[1]->constant), beta = floats_of(*bn->inputs[2]->constant),
                           mean = floats_of(*bn->inputs[3]->constant), var = floats_of(*bn->inputs[4]->constant);
  for (const auto* p : {&scale, &beta, &mean, &var})
    if (static_cast<int64_t>(p->size()) != channels) return false;
  const float eps = bn->attr_float("epsilon", 1e-5f);

  std::vector<float> weights = floats_of(*w->constant);
  // The model's own weights go at once where this Conv alone reads them: a network's weights are
  // then in memory once while its batch norms are folded, not twice (16 Conv+BatchNormalization
  // pairs of 2.4 MB weights: 94 MB peak for a 38 MB floor).
  if (!w->is_graph_output && w->consumers.size() == 1 && w->consumers[0] == &conv && w->constant.use_count() == 1)
    conv.inputs[1]->release_constant_bytes();
  std::vector<float> bias = b ? floats_of(*b->constant) : std::vector<float>(static_cast<size_t>(channels), 0.f);
  std::vector<float> s(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    s[c] = scale[c] / std::sqrt(var[c] + eps);
    bias[c] = (bias[c] - mean[c]) * s[c] + beta[c];
  }
  for (size_t i = 0; i < weights.size(); ++i) weights[i] *= s[static_cast<size_t>(oc->of(i))];
  Value* new_w = g.add_fresh_value(conv.name + "_bn_folded_W");
  new_w->constant = f32_tensor(w->constant->dims, weights);
  new_w->type = w->type;
  Value* new_b = g.add_fresh_value(conv.name + "_bn_folded_B");
  new_b->constant = f32_tensor({channels}, bias);
  new_b->type.dtype = DType::Float32;
  new_b->type.has_rank = true;
  new_b->type.dims = {Dim{channels, {}}};
  conv.inputs.resize(3);
  conv.inputs[1] = new_w;
  conv.inputs[2] = new_b;

  g.absorb_output(conv, *bn);
  dead.insert(bn);
  return true;
}

// Conv -> Add(other) (or a two-input Sum)  ==>  Conv with `other` as input 3, added by oneDNN's
// sum post-op (the ResNet shortcut). `other` must have exactly the output's shape: no broadcasting.
bool fuse_add(Graph& g, Node& conv, std::unordered_set<const Node*>& dead,
              const std::unordered_map<const Node*, size_t>& position) {
  if (conv.inputs.size() > 3 || has_fused_activation(conv)) return false;
  Node* add = sole_consumer(conv.outputs[0]);
  if (!add || (add->op_type != "Add" && add->op_type != "Sum") || !add->domain.empty() || add->inputs.size() != 2 ||
      !add->outputs[0])
    return false;
  Value* other = add->inputs[0] == conv.outputs[0] ? add->inputs[1] : add->inputs[0];
  const TensorType& out = conv.outputs[0]->type;
  if (!other || other == conv.outputs[0] || other->shape_varies || !out.is_static() || !other->type.is_static() ||
      other->type.dtype != DType::Float32 || other->type.static_dims() != out.static_dims() ||
      add->outputs[0]->shape_varies)
    return false;
  // The Conv now reads `other` at its own step: it must already exist there.
  if (other->producer && other->producer->graph == &g &&
      (!position.count(other->producer) || position.at(other->producer) >= position.at(&conv)))
    return false;
  conv.inputs.resize(4);  // X, W, B (may be omitted), the addend
  conv.inputs[3] = other;
  g.absorb_output(conv, *add);
  dead.insert(add);
  return true;
}

// Conv -> Relu / Clip(constant bounds)  ==>  Conv with the activation as a post-op.
bool fuse_activation(Graph& g, Node& conv, std::unordered_set<const Node*>& dead) {
  if (has_fused_activation(conv)) return false;
  Node* act = sole_consumer(conv.outputs[0]);
  if (!act || !act->domain.empty() || act->outputs.size() != 1 || !act->outputs[0]) return false;
  FusedActivation fused = FusedActivation::None;
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  if (act->op_type == "Relu") {
    fused = FusedActivation::Relu;
  } else if (act->op_type == "HardSwish") {
    fused = FusedActivation::HardSwish;
  } else if (act->op_type == "Clip") {
    const std::optional<std::pair<float, float>> bounds = clip_bounds(*act);
    if (!bounds) return false;
    std::tie(lo, hi) = *bounds;
    fused = FusedActivation::Clip;
  } else {
    return false;
  }
  set_fused_activation(conv, fused, lo, hi);
  g.absorb_output(conv, *act);
  dead.insert(act);
  return true;
}

// Conv -> Sigmoid, Mul(conv, sigmoid)  ==>  Conv with a Swish (SiLU) post-op (EfficientNet).
bool fuse_swish(Graph& g, Node& conv, std::unordered_set<const Node*>& dead) {
  Value* y = conv.outputs[0];
  if (has_fused_activation(conv) || y->is_graph_output || y->consumers.size() != 2) return false;
  Node* sig = nullptr;
  Node* mul = nullptr;
  for (Node* c : y->consumers) {
    if (c->graph != &g || !c->domain.empty()) return false;
    if (c->op_type == "Sigmoid" && c->inputs.size() == 1 && c->outputs.size() == 1 && c->outputs[0]) sig = c;
    if (c->op_type == "Mul" && c->inputs.size() == 2 && c->outputs.size() == 1 && c->outputs[0]) mul = c;
  }
  if (!sig || !mul || sole_consumer(sig->outputs[0]) != mul) return false;
  const bool pairs = (mul->inputs[0] == y && mul->inputs[1] == sig->outputs[0]) ||
                     (mul->inputs[1] == y && mul->inputs[0] == sig->outputs[0]);
  if (!pairs) return false;
  set_fused_activation(conv, FusedActivation::Swish);
  Value* sig_out = sig->outputs[0];
  conv.outputs[0] = mul->outputs[0];
  conv.outputs[0]->producer = &conv;
  dead.insert(sig);
  dead.insert(mul);
  g.release_value(y);
  g.release_value(sig_out);
  return true;
}

// Conv [-> its fused activation] -> elementwise ops with constants, each the sole reader of the
// one before  ==>  the Conv with all of them as a chain of eltwise post-ops: what TensorFlow and
// Paddle exporters write (LeakyRelu -> Max(c), Clip -> Mul(c) -> Add(c), HardSigmoid). `gelu`: a
// Gelu too (a MatMul's: a transformer's feed-forward Linear, whose output GELU then reads
// from memory once more), applied in the matmul's one pass; a Convolution's keeps its node, where
// oneDNN's GEMM convolution would apply it in a slow loop and memplan's own loops have no
// vectorized erf.
bool fuse_eltwise_chain(Graph& g, Node& conv, std::unordered_set<const Node*>& dead, bool gelu = false) {
  std::optional<std::vector<EltwiseStep>> steps = fused_steps(conv);
  if (!steps) return false;
  bool grew = false;
  for (Node* next = sole_consumer(conv.outputs[0]); next; next = sole_consumer(conv.outputs[0])) {
    const std::vector<EltwiseStep> more = eltwise_steps(*next, conv.outputs[0], gelu);
    std::vector<EltwiseStep> longer = *steps;
    bool fits = !more.empty();
    for (const EltwiseStep& s : more) fits = fits && add_fused_step(longer, s);
    if (!fits) break;
    steps = std::move(longer);
    g.absorb_output(conv, *next);
    dead.insert(next);
    grew = true;
  }
  if (grew) set_fused_steps(conv, *steps);
  return grew;
}

// MatMul by a constant [K, N] (a Linear layer's weights) -> Add of a constant [N] (or [1, .., N])
// ==>  the MatMul with the bias as its input 2, which memplan's MatMul kernel gives oneDNN's
// matmul as its bias: torch writes nn.Linear on 3-D input this way, in every transformer block.
bool fuse_matmul_bias(Graph& g, Node& mm, std::unordered_set<const Node*>& dead) {
  if (mm.inputs.size() != 2 || !mm.inputs[0] || !is_const_f32(mm.inputs[1]) || mm.inputs[1]->type.dims.size() != 2)
    return false;
  Value* y = mm.outputs[0];
  Node* add = sole_consumer(y);
  if (!add || add->op_type != "Add" || !add->domain.empty() || add->inputs.size() != 2 || add->outputs.size() != 1 ||
      !add->outputs[0] || !y->type.is_static() || !add->outputs[0]->type.is_static() ||
      add->outputs[0]->type.static_dims() != y->type.static_dims())
    return false;
  Value* bias = const_cast<Value*>(other_input(*add, y));
  if (!is_const_f32(bias) || !bias->type.is_static()) return false;
  const std::vector<int64_t> b = bias->type.static_dims();
  const int64_t n = mm.inputs[1]->type.static_dims()[1];
  if (b.empty() || b.size() > y->type.dims.size() || b.back() != n ||
      !std::all_of(b.begin(), b.end() - 1, [](int64_t d) { return d == 1; }))
    return false;
  mm.inputs.push_back(bias);
  g.absorb_output(mm, *add);
  dead.insert(add);
  return true;
}

// The rows a MatMul's A holds (its elements over its last dim; 0 unless static).
int64_t matmul_rows(const Node& mm) {
  const Value* a = mm.inputs.empty() ? nullptr : mm.inputs[0];
  if (!a || !a->type.is_static() || a->type.dims.empty()) return 0;
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < a->type.dims.size(); ++i) rows *= a->type.static_dims()[i];
  return rows;
}

// BatchNormalization -> Relu  ==>  BatchNormalization with oneDNN's fused ReLU (DenseNet's
// pre-activations, which no Conv precedes).
bool fuse_batch_norm_relu(Graph& g, Node& bn, std::unordered_set<const Node*>& dead) {
  if (bn.op_type != "BatchNormalization" || !bn.domain.empty() || has_fused_activation(bn) ||
      bn.outputs.empty() || !bn.outputs[0] || bn.attr_int("training_mode", 0) != 0 ||
      bn.outputs[0]->type.dtype != DType::Float32)  // only oneDNN's float32 batch norm fuses it
    return false;
  for (size_t k = 1; k < bn.outputs.size(); ++k)
    if (bn.outputs[k]) return false;
  Node* relu = sole_consumer(bn.outputs[0]);
  if (!relu || relu->op_type != "Relu" || !relu->domain.empty() || relu->outputs.size() != 1 || !relu->outputs[0])
    return false;
  set_fused_activation(bn, FusedActivation::Relu);
  g.absorb_output(bn, *relu);
  dead.insert(relu);
  return true;
}

// The window attributes of a 1x1 Conv that reads each pixel once: no pads, strides or dilations
// other than 1, one group.
bool is_pointwise(const Node& conv) {
  auto all = [&](const char* name, int64_t v) {
    const std::vector<int64_t> xs = conv.attr_ints(name);
    return std::all_of(xs.begin(), xs.end(), [&](int64_t x) { return x == v; });
  };
  const Attribute* auto_pad = conv.attr("auto_pad");
  const std::string pad = auto_pad ? auto_pad->s : "NOTSET";
  const Value* w = conv.inputs.size() > 1 ? conv.inputs[1] : nullptr;
  return all("pads", 0) && all("strides", 1) && all("dilations", 1) && conv.attr_int("group", 1) == 1 &&
         (pad == "NOTSET" || pad == "VALID" || pad.empty()) && is_const_f32(w) && w->constant->dims.size() == 4 &&
         w->constant->dims[2] == 1 && w->constant->dims[3] == 1;
}

// True when bytes of `v` are read after step `step`: by a later reader of v, or, for a Concat's
// output (which the planner may assemble in place from its inputs), of one of those inputs.
bool read_after(const Value* v, size_t step, const std::unordered_map<const Node*, size_t>& position, int depth = 0) {
  for (const Node* c : v->consumers)
    if (auto at = position.find(c); at != position.end() && at->second > step) return true;
  if (v->is_graph_output || (v->producer && v->producer->op_type == "Concat" && depth > 8)) return true;
  if (v->producer && v->producer->op_type == "Concat")
    for (const Value* x : v->producer->inputs)
      if (x && read_after(x, step, position, depth + 1)) return true;
  return false;
}

// BatchNormalization [with its Relu] -> 1x1 Conv  ==>  the Conv with the batch norm as its
// pre-activation (ir/fused_activation.h): DenseNet's norm1 -> relu1 -> conv1, whose normalized
// input would otherwise be stored whole next to the block's concatenation. Only where the batch
// norm's input is still read after it: one whose input dies there is written in place, which
// costs no bytes at all (DenseNet's transitions).
bool fuse_pre_activation(Graph& g, Node& bn, std::unordered_set<const Node*>& dead,
                         const std::unordered_map<const Node*, size_t>& position) {
  if (bn.op_type != "BatchNormalization" || !bn.domain.empty() || bn.inputs.size() != 5 || bn.outputs.empty() ||
      !bn.outputs[0] || bn.attr_int("training_mode", 0) != 0 || bn.outputs[0]->type.dtype != DType::Float32)
    return false;
  for (size_t k = 1; k < bn.outputs.size(); ++k)
    if (bn.outputs[k]) return false;
  for (size_t k = 1; k < 5; ++k)
    if (!is_const_f32(bn.inputs[k])) return false;
  const std::optional<FusedActivation> act = fused_activation(bn);
  if (!act || (*act != FusedActivation::None && *act != FusedActivation::Relu)) return false;
  if (!bn.inputs[0] || !read_after(bn.inputs[0], position.at(&bn), position)) return false;
  Node* conv = sole_consumer(bn.outputs[0]);
  if (!conv || conv->op_type != "Conv" || !conv->domain.empty() || conv->inputs.size() > 3 || conv->inputs[0] != bn.outputs[0] ||
      pre_activation(*conv) || !is_pointwise(*conv) || bn.outputs[0]->type.dims.size() != 4)
    return false;
  const int64_t channels = conv->inputs[1]->constant->dims[1];
  const std::vector<float> scale = floats_of(*bn.inputs[1]->constant), beta = floats_of(*bn.inputs[2]->constant),
                           mean = floats_of(*bn.inputs[3]->constant), var = floats_of(*bn.inputs[4]->constant);
  for (const auto* p : {&scale, &beta, &mean, &var})
    if (static_cast<int64_t>(p->size()) != channels) return false;
  const float eps = bn.attr_float("epsilon", 1e-5f);
  PreActivation pre;
  pre.relu = *act == FusedActivation::Relu;
  for (int64_t c = 0; c < channels; ++c) {
    const float s = scale[c] / std::sqrt(var[c] + eps);
    pre.scale.push_back(s);
    pre.shift.push_back(beta[c] - mean[c] * s);
  }
  set_pre_activation(*conv, pre);
  Value* normalized = bn.outputs[0];
  conv->inputs[0] = bn.inputs[0];
  dead.insert(&bn);
  g.release_value(normalized);
  return true;
}

}  // namespace

int fuse_conv(Model& model) {
  int removed = 0;
  for_each_graph(*model.main, [&](Graph& g) {
    std::unordered_set<const Node*> dead;
    std::unordered_map<const Node*, size_t> position;
    for (size_t i = 0; i < g.nodes.size(); ++i) position[g.nodes[i].get()] = i;
    for (auto& n : g.nodes)
      if (!dead.count(n.get())) fold_scale_shift(g, *n, dead);
    for (auto& n : g.nodes) {
      if (dead.count(n.get()) || n->op_type != "MatMul" || !n->domain.empty() || n->outputs.size() != 1 ||
          !n->outputs[0] || n->outputs[0]->type.dtype != DType::Float32)
        continue;
      fuse_matmul_bias(g, *n, dead);
      // A product of a few rows by large weights reads them in place (linalg/weights_gemv.h),
      // which applies a bias but no activation: that activation stays a node of its own.
      if (matmul_rows(*n) > kWeightsInPlaceRows) fuse_eltwise_chain(g, *n, dead, true);
    }
    for (auto& n : g.nodes) {
      if (dead.count(n.get()) || n->op_type != "ConvTranspose" || !n->domain.empty() || n->outputs.empty() ||
          !n->outputs[0] || n->outputs[0]->type.dtype != DType::Float32)
        continue;
      fold_bias_add(g, *n, dead);
      fold_batch_norm(g, *n, dead);
      fuse_activation(g, *n, dead);
      fuse_eltwise_chain(g, *n, dead);
    }
    for (auto& n : g.nodes) {
      if (dead.count(n.get()) || n->op_type != "Conv" || !n->domain.empty() || n->outputs.empty() || !n->outputs[0])
        continue;
      if (n->outputs[0]->type.dtype != DType::Float32) continue;
      fold_bias_add(g, *n, dead);
      fold_batch_norm(g, *n, dead);
      fuse_add(g, *n, dead, position);
      if (!fuse_swish(g, *n, dead)) fuse_activation(g, *n, dead);
      fuse_eltwise_chain(g, *n, dead);
    }
    for (auto& n : g.nodes)  // the batch norms no Conv absorbed
      if (!dead.count(n.get())) fuse_batch_norm_relu(g, *n, dead);
    for (auto& n : g.nodes)  // ... and those that a 1x1 Conv reads
      if (!dead.count(n.get())) fuse_pre_activation(g, *n, dead, position);
    removed += static_cast<int>(dead.size());
    std::erase_if(g.nodes, [&](const std::unique_ptr<Node>& n) { return dead.count(n.get()) > 0; });
  });
  rebuild_uses(*model.main);
  drop_unread_constants(*model.main);  // the weights a fold replaced
  return removed;
}

}  // namespace memplan
