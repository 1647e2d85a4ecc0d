#include "shapes/shape_inference.h"

#include <algorithm>
#include <set>

#include "ir/control_flow_ports.h"
#include "memplan/error.h"
#include "shapes/constant_folding.h"
#include "shapes/control_flow_shapes.h"
#include "shapes/onnx_inference.h"
#include "shapes/own_op_inference.h"
#include "shapes/runtime_bounds.h"
#include "util/checked.h"

namespace memplan {

std::vector<int64_t> parse_dims(const std::string& text, const std::string& what) {
  std::vector<int64_t> dims;
  if (text.empty() || text == "scalar") return dims;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('x', pos);
    if (end == std::string::npos) end = text.size();
    std::string part = text.substr(pos, end - pos);
    if (part.empty() || part.size() > 18 || part.find_first_not_of("0123456789") != std::string::npos)
      fail(what + ": '" + text + "' is not a shape like 1x3x224x224");
    dims.push_back(std::stoll(part));
    pos = end + 1;
  }
  return dims;
}

namespace {

void bind_user_shapes(Model& model, const ShapeOptions& opts) {
  Graph& main = *model.main;
  for (const auto& [name, dims] : opts.input_shapes) {
    // A copy of the binding's reference for the lambda: clang 14 cannot capture structured bindings.
    const std::string& input_name = name;
    auto it = std::find_if(main.inputs.begin(), main.inputs.end(), [&](Value* v) { return v->name == input_name; });
    if (it == main.inputs.end()) {
      std::string names;
      for (Value* v : main.inputs) names += (names.empty() ? "" : ", ") + v->name;
      fail(model.path + ": a shape is given for '" + name + "', but the model has no input of that name (inputs: " +
           names + ")");
    }
    TensorType& t = (*it)->type;
    if (t.is_container())
      fail(model.path + ": a shape is given for '" + name + "', which is " + a_container(t.container) +
           " (the shapes of its tensors are the run's)");
    // As ONNX Runtime: a one-element shape stands for a declared scalar, symbolic dims take any
    // size, and a declared static dim must be met.
    const bool one_element = std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d == 1; });
    const std::vector<int64_t> given = t.has_rank && t.dims.empty() && one_element ? std::vector<int64_t>{} : dims;
    bool fits = !t.has_rank || t.dims.size() == given.size();
    for (size_t d = 0; fits && t.has_rank && d < given.size(); ++d) fits = !t.dims[d].known() || t.dims[d].value == given[d];
    if (!fits) {
      TensorType g;
      g.has_rank = true;
      for (int64_t d : given) g.dims.push_back(Dim{d, {}});
      fail(model.path + ": input '" + name + "' is declared " + t.shape_string() + ", the given shape " +
           g.shape_string() + " does not fit it");
    }
    t.has_rank = true;
    t.dims.clear();
    for (int64_t d : given) t.dims.push_back(Dim{d, {}});
  }
  std::set<std::string> used;
  for_each_graph(main, [&](Graph& g) {
    for (auto& v : g.values)
      for (Dim& d : v->type.dims)
        if (!d.known() && !d.symbol.empty()) {
          if (auto it = opts.dims.find(d.symbol); it != opts.dims.end()) {
            used.insert(d.symbol);
            d.value = it->second;
          }
        }
  });
  for (const auto& [name, value] : opts.dims)
    if (!used.count(name))
      fail(model.path + ": a value is given for dim '" + name + "', but no dimension of the model is named so");
  for (Value* in : main.inputs) {
    if (in->type.is_container()) continue;  // its tensors' shapes are the run's
    const Remedy shape{Remedy::Option::InputShapes, in->name, "<dims>"};
    if (!in->type.has_rank) fail(model.path + ": input '" + in->name + "' has no shape; give it one", {shape});
    for (const Dim& d : in->type.dims)
      if (!d.known()) {
        std::vector<Remedy> fixes{shape};
        if (!d.symbol.empty()) fixes.insert(fixes.begin(), {Remedy::Option::Dims, d.symbol, "<value>"});
        fail(model.path + ": input '" + in->name + "' has unset dimension '" + (d.symbol.empty() ? "?" : d.symbol) +
                 "' (shape " + in->type.shape_string() + "); fix it",
             fixes);
      }
  }
}

