#include "passes/assign_layouts.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "ir/channel_shuffle.h"
#include "ir/fused_dequantize.h"
#include "ir/layout_transpose.h"
#include "ir/window_pool.h"
#include "runtime/dnnl_context.h"

namespace memplan {

namespace {

// How a node treats the layout of its data inputs and outputs.
enum class Role {
  Plain,      // needs plain inputs and writes plain outputs
  Conv,       // reads input 0 in any layout (the kernel reorders if oneDNN prefers another),
              // writes its output in any layout; a fused addend (input 3) shares the output's
  Same,       // every data input and the output share one layout
  Broadcast,  // a binary op whose full-shape input shares the output's layout; the other input
              // is per-channel ([N, C, 1, 1], the same bytes in either layout) or a scalar
  ToPlain,    // reads a blocked input, writes a [N, C, 1, 1] output whose bytes are the same
              // plain or blocked (global pools, pools down to one pixel)
  FromChannelsLast,  // NCHW -> NHWC Transpose (ir/layout_transpose.h): reads input 0 channels-last,
                     // writes a plain output with its bytes
  ToChannelsLast,    // NHWC -> NCHW Transpose: reads a plain input, writes its bytes as the
                     // channels-last output
};

bool is_4d_float(const Value* v) {
  return v && v->type.dtype == DType::Float32 && v->type.is_static() && v->type.dims.size() == 4 && !v->shape_varies;
}

// A [N, C, 1, 1] tensor has the same bytes blocked or plain; it stays plain.
bool one_pixel(const Value* v) { return v->type.dims[2].value == 1 && v->type.dims[3].value == 1; }

// `v` broadcasts against the [N, C, H, W] `y` per channel or as a scalar.
bool per_channel_or_scalar(const Value* v, const Value* y) {
  if (!v || !v->type.is_static() || v->type.dims.size() > 4) return false;
  const std::vector<int64_t> d = v->type.static_dims();
  const size_t pad = 4 - d.size();
  for (size_t k = 0; k < d.size(); ++k) {
    const size_t axis = pad + k;
    const bool ok = d[k] == 1 || (axis == 1 && d[k] == y->type.dims[1].value) || (axis == 0 && d[k] == y->type.dims[0].value);
    if (!ok) return false;
  }
  return true;
}

// A constant whose elements are all one value (a splat: ConstantOfShape's zeros, which TensorFlow
// exporters concatenate to pad channels): the same bytes in every layout.
bool uniform_constant(const Value* v) {
  return v && v->constant && (v->constant->splat || v->constant->element_count() == 1);
}

bool same_static_shape(const Value* a, const Value* b) {
  return a->type.is_static() && b->type.is_static() && a->type.static_dims() == b->type.static_dims();
}

// The channel pads {begin, end} of a 4-D Pad with constant pads that pads nothing else, constant
// mode with a constant (or no) value, or edge or reflect (which channels-last keeps apart from
// the pixels): TensorFlow exporters widen a residual's channels so. nullopt for any other Pad.
std::optional<std::pair<int64_t, int64_t>> channel_pads(const Node& n) {
  if (n.op_type != "Pad" || !n.domain.empty() || n.opset < 11 || n.inputs.size() < 2 || !n.inputs[1] ||
      !n.inputs[1]->constant || (n.inputs.size() > 2 && n.inputs[2] && !n.inputs[2]->constant) ||
      (n.inputs.size() > 3 && n.inputs[3]) || !is_4d_float(n.inputs[0]))
    return std::nullopt;
  const Tensor& p = *n.inputs[1]->constant;
  if (p.element_count() != 8) return std::nullopt;
  for (size_t i : {0u, 2u, 3u, 4u, 6u, 7u})
    if (p.int_at(i) != 0) return std::nullopt;
  if (p.int_at(1) < 0 || p.int_at(5) < 0) return std::nullopt;
  return std::pair{p.int_at(1), p.int_at(5)};
}

// A float32 nearest-neighbour Resize (opset 11 on) of H and W alone, with constant scales or
// sizes: each output pixel is an input pixel, channels and all, so it runs in any layout (the
// upsampling of FPN necks and segmentation decoders between convolutions).
bool nearest_resize_of_pixels(const Node& n) {
  if (n.op_type != "Resize" || !n.domain.empty() || n.opset < 11 || n.attr_string("mode", "nearest") != "nearest" ||
      n.attr_string("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize" || n.attr("axes") ||
      n.attr_int("antialias", 0) != 0 || n.attr_int(kQuantizedResizeAttr, 0) != 0 ||
      !is_4d_float(n.inputs[0]) || n.outputs.size() != 1 || !is_4d_float(n.outputs[0]))
    return false;
  for (size_t k = 1; k < n.inputs.size(); ++k)
    if (n.inputs[k] && !n.inputs[k]->constant) return false;
  const auto& x = n.inputs[0]->type.dims;
  const auto& y = n.outputs[0]->type.dims;
  return x[0].value == y[0].value && x[1].value == y[1].value;
}

// Ops that touch each element on its own: their result is the same in any layout whose bytes
// line up (all inputs and the output share one layout and one shape).
bool elementwise(const std::string& op) {
  static const std::set<std::string> ops = {
      "Relu", "LeakyRelu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Elu", "Selu", "Softplus",
      "Softsign", "Exp", "Log", "Sqrt", "Abs", "Neg", "Erf", "Reciprocal", "Identity",
      "Add", "Sub", "Mul", "Div", "Sum", "Max", "Min", "Mean", "PRelu"};
  return ops.count(op) > 0;
}

// For a binary op oneDNN runs with its second input broadcast: the index of the full-shape input.
int broadcast_input(const Node& n) {
  static const std::set<std::string> binary = {"Add", "Sub", "Mul", "Div", "Max", "Min", "PRelu"};
  static const std::set<std::string> commutative = {"Add", "Mul", "Max", "Min"};
  if (!binary.count(n.op_type) || n.inputs.size() != 2 || !n.inputs[0] || !n.inputs[1]) return -1;
  const Value* y = n.outputs[0];
  for (int full = 0; full < 2; ++full) {
    if (full == 1 && !commutative.count(n.op_type)) break;  // oneDNN broadcasts its second operand only
    const Value* a = n.inputs[static_cast<size_t>(full)];
    const Value* b = n.inputs[static_cast<size_t>(1 - full)];
    if (!a->is_constant() && same_static_shape(a, y) && per_channel_or_scalar(b, y) && !same_static_shape(b, y))
      return full;
  }
  return -1;
}

// oneDNN has blocked kernels for dense and depthwise convolutions, and for other groups when the
// block divides each group's channels: the largest block (16) that may then divide the output's
// channels per group, 0 when none can.
int group_block_limit(const Node& conv) {
  const int64_t group = conv.attr_int("group", 1);
  const Value* x = conv.inputs.empty() ? nullptr : conv.inputs[0];
  const Value* y = conv.outputs.empty() ? nullptr : conv.outputs[0];
  if (group == 1 || !x || !y || x->type.dims.size() != 4 || y->type.dims.size() != 4) return 16;
  const int64_t c = x->type.dims[1].value, m = y->type.dims[1].value;
  if (group == c) return 16;  // depthwise
  if (group <= 0 || c % group != 0 || m % group != 0) return 0;
  for (int b : {16, 8})
    if ((c / group) % b == 0 && (m / group) % b == 0) return b;
  return 0;
}

Role role_of(const Node& n) {
  if (!n.domain.empty() || n.is_control_flow() || n.outputs.empty() || !is_4d_float(n.outputs[0])) return Role::Plain;
  for (size_t k = 1; k < n.outputs.size(); ++k)
    if (n.outputs[k]) return Role::Plain;  // MaxPool indices, BatchNormalization statistics, ...
  const Value* y = n.outputs[0];
  // A grouped Conv whose groups no block divides (ShuffleNet's 4 groups of 34) still runs
  // channels-last on jit kernels; the limit only bars blocks (takes_channels_last).
  if (n.op_type == "Conv") return is_4d_float(n.inputs[0]) ? Role::Conv : Role::Plain;
  if (pools_on_window_loop(n)) return Role::Plain;
  if (n.op_type == "Transpose" && n.attr(kChannelShuffleAttr)) return Role::Same;
  if (const LayoutTranspose t = layout_transpose(n); t != LayoutTranspose::None && is_4d_float(n.inputs[0]))
    return t == LayoutTranspose::ToNhwc ? Role::FromChannelsLast : Role::ToChannelsLast;
  if (n.op_type == "GlobalAveragePool" || n.op_type == "GlobalMaxPool") return Role::ToPlain;
  const bool pool = n.op_type == "MaxPool" || n.op_type == "AveragePool";
  if (pool && y->type.dims[2].value == 1 && y->type.dims[3].value == 1) return Role::ToPlain;
  if (n.op_type == "MaxPool" || n.op_type == "LRN" || n.op_type == "BatchNormalization") return Role::Same;
  // Averages that count padding are rescaled afterwards in plain layout where a window passes
  // the end padding (ceil_mode, SAME_*); with explicit pads and floor sizes there is nothing to do.
  if (n.op_type == "AveragePool") {
    const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
    const bool exact = n.attr_int("ceil_mode", 0) == 0 && (auto_pad == "NOTSET" || auto_pad == "VALID");
    return n.attr_int("count_include_pad", 0) == 0 || exact ? Role::Same : Role::Plain;
  }
  if (n.op_type == "Concat") {
    const int64_t axis = n.attr_int("axis", n.opset < 4 ? 1 : 0);
    if (axis != 1 && axis != -3) return Role::Plain;
    for (const Value* in : n.inputs)
      if (!is_4d_float(in) || (in->is_constant() && !uniform_constant(in))) return Role::Plain;
    return Role::Same;
  }
  if (n.op_type == "Pad" && channel_pads(n)) return Role::Same;
  if (n.op_type == "Resize" && nearest_resize_of_pixels(n)) return Role::Same;
  if (elementwise(n.op_type)) {
    bool same = true;
    for (const Value* in : n.inputs) same = same && in && !in->is_constant() && same_static_shape(in, y);
    if (same) return Role::Same;
    if (broadcast_input(n) >= 0) return Role::Broadcast;
  }
  return Role::Plain;
}

// The data inputs whose layout the node's role constrains (weights and parameters are not).
std::vector<const Value*> data_inputs(const Node& n, Role r) {
  std::vector<const Value*> out;
  if (r == Role::Conv) {
    if (n.inputs.size() > 3 && n.inputs[3]) out.push_back(n.inputs[3]);  // the fused addend
  } else if (r == Role::Broadcast) {
    out.push_back(n.inputs[static_cast<size_t>(broadcast_input(n))]);
  } else if (r == Role::Same && (n.op_type == "BatchNormalization" || n.op_type == "Pad" || n.op_type == "Resize")) {
    out.push_back(n.inputs[0]);
  } else if (r == Role::Same) {
    for (const Value* in : n.inputs)
      if (!uniform_constant(in)) out.push_back(in);  // a uniform constant fits every layout
  }
  return out;
}

// Nodes whose kernels take channels-last float32 tensors in the roles role_of gives them: not
// batch norm and LRN (their oneDNN kernels are made for plain or blocked tensors only). oneDNN
// 2.6 runs dense, depthwise and grouped convolutions channels-last on jit kernels, on AVX2 and
// AVX-512 (brgconv, jit_1x1, jit_dw); where it has none, the Conv kernel stages oneDNN's choice.
bool takes_channels_last(const Node& n) { return n.op_type != "BatchNormalization" && n.op_type != "LRN"; }

// May `consumer` read `v` in the layout `layout` (a block, or Value::kChannelsLast)?
bool reads_blocked(const Node& consumer, const Value* v, const Graph& main, int layout) {
  if (consumer.graph != &main) return false;  // read inside a subgraph
  if (layout == Value::kChannelsLast && !takes_channels_last(consumer)) return false;
  switch (role_of(consumer)) {
    case Role::Plain:
    case Role::ToChannelsLast: return false;
    case Role::FromChannelsLast: return layout == Value::kChannelsLast && consumer.inputs[0] == v;
    case Role::Conv: return consumer.inputs[0] == v || (consumer.inputs.size() > 3 && consumer.inputs[3] == v);
    case Role::ToPlain: return consumer.inputs[0] == v;
    case Role::Broadcast: return consumer.inputs[static_cast<size_t>(broadcast_input(consumer))] == v;
    case Role::Same:
      return (consumer.op_type != "BatchNormalization" && consumer.op_type != "Pad" && consumer.op_type != "Resize") ||
             consumer.inputs[0] == v;
  }
  return false;
}

// Whether a Transpose to NHWC reads `v` (which it then reads as a view where `v` is channels-last).
bool read_as_nhwc(const Value* v) {
  for (const Node* c : v->consumers)
    if (role_of(*c) == Role::FromChannelsLast && c->inputs[0] == v) return true;
  return false;
}

// Values a node ties to one layout (a Same node's data inputs and output, a Broadcast node's
// full input and output, a Conv's fused addend and output) must agree. Where the candidates of
// such a group differ (a Concat of 24 channels, channels-last, and 24 zeros into 48, blocked by
// 16), the whole group takes channels-last when every member's producer can write it; otherwise
// the pass below unblocks it.
void agree_within_groups(Graph& g, const std::set<Value*>& blocked) {
  std::map<const Value*, const Value*> parent;
  std::function<const Value*(const Value*)> root = [&](const Value* v) -> const Value* {
    auto it = parent.find(v);
    if (it == parent.end() || it->second == v) return v;
    return it->second = root(it->second);
  };
  for (auto& n : g.nodes) {
    Value* y = n->outputs.empty() ? nullptr : n->outputs[0];
    if (!y || !blocked.count(y)) continue;
    for (const Value* in : data_inputs(*n, role_of(*n)))
      if (in && blocked.count(const_cast<Value*>(in))) parent[root(in)] = root(y);
  }
  std::map<const Value*, std::vector<Value*>> groups;
  for (Value* v : blocked) groups[root(v)].push_back(v);
  for (auto& [r, members] : groups) {
    bool differ = false, channels_last_ok = true;
    for (Value* v : members) {
      differ = differ || v->channel_block != members.front()->channel_block;
      channels_last_ok = channels_last_ok && v->producer && takes_channels_last(*v->producer);
    }
    if (differ && channels_last_ok)
      for (Value* v : members) v->channel_block = Value::kChannelsLast;
  }
}

// A Conv whose source and destination differ in layout (nChw8c in, channels-last out) has no
// jit kernel in oneDNN 2.6: one side is staged through the scratchpad every run. A Conv output
// read only by Convs (as their source) ties no other value, so its layout is free: it turns
// channels-last where that leaves fewer such mismatched convolutions around it. (MediaPipe's
// depthwise Conv of 24 channels between channels-last tensors of 24 and 28: blocks of 8 divide 24,
// yet both it and the pointwise Conv after it would reorder.) Each turn lowers the number of
// mismatches, so this ends. Returns the values turned.
int match_conv_neighbours(Graph& g) {
  const auto layout = [](const Value* v) { return v ? v->channel_block : 0; };
  const auto free_output = [&](const Value* v) {
    const Node* n = v->producer;
    if (v->is_graph_output || v->channel_block <= 0 || !n || role_of(*n) != Role::Conv || !takes_channels_last(*n) ||
        (n->inputs.size() > 3 && n->inputs[3]) || v->consumers.empty())
      return false;
    for (const Node* c : v->consumers)
      if (c->graph != &g || role_of(*c) != Role::Conv || !takes_channels_last(*c) || c->inputs[0] != v ||
          (c->inputs.size() > 3 && c->inputs[3] == v))
        return false;
    return true;
  };
  const auto mismatches = [&](const Value* v, int as) {
    int count = layout(v->producer->inputs[0]) != as;
    for (const Node* c : v->consumers) count += layout(c->outputs[0]) != as;
    return count;
  };
  int turned = 0;
  for (bool changed = true; changed;) {
    changed = false;
    for (auto& v : g.values)
      if (free_output(v.get()) && mismatches(v.get(), Value::kChannelsLast) < mismatches(v.get(), v->channel_block)) {
        v->channel_block = Value::kChannelsLast;
        changed = true;
        ++turned;
      }
  }
  return turned;
}

}  // namespace

int assign_layouts(Model& model, int preferred_block) {
  Graph& g = *model.main;
  for (auto& v : g.values) v->channel_block = 0;
  if (preferred_block != 8 && preferred_block != 16) return 0;

  // Start from every candidate a blocked-capable node produces, then drop values until every
  // constraint holds. Dropping only ever forces more values plain, so this ends.
  std::set<Value*> blocked;
  for (auto& n : g.nodes) {
    Value* y = n->outputs.empty() ? nullptr : n->outputs[0];
    const Role r = role_of(*n);
    if (r != Role::Conv && r != Role::Same && r != Role::Broadcast && r != Role::ToChannelsLast) continue;
    if (y->is_graph_output || one_pixel(y)) continue;
    // Channels-last is the only layout in which this Transpose copies nothing, and the one a
    // Transpose to NHWC reading the value needs: a tensor between them stays channels-last
    // (agree_within_groups below carries it to the rest of its group).
    if (r == Role::ToChannelsLast || (takes_channels_last(*n) && read_as_nhwc(y))) {
      y->channel_block = Value::kChannelsLast;
      blocked.insert(y);
      continue;
    }
    const int64_t c = y->type.dims[1].value;
    int block = c % preferred_block == 0 ? preferred_block : 0;
    // A grouped Conv's block must also divide each group's channels (the limit says which does).
    if (r == Role::Conv) block = std::min(block, group_block_limit(*n));
    // Channels the CPU's block does not divide (MediaPipe's 24 and 28, ShuffleNet's 58, a
    // detector's 6): channels-last, which oneDNN runs with jit kernels on AVX2 and AVX-512 alike
    // (brgemm, 1x1, depthwise, pooling, binary) and which needs no more bytes than plain. Plain
    // tensors would run on gemm convolutions and simple_nchw pooling, several times slower.
    if (block == 0 && takes_channels_last(*n)) block = Value::kChannelsLast;
    if (block == 0 && c % 8 == 0 && (r != Role::Conv || group_block_limit(*n) >= 8)) block = 8;
    if (block == 0) continue;
    y->channel_block = block;
    blocked.insert(y);
  }
  auto unblock = [&](Value* v) {
    v->channel_block = 0;
    blocked.erase(v);
  };
  auto layout = [&](const Value* v) { return v ? v->channel_block : 0; };
  agree_within_groups(g, blocked);

  for (bool changed = true; changed;) {
    changed = false;
    for (auto& n : g.nodes) {
      const Role r = role_of(*n);
      // A node that writes blocked needs its constrained inputs in the same layout, and every
      // reader of its output must read blocked.
      Value* y = n->outputs.empty() ? nullptr : n->outputs[0];
      if (!y || !blocked.count(y)) continue;
      // oneDNN broadcasts fast only over the CPU's own block (nChw16c on AVX-512), or channels-last.
      bool ok = r != Role::Broadcast || y->channel_block == preferred_block || y->channel_block == Value::kChannelsLast;
      for (const Value* in : data_inputs(*n, r)) ok = ok && layout(in) == y->channel_block;
      for (const Node* c : y->consumers) ok = ok && reads_blocked(*c, y, g, y->channel_block);
      // A Pad keeps blocks whole: it pads whole blocks of channels with the constant, or any
      // channels channels-last.
      if (const auto pads = channel_pads(*n); pads && y->channel_block > 0)
        ok = ok && n->attr_string("mode", "constant") == "constant" && pads->first % y->channel_block == 0 &&
             pads->second % y->channel_block == 0;
      // Same-role readers need all their constrained inputs alike, and an output that matches.
      for (const Node* c : y->consumers) {
        const Role cr = role_of(*c);
        const bool constrained = cr == Role::Same || (cr == Role::Broadcast && c->inputs[static_cast<size_t>(broadcast_input(*c))] == y) ||
                                 (cr == Role::Conv && c->inputs.size() > 3 && c->inputs[3] == y);
        if (!constrained) continue;
        const Value* cy = c->outputs[0];
        ok = ok && layout(cy) == y->channel_block;
        for (const Value* in : data_inputs(*c, cr)) ok = ok && layout(in) == y->channel_block;
      }
      if (!ok) {
        unblock(y);
        changed = true;
      }
    }
  }
  match_conv_neighbours(g);
  return static_cast<int>(blocked.size());
}

int preferred_channel_block() {
  if (const char* env = std::getenv("MEMPLAN_CHANNEL_BLOCK")) {
    const std::string v = env;
    if (v == "0" || v == "8" || v == "16") return std::stoi(v);
  }
  return rt::dnnl_channel_block();
}

}  // namespace memplan
