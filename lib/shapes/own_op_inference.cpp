#include "shapes/own_op_inference.h"

#include <algorithm>
#include <map>

#include "memplan/error.h"

namespace memplan {
namespace {

bool is_broadcasting(const std::string& op) { return op == "BitwiseAnd" || op == "BitwiseOr" || op == "BitwiseXor"; }

// numpy's broadcast of two shapes, dims aligned from the right; an unknown dim stays unknown
// unless the other is known and not 1.
TensorType broadcast(const TensorType& a, const TensorType& b, const std::string& where) {
  TensorType out;
  out.dtype = a.dtype;
  if (!a.has_rank || !b.has_rank) return out;
  out.has_rank = true;
  const size_t rank = std::max(a.dims.size(), b.dims.size());
  out.dims.resize(rank);
  for (size_t k = 0; k < rank; ++k) {
    const Dim* x = k < rank - a.dims.size() ? nullptr : &a.dims[k - (rank - a.dims.size())];
    const Dim* y = k < rank - b.dims.size() ? nullptr : &b.dims[k - (rank - b.dims.size())];
    if (!x || (x->known() && x->value == 1)) out.dims[k] = y ? *y : Dim{1, {}};
    else if (!y || (y->known() && y->value == 1) || !y->known()) out.dims[k] = *x;
    else if (!x->known() || x->value == y->value) out.dims[k] = *y;
    else fail(where + ": shapes " + a.shape_string() + " and " + b.shape_string() + " do not broadcast");
  }
  return out;
}

// Attention's Y: Q's shape with V's head size, [batch, q_heads, q_len, v_size] or, 3-D,
// [batch, q_len, q_heads * v_size]; present_key and present_value: the cache grown by the current
// block, [batch, kv_heads, past_len + kv_len, size]. qk_matmul_output is not given.
void infer_attention(Node& node, const std::string& where) {
  if (node.inputs.size() < 3 || node.inputs.size() > 6 || !node.inputs[0] || !node.inputs[1] || !node.inputs[2] ||
      node.outputs.empty() || !node.outputs[0] || node.outputs.size() > 4)
    fail(where + ": takes Q, K and V (and up to three optional inputs) and gives Y (and up to three optional outputs)");
  if (node.outputs.size() > 3 && node.outputs[3])
    fail_unsupported(where + ": the qk_matmul_output output is not supported (Y, present_key and present_value are)");
  for (size_t k = 1; k <= 2 && k < node.outputs.size(); ++k) {
    if (!node.outputs[k]) continue;
    const TensorType& cur = node.inputs[k]->type;  // K for present_key, V for present_value
    const Value* past = node.inputs.size() > k + 3 ? node.inputs[k + 3] : nullptr;
    TensorType present;
    present.dtype = cur.dtype;
    if (cur.has_rank && (cur.dims.size() == 4 || cur.dims.size() == 3)) {
      present.has_rank = true;
      const int64_t kv_heads = node.attr_int("kv_num_heads", 0);
      if (cur.dims.size() == 4) {
        present.dims = cur.dims;
      } else {
        const Dim& hidden = cur.dims[2];
        const bool known = kv_heads > 0 && hidden.known() && hidden.value % kv_heads == 0;
        present.dims = {cur.dims[0], kv_heads > 0 ? Dim{kv_heads, {}} : Dim{}, cur.dims[1],
                        known ? Dim{hidden.value / kv_heads, {}} : Dim{}};
      }
      if (past) {
        const TensorType& p = past->type;
        const bool sums = p.has_rank && p.dims.size() == 4 && p.dims[2].known() && present.dims[2].known();
        present.dims[2] = sums ? Dim{p.dims[2].value + present.dims[2].value, {}} : Dim{};
      }
    }
    node.outputs[k]->type = present;
  }
  const TensorType& q = node.inputs[0]->type;
  const TensorType& v = node.inputs[2]->type;
  TensorType y;
  y.dtype = q.dtype;
  if (q.has_rank && v.has_rank && q.dims.size() == 4 && v.dims.size() == 4) {
    y.has_rank = true;
    y.dims = {q.dims[0], q.dims[1], q.dims[2], v.dims[3]};
  } else if (q.has_rank && v.has_rank && q.dims.size() == 3 && v.dims.size() == 3) {
    y.has_rank = true;
    y.dims = {q.dims[0], q.dims[1], Dim{}};
    const int64_t qh = node.attr_int("q_num_heads", 0), kvh = node.attr_int("kv_num_heads", 0);
    if (qh > 0 && kvh > 0 && v.dims[2].known() && v.dims[2].value % kvh == 0) y.dims[2] = Dim{qh * (v.dims[2].value / kvh), {}};
  }
  node.outputs[0]->type = y;
}

// Col2Im's image [N, C, image_shape...] and AffineGrid's grid [N, spatial..., rank], from their
// constant shape inputs; unranked where those are computed at run time.
void infer_from_shape_input(Node& node, const std::string& where) {
  const bool col2im = node.op_type == "Col2Im";
  if (node.inputs.size() != (col2im ? 3u : 2u) || node.outputs.size() != 1 || !node.outputs[0])
    fail(where + ": takes " + std::string(col2im ? "3" : "2") + " inputs and gives one output");
  for (const Value* in : node.inputs)
    if (!in) fail(where + ": every input is required");
  TensorType out;
  out.dtype = node.inputs[0]->type.dtype;
  const Value* shape = node.inputs[1];
  if (shape->constant) {
    const std::vector<int64_t> dims = shape->constant->to_ints();
    const TensorType& x = node.inputs[0]->type;
    if (col2im && node.inputs[2]->constant && x.has_rank && x.dims.size() == 3) {
      int64_t kernel = 1;
      for (int64_t b : node.inputs[2]->constant->to_ints()) kernel *= b;
      out.has_rank = true;
      out.dims = {x.dims[0], x.dims[1].known() && kernel > 0 ? Dim{x.dims[1].value / kernel, {}} : Dim{}};
      for (int64_t d : dims) out.dims.push_back(Dim{d, {}});
    } else if (!col2im && dims.size() >= 4) {
      out.has_rank = true;
      out.dims.push_back(Dim{dims[0], {}});
      for (size_t k = 2; k < dims.size(); ++k) out.dims.push_back(Dim{dims[k], {}});
      out.dims.push_back(Dim{static_cast<int64_t>(dims.size()) - 2, {}});
    }
  }
  node.outputs[0]->type = out;
}

// DeformConv's Y [N, M, out...]: N from X, M from W, each spatial size a convolution's
// (in + pads - dilated kernel) / stride + 1, the kernel from kernel_shape or W.
void infer_deform_conv(Node& node, const std::string& where) {
  if (node.inputs.size() < 3 || node.inputs.size() > 5 || !node.inputs[0] || !node.inputs[1] || !node.inputs[2] ||
      node.outputs.size() != 1 || !node.outputs[0])
    fail(where + ": takes X, W and offset (and optional B and mask) and gives one output");
  const TensorType& x = node.inputs[0]->type;
  const TensorType& w = node.inputs[1]->type;
  TensorType y;
  y.dtype = x.dtype;
  if (x.has_rank && w.has_rank && x.dims.size() >= 3 && w.dims.size() == x.dims.size()) {
    const size_t spatial = x.dims.size() - 2;
    const auto ints = [&](const char* name, int64_t fallback, size_t count) {
      std::vector<int64_t> v = node.attr_ints(name);
      if (v.empty()) v.assign(count, fallback);
      if (v.size() != count) fail(where + ": attribute " + name + " has " + std::to_string(v.size()) + " values, " + std::to_string(count) + " expected");
      for (int64_t e : v)
        if (e < 0 || e > (int64_t{1} << 20)) fail(where + ": attribute " + name + " holds " + std::to_string(e));
      return v;
    };
    const std::vector<int64_t> strides = ints("strides", 1, spatial), dilations = ints("dilations", 1, spatial),
                               pads = ints("pads", 0, 2 * spatial);
    std::vector<int64_t> kernel = node.attr_ints("kernel_shape");
    y.has_rank = true;
    y.dims = {x.dims[0], w.dims[0]};
    for (size_t i = 0; i < spatial; ++i) {
      const Dim& k = w.dims[i + 2];
      const int64_t kv = kernel.size() == spatial ? kernel[i] : k.known() ? k.value : -1;
      if (kv > (int64_t{1} << 20)) fail(where + ": kernel_shape holds " + std::to_string(kv));
      if (strides[i] < 1 || dilations[i] < 1) fail(where + ": strides and dilations must be at least 1");
      const Dim& in = x.dims[i + 2];
      if (!in.known() || kv < 1) {
        y.dims.push_back(Dim{});
        continue;
      }
      const int64_t span = in.value + pads[i] + pads[i + spatial] - ((kv - 1) * dilations[i] + 1);
      if (span < 0) fail(where + ": the kernel is larger than the padded input " + x.shape_string());
      y.dims.push_back(Dim{span / strides[i] + 1, {}});
    }
  }
  node.outputs[0]->type = y;
}

// Version 18 of OptionalHasElement and OptionalGetElement also take a tensor or a sequence, which
// is its own element (and always present).
void infer_optional_op(Node& node, const std::string& where) {
  const bool has = node.op_type == "OptionalHasElement";
  if (node.inputs.size() > 1 || (!has && (node.inputs.empty() || !node.inputs[0])) || node.outputs.size() != 1 ||
      !node.outputs[0])
    fail(where + ": takes " + (has ? "at most one input" : "one input") + " and gives one output");
  TensorType& out = node.outputs[0]->type;
  if (has) {
    out = TensorType{};
    out.dtype = DType::Bool;
    out.has_rank = true;
    return;
  }
  out = node.inputs[0]->type;
  if (out.container == Container::Optional) out.container = Container::None;
  if (out.container == Container::OptionalSequence) out.container = Container::Sequence;
}

}  // namespace

bool is_own_op(const Node& node) {
  // The opset each op first appeared in: an older model naming it means something else.
  static const std::map<std::string, int64_t> since = {{"Gelu", 20},       {"Mish", 18},       {"BitwiseAnd", 18},
                                                       {"BitwiseOr", 18},  {"BitwiseXor", 18}, {"BitwiseNot", 18},
                                                       {"GroupNormalization", 18}, {"RMSNormalization", 23},
                                                       {"RotaryEmbedding", 23}, {"Attention", 23},
                                                       {"Col2Im", 18},          {"AffineGrid", 20},
                                                       {"DeformConv", 19},      {"OptionalHasElement", 18},
                                                       {"OptionalGetElement", 18}};
  auto it = since.find(node.op_type);
  return node.domain.empty() && it != since.end() && node.opset >= it->second;
}

void infer_own_op(Node& node, const std::string& file) {
  const std::string where = file + ": " + node.graph->path() + ": " + node.describe();
  if (node.op_type == "Attention") return infer_attention(node, where);
  if (node.op_type == "DeformConv") return infer_deform_conv(node, where);
  if (node.op_type == "OptionalHasElement" || node.op_type == "OptionalGetElement") return infer_optional_op(node, where);
  if (node.op_type == "Col2Im" || node.op_type == "AffineGrid") return infer_from_shape_input(node, where);
  // Required inputs, then optional ones (RotaryEmbedding's position_ids).
  const size_t want = is_broadcasting(node.op_type)                ? 2
                      : node.op_type == "GroupNormalization" ? 3
                      : node.op_type == "RMSNormalization"   ? 2
                      : node.op_type == "RotaryEmbedding"    ? 3
                                                              : 1;
  const size_t most = node.op_type == "RotaryEmbedding" ? 4 : want;
  if (node.inputs.size() < want || node.inputs.size() > most || node.outputs.size() != 1 || !node.outputs[0])
    fail(where + ": takes " + std::to_string(want) + (most > want ? " or " + std::to_string(most) : "") +
         " inputs and gives one output");
  for (size_t k = 0; k < want; ++k)
    if (!node.inputs[k]) fail(where + ": input " + std::to_string(k) + " is required");
  Value& out = *node.outputs[0];
  const TensorType inferred =
      is_broadcasting(node.op_type) ? broadcast(node.inputs[0]->type, node.inputs[1]->type, where) : node.inputs[0]->type;
  out.type.dtype = inferred.dtype;
  if (inferred.has_rank && (!out.type.has_rank || out.type.dims.size() != inferred.dims.size())) {
    out.type.has_rank = true;
    out.type.dims = inferred.dims;
  } else if (inferred.has_rank) {
    for (size_t d = 0; d < inferred.dims.size(); ++d)
      if (inferred.dims[d].known() || !out.type.dims[d].known()) out.type.dims[d] = inferred.dims[d];
  }
}

}  // namespace memplan