// Whether a Loop's carried slot holds a value whose shape the run decides (infer_loop widened its
// body input's type): its body may return, and the Loop may take as initial value, a dynamic
// tensor (the session keeps the value, or copies it into the slot planned under a bound).
bool carried_shape_varies(const Node& n, int32_t slot) {
  const Graph* body = n.op_type == "Loop" ? n.subgraph("body") : nullptr;
  if (!body || slot < 2 || static_cast<size_t>(slot) >= body->inputs.size()) return false;
  return !body->inputs[ControlFlowPorts(n).body_input_of_slot(slot)]->type.is_static();
}

class ShapeInference {
 public:
  ShapeInference(Model& m, const ShapeOptions& o, const ShapeHooks& h) : model_(m), opts_(o), hooks_(h) {}

  void run() {
    infer_graph(*model_.main);
    if (!unsupported_.empty()) {
      std::string list;
      for (const auto& [key, count] : unsupported_)
        list += (list.empty() ? "" : "; ") + key + " x" + std::to_string(count);
      fail_unsupported(model_.path + ": unknown ops (no ONNX schema): " + list);
    }
    rebuild_uses(*model_.main);
    for_each_graph(*model_.main, [&](Graph& g) { drop_unread_optional_outputs(g); });
    for_each_graph(*model_.main, [&](Graph& g) { bound_by_consumers(g, opts_.bounds); });
    for_each_graph(*model_.main, [&](Graph& g) { size_values(g); });
    for (const auto& [name, dims] : opts_.bounds)
      if (!used_bounds_.count(name))
        fail(model_.path + ": a bound is given for '" + name + "', but no tensor of the model is named so");
  }

  void infer_graph(Graph& g) {
    for (size_t i = 0; i < g.nodes.size();) {
      if (hooks_.rewrite && hooks_.rewrite(g, i)) continue;  // infer the nodes now standing there next
      infer_node(*g.nodes[i]);
      ++i;
    }
    std::erase_if(g.nodes, [](const std::unique_ptr<Node>& n) {
      const bool folded = !n->is_control_flow() && std::all_of(n->outputs.begin(), n->outputs.end(),
                                                               [](const Value* v) { return !v || v->constant; });
      // The outputs live on as constants; they must not point at the node deleted here (a Loop's
      // body condition is followed through Identity producers after its body is inferred).
      if (folded)
        for (Value* v : n->outputs)
          if (v) v->producer = nullptr;
      return folded;
    });
  }

 private:
  void infer_node(Node& n) {
    infer_node_types(n);
    apply_user_bounds(n);
  }

  // A --bound takes effect where its tensor is made, so that what its size flows into (an
  // elementwise chain after a loop's scan output) is bounded in turn.
  void apply_user_bounds(Node& n) {
    for (Value* out : n.outputs) {
      if (!out || out->constant) continue;
      auto b = opts_.bounds.find(out->name);
      if (b == opts_.bounds.end()) continue;
      const std::string what = model_.path + ": the bound given for tensor '" + out->name + "'";
      out->capacity_bytes = checked_mul(checked_element_count(b->second, what), dtype_size(out->type.dtype), what);
      out->capacity_known = true;
      out->shape_varies = out->shape_varies || !out->type.is_static();
    }
  }

