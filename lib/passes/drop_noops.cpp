#include "passes/drop_noops.h"

#include <algorithm>
#include <unordered_set>

namespace memplan {

namespace {

// A Pad whose pads are all zero (constant), in any mode: its output is its input.
bool zero_pad(const Node& n) {
  if (n.op_type != "Pad" || !n.domain.empty() || n.inputs.empty() || !n.inputs[0] || n.outputs.size() != 1 ||
      !n.outputs[0])
    return false;
  if (n.opset < 11) {
    const std::vector<int64_t> pads = n.attr_ints("pads");
    return std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
  }
  const Value* pads = n.inputs.size() > 1 ? n.inputs[1] : nullptr;
  if (!pads || !pads->constant) return false;
  for (uint64_t i = 0; i < pads->constant->element_count(); ++i)
    if (pads->constant->int_at(i) != 0) return false;
  return true;
}

// The spatial pads [h_begin, w_begin, h_end, w_end] of a zero-filling 4-D Pad that leaves N and C
// alone; empty otherwise.
std::vector<int64_t> spatial_zero_pads(const Node& n) {
  if (n.op_type != "Pad" || !n.domain.empty() || n.opset < 11 || n.inputs.size() < 2 || !n.inputs[0] ||
      !n.inputs[1] || !n.inputs[1]->constant || n.outputs.size() != 1 || !n.outputs[0] ||
      n.attr_string("mode", "constant") != "constant" || n.inputs[0]->type.dims.size() != 4)
    return {};
  if (n.inputs.size() > 2 && n.inputs[2]) {
    const Value* fill = n.inputs[2];
    if (!fill->constant || fill->constant->element_count() != 1 || fill->constant->float_at(0) != 0.0) return {};
  }
  if (n.inputs.size() > 3 && n.inputs[3]) return {};  // axes
  const Tensor& p = *n.inputs[1]->constant;
  if (p.element_count() != 8) return {};
  std::vector<int64_t> v(8);
  for (size_t i = 0; i < 8; ++i) v[i] = p.int_at(i);
  if (v[0] || v[1] || v[4] || v[5] || std::any_of(v.begin(), v.end(), [](int64_t x) { return x < 0; })) return {};
  return {v[2], v[3], v[6], v[7]};
}

// Pad(zeros, spatial) -> Conv or AveragePool counting padding  ==>  the window op with those pads
// (PyTorch exports AvgPool2d(padding=1) this way). MaxPool pads with -inf, so it is left alone.
bool fold_pad(Graph& g, Node& pad) {
  const std::vector<int64_t> extra = spatial_zero_pads(pad);
  Value* out = extra.empty() ? nullptr : pad.outputs[0];
  if (!out || out->is_graph_output || out->consumers.size() != 1) return false;
  Node& op = *out->consumers[0];
  if (op.graph != &g || !op.domain.empty() || op.inputs.empty() || op.inputs[0] != out ||
      op.attr_string("auto_pad", "NOTSET") != "NOTSET")
    return false;
  std::vector<int64_t> pads = op.attr_ints("pads");
  if (pads.empty()) pads.assign(4, 0);
  if (pads.size() != 4) return false;
  const bool own_pads = std::any_of(pads.begin(), pads.end(), [](int64_t x) { return x != 0; });
  if (op.op_type == "AveragePool") {
    if (op.attr_int("count_include_pad", 0) == 0 && own_pads) return false;
  } else if (op.op_type != "Conv") {
    return false;
  }
  for (size_t i = 0; i < 4; ++i) pads[i] += extra[i];
  std::erase_if(op.attributes, [](const Attribute& a) { return a.name == "pads" || a.name == "count_include_pad"; });
  Attribute a;
  a.name = "pads";
  a.kind = Attribute::Kind::Ints;
  a.ints = pads;
  op.attributes.push_back(a);
  if (op.op_type == "AveragePool") {
    Attribute c;
    c.name = "count_include_pad";
    c.kind = Attribute::Kind::Int;
    c.i = 1;  // the Pad's zeros were averaged in
    op.attributes.push_back(c);
  }
  op.inputs[0] = pad.inputs[0];
  pad.outputs[0] = nullptr;
  g.release_value(out);
  return true;
}

// A Dropout as inference runs it: its output is its input, and the mask (all true) unread. Not
// one whose training_mode is an input that may be true, nor one whose mask anything reads. The
// node's own kernel copies nothing, but as a plain-layout node (its mask is a second output) it
// kept its input plain, and with it the convolutions and Concat before it: SqueezeNet's last fire
// module then ran a 1x1 convolution on oneDNN's GEMM, whose first use makes 16 GEMM kernels,
// 3.3 MB of jit code the process holds to its end.
bool inference_dropout(const Node& n) {
  if (n.op_type != "Dropout" || !n.domain.empty() || n.inputs.empty() || !n.inputs[0] || n.outputs.empty() ||
      !n.outputs[0] || n.outputs.size() > 2)
    return false;
  if (n.outputs.size() == 2 && n.outputs[1] && (n.outputs[1]->is_graph_output || !n.outputs[1]->consumers.empty()))
    return false;
  if (n.opset < 7 && n.attr_int("is_test", 0) == 0) return false;  // before opset 7: training unless is_test
  if (n.inputs.size() > 2 && n.inputs[2]) {
    const Value* training = n.inputs[2];
    if (!training->constant || training->constant->dtype != DType::Bool || training->constant->element_count() != 1 ||
        training->constant->int_at(0) != 0)
      return false;
  }
  return true;
}

}  // namespace

int drop_noops(Model& model) {
  return fold_nodes_away(*model.main, [](Graph& g, std::unordered_set<const Node*>& dead) {
    for (auto& n : g.nodes) {
      if (fold_pad(g, *n)) {
        dead.insert(n.get());
        continue;
      }
      if (!zero_pad(*n) && !inference_dropout(*n)) continue;
      Value* in = n->inputs[0];
      Value* out = n->outputs[0];
      // A graph output keeps its own name (and buffer); so does a value a subgraph captures by name.
      if (out->is_graph_output || in->type.dtype != out->type.dtype) continue;
      replace_uses(g, out, in);
      dead.insert(n.get());
      for (Value*& v : n->outputs) {
        if (v) g.release_value(v);
        v = nullptr;
      }
    }
  });
}

}  // namespace memplan
