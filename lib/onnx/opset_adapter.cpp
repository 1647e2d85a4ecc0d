#include "onnx/opset_adapter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>

#include "ir/resize_sizes.h"
#include "memplan/error.h"

namespace memplan {
namespace {

using H = OpsetHandling;

const char* kTypesOnly = "types widened (bfloat16, float8, int4, float4, string); runs as its version 17 form";

std::vector<OpsetRule> make_rules() {
  std::vector<OpsetRule> r;
  auto add = [&](std::initializer_list<const char*> ops, int since, H h, const std::string& how) {
    for (const char* op : ops) r.push_back({op, since, h, how});
  };
  // Opset 18.
  add({"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd",
       "ReduceSumSquare"},
      18, H::Rewrite,
      "axes became an optional input (with noop_with_empty_axes): constant axes become the attribute of version 13, "
      "none reduce every axis (or, with noop_with_empty_axes, an Identity); axes computed at run time are refused");
  add({"Split"}, 18, H::Rewrite,
      "num_outputs added: the split sizes (equal chunks, the last smaller) become the split input of version 13; "
      "the split axis must have a size known at compile time");
  add({"Pad"}, 18, H::Rewrite, "axes input added: constant axes spread the pads over every axis (version 13's form)");
  add({"Resize"}, 18, H::Rewrite,
      "antialias, axes and keep_aspect_ratio_policy added: axes spread scales and sizes over every axis, a policy "
      "other than stretch becomes one scale for the axes and the rounded sizes it gives; antialias runs on memplan's Resize kernel (linear and cubic, "
      "the filter widened when shrinking, as ONNX Runtime computes it)");
  add({"ScatterElements", "ScatterND"}, 18, H::Downgrade,
      "reduction max and min added: runs as version 16, whose kernel takes max and min too");
  add({"LpPool"}, 18, H::Downgrade,
      "ceil_mode and dilations added: memplan's window loop (runtime/kernels/dnnl/window_pool.cpp) takes both, as it "
      "takes every LpPool");
  add({"Mish"}, 18, H::Own, "new: x * tanh(softplus(x)), oneDNN's eltwise mish");
  add({"GroupNormalization"}, 18, H::Own, "new: memplan's kernel, scale and bias per group");
  add({"BitwiseAnd", "BitwiseOr", "BitwiseXor"}, 18, H::Own, "new: memplan's loops on every integer type, broadcasting");
  add({"BitwiseNot"}, 18, H::Own, "new: memplan's loop on every integer type");
  add({"CenterCropPad"}, 18, H::Rewrite,
      "new: a Pad of version 13 whose pads are negative where it crops (centred: the smaller half first), for "
      "a constant shape and an input shape known at compile time");
  add({"Col2Im"}, 18, H::Own, "new: memplan's kernel (float32, 2-D images, constant image and block shapes)");
  add({"OptionalGetElement", "OptionalHasElement"}, 18, H::Own,
      "a tensor or a sequence input added (its own element, always present): the session runs both on its "
      "containers (runtime/container_exec.cpp), as every sequence and optional op");
  // Opset 19.
  add({"AveragePool"}, 19, H::Downgrade,
      "dilations added: dilated windows run on memplan's window loop (oneDNN 2.6 has only its reference kernel for "
      "them), the others as version 11 on oneDNN");
  add({"Cast", "CastLike"}, 19, H::Rewrite,
      "float8 types and saturate (for float8 only) added: runs as version 13; a float8 target is refused");
  add({"QuantizeLinear"}, 19, H::Rewrite,
      "float8 types and saturate added: runs as version 13 for 8-bit integers; float8 is refused");
  add({"DequantizeLinear"}, 19, H::Rewrite, "float8 types added: runs as version 13 for 8-bit integers; float8 is refused");
  add({"Constant", "Equal", "Identity", "If", "Loop", "Reshape", "Scan", "Shape", "Size"}, 19, H::Downgrade, kTypesOnly);
  add({"Pad"}, 19, H::Rewrite, "mode wrap added: memplan's Pad kernel wraps; otherwise as version 18");
  add({"Resize"}, 19, H::Rewrite,
      "coordinate_transformation_mode half_pixel_symmetric added: memplan's Resize kernel takes it; otherwise as "
      "version 18");
  add({"DeformConv"}, 19, H::Own,
      "new: memplan's kernel (float32, 2-D; groups, offset groups, optional bias and mask; bilinear samples, zeros "
      "outside the image)");
  // Opset 20.
  add({"ReduceMax", "ReduceMin"}, 20, H::Rewrite, "bool added: as version 18; bool inputs are refused");
  add({"DFT"}, 20, H::Rewrite,
      "axis became an input (default -2): a constant axis becomes the attribute of version 17; one computed at run "
      "time is refused");
  add({"GridSample"}, 20, H::Rewrite,
      "modes renamed (linear, cubic) and N-D inputs added: 4-D inputs run as version 16 (bilinear, bicubic); other "
      "ranks are refused");
  add({"ConstantOfShape", "IsInf", "IsNaN"}, 20, H::Downgrade, kTypesOnly);
  add({"Gelu"}, 20, H::Own, "new: oneDNN's eltwise gelu_erf (approximate none) or gelu_tanh (tanh)");
  add({"AffineGrid"}, 20, H::Own, "new: memplan's kernel (float32, 2-D and 3-D, a constant size)");
  add({"ImageDecoder", "RegexFullMatch", "StringConcat", "StringSplit"}, 20, H::Refuse,
      "string and image ops are not supported");
  // Opset 21.
  add({"Cast", "CastLike"}, 21, H::Rewrite, "int4 types added: as version 19; an int4 target is refused");
  add({"QuantizeLinear"}, 21, H::Rewrite,
      "block_size, output_dtype, 16-bit and 4-bit types added: runs as version 13 for 8-bit integers per tensor or "
      "per axis (output_dtype becomes a zero point); blocked (block_size) to 8-bit integers becomes Gather, Div, "
      "Round, Add, Clip and Cast, each block's scale gathered along the axis");
  add({"DequantizeLinear"}, 21, H::Rewrite,
      "block_size, 16-bit and 4-bit types added: runs as version 13 for 8-bit integers per tensor or per axis; "
      "blocked (block_size) becomes Gather, Cast, Sub and Mul, each block's scale gathered along the axis");
  add({"Constant", "ConstantOfShape", "Flatten", "Identity", "If", "Loop", "QLinearMatMul", "Reshape", "Scan", "Shape",
       "Size", "Squeeze", "Transpose", "Unsqueeze"},
      21, H::Downgrade, kTypesOnly);
  add({"Pad"}, 21, H::Rewrite, "int4 types added: as version 19");
  add({"GroupNormalization"}, 21, H::Own, "scale and bias per channel, stash_type: memplan's kernel (stash_type 1)");
  // Opset 22: bfloat16 for the float ops.
  add({"Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Bernoulli", "Conv", "ConvTranspose", "Cos", "Cosh", "Det",
       "Dropout", "Elu", "EyeLike", "GRU", "GlobalAveragePool", "GlobalLpPool", "GlobalMaxPool", "HardSigmoid",
       "HardSwish", "InstanceNormalization", "LSTM", "LpNormalization", "MaxPool", "MaxRoiPool", "MaxUnpool",
       "Multinomial", "NegativeLogLikelihoodLoss", "RNN", "RandomNormal", "RandomNormalLike", "RandomUniform",
       "RandomUniformLike", "RoiAlign", "Round", "Selu", "Sin", "Sinh", "Softplus", "Softsign", "Tan", "ThresholdedRelu"},
      22, H::Downgrade, kTypesOnly);
  add({"AveragePool"}, 22, H::Downgrade, "bfloat16 added: as version 19");
  add({"LpPool"}, 22, H::Downgrade, "bfloat16 added: as version 18");
  add({"GridSample"}, 22, H::Rewrite, "bfloat16 added: as version 20");
  add({"Mish"}, 22, H::Own, "bfloat16 added: as version 18");
  add({"DeformConv"}, 22, H::Own, "bfloat16 added: as version 19");
  // Opset 23.
  add({"Cast", "CastLike"}, 23, H::Rewrite, "float4 added: as version 21; a float4 target is refused");
  add({"QuantizeLinear", "DequantizeLinear"}, 23, H::Rewrite, "float4 added: as version 21");
  add({"Constant", "ConstantOfShape", "Flatten", "Identity", "If", "Loop", "Reshape", "Scan", "Shape", "Size", "Squeeze",
       "Transpose", "Unsqueeze"},
      23, H::Downgrade, kTypesOnly);
  add({"Pad"}, 23, H::Rewrite, "float4 added: as version 21");
  add({"RMSNormalization"}, 23, H::Own, "new: memplan's kernel (float32, stash_type 1), scale broadcast over the normalized axes");
  add({"RotaryEmbedding"}, 23, H::Own,
      "new: memplan's kernel (float32; halves or interleaved, partial rotation, position_ids or per-position caches)");
  add({"Attention"}, 23, H::Own,
      "new: memplan's kernel (float32; grouped heads, bool or float mask, causal, scale, softcap, a key/value cache "
      "with present_key/present_value; qk_matmul_output is refused)");
  std::sort(r.begin(), r.end(), [](const OpsetRule& a, const OpsetRule& b) {
    return a.op != b.op ? a.op < b.op : a.since < b.since;
  });
  return r;
}

// What a rule works on, and how it refuses.
struct Adapting {
  Model& model;
  Graph& g;
  Node& n;
  int version;  // the op version the node's opset selects