  void infer_node_types(Node& n) {
    if (n.domain.empty() && (n.op_type == "If" || n.op_type == "Loop" || n.op_type == "Scan")) {
      infer_control_flow(n, model_.path, [this](Graph& sub) { infer_graph(sub); });
      return;
    }
    if (n.is_control_flow())  // a function op whose body holds a subgraph: expand_functions keeps it whole
      fail_unsupported(model_.path + ": " + n.describe() + ": an op with a subgraph attribute other than If, Loop " +
                       "and Scan cannot run yet");
    if (!has_onnx_schema(n) && !is_own_op(n)) {
      ++unsupported_[n.op_type + " (domain '" + n.domain + "', opset " + std::to_string(n.opset) + ") at node '" +
                     n.name + "'"];
      return;
    }
    for (const Value* in : n.inputs)
      if (in && in->type.dtype == DType::Undefined) return;  // downstream of an unknown op
    check_schema_arity(n, model_.path);
    if (n.op_type == "Identity" && n.inputs.size() == 1 && n.outputs.size() == 1 && n.inputs[0] &&
        n.inputs[0]->constant && n.outputs[0]) {
      // The same bytes under a second name: shared, not copied. torch writes an Identity for each
      // use of a shared weight (an RNN-T predictor's recurrent weights, once per unrolled step).
      set_constant(*n.outputs[0], n.inputs[0]->constant);
      return;
    }
    if (auto folded = fold_node(n)) {
      make_constants(n, *folded);
      return;
    }
    infer_with_onnx(n, model_.path);
    bound_by_inputs(n, opts_.bounds);
    if (hooks_.evaluate)
      if (auto folded = hooks_.evaluate(n)) make_constants(n, *folded);
  }

  // The node's outputs become constants; the node itself is dropped at the end of its graph.
  static void make_constants(Node& n, std::vector<Tensor>& folded) {
    if (folded.size() != n.outputs.size())
      fail_internal(n.describe() + ": folded to " + std::to_string(folded.size()) + " values for " +
                    std::to_string(n.outputs.size()) + " outputs");
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (n.outputs[k]) set_constant(*n.outputs[k], std::make_shared<Tensor>(std::move(folded[k])));
  }

  static void set_constant(Value& out, std::shared_ptr<const Tensor> t) {
    out.type.dtype = t->dtype;
    out.type.has_rank = true;
    out.type.dims.clear();
    for (int64_t d : t->dims) out.type.dims.push_back(Dim{d, {}});
    out.capacity_known = false;
    out.capacity_bytes = 0;
    out.shape_varies = false;
    out.constant = std::move(t);
  }

  // Optional outputs nobody reads (Dropout's mask, ...) are dropped, as if the model omitted them,
  // so they need no shape and no memory.
  static void drop_unread_optional_outputs(Graph& g) {
    for (auto& n : g.nodes)
      for (size_t k = 1; k < n->outputs.size(); ++k) {
        Value* v = n->outputs[k];
        if (v && v->consumers.empty() && !v->is_graph_output) {
          n->outputs[k] = nullptr;
          g.release_value(v);
        }
      }
  }

  // The body input of the Loop-carried value `v` is a state of, where v is the body's update of
  // it or the Loop's final value and its shape varies; else null. A bound on that body input
  // (--bound, or one infer_loop derived from a constant trip count) holds for v too: one tensor,
  // iteration after iteration. So a decoder's token history needs one bound, on the body input.
  static const Value* carried_body_input(const Value& v) {
    if (v.type.is_static()) return nullptr;
    const Graph& g = *v.graph;
    if (g.owner && g.owner->op_type == "Loop" && v.is_graph_output) {
      const ControlFlowPorts ports(*g.owner);
      for (size_t o = 0; o < g.outputs.size(); ++o)
        if (g.outputs[o] == &v && ports.body_output(o).kind == Port::Kind::Carried)
          return g.inputs[ports.body_input_of_slot(ports.body_output(o).slot)];
    } else if (const Node* loop = v.producer; loop && loop->op_type == "Loop") {
      const ControlFlowPorts ports(*loop);
      const auto at = static_cast<size_t>(std::find(loop->outputs.begin(), loop->outputs.end(), &v) - loop->outputs.begin());
      if (at < ports.carried()) return loop->subgraph("body")->inputs[ports.body_input_of_slot(ports.slot_of_carried(at))];
    }
    return nullptr;
  }

