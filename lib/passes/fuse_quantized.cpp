#include "passes/fuse_quantized.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/fused_activation.h"
#include "ir/fused_dequantize.h"
#include "runtime/constant_evaluator.h"

namespace memplan {
namespace {

// New nodes to place before or after a node once the pass's walk is over.
struct Insertion {
  std::unique_ptr<Node> node;
  Node* anchor;
  bool after;
};

bool is_op(const Node* n, const char* op, size_t inputs) {
  return n && n->op_type == op && n->domain.empty() && n->inputs.size() == inputs && n->outputs.size() == 1 &&
         n->outputs[0];
}

Value* other_input(const Node& n, const Value* v) { return n.inputs[0] == v ? n.inputs[1] : n.inputs[0]; }

// The values of a float32 constant that broadcasts against a value of rank `rank` along its
// channel axis `axis` only (1 for a convolution's [N, M, ...], the last for a MatMul's [..., N]): a
// scalar, [M, 1, 1], [1, M, 1, 1], ... One value, or M; empty otherwise.
std::vector<float> channel_values(const Value* v, int64_t channels, size_t rank, size_t axis) {
  if (!v || !v->constant || v->constant->dtype != DType::Float32 || v->constant->dims.size() > rank) return {};
  const std::vector<int64_t>& d = v->constant->dims;
  for (size_t k = 0; k < d.size(); ++k)
    if (d[k] != 1 && !(rank - d.size() + k == axis && d[k] == channels)) return {};
  std::vector<float> out(v->constant->element_count());
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(v->constant->float_at(i));
  return out;
}

// A float32 value of static shape that broadcasts along the channel axis only (as channel_values).
bool per_channel_type(const Value* v, int64_t channels, size_t rank, size_t axis) {
  if (!v || v->shape_varies || v->type.dtype != DType::Float32 || !v->type.is_static()) return false;
  const std::vector<int64_t> d = v->type.static_dims();
  if (d.size() > rank) return false;
  for (size_t k = 0; k < d.size(); ++k)
    if (d[k] != 1 && !(rank - d.size() + k == axis && d[k] == channels)) return false;
  return true;
}

// A float32 constant of shape `dims` (default: 1-D).
Value* constant_value(Graph& g, const std::string& name, const std::vector<float>& v, std::vector<int64_t> dims = {}) {
  Value* p = g.add_fresh_value(name);
  auto t = std::make_shared<Tensor>();
  t->dtype = DType::Float32;
  t->dims = dims.empty() ? std::vector<int64_t>{static_cast<int64_t>(v.size())} : std::move(dims);
  t->bytes.resize(v.size() * sizeof(float));
  std::memcpy(t->bytes.data(), v.data(), t->bytes.size());
  p->constant = std::move(t);
  p->type.dtype = DType::Float32;
  p->type.has_rank = true;
  for (int64_t d : p->constant->dims) p->type.dims.push_back(Dim{d, {}});
  return p;
}

// The int attribute `name` = 1 (the fused forms of ir/fused_dequantize.h).
void set_flag(Node& n, const char* name) {
  Attribute a;
  a.name = name;
  a.kind = Attribute::Kind::Int;
  a.i = 1;
  n.attributes.push_back(a);
}

// ConvInteger -> Cast -> Mul(scale) [-> Add(bias)] [-> Relu]  ==>  ConvInteger (dequantized), and
// the same after a MatMulInteger, whose channels are its output's last axis (the columns).
bool fuse_dequantize(Graph& g, Node& conv, std::unordered_set<const Node*>& dead,
                     const std::unordered_map<const Node*, size_t>& position,
                     std::vector<std::pair<Node*, Node*>>& hoists) {
  if (conv.inputs.size() > 4 || conv.attr(kDequantizedAttr) || has_fused_activation(conv)) return false;
  Value* acc = conv.outputs[0];
  if (acc->type.dtype != DType::Int32 || !acc->type.is_static() || acc->shape_varies) return false;
  const std::vector<int64_t> dims = acc->type.static_dims();
  const bool matmul = conv.op_type == "MatMulInteger";
  if (dims.size() < (matmul ? 2u : 3u)) return false;
  const size_t axis = matmul ? dims.size() - 1 : 1;
  const int64_t channels = dims[axis];
  Node* cast = sole_consumer(acc);
  if (!is_op(cast, "Cast", 1) || cast->attr_int("to", 0) != static_cast<int64_t>(DType::Float32)) return false;
  Node* mul = sole_consumer(cast->outputs[0]);
  if (!is_op(mul, "Mul", 2)) return false;
  auto same_shape = [&](const Node* n) {
    const Value* y = n->outputs[0];
    return y->type.dtype == DType::Float32 && y->type.is_static() && !y->shape_varies && y->type.static_dims() == dims;
  };
  if (!same_shape(mul)) return false;

  // The scale: a constant, or a run-time tensor (quantize_dynamic's Mul(x_scale, w_scale)) that
  // broadcasts along the channel axis only.
  Value* scale = other_input(*mul, cast->outputs[0]);
  std::vector<float> const_scale = channel_values(scale, channels, dims.size(), axis);
  Node* hoist = nullptr;
  if (const_scale.empty()) {
    if (!scale || scale->constant || !per_channel_type(scale, channels, dims.size(), axis)) return false;
    // The ConvInteger reads the scale at its own step. quantize_dynamic computes it after the
    // ConvInteger, from values that exist before: that node then moves up to just before it.
    Node* p = scale->producer;
    if (p && p->graph == &g && (!position.count(p) || position.at(p) >= position.at(&conv))) {
      if (p->outputs.size() != 1 || p->is_control_flow()) return false;
      for (const Value* in : p->inputs)
        if (in && in->producer && in->producer->graph == &g &&
            (!position.count(in->producer) || position.at(in->producer) >= position.at(&conv)))
          return false;
      hoist = p;
    }
  }

  std::vector<float> bias;
  Node* last = mul;
  Node* add = sole_consumer(mul->outputs[0]);
  if (is_op(add, "Add", 2) && same_shape(add)) {
    bias = channel_values(other_input(*add, mul->outputs[0]), channels, dims.size(), axis);
    if (!bias.empty()) {
      if (bias.size() == 1) bias.assign(static_cast<size_t>(channels), bias[0]);
      last = add;
    }
  }
  Node* relu = sole_consumer(last->outputs[0]);
  if (!is_op(relu, "Relu", 1)) relu = nullptr;
  else last = relu;

  std::vector<Node*> chain{cast, mul};
  if (!bias.empty()) chain.push_back(add);
  if (relu) chain.push_back(relu);
  std::vector<Value*> released{acc};
  for (Node* n : chain) {
    dead.insert(n);
    if (n != last) released.push_back(n->outputs[0]);
  }
  conv.inputs.resize(kDequantBiasInput + 1, nullptr);
  conv.inputs[kDequantScaleInput] =
      const_scale.empty() ? scale : constant_value(g, conv.name + "_dequant_scale", const_scale);
  conv.inputs[kDequantBiasInput] = bias.empty() ? nullptr : constant_value(g, conv.name + "_dequant_bias", bias);
  if (hoist) hoists.emplace_back(hoist, &conv);
  set_flag(conv, kDequantizedAttr);
  if (relu) set_fused_activation(conv, FusedActivation::Relu);
  conv.outputs[0] = last->outputs[0];
  conv.outputs[0]->producer = &conv;
  for (Value* v : released) g.release_value(v);
  return true;
}

// A constant of one value (of any type) as a double; false otherwise.
bool scalar_constant(const Value* v, double& out) {
  if (!v || !v->constant || v->constant->element_count() != 1) return false;
  out = v->constant->float_at(0);
  return true;
}

bool is_8bit(DType t) { return t == DType::Uint8 || t == DType::Int8; }

// DequantizeLinear(xq) -> Conv(., DequantizeLinear(int8 W), float B) [fused Relu] -> QuantizeLinear
// ==>  QLinearConv(xq, ..., B quantized to int32 at scale x_scale * w_scale[m]) [fused Relu]: the
// static QDQ layout run as an int8 convolution, as ONNX Runtime does. The scales and zero points
// must be constants (per tensor for x and y, per tensor or output channel for W).
bool fuse_qdq_conv(Graph& g, Node& conv, std::unordered_set<const Node*>& dead) {
  if (conv.inputs.size() < 2 || conv.inputs.size() > 3 || !conv.outputs[0]) return false;
  const std::optional<FusedActivation> act = fused_activation(conv);
  if (!act || (*act != FusedActivation::None && *act != FusedActivation::Relu)) return false;
  Node* dqx = conv.inputs[0] ? conv.inputs[0]->producer : nullptr;
  Node* dqw = conv.inputs[1] ? conv.inputs[1]->producer : nullptr;
  Node* q = sole_consumer(conv.outputs[0]);
  for (Node* n : {dqx, dqw})
    if (!n || n->op_type != "DequantizeLinear" || !n->domain.empty() || n->inputs.size() != 3 || n->graph != &g ||
        !n->outputs[0])
      return false;
  if (!is_op(q, "QuantizeLinear", 3)) return false;
  double xs = 0, xz = 0, ys = 0, yz = 0;
  if (!scalar_constant(dqx->inputs[1], xs) || !scalar_constant(dqx->inputs[2], xz) ||
      !scalar_constant(q->inputs[1], ys) || !scalar_constant(q->inputs[2], yz) || !(xs > 0) || !(ys > 0))
    return false;
  Value* xq = dqx->inputs[0];
  const Value* wq = dqw->inputs[0];
  if (!xq || !is_8bit(xq->type.dtype) || dqx->inputs[2]->type.dtype != xq->type.dtype || !wq || !wq->constant ||
      wq->constant->dtype != DType::Int8 || wq->constant->dims.empty() || !is_8bit(q->inputs[2]->type.dtype))
    return false;
  const int64_t channels = wq->constant->dims[0];
  const Value* ws = dqw->inputs[1];
  const Value* wz = dqw->inputs[2];
  if (!ws || !ws->constant || !wz || !wz->constant || wz->constant->dtype != DType::Int8) return false;
  const uint64_t nscale = ws->constant->element_count();
  if ((nscale != 1 && static_cast<int64_t>(nscale) != channels) || wz->constant->element_count() != nscale ||
      (nscale > 1 && dqw->attr_int("axis", 1) != 0))
    return false;
  // The float bias becomes int32 at the accumulator's scale, as ONNX Runtime's quantizer writes it.
  Value* bq = nullptr;
  if (conv.inputs.size() == 3 && conv.inputs[2]) {
    const Value* b = conv.inputs[2];
    if (!b->constant || b->constant->dtype != DType::Float32 ||
        static_cast<int64_t>(b->constant->element_count()) != channels)
      return false;
    auto t = std::make_shared<Tensor>();
    t->dtype = DType::Int32;
    t->dims = {channels};
    t->bytes.resize(static_cast<size_t>(channels) * sizeof(int32_t));
    for (int64_t m = 0; m < channels; ++m) {
      const double s = xs * ws->constant->float_at(nscale == 1 ? 0 : static_cast<uint64_t>(m));
      const double v = s > 0 ? std::nearbyint(b->constant->float_at(static_cast<uint64_t>(m)) / s) : 0;
      if (!(std::abs(v) < 2147483647.0)) return false;
      const int32_t i = static_cast<int32_t>(v);
      std::memcpy(t->bytes.data() + m * 4, &i, 4);
    }
    bq = g.add_fresh_value(conv.name + "_qdq_bias");
    bq->constant = std::move(t);
    bq->type.dtype = DType::Int32;
    bq->type.has_rank = true;
    bq->type.dims = {Dim{channels, {}}};
  }
  conv.op_type = "QLinearConv";
  conv.inputs = {xq, dqx->inputs[1], dqx->inputs[2], dqw->inputs[0], dqw->inputs[1], dqw->inputs[2],
                 q->inputs[1], q->inputs[2], bq};
  if (!bq) conv.inputs.pop_back();
  g.absorb_output(conv, *q);
  dead.insert(q);
  return true;
}

// Input 1 of `n` has at most `count` elements.
bool weights_at_most(const Node& n, uint64_t count) {
  const Value* w = n.inputs.size() > 1 ? n.inputs[1] : nullptr;
  return w && w->type.is_static() && checked_element_count(w->type.static_dims(), n.describe()) <= count;
}

// A Conv (or Gemm) the QDQ fusions left as float whose weights are still DequantizeLinear(constants) (kept
// from constant folding for the fusion): the float weights become a constant, computed as the
// DequantizeLinear kernel does, float(q - zero_point) * scale, so the Conv's oneDNN kernel
// reorders them once instead of the model dequantizing them on every run.
void fold_weight_dequantize(Graph& g, Node& conv) {
  Node* dq = conv.inputs.size() > 1 && conv.inputs[1] ? conv.inputs[1]->producer : nullptr;
  if (!dq || dq->op_type != "DequantizeLinear" || !dq->domain.empty() || dq->graph != &g || dq->inputs.size() < 2)
    return;
  for (const Value* v : dq->inputs)
    if (v && !v->constant) return;
  const Tensor& q = *dq->inputs[0]->constant;
  const Tensor& scale = *dq->inputs[1]->constant;
  const Tensor* zero = dq->inputs.size() > 2 && dq->inputs[2] ? dq->inputs[2]->constant.get() : nullptr;
  if (scale.dtype != DType::Float32 || (zero && zero->element_count() != scale.element_count()) || q.dims.empty())
    return;
  const uint64_t count = q.element_count(), nscale = scale.element_count();
  uint64_t inner = count;  // elements per scale
  if (nscale != 1) {
    int64_t axis = dq->attr_int("axis", 1);
    const int64_t rank = static_cast<int64_t>(q.dims.size());
    if (axis < 0) axis += rank;
    if (dq->opset < 13 || axis < 0 || axis >= rank || static_cast<uint64_t>(q.dims[static_cast<size_t>(axis)]) != nscale)
      return;
    inner = 1;
    for (int64_t d = axis + 1; d < rank; ++d) inner *= static_cast<uint64_t>(q.dims[static_cast<size_t>(d)]);
  }
  std::vector<float> w(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t c = nscale == 1 ? 0 : i / inner % nscale;
    const int64_t zp = zero ? zero->int_at(c) : 0;
    w[i] = static_cast<float>(q.int_at(i) - zp) * static_cast<float>(scale.float_at(c));
  }
  conv.inputs[1] = constant_value(g, conv.name + "_dequantized_W", w, q.dims);
}

// A value of static type `dtype` [dims] (no constant).
Value* typed_value(Graph& g, const std::string& name, DType dtype, const std::vector<int64_t>& dims) {
  Value* v = g.add_fresh_value(name);
  v->type.dtype = dtype;
  v->type.has_rank = true;
  uint64_t bytes = dtype_size(dtype);
  for (int64_t d : dims) {
    v->type.dims.push_back(Dim{d, {}});
    bytes *= static_cast<uint64_t>(d);  // (dims of a value shape inference fixed: no overflow)
  }
  v->capacity_bytes = bytes;
  v->capacity_known = true;
  return v;
}

// A constant of raw bytes, type `dtype` [dims].
Value* raw_constant(Graph& g, const std::string& name, DType dtype, const std::vector<int64_t>& dims,
                    std::vector<std::byte> bytes) {
  Value* v = typed_value(g, name, dtype, dims);
  auto t = std::make_shared<Tensor>();
  t->dtype = dtype;
  t->dims = dims;
  t->bytes = std::move(bytes);
  v->constant = std::move(t);
  return v;
}

// A Reshape of `x` to `y`'s static shape, as a new node named `name` (kernels run it as a view).
std::unique_ptr<Node> reshape_node(Graph& g, const Node& like, const std::string& name, Value* x, Value* y) {
  const std::vector<int64_t> dims = y->type.static_dims();
  std::vector<std::byte> bytes(dims.size() * sizeof(int64_t));
  std::memcpy(bytes.data(), dims.data(), bytes.size());
  auto n = std::make_unique<Node>();
  n->name = name;
  n->op_type = "Reshape";
  n->opset = std::max<int64_t>(like.opset, 14);
  n->graph = &g;
  n->inputs = {x, raw_constant(g, name + "_shape", DType::Int64, {static_cast<int64_t>(dims.size())}, std::move(bytes))};
  n->outputs = {y};
  y->producer = n.get();
  return n;
}

// A per-tensor quantization: a scale and zero point that are one-value constants.
struct Quantization {
  double scale = 0, zero = 0;
  DType type = DType::Undefined;  // the zero point's: the quantized data's
  bool operator==(const Quantization&) const = default;
};

// The quantization of a DequantizeLinear or QuantizeLinear node of 3 inputs; nullopt unless its
// scale is a finite normal positive float32 constant and its zero point an 8-bit constant. (A
// normal scale keeps (q - z) * s / s within a rounding of q - z for every 8-bit q.)
std::optional<Quantization> quantization_of(const Node* n, const char* op) {
  if (!is_op(n, op, 3)) return std::nullopt;
  Quantization q;
  const Value* zp = n->inputs[2];
  if (!scalar_constant(n->inputs[1], q.scale) || !scalar_constant(zp, q.zero) ||
      n->inputs[1]->constant->dtype != DType::Float32 || !is_8bit(zp->constant->dtype) ||
      !(q.scale >= std::numeric_limits<float>::min()) || !std::isfinite(q.scale))
    return std::nullopt;
  q.type = zp->constant->dtype;
  return q;
}

// The 8-bit input of a DequantizeLinear of `g` whose quantization is per tensor (quantization_of),
// and that quantization; null when it is not one.
Value* dequantized_bytes(const Node* dq, const Graph& g, Quantization& q) {
  const std::optional<Quantization> got = quantization_of(dq, "DequantizeLinear");
  if (!got || dq->graph != &g || !dq->inputs[0] || dq->inputs[0]->type.dtype != got->type) return nullptr;
  q = *got;
  return dq->inputs[0];
}

// DequantizeLinear(xq, s, z) -> MaxPool -> QuantizeLinear(s, z)  ==>  MaxPool(xq) on the bytes.
// Dequantizing is increasing (s > 0), so the largest dequantized value is the dequantized largest
// byte, and quantizing it again with the same s and z gives that byte back: the same output,
// without the float32 tensors (ONNX Runtime drops these pairs too).
bool fuse_qdq_max_pool(Graph& g, Node& pool, std::unordered_set<const Node*>& dead) {
  if (pool.outputs.size() != 1 || pool.inputs.size() != 1 || !pool.inputs[0] || !pool.outputs[0] ||
      pool.attr_int("storage_order", 0) != 0)
    return false;
  Node* q = sole_consumer(pool.outputs[0]);
  const std::optional<Quantization> out = quantization_of(q, "QuantizeLinear");
  Quantization in;
  Value* xq = dequantized_bytes(pool.inputs[0]->producer, g, in);
  if (!xq || !out || in != *out) return false;
  pool.inputs[0] = xq;
  g.absorb_output(pool, *q);
  dead.insert(q);
  return true;
}

// DequantizeLinear(xq, s, z) -> Resize -> QuantizeLinear(s', z')  ==>  Resize(xq) from bytes to bytes
// (ir/fused_dequantize.h's memplan_quantized): the kernel dequantizes, resamples and quantizes each
// plane with the three nodes' own loops, so the same bytes, without the two float32 tensors (four
// times the bytes) and their passes over memory (the upsampling of a QDQ segmentation decoder).
// Static shapes whose dims but the last two keep their size, as the kernel resamples planes.
bool fuse_qdq_resize(Graph& g, Node& resize, std::unordered_set<const Node*>& dead) {
  if (resize.opset < 11 || resize.outputs.size() != 1 || !resize.outputs[0] || resize.inputs.empty() ||
      resize.inputs.size() > 4 || !resize.inputs[0] || resize.attr_string("coordinate_transformation_mode", "") == "tf_crop_and_resize")
    return false;
  Node* dq = resize.inputs[0]->producer;
  Node* q = sole_consumer(resize.outputs[0]);
  const std::optional<Quantization> out = quantization_of(q, "QuantizeLinear");
  Quantization in;
  Value* xq = dequantized_bytes(dq, g, in);
  if (!xq || !out || q->graph != &g) return false;
  const Value* y = resize.outputs[0];
  if (!xq->type.is_static() || xq->shape_varies || !y->type.is_static() || y->shape_varies) return false;
  const std::vector<int64_t> from = xq->type.static_dims(), to = y->type.static_dims();
  if (from.size() < 2 || from.size() != to.size() || !std::equal(from.begin(), from.end() - 2, to.begin())) return false;
  resize.inputs.resize(kResizeInScaleInput, nullptr);
  resize.inputs[0] = xq;
  static_assert(kResizeInZeroInput == kResizeInScaleInput + 1 && kResizeOutScaleInput == kResizeInScaleInput + 2 &&
                kResizeOutZeroInput == kResizeInScaleInput + 3);
  resize.inputs.insert(resize.inputs.end(), {dq->inputs[1], dq->inputs[2], q->inputs[1], q->inputs[2]});
  set_flag(resize, kQuantizedResizeAttr);
  g.absorb_output(resize, *q);
  dead.insert(q);
  return true;
}

// DequantizeLinear(a) + DequantizeLinear(b) -> QuantizeLinear  ==>  Add(a, b) from bytes to bytes
// (ir/fused_dequantize.h's memplan_quantized Add): each element dequantized, added and quantized
// by the three nodes' own operations, so the same bytes, without the three float32 tensors (a QDQ
// ResNet's residual connections: ONNX Runtime runs them as QLinearAdd). One static shape for all.
bool fuse_qdq_add(Graph& g, Node& add, std::unordered_set<const Node*>& dead) {
  if (add.inputs.size() != 2 || add.outputs.size() != 1 || !add.outputs[0] || !add.inputs[0] || !add.inputs[1])
    return false;
  Node* dqa = add.inputs[0]->producer;
  Node* dqb = add.inputs[1]->producer;
  Node* q = sole_consumer(add.outputs[0]);
  Quantization qa, qb;
  Value* a = dequantized_bytes(dqa, g, qa);
  Value* b = dequantized_bytes(dqb, g, qb);
  if (!a || !b || !quantization_of(q, "QuantizeLinear") || q->graph != &g) return false;
  const Value* y = add.outputs[0];
  for (const Value* v : {static_cast<const Value*>(a), static_cast<const Value*>(b), y})
    if (!v->type.is_static() || v->shape_varies || v->type.static_dims() != y->type.static_dims()) return false;
  add.inputs = {a, b, dqa->inputs[1], dqa->inputs[2], dqb->inputs[1], dqb->inputs[2], q->inputs[1], q->inputs[2]};
  static_assert(kAddScaleInput == 2);
  set_flag(add, kQuantizedAddAttr);
  g.absorb_output(add, *q);
  dead.insert(q);
  return true;
}

// Concat(DequantizeLinear(x_i, s_i, z_i), ...) -> QuantizeLinear(s, z)  ==>  Concat(x_i'), with
// x_i' = x_i where (s_i, z_i) is (s, z) (the round trip gives each byte back, as for MaxPool) and
// x_i requantized from (s_i, z_i) to (s, z) where it is not (ir/fused_dequantize.h): the same
// elementwise ops on each element, before the copy instead of after it, so the same bytes. The
// Concat then copies bytes, or its producers write them in place, instead of float32 values
// (squeezenet's fire modules).
bool fuse_qdq_concat(Graph& g, Node& concat, std::unordered_set<const Node*>& dead, std::vector<Insertion>& insertions) {
  if (concat.outputs.size() != 1 || !concat.outputs[0] || concat.inputs.empty()) return false;
  Node* q = sole_consumer(concat.outputs[0]);
  const std::optional<Quantization> out = quantization_of(q, "QuantizeLinear");
  if (!out) return false;
  std::vector<Value*> bytes;
  std::vector<std::unique_ptr<Node>> requantize;
  for (Value* x : concat.inputs) {
    Node* dq = x ? x->producer : nullptr;
    Quantization in;
    Value* xq = dequantized_bytes(dq, g, in);
    if (!xq) return false;
    if (in == *out) {
      bytes.push_back(xq);
      continue;
    }
    if (!xq->type.is_static() || xq->shape_varies) return false;
    auto r = std::make_unique<Node>();
    r->outputs = {typed_value(g, xq->name + "_requantized", out->type, xq->type.static_dims())};
    r->name = r->outputs[0]->name;
    r->op_type = "QuantizeLinear";
    r->opset = q->opset;
    r->graph = &g;
    r->inputs = {xq, q->inputs[1], q->inputs[2], dq->inputs[1], dq->inputs[2]};
    static_assert(kRequantizeScaleInput == 3 && kRequantizeZeroInput == 4);
    set_flag(*r, kRequantizeAttr);
    r->outputs[0]->producer = r.get();
    bytes.push_back(r->outputs[0]);
    requantize.push_back(std::move(r));
  }
  for (auto& r : requantize) insertions.push_back({std::move(r), &concat, false});
  concat.inputs = bytes;
  g.absorb_output(concat, *q);
  dead.insert(q);
  return true;
}

// DequantizeLinear(xq [M, K]) -> Gemm(., DequantizeLinear(int8 W), float C) (a QDQ classifier, no
// QuantizeLinear after it)  ==>  Reshape(xq -> [M, K, 1, 1]) -> ConvInteger (dequantized, 1x1) ->
// Reshape(-> [M, N]): float(acc[m, n]) * (x_scale * w_scale[n]) + C[n], the int8 product ONNX
// Runtime runs for it, on oneDNN's int8 (or exact float32) convolution with its epilogue fused.
// The float Gemm it replaces needed W dequantized into the arena on every run (mobilenet_v2's
// classifier: 5.1 MB, the arena's peak). Scales and zero points must be constants, x's per
// tensor, W's per tensor or per output column.
bool fuse_qdq_gemm(Graph& g, Node& gemm, std::vector<Insertion>& insertions) {
  if (gemm.inputs.size() < 2 || gemm.inputs.size() > 3 || gemm.outputs.size() != 1 || !gemm.outputs[0]) return false;
  if (gemm.attr_float("alpha", 1.f) != 1.f || gemm.attr_float("beta", 1.f) != 1.f || gemm.attr_int("transA", 0) != 0)
    return false;
  const bool trans_b = gemm.attr_int("transB", 0) != 0;
  Node* dqx = gemm.inputs[0] ? gemm.inputs[0]->producer : nullptr;
  Node* dqw = gemm.inputs[1] ? gemm.inputs[1]->producer : nullptr;
  for (Node* n : {dqx, dqw})
    if (!is_op(n, "DequantizeLinear", 3) || n->graph != &g) return false;
  Value* y = gemm.outputs[0];
  Value* xq = dqx->inputs[0];
  double xs = 0, xz = 0;
  if (!scalar_constant(dqx->inputs[1], xs) || !scalar_constant(dqx->inputs[2], xz) || !(xs > 0) || !xq ||
      !is_8bit(xq->type.dtype) || dqx->inputs[2]->type.dtype != xq->type.dtype || !xq->type.is_static() ||
      xq->shape_varies || xq->type.dims.size() != 2 || !y->type.is_static() || y->shape_varies)
    return false;
  const Value* wq = dqw->inputs[0];
  if (!wq || !wq->constant || wq->constant->dtype != DType::Int8 || wq->constant->dims.size() != 2) return false;
  const int64_t rows = xq->type.dims[0].value, depth = xq->type.dims[1].value;
  const int64_t n_out = wq->constant->dims[trans_b ? 0 : 1];
  // (ConvInteger sums at most 2^15 products of up to 255 * 255 in int32.)
  if (wq->constant->dims[trans_b ? 1 : 0] != depth || y->type.static_dims() != std::vector<int64_t>{rows, n_out} ||
      depth > (int64_t{1} << 15))
    return false;
  const Value* ws = dqw->inputs[1];
  const Value* wz = dqw->inputs[2];
  if (!ws || !ws->constant || ws->constant->dtype != DType::Float32 || !wz || !wz->constant ||
      wz->constant->dtype != DType::Int8)
    return false;
  const uint64_t nscale = ws->constant->element_count();
  // Per output column: W's axis of N (0 transposed, 1 as is).
  if ((nscale != 1 && static_cast<int64_t>(nscale) != n_out) || wz->constant->element_count() != nscale ||
      (nscale > 1 && dqw->attr_int("axis", 1) != (trans_b ? 0 : 1)))
    return false;
  std::vector<float> bias;
  if (gemm.inputs.size() == 3 && gemm.inputs[2]) {
    const Value* c = gemm.inputs[2];
    if (!c->constant || c->constant->dtype != DType::Float32 || static_cast<int64_t>(c->constant->element_count()) != n_out ||
        c->constant->dims.empty() || c->constant->dims.back() != n_out)
      return false;  // a per-row or full C is not a per-channel bias
    for (uint64_t i = 0; i < c->constant->element_count(); ++i) bias.push_back(static_cast<float>(c->constant->float_at(i)));
  }
  // W as ConvInteger's [N, K, 1, 1]; the scales x_scale * w_scale[n], one float multiplication.
  std::vector<std::byte> w(static_cast<size_t>(n_out * depth));
  for (int64_t n = 0; n < n_out; ++n)
    for (int64_t k = 0; k < depth; ++k) {
      const auto at = static_cast<uint64_t>(trans_b ? n * depth + k : k * n_out + n);
      w[static_cast<size_t>(n * depth + k)] = static_cast<std::byte>(static_cast<int8_t>(wq->constant->int_at(at)));
    }
  std::vector<float> scale(nscale);
  for (uint64_t i = 0; i < nscale; ++i) scale[i] = static_cast<float>(xs) * static_cast<float>(ws->constant->float_at(i));

  const std::string& base = gemm.name;
  Value* x4 = typed_value(g, base + "_x_1x1", xq->type.dtype, {rows, depth, 1, 1});
  Value* y4 = typed_value(g, base + "_y_1x1", DType::Float32, {rows, n_out, 1, 1});
  insertions.push_back({reshape_node(g, gemm, base + "_to_1x1", xq, x4), &gemm, false});
  insertions.push_back({reshape_node(g, gemm, base + "_from_1x1", y4, y), &gemm, true});
  gemm.op_type = "ConvInteger";
  gemm.opset = 10;
  gemm.attributes.clear();
  set_flag(gemm, kDequantizedAttr);
  gemm.inputs = {x4, raw_constant(g, base + "_W_1x1", DType::Int8, {n_out, depth, 1, 1}, std::move(w)), dqx->inputs[2],
                 dqw->inputs[2], constant_value(g, base + "_scale", scale),
                 bias.empty() ? nullptr : constant_value(g, base + "_bias", bias)};
  if (bias.empty()) gemm.inputs.pop_back();
  gemm.outputs = {y4};
  y4->producer = &gemm;
  return true;
}

// The inputs of a quantized MatMul that its 1x1 convolution form moves: A, B and their zero points.
struct MatMulPorts {
  size_t a, a_zp, b, b_zp;
  const char* conv;  // the convolution it becomes
};
constexpr MatMulPorts kMatMulInteger{0, 2, 1, 3, "ConvInteger"};
// QLinearMatMul: a a_scale a_zp b b_scale b_zp y_scale y_zp, as QLinearConv's x x_scale x_zp w
// w_scale w_zp y_scale y_zp.
constexpr MatMulPorts kQLinearMatMul{0, 2, 3, 5, "QLinearConv"};

const Value* input_or_null(const Node& n, size_t i) { return i < n.inputs.size() ? n.inputs[i] : nullptr; }

// One value, of static shape.
bool one_value(const Value* v) {
  return v && v->type.is_static() && !v->shape_varies && checked_element_count(v->type.static_dims(), v->name) == 1;
}

// MatMulInteger or QLinearMatMul of A [..., M, K] by a constant B [K, N], as the 1x1 convolution it
// is (ConvInteger or QLinearConv, on oneDNN's int8 or float32 kernels): R = (...) * M rows of K
// channels in, N channels out. Whether it applies, checked before fuse_dequantize makes a
// MatMulInteger a form only ConvInteger's kernel runs.
bool matmul_as_conv_applies(const Node& mm, const MatMulPorts& p) {
  const bool qlinear = p.conv == kQLinearMatMul.conv;
  if (mm.inputs.size() < (qlinear ? 8u : 2u) || mm.inputs.size() > (qlinear ? 8u : 4u) || mm.outputs.size() != 1 ||
      !mm.outputs[0])
    return false;
  const Value* a = mm.inputs[p.a];
  const Value* b = mm.inputs[p.b];
  const Value* y = mm.outputs[0];
  if (!a || !b || a->constant || !b->constant || !is_8bit(a->type.dtype) || !is_8bit(b->constant->dtype) ||
      b->constant->dims.size() != 2 || !a->type.is_static() || a->shape_varies || a->type.dims.size() < 2 ||
      !y->type.is_static() || y->shape_varies)
    return false;
  const int64_t depth = a->type.dims.back().value, n_out = b->constant->dims[1];
  // (ConvInteger sums at most 2^15 products of up to 255 * 255 in int32.)
  if (b->constant->dims[0] != depth || depth > (int64_t{1} << 15) || y->type.static_dims().back() != n_out) return false;
  // The convolutions' zero points and scales: x's one value (a constant or not), W's one or one
  // per output channel (constants), y's one value.
  const Value* a_zp = input_or_null(mm, p.a_zp);
  const Value* b_zp = input_or_null(mm, p.b_zp);
  if (a_zp && (a_zp->type.dtype != a->type.dtype || !one_value(a_zp))) return false;
  const auto per_column = [&](const Value* v) {
    return v && v->constant && v->constant->dims.size() <= 1 &&
           (v->constant->element_count() == 1 || static_cast<int64_t>(v->constant->element_count()) == n_out);
  };
  if (b_zp && (!per_column(b_zp) || b_zp->constant->dtype != b->constant->dtype)) return false;
  if (qlinear && (!one_value(mm.inputs[1]) || !per_column(mm.inputs[4]) || !one_value(mm.inputs[6]) ||
                  !one_value(mm.inputs[7])))
    return false;
  return true;
}

// Rewrites a quantized MatMul (a MatMulInteger perhaps dequantized by fuse_dequantize) for which
// matmul_as_conv_applies into Reshape(A -> [R, K, 1, 1]) -> the convolution (W = B transposed to
// [N, K, 1, 1]) -> Reshape(-> [..., M, N]): the same sums, with the same epilogue.
void matmul_as_conv(Graph& g, Node& mm, const MatMulPorts& p, std::vector<Insertion>& insertions) {
  Value* a = mm.inputs[p.a];
  const Tensor& b = *mm.inputs[p.b]->constant;
  Value* y = mm.outputs[0];
  const int64_t depth = b.dims[0], n_out = b.dims[1];
  const std::vector<int64_t> a_dims = a->type.static_dims();
  const int64_t rows = static_cast<int64_t>(checked_element_count(a_dims, mm.describe()) / static_cast<uint64_t>(depth));
  const uint64_t elem = dtype_size(b.dtype);
  const std::vector<std::byte> bytes = b.materialize();
  std::vector<std::byte> w(bytes.size());
  for (int64_t k = 0; k < depth; ++k)
    for (int64_t n = 0; n < n_out; ++n)
      std::memcpy(&w[static_cast<size_t>((n * depth + k) * elem)], &bytes[static_cast<size_t>((k * n_out + n) * elem)], elem);
  const std::string& base = mm.name;
  Value* x4 = typed_value(g, base + "_x_1x1", a->type.dtype, {rows, depth, 1, 1});
  Value* y4 = typed_value(g, base + "_y_1x1", y->type.dtype, {rows, n_out, 1, 1});
  insertions.push_back({reshape_node(g, mm, base + "_to_1x1", a, x4), &mm, false});
  insertions.push_back({reshape_node(g, mm, base + "_from_1x1", y4, y), &mm, true});
  mm.op_type = p.conv;
  mm.opset = 10;
  mm.inputs[p.a] = x4;
  mm.inputs[p.b] = raw_constant(g, base + "_W_1x1", b.dtype, {n_out, depth, 1, 1}, std::move(w));
  mm.outputs = {y4};
  y4->producer = &mm;
}

}  // namespace

int fuse_quantized(Model& model) {
  int removed = 0;
  for_each_graph(*model.main, [&](Graph& g) {
    std::unordered_set<const Node*> dead;
    std::unordered_map<const Node*, size_t> position;
    for (size_t i = 0; i < g.nodes.size(); ++i) position[g.nodes[i].get()] = i;
    std::vector<std::pair<Node*, Node*>> hoists;  // (node, the ConvInteger it must precede)
    std::vector<Insertion> insertions;
    for (auto& n : g.nodes) {
      if (dead.count(n.get()) || !n->domain.empty() || n->outputs.empty() || !n->outputs[0]) continue;
      if (n->op_type == "ConvInteger") {
        fuse_dequantize(g, *n, dead, position, hoists);
      } else if (n->op_type == "MatMulInteger" && matmul_as_conv_applies(*n, kMatMulInteger)) {
        fuse_dequantize(g, *n, dead, position, hoists);
        matmul_as_conv(g, *n, kMatMulInteger, insertions);
      } else if (n->op_type == "QLinearMatMul" && matmul_as_conv_applies(*n, kQLinearMatMul)) {
        matmul_as_conv(g, *n, kQLinearMatMul, insertions);
      }
    }
    for (auto& n : g.nodes)
      if (!dead.count(n.get()) && n->op_type == "Conv" && n->domain.empty() && !n->outputs.empty() && n->outputs[0])
        if (!fuse_qdq_conv(g, *n, dead)) fold_weight_dequantize(g, *n);
    for (auto& n : g.nodes) {
      if (dead.count(n.get()) || !n->domain.empty()) continue;
      if (n->op_type == "MaxPool") fuse_qdq_max_pool(g, *n, dead);
      else if (n->op_type == "Concat") fuse_qdq_concat(g, *n, dead, insertions);
      else if (n->op_type == "Resize") fuse_qdq_resize(g, *n, dead);
      else if (n->op_type == "Add") fuse_qdq_add(g, *n, dead);
    }
    for (auto& n : g.nodes)
      if (n->op_type == "Gemm" && n->domain.empty() && !fuse_qdq_gemm(g, *n, insertions) &&
          weights_at_most(*n, kMaxKernelFoldedElements))
        fold_weight_dequantize(g, *n);  // as constant folding would have, had it not kept them
    for (Insertion& ins : insertions) {
      auto at = std::find_if(g.nodes.begin(), g.nodes.end(), [&](const auto& p) { return p.get() == ins.anchor; });
      g.nodes.insert(ins.after ? at + 1 : at, std::move(ins.node));
    }
    removed -= static_cast<int>(insertions.size());
    removed += static_cast<int>(dead.size());
    std::erase_if(g.nodes, [&](const std::unique_ptr<Node>& n) { return dead.count(n.get()) > 0; });
    for (auto [node, before] : hoists) {
      auto find = [&](const Node* x) {
        return std::find_if(g.nodes.begin(), g.nodes.end(), [x](const auto& p) { return p.get() == x; });
      };
      auto from = find(node);
      if (from < find(before)) continue;  // already before it (an earlier hoist moved it)
      std::unique_ptr<Node> moved = std::move(*from);
      g.nodes.erase(from);
      g.nodes.insert(find(before), std::move(moved));
    }
  });
  rebuild_uses(*model.main);
  // The DequantizeLinear nodes (of weights, or shared by several fused Convs) nothing reads now.
  for_each_graph(*model.main, [&](Graph& g) {
    std::vector<Value*> unread;
    std::erase_if(g.nodes, [&](const std::unique_ptr<Node>& n) {
      if (n->op_type != "DequantizeLinear" || !n->domain.empty() || n->outputs.size() != 1 || !n->outputs[0] ||
          n->outputs[0]->is_graph_output || !n->outputs[0]->consumers.empty())
        return false;
      unread.push_back(n->outputs[0]);
      ++removed;
      return true;
    });
    for (Value* v : unread) g.release_value(v);
  });
  rebuild_uses(*model.main);
  drop_unread_constants(*model.main);  // the scales and biases the fused nodes replaced
  return removed;
}

}  // namespace memplan
