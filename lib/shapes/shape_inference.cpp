#include "shapes/shape_inference.h"

#include <algorithm>
#include <set>

#include "memplan/error.h"
#include "passes/expand_functions.h"
#include "passes/inline_if.h"
#include "shapes/constant_folding.h"
#include "shapes/control_flow_shapes.h"
#include "shapes/onnx_inference.h"
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
    auto it = std::find_if(main.inputs.begin(), main.inputs.end(), [&](Value* v) { return v->name == name; });
    if (it == main.inputs.end()) {
      std::string names;
      for (Value* v : main.inputs) names += (names.empty() ? "" : ", ") + v->name;
      fail(model.path + ": --shape " + name + ": the model has no input of that name (inputs: " + names + ")");
    }
    TensorType& t = (*it)->type;
    if (t.has_rank && t.dims.size() != dims.size())
      fail(model.path + ": --shape " + name + ": input has rank " + std::to_string(t.dims.size()) +
           ", the option gives " + std::to_string(dims.size()) + " dims");
    t.has_rank = true;
    t.dims.clear();
    for (int64_t d : dims) t.dims.push_back(Dim{d, {}});
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
    if (!used.count(name)) fail(model.path + ": --dim " + name + ": no dimension of the model is named '" + name + "'");
  for (Value* in : main.inputs) {
    if (!in->type.has_rank)
      fail(model.path + ": input '" + in->name + "' has no shape; give one with --shape " + in->name + "=<dims>");
    for (const Dim& d : in->type.dims)
      if (!d.known()) {
        std::string hint = d.symbol.empty() ? "--shape " + in->name + "=<dims>"
                                            : "--dim " + d.symbol + "=<value> or --shape " + in->name + "=<dims>";
        fail(model.path + ": input '" + in->name + "' has unset dimension '" + (d.symbol.empty() ? "?" : d.symbol) +
             "' (shape " + in->type.shape_string() + "); fix it with " + hint);
      }
  }
}

class ShapeInference {
 public:
  ShapeInference(Model& m, const ShapeOptions& o) : model_(m), opts_(o) {}

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
        fail(model_.path + ": --bound " + name + ": no tensor of the model is named '" + name + "'");
  }

  void infer_graph(Graph& g) {
    for (size_t i = 0; i < g.nodes.size();) {
      Node& n = *g.nodes[i];
      if (n.op_type == "If" && n.domain.empty()) {
        const Value* cond = n.inputs.empty() ? nullptr : n.inputs[0];
        if (cond && cond->constant) {
          inline_if_branch(g, i, cond->constant->int_at(0) != 0);
          continue;  // infer the spliced-in nodes next
        }
      }
      if (should_expand_function(n) && expand_function_node(model_, g, i)) continue;  // infer the body's nodes next
      infer_node(n);
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
    if (n.domain.empty() && (n.op_type == "If" || n.op_type == "Loop" || n.op_type == "Scan")) {
      infer_control_flow(n, model_.path, [this](Graph& sub) { infer_graph(sub); });
      return;
    }
    if (!has_onnx_schema(n)) {
      ++unsupported_[n.op_type + " (domain '" + n.domain + "', opset " + std::to_string(n.opset) + ") at node '" +
                     n.name + "'"];
      return;
    }
    for (const Value* in : n.inputs)
      if (in && in->type.dtype == DType::Undefined) return;  // downstream of an unknown op
    if (auto folded = fold_node(n)) {
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        Value* out = n.outputs[k];
        if (!out) continue;
        Tensor& t = (*folded)[k];
        out->type.dtype = t.dtype;
        out->type.has_rank = true;
        out->type.dims.clear();
        for (int64_t d : t.dims) out->type.dims.push_back(Dim{d, {}});
        out->constant = std::make_shared<Tensor>(std::move(t));
      }
      return;
    }
    infer_with_onnx(n, model_.path);
    bound_by_inputs(n, opts_.bounds);
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

  // Every buffer needs a byte capacity: exact for a static shape, else a bound.
  void size_values(Graph& g) {
    for (auto& v : g.values) {
      auto b = opts_.bounds.find(v->name);
      if (b != opts_.bounds.end()) used_bounds_.insert(v->name);  // a bound on a folded value is fine
      if (v->constant) continue;
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
        fail(what + origin + " has no static shape " + v->type.shape_string() +
             "; give an upper bound with --bound " + v->name + "=<dims>");
      }
      v->capacity_bytes = checked_mul(checked_element_count(v->type.static_dims(), what),
                                      dtype_size(v->type.dtype), what);
    }
  }

  Model& model_;
  const ShapeOptions& opts_;
  std::map<std::string, int> unsupported_;
  std::set<std::string> used_bounds_;
};

}  // namespace

void infer_shapes(Model& model, const ShapeOptions& options) {
  bind_user_shapes(model, options);
  ShapeInference(model, options).run();
}

}  // namespace memplan