  // Every buffer needs a byte capacity: exact for a static shape, else a bound.
  void size_values(Graph& g) {
    for (auto& v : g.values) {
      auto b = opts_.bounds.find(v->name);
      if (b != opts_.bounds.end()) used_bounds_.insert(v->name);  // a bound on a folded value is fine
      if (v->constant) continue;
      if (v->type.is_container()) {
        // A sequence or optional lives in the session (runtime/containers.h), never in the arena:
        // its elements are tensors of sizes the run decides.
        v->dynamic = true;
        v->shape_varies = true;
        v->capacity_known = true;
        v->capacity_bytes = 0;
        continue;
      }
      const Value* state = carried_body_input(*v);
      if (b == opts_.bounds.end() && state) b = opts_.bounds.find(state->name);
      if (b == opts_.bounds.end() && state && state->capacity_known && state->shape_varies && !state->dynamic) {
        v->capacity_bytes = state->capacity_bytes;  // the derived bound: what the slot holds
        v->capacity_known = true;
        v->shape_varies = true;
      }
      const std::string what = model_.path + ": tensor '" + v->name + "'";
      if (v->capacity_known) continue;
      v->capacity_known = true;
      if (b != opts_.bounds.end()) {
        v->capacity_bytes = checked_mul(checked_element_count(b->second, what), dtype_size(v->type.dtype), what);
        v->shape_varies = v->shape_varies || !v->type.is_static();
        continue;
      }
      if (v->type.dtype == DType::Undefined)
        fail(what + ": its element type could not be inferred");
      if (dtype_size(v->type.dtype) == 0)
        fail_unsupported(what + ": " + dtype_name(v->type.dtype) + " tensors are not supported");
      if (!v->type.is_static()) {
        std::string origin = v->producer ? " (output of " + v->producer->describe() + ")" : "";
        if (opts_.static_only)
          fail(what + origin + " has no static shape " + v->type.shape_string() + "; give it an upper bound",
               {{Remedy::Option::Bounds, v->name, "<dims>"}, {Remedy::Option::StaticOnly, "", ""}});
        make_dynamic(g, *v, what + origin);
        continue;
      }
      v->capacity_bytes = checked_mul(checked_element_count(v->type.static_dims(), what),
                                      dtype_size(v->type.dtype), what);
    }
  }

  // A dynamic tensor is allocated and sized by the session when its producer runs, in any graph:
  // ordinary nodes read and write it, If branches return it (copied into the If's output, dynamic
  // too), subgraphs capture it, and a Loop carries it where the carried value's own shape is
  // decided by the run (a growing token history: the body input's type has unknown dims, and the
  // session hands each iteration's buffer over to the next). What the planner lays out at compile
  // time cannot hold one: a Scan state, a Loop slot of a fixed shape, a scan input's slices or a
  // body's per-iteration scan output.
  static void make_dynamic(const Graph& g, Value& v, const std::string& what) {
    auto refuse = [&](const std::string& why) {
      fail_unsupported(what + " has a size known only at run time " + v.type.shape_string() + ", but " + why +
                           "; give it an upper bound",
                       {{Remedy::Option::Bounds, v.name, "<dims>"}});
    };
    if (g.owner && g.owner->op_type != "If")
      for (size_t o = 0; o < g.outputs.size(); ++o)
        if (g.outputs[o] == &v && !carried_shape_varies(*g.owner, ControlFlowPorts(*g.owner).body_output(o).slot))
          refuse("a " + g.owner->op_type + " body returns it, which needs its size at compile time");
    for (const Node* c : v.consumers) {
      if (c->op_type != "Loop" && c->op_type != "Scan") continue;
      // A Loop's trip count and condition, and Scan 8's sequence_lens, are read as data.
      const ControlFlowPorts ports(*c);
      for (size_t i = ports.first_carried_input(); i < c->inputs.size(); ++i)
        if (c->inputs[i] == &v && !(i - ports.first_carried_input() < ports.carried() &&
                                    carried_shape_varies(*c, ports.slot_of_carried(i - ports.first_carried_input()))))
          refuse(c->describe() + " carries or scans it in slots planned at compile time");
    }
    v.dynamic = true;
    v.shape_varies = true;
    v.capacity_known = true;
    v.capacity_bytes = 0;
  }

  Model& model_;
  const ShapeOptions& opts_;
  const ShapeHooks& hooks_;
  std::map<std::string, int> unsupported_;
  std::set<std::string> used_bounds_;
};

}  // namespace

void infer_shapes(Model& model, const ShapeOptions& options, const ShapeHooks& hooks) {
  bind_user_shapes(model, options);
  ShapeInference(model, options, hooks).run();
}

}  // namespace memplan
