#include "passes/expand_functions.h"

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "memplan/error.h"
#include "onnx/attributes.h"
#include "runtime/kernel_registry.h"
#include "shapes/onnx_inference.h"

namespace memplan {
namespace {

std::string canonical_domain(const std::string& d) { return d == "ai.onnx" ? "" : d; }

// Builds the body's nodes and values apart from `g`, so a body that fails half-way leaves `g`
// as it was; commit() then splices them in.
class Splicer {
 public:
  Splicer(const Model& model, Graph& g, const Node& node, const FunctionBody& body)
      : model_(model), g_(g), node_(node), body_(body),
        where_(model.path + ": " + g.path() + ": " + node.describe() + ": its function body") {}

  void build() {
    bind_inputs();
    const auto& nodes = body_.proto.node();
    for (int j = 0; j < nodes.size(); ++j) add_body_node(resolve_body_node(body_, nodes[j]), static_cast<size_t>(j));
    bind_outputs();
  }

  // Moves the new values into `g` and the new nodes into the node's place; returns the count.
  size_t commit(size_t index) {
    for (auto& v : values_) g_.adopt_value(std::move(v));
    g_.nodes.erase(g_.nodes.begin() + static_cast<std::ptrdiff_t>(index));
    g_.nodes.insert(g_.nodes.begin() + static_cast<std::ptrdiff_t>(index), std::make_move_iterator(nodes_.begin()),
                    std::make_move_iterator(nodes_.end()));
    return nodes_.size();
  }

 private:
  void bind_inputs() {
    const auto& inputs = body_.proto.input();
    if (node_.inputs.size() > static_cast<size_t>(inputs.size()))
      fail(where_ + " takes " + std::to_string(inputs.size()) + " inputs, the node has " +
           std::to_string(node_.inputs.size()));
    // An input the node omits reads as an omitted input (nullptr) wherever the body uses it.
    for (int i = 0; i < inputs.size(); ++i) {
      const size_t k = static_cast<size_t>(i);
      define(inputs[i], k < node_.inputs.size() ? node_.inputs[k] : nullptr);
    }
  }

  void add_body_node(const onnx::NodeProto& np, size_t j) {
    const std::string name = node_.name + "/" + (np.name().empty() ? np.op_type() + "_" + std::to_string(j) : np.name());
    const std::string what = where_ + " node '" + name + "'";
    const std::string domain = canonical_domain(np.domain());
    if (domain.empty() && np.op_type() == "Constant") {
      // As the importer does: a Constant is a value, not a node (the folder and planner expect it).
      if (np.output_size() != 1) fail(what + ": a Constant must have one output");
      auto t = std::make_shared<Tensor>(constant_node_value(np, model_dir(), what));
      Value* v = fresh_value(np.output(0));
      v->type = TensorType::of(*t);
      v->constant = std::move(t);
      define(np.output(0), v);
      return;
    }
    auto n = std::make_unique<Node>();
    n->name = name;
    n->op_type = np.op_type();
    n->domain = domain;
    n->opset = opset_of(domain, what);
    n->graph = &g_;
    for (const std::string& in : np.input()) n->inputs.push_back(in.empty() ? nullptr : read(in, what));
    for (const std::string& out : np.output()) {
      if (out.empty()) {
        n->outputs.push_back(nullptr);
        continue;
      }
      Value* v = claim_node_output(out);
      if (!v) v = fresh_value(out);
      define(out, v);
      n->outputs.push_back(v);
    }
    for (const auto& a : np.attribute()) n->attributes.push_back(attribute_from_proto(a, model_dir(), what));
    nodes_.push_back(std::move(n));
  }

  // The node's own output value for a body output, so the node's readers need no rewiring;
  // null when the body name is not an output of the function or the node omits that output.
  Value* claim_node_output(const std::string& name) const {
    const auto& outs = body_.proto.output();
    for (int k = 0; k < outs.size(); ++k) {
      const size_t i = static_cast<size_t>(k);
      if (outs[k] == name && i < node_.outputs.size()) return node_.outputs[i];
    }
    return nullptr;
  }

  // Each node output the body did not make itself (a body output that is a body input or a
  // Constant) gets an Identity, as inline_if gives a branch's outer outputs one.
  void bind_outputs() {
    const auto& outs = body_.proto.output();
    if (node_.outputs.size() > static_cast<size_t>(outs.size()))
      fail(where_ + " has " + std::to_string(outs.size()) + " outputs, the node " + std::to_string(node_.outputs.size()));
    for (size_t k = 0; k < node_.outputs.size(); ++k) {
      Value* out = node_.outputs[k];
      if (!out) continue;
      Value* inner = read(outs[static_cast<int>(k)], where_ + " output " + std::to_string(k));
      if (inner == out) continue;
      if (!inner) fail(where_ + " returns an omitted input as output " + std::to_string(k));
      auto id = std::make_unique<Node>();
      id->name = node_.name + "/" + out->name + "_identity";
      id->op_type = "Identity";
      id->opset = opset_of("", where_);
      id->graph = &g_;
      id->inputs = {inner};
      id->outputs = {out};
      nodes_.push_back(std::move(id));
    }
  }

  int64_t opset_of(const std::string& domain, const std::string& what) const {
    if (auto v = body_opset(body_, node_, domain)) return *v;
    fail(what + " uses domain '" + domain + "', which the function does not import");
  }

  void define(const std::string& name, Value* v) {
    if (!names_.emplace(name, v).second) fail(where_ + " defines '" + name + "' twice");
  }

  Value* read(const std::string& name, const std::string& what) const {
    auto it = names_.find(name);
    if (it == names_.end()) fail(what + " reads '" + name + "', which nothing before it defines");
    return it->second;
  }

  Value* fresh_value(const std::string& body_name) {
    auto v = std::make_unique<Value>();
    v->name = node_.name + "/" + body_name;  // adopt_value makes it unique in g
    values_.push_back(std::move(v));
    return values_.back().get();
  }

  std::filesystem::path model_dir() const { return std::filesystem::path(model_.path).parent_path(); }

  const Model& model_;
  Graph& g_;
  const Node& node_;
  const FunctionBody& body_;
  const std::string where_;
  std::map<std::string, Value*> names_;  // body name -> value (nullptr: an omitted input)
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<std::unique_ptr<Node>> nodes_;
};

}  // namespace

bool should_expand_function(const Node& node) {
  if (!has_function_body(node)) return false;
  for (const Value* in : node.inputs)
    if (in && in->type.dtype == DType::Undefined) return false;  // a context-dependent body needs the types
  return !rt::KernelRegistry::instance().accepts(node);
}

bool expand_function_node(Model& model, Graph& g, size_t node_index) {
  if (node_index >= g.nodes.size())
    fail_internal("expand_function_node: node " + std::to_string(node_index) + " of " + std::to_string(g.nodes.size()));
  const Node& node = *g.nodes[node_index];
  std::optional<FunctionBody> body = function_body_of(node, model.path);
  // Bodies with subgraphs would need their scopes re-parented; the ops that have one (Range,
  // SequenceMap) keep their own kernel, or are reported as unsupported.
  if (!body || body_has_subgraphs(body->proto)) return false;
  Splicer splicer(model, g, node, *body);
  splicer.build();
  splicer.commit(node_index);  // destroys the node
  rebuild_uses(*model.main);
  return true;
}

}  // namespace memplan