  [[noreturn]] void refuse(const std::string& why) const {
    fail_unsupported(model.path + ": " + g.path() + ": " + n.describe() + " (ai.onnx " + n.op_type + "-" +
                     std::to_string(version) + "): " + why);
  }
  const Value* input(size_t i) const { return i < n.inputs.size() ? n.inputs[i] : nullptr; }
  // A constant input's values as integers; refuses one computed at run time.
  std::vector<int64_t> constant_ints(size_t i, const char* what) const {
    const Value* v = input(i);
    if (!v->constant) refuse(std::string("its ") + what + " input is computed at run time; memplan needs it constant");
    if (v->constant->dtype != DType::Int64 && v->constant->dtype != DType::Int32)
      refuse(std::string("its ") + what + " input is " + dtype_name(v->constant->dtype) + "; ONNX requires int64");
    return v->constant->to_ints();
  }
  // Inputs change with the uses kept current where they are exact (values of the node's own
  // graph); shape inference rebuilds the rest when it ends. No whole-model rebuild per node.
  void unlink(Value* v) {
    if (v && v->graph == &g && std::find(n.inputs.begin(), n.inputs.end(), v) == n.inputs.end())
      std::erase(v->consumers, &n);
  }
  void drop_inputs_from(size_t i) {
    if (n.inputs.size() <= i) return;
    std::vector<Value*> dropped(n.inputs.begin() + static_cast<std::ptrdiff_t>(i), n.inputs.end());
    n.inputs.resize(i);
    for (Value* v : dropped) unlink(v);
  }
  void set_input(size_t i, Value* v) {
    if (n.inputs.size() <= i) n.inputs.resize(i + 1, nullptr);
    Value* old = n.inputs[i];
    n.inputs[i] = v;
    unlink(old);
    if (v->graph == &g && std::find(v->consumers.begin(), v->consumers.end(), &n) == v->consumers.end())
      v->consumers.push_back(&n);
  }
  Value* int64_constant(const std::string& what, const std::vector<int64_t>& values) {
    return g.add_constant(n.name + "_" + what, make_int64_tensor({static_cast<int64_t>(values.size())}, values));
  }
  Value* float_scalar(const std::string& what, float value) {
    Tensor t;
    t.dtype = DType::Float32;
    t.bytes.resize(sizeof(float));
    std::memcpy(t.bytes.data(), &value, sizeof(float));
    return g.add_constant(n.name + "_" + what, std::move(t));
  }
  // A version-17 node doing part of a rewrite, put before the adapted node (which stays last and
  // writes the node's outputs); returns its one output. adapt_opset then says nodes were added.
  Value* emit(const std::string& op, std::vector<Value*> inputs, const std::function<void(Node&)>& set_attributes = {}) {
    auto m = std::make_unique<Node>();
    m->name = n.name + "/" + op + "_" + std::to_string(emitted);
    m->op_type = op;
    m->opset = kOnnxSchemaOpset;
    m->graph = &g;
    m->inputs = std::move(inputs);
    Value* out = g.add_fresh_value(m->name);
    out->producer = m.get();
    m->outputs = {out};
    for (Value* v : m->inputs)
      if (v && v->graph == &g) v->consumers.push_back(m.get());
    if (set_attributes) set_attributes(*m);
    auto at = std::find_if(g.nodes.begin(), g.nodes.end(), [&](const std::unique_ptr<Node>& p) { return p.get() == &n; });
    g.nodes.insert(at, std::move(m));
    ++emitted;
    return out;
  }
  int emitted = 0;
  int64_t rank_of(size_t i) const {
    const Value* v = input(i);
    if (!v || !v->type.has_rank) refuse("the rank of input " + std::to_string(i) + " is not known at compile time");
    return static_cast<int64_t>(v->type.dims.size());
  }
  int64_t axis(int64_t a, int64_t rank, const char* what) const {
    if (a < -rank || a >= rank)
      refuse(std::string(what) + " " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    return a < 0 ? a + rank : a;
  }
  void require_default_ints(const char* attr, int64_t value) const {
    for (int64_t v : n.attr_ints(attr))
      if (v != value) refuse(std::string("attribute ") + attr + " other than " + std::to_string(value) + " is not supported");
  }
  void require_default_int(const char* attr, int64_t value) const {
    if (n.attr_int(attr, value) != value)
      refuse(std::string("attribute ") + attr + " = " + std::to_string(n.attr_int(attr, value)) + " is not supported");
  }
};

bool is_reduce(const std::string& op) { return op.rfind("Reduce", 0) == 0; }

void adapt_reduce(Adapting& a) {
  Node& n = a.n;
  if (a.version >= 20 && a.input(0) && a.input(0)->type.dtype == DType::Bool) a.refuse("bool inputs are not supported");
  const bool noop = n.attr_int("noop_with_empty_axes", 0) != 0;
  n.erase_attr("noop_with_empty_axes");
  std::vector<int64_t> axes;
  if (a.input(1)) axes = a.constant_ints(1, "axes");
  a.drop_inputs_from(1);
  if (!axes.empty()) {
    n.set_attr_ints("axes", axes);
  } else if (noop) {  // no axes and noop_with_empty_axes: the input, unreduced
    n.op_type = "Identity";
    n.attributes.clear();
  }
}

void adapt_split(Adapting& a) {
  Node& n = a.n;
  const Attribute* count_attr = n.attr("num_outputs");
  if (!count_attr) return;  // version 13's form
  const int64_t count = count_attr->i;
  n.erase_attr("num_outputs");
  if (a.input(1)) a.refuse("it has both a split input and num_outputs");
  if (count < 1 || count != static_cast<int64_t>(n.outputs.size()))
    a.refuse("num_outputs is " + std::to_string(count) + " but it has " + std::to_string(n.outputs.size()) + " outputs");
  const int64_t rank = a.rank_of(0);
  const int64_t axis = a.axis(n.attr_int("axis", 0), rank, "axis");
  const Dim& d = a.input(0)->type.dims[static_cast<size_t>(axis)];
  if (!d.known()) a.refuse("num_outputs splits axis " + std::to_string(axis) + ", whose size is known only at run time");
  // Equal chunks of ceil(size / count); the last holds what remains.
  const int64_t chunk = (d.value + count - 1) / count, last = d.value - chunk * (count - 1);
  if (last < 0)
    a.refuse("num_outputs " + std::to_string(count) + " does not fit axis " + std::to_string(axis) + " of size " +
             std::to_string(d.value));
  std::vector<int64_t> sizes(static_cast<size_t>(count), chunk);
  sizes.back() = last;
  a.set_input(1, a.int64_constant("split", sizes));
}

void adapt_pad(Adapting& a) {
  if (!a.input(3)) return a.drop_inputs_from(3);
  const std::vector<int64_t> axes = a.constant_ints(3, "axes");
  const std::vector<int64_t> pads = a.constant_ints(1, "pads");
  if (pads.size() != 2 * axes.size())
    a.refuse("it has " + std::to_string(pads.size()) + " pads for " + std::to_string(axes.size()) + " axes");
  const int64_t rank = a.rank_of(0);
  std::vector<int64_t> full(static_cast<size_t>(2 * rank), 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t ax = a.axis(axes[k], rank, "axis");
    full[static_cast<size_t>(ax)] = pads[k];
    full[static_cast<size_t>(ax + rank)] = pads[k + axes.size()];
  }
  a.drop_inputs_from(3);
  a.set_input(1, a.int64_constant("pads", full));
}

void adapt_resize(Adapting& a) {
  Node& n = a.n;
  // antialias stays on the node: memplan's Resize kernel reads it (version 13's schema, which
  // infers the shapes, ignores it, and the sizes do not depend on it).
  const std::vector<int64_t> axes_attr = n.attr_ints("axes");
  const std::string policy = n.attr_string("keep_aspect_ratio_policy", "stretch");
  n.erase_attr("axes");
  n.erase_attr("keep_aspect_ratio_policy");
  if (axes_attr.empty() && policy == "stretch") return;
  const int64_t rank = a.rank_of(0);
  std::vector<int64_t> axes;
  for (int64_t ax : axes_attr) axes.push_back(a.axis(ax, rank, "axis"));
  if (axes.empty())
    for (int64_t ax = 0; ax < rank; ++ax) axes.push_back(ax);
  const Value* scales = a.input(2);
  const Value* sizes = a.input(3);
  auto set_scales = [&](const std::vector<float>& full) {
    Tensor t;
    t.dtype = DType::Float32;
    t.dims = {rank};
    t.bytes.resize(full.size() * sizeof(float));
    std::memcpy(t.bytes.data(), full.data(), t.bytes.size());
    a.drop_inputs_from(3);
    a.set_input(2, a.g.add_constant(n.name + "_scales", std::move(t)));
  };
  if (scales && scales->constant && scales->constant->element_count() > 0) {
    if (policy != "stretch") a.refuse("keep_aspect_ratio_policy applies to sizes, but it has scales");
    if (scales->constant->element_count() != axes.size()) a.refuse("its scales do not match its axes");
    std::vector<float> full(static_cast<size_t>(rank), 1.f);
    for (size_t k = 0; k < axes.size(); ++k) full[static_cast<size_t>(axes[k])] = static_cast<float>(scales->constant->float_at(k));
    return set_scales(full);
  }
  if (scales && !scales->constant) a.refuse("its scales are computed at run time; axes need them constant");
  if (!sizes) a.refuse("it has neither scales nor sizes");
  std::vector<int64_t> given = a.constant_ints(3, "sizes");
  if (given.size() != axes.size()) a.refuse("its sizes do not match its axes");
  const Value* x = a.input(0);
  if (!x->type.is_static()) a.refuse("axes or keep_aspect_ratio_policy need the input's shape at compile time");
  const std::vector<int64_t> in = x->type.static_dims();
  if (policy == "stretch") {
    std::vector<int64_t> full = in;
    for (size_t k = 0; k < axes.size(); ++k) full[static_cast<size_t>(axes[k])] = given[k];
    return a.set_input(3, a.int64_constant("sizes", full));
  }
  if (policy != "not_larger" && policy != "not_smaller")
    a.refuse("keep_aspect_ratio_policy '" + policy + "' is not one ONNX defines");
  // One scale for every axis given (the smallest or the largest ratio), which the resampling uses
  // too: version 13's scales. The policy rounds the output size where version 13 floors it; where
  // they differ, the rounded shape goes with the node (ir/resize_sizes.h).
  for (size_t k = 0; k < axes.size(); ++k)
    if (given[k] <= 0 || in[static_cast<size_t>(axes[k])] <= 0)
      a.refuse("keep_aspect_ratio_policy needs positive sizes and input dims along its axes");
  float scale = 0;
  for (size_t k = 0; k < axes.size(); ++k) {
    const float r = static_cast<float>(given[k]) / static_cast<float>(in[static_cast<size_t>(axes[k])]);
    scale = k == 0 ? r : policy == "not_larger" ? std::min(scale, r) : std::max(scale, r);
  }
  std::vector<float> full(static_cast<size_t>(rank), 1.f);
  std::vector<int64_t> shape = in;
  bool rounded = false;
  for (int64_t ax : axes) {
    const double exact = static_cast<double>(in[static_cast<size_t>(ax)]) * static_cast<double>(scale);
    // The sizes come from the file: a ratio far from 1 on another axis must not overflow this one.
    constexpr double kLargestExactInteger = 9007199254740992.0;  // 2^53
    if (!(exact < kLargestExactInteger)) a.refuse("keep_aspect_ratio_policy makes axis " + std::to_string(ax) + " too large");
    shape[static_cast<size_t>(ax)] = static_cast<int64_t>(std::floor(exact + 0.5));
    rounded = rounded || std::floor(exact) != std::floor(exact + 0.5);
    full[static_cast<size_t>(ax)] = scale;
  }
  if (rounded) n.set_attr_ints(kResizeOutputShapeAttr, shape);
  set_scales(full);
}

// The float8, int4 and float4 element types: read by name, run by no kernel.
void refuse_newer_type(const Adapting& a, int64_t type, const char* what) {
  if (dtype_is_newer_than_onnx_1_12(static_cast<int32_t>(type)))
    a.refuse(std::string(what) + " " + dtype_name(static_cast<DType>(type)) + " is not supported");
}

void adapt_cast(Adapting& a) {
  a.n.erase_attr("saturate");  // meaningful for float8 targets only
  if (a.n.op_type == "Cast") refuse_newer_type(a, a.n.attr_int("to", 0), "target type");
}

// Blocked quantization (version 21's block_size B along `axis`): the scale and zero point hold one
// value per B consecutive elements of that axis, their dim there ceil(size / B). Version 13 has no
// such form, so the node becomes the arithmetic it stands for, on ops memplan runs, with each
// block's scale gathered to every element of the axis (constant scales fold at compile time):
//   DequantizeLinear:  y = (Cast<float>(x) - Cast<float>(zero[i / B])) * scale[i / B]
//   QuantizeLinear:    y = Cast<T>(Clip(Round(x / scale[i / B]) + Cast<float>(zero[i / B]), T's range))
// Round is ONNX's, halves to even, as QuantizeLinear rounds.
void adapt_blocked_quantize(Adapting& a, int64_t block) {
  Node& n = a.n;
  const bool quantize = n.op_type == "QuantizeLinear";
  const Value *x = a.input(0), *scale = a.input(1), *zero = a.input(2);
  if (!x || !scale) a.refuse("takes x and a scale");
  const int64_t rank = a.rank_of(0);
  const int64_t axis = a.axis(n.attr_int("axis", 1), rank, "axis");
  const auto ax = static_cast<size_t>(axis);
  const Dim& length = x->type.dims[ax];
  if (!length.known()) a.refuse("blocked quantization needs the size of axis " + std::to_string(axis) + " at compile time");
  const int64_t blocks = (length.value + block - 1) / block;
  for (const Value* p : {scale, zero}) {
    if (!p) continue;
    if (!p->type.has_rank || static_cast<int64_t>(p->type.dims.size()) != rank)
      a.refuse("blocked quantization needs '" + p->name + "' of the input's rank " + std::to_string(rank));
    for (size_t d = 0; d < p->type.dims.size(); ++d) {
      const Dim& want = d == ax ? Dim{blocks, {}} : x->type.dims[d];
      if (p->type.dims[d].known() && want.known() && p->type.dims[d].value != want.value)
        a.refuse("'" + p->name + "' has shape " + p->type.shape_string() + "; block_size " + std::to_string(block) +
                 " on axis " + std::to_string(axis) + " of " + x->type.shape_string() + " needs " +
                 std::to_string(blocks) + " there and the input's sizes elsewhere");
    }
  }
  DType out = DType::Float32;
  if (quantize) {
    const int64_t asked = n.attr_int("output_dtype", 0);
    if (zero && asked != 0 && asked != static_cast<int64_t>(zero->type.dtype))
      a.refuse("output_dtype differs from its zero point's type");
    out = zero ? zero->type.dtype : static_cast<DType>(asked != 0 ? asked : static_cast<int64_t>(DType::Uint8));
    if (out != DType::Uint8 && out != DType::Int8)
      a.refuse("blocked quantization to " + dtype_name(out) + " is not supported (uint8 and int8 only)");
  } else if (n.attr_int("output_dtype", 1) != 1) {
    a.refuse("output_dtype other than float32 is not supported");
  }
  std::vector<int64_t> index(static_cast<size_t>(length.value));
  for (int64_t i = 0; i < length.value; ++i) index[static_cast<size_t>(i)] = i / block;
  Value* at = a.int64_constant("block_of", index);
  const auto gather = [&](const Value* p) {
    return a.emit("Gather", {const_cast<Value*>(p), at}, [&](Node& m) { m.set_attr_int("axis", axis); });
  };
  const auto to_float = [&](Value* v) {
    return a.emit("Cast", {v}, [](Node& m) { m.set_attr_int("to", static_cast<int64_t>(DType::Float32)); });
  };
  Value* s = gather(scale);
  Value* z = zero ? to_float(gather(zero)) : nullptr;
  n.attributes.clear();
  if (quantize) {
    Value* r = a.emit("Round", {a.emit("Div", {const_cast<Value*>(x), s})});
    if (z) r = a.emit("Add", {r, z});
    const bool is_signed = out == DType::Int8;
    Value* c = a.emit("Clip", {r, a.float_scalar("lowest", is_signed ? -128.f : 0.f),
                               a.float_scalar("highest", is_signed ? 127.f : 255.f)});
    n.op_type = "Cast";
    n.set_attr_int("to", static_cast<int64_t>(out));
    a.drop_inputs_from(0);
    a.set_input(0, c);
  } else {
    Value* d = to_float(const_cast<Value*>(x));
    if (z) d = a.emit("Sub", {d, z});
    n.op_type = "Mul";
    a.drop_inputs_from(0);
    a.set_input(0, d);
    a.set_input(1, s);
  }
}

void adapt_quantize(Adapting& a) {
  Node& n = a.n;
  n.erase_attr("saturate");
  if (const int64_t block = n.attr_int("block_size", 0); block != 0) {
    if (block < 0) a.refuse("block_size " + std::to_string(block) + " is negative");
    if (a.input(0) && dtype_is_newer_than_onnx_1_12(static_cast<int32_t>(a.input(0)->type.dtype)))
      a.refuse("input " + dtype_name(a.input(0)->type.dtype) + " is not supported");
    return adapt_blocked_quantize(a, block);
  }
  n.erase_attr("block_size");
  if (n.op_type != "QuantizeLinear") {
    if (n.attr_int("output_dtype", 1) != 1) a.refuse("output_dtype other than float32 is not supported");
    n.erase_attr("output_dtype");
    return;
  }
  const int64_t out = n.attr_int("output_dtype", 0);
  n.erase_attr("output_dtype");
  if (out == 0) return;
  refuse_newer_type(a, out, "output_dtype");
  const Value* zero = a.input(2);
  if (zero) {
    if (static_cast<int64_t>(zero->type.dtype) != out) a.refuse("output_dtype differs from its zero point's type");
    return;
  }
  // Version 13 takes its output type from the zero point: a zero of the type asked for.
  if (out != static_cast<int64_t>(DType::Uint8) && out != static_cast<int64_t>(DType::Int8))
    a.refuse("output_dtype " + dtype_name(static_cast<DType>(out)) + " is not supported");
  Tensor t;
  t.dtype = static_cast<DType>(out);
  t.bytes.assign(1, std::byte{0});
  a.set_input(2, a.g.add_constant(n.name + "_zero_point", std::move(t)));
}

void adapt_dft(Adapting& a) {
  Node& n = a.n;
  const int64_t rank = a.rank_of(0);
  int64_t axis = -2;
  if (a.input(2)) {
    const std::vector<int64_t> v = a.constant_ints(2, "axis");
    if (v.size() != 1) a.refuse("its axis input has " + std::to_string(v.size()) + " values");
    axis = v[0];
  }
  a.drop_inputs_from(2);
  // Version 17's axis counts the signal's axes (the last one holds real and imaginary parts).
  const int64_t ax = a.axis(axis, rank, "axis");
  if (ax == 0 || ax == rank - 1) a.refuse("axis " + std::to_string(axis) + " is the batch or the complex axis");
  n.set_attr_int("axis", ax);
}

void adapt_grid_sample(Adapting& a) {
  Node& n = a.n;
  if (a.rank_of(0) != 4) a.refuse("only 4-D inputs are supported");
  const std::string mode = n.attr_string("mode", "linear");
  n.set_attr_string("mode", mode == "linear" ? "bilinear" : mode == "cubic" ? "bicubic" : mode);
}

// Each axis cropped or zero-padded to its target size, centred (the smaller half before): a
// version 13 Pad with negative pads where it crops.
void adapt_center_crop_pad(Adapting& a) {
  Node& n = a.n;
  const Value* x = a.input(0);
  if (!x || !x->type.is_static()) a.refuse("its input's shape must be known at compile time");
  const std::vector<int64_t> in = x->type.static_dims();
  const auto rank = static_cast<int64_t>(in.size());
  const std::vector<int64_t> target = a.constant_ints(1, "shape");
  std::vector<int64_t> axes;
  for (int64_t ax : n.attr_ints("axes")) axes.push_back(a.axis(ax, rank, "axis"));
  if (axes.empty())
    for (int64_t ax = 0; ax < rank; ++ax) axes.push_back(ax);
  if (target.size() != axes.size()) a.refuse("its shape has " + std::to_string(target.size()) + " sizes for " + std::to_string(axes.size()) + " axes");
  std::vector<int64_t> pads(static_cast<size_t>(2 * rank), 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    if (target[k] < 0) a.refuse("its shape has a negative size");
    const int64_t grow = target[k] - in[static_cast<size_t>(axes[k])];
    const int64_t half = (grow < 0 ? -grow : grow) / 2, rest = (grow < 0 ? -grow : grow) - half;
    pads[static_cast<size_t>(axes[k])] = grow < 0 ? -half : half;
    pads[static_cast<size_t>(axes[k] + rank)] = grow < 0 ? -rest : rest;
  }
  n.op_type = "Pad";
  n.attributes.clear();
  a.drop_inputs_from(1);
  a.set_input(1, a.int64_constant("pads", pads));
}

using Adapter = void (*)(Adapting&);

Adapter adapter_for(const std::string& op) {
  static const std::map<std::string, Adapter> by_op = {
      {"Split", adapt_split},
      {"Pad", adapt_pad},
      {"Resize", adapt_resize},
      {"Cast", adapt_cast},
      {"CastLike", adapt_cast},
      {"QuantizeLinear", adapt_quantize},
      {"DequantizeLinear", adapt_quantize},
      {"DFT", adapt_dft},
      {"GridSample", adapt_grid_sample},
      {"CenterCropPad", adapt_center_crop_pad},
  };
  if (is_reduce(op)) return adapt_reduce;
  auto it = by_op.find(op);
  return it == by_op.end() ? nullptr : it->second;
}

}  // namespace

const std::vector<OpsetRule>& opset_rules() {
  static const std::vector<OpsetRule> rules = make_rules();
  return rules;
}

const OpsetRule* opset_rule_for(const Node& node) {
  if (!node.domain.empty() || node.opset <= kOnnxSchemaOpset) return nullptr;
  const OpsetRule* best = nullptr;
  for (const OpsetRule& r : opset_rules())
    if (r.op == node.op_type && r.since <= node.opset && (!best || r.since > best->since)) best = &r;
  return best;
}

bool adapt_opset(Model& model, Graph& g, size_t index) {
  Node& n = *g.nodes[index];
  if (!n.domain.empty() || n.opset <= kOnnxSchemaOpset) return false;
  const OpsetRule* rule = opset_rule_for(n);
  Adapting a{model, g, n, rule ? rule->since : 0};
  if (rule && rule->handling == H::Refuse) a.refuse(rule->how);
  if (rule && rule->handling == H::Own) return false;  // its own inference and kernel, at its version
  if (rule && rule->handling == H::Rewrite) {
    const Adapter adapt = adapter_for(n.op_type);
    if (!adapt) fail_internal("no adapter for " + n.op_type + "-" + std::to_string(rule->since));
    adapt(a);
  }
  n.opset = kOnnxSchemaOpset;
  return a.emitted > 0;
}

std::string opset_rules_markdown() {
  std::string out =
      "# ai.onnx opsets 18-23 in memplan\n\n"
      "Generated by `memplan opsets` from the opset adapter's rule table (`lib/onnx/opset_adapter.cpp`); do not "
      "edit by hand. memplan reads models of the default domain up to opset 23 and IR version 11. ONNX 1.12's "
      "schemas, which memplan infers and runs with, end at opset 17: each op version below is adapted to the "
      "highest version 1.12 knows, rewritten into its form, or refused naming op, version and node. Ops not "
      "listed did not change after opset 17 and run as they do there.\n\n"
      "| op | version | handling | what changed, and what memplan does |\n|---|---|---|---|\n";
  for (const OpsetRule& r : opset_rules()) {
    const char* h = r.handling == H::Downgrade ? "adapted"
                    : r.handling == H::Rewrite ? "rewritten"
                    : r.handling == H::Own     ? "memplan's kernel"
                                               : "refused";
    out += "| " + r.op + " | " + std::to_string(r.since) + " | " + h + " | " + r.how + " |\n";
  }
  return out;
}

}  // namespace memplan
