#include "ir/graph_clone.h"

#include <unordered_map>

namespace memplan {
namespace {

class Cloner {
 public:
  std::unique_ptr<Graph> graph(const Graph& g, Graph* parent, Node* owner) {
    auto out = std::make_unique<Graph>();
    out->name = g.name;
    out->parent = parent;
    out->owner = owner;
    out->owner_attribute = g.owner_attribute;
    out->depth = g.depth;
    for (const auto& v : g.values) {
      Value* c = out->add_value(v->name);
      *c = *v;
      c->graph = out.get();
      c->producer = nullptr;
      c->consumers.clear();
      values_[v.get()] = c;
    }
    for (const auto& n : g.nodes) out->nodes.push_back(node(*n, out.get()));
    for (const auto& v : g.values) {
      Value* c = values_.at(v.get());
      c->producer = v->producer ? nodes_.at(v->producer) : nullptr;
      for (const Node* r : v->consumers) c->consumers.push_back(nodes_.at(r));
    }
    out->inputs = map(g.inputs);
    out->outputs = map(g.outputs);
    out->initializers = map(g.initializers);
    out->captures = map(g.captures);  // a nested graph's captures may be values copied here
    return out;
  }

 private:
  std::unique_ptr<Node> node(const Node& n, Graph* scope) {
    auto out = std::make_unique<Node>();
    out->name = n.name;
    out->op_type = n.op_type;
    out->domain = n.domain;
    out->opset = n.opset;
    out->graph = scope;
    out->inputs = map(n.inputs);
    out->outputs = map(n.outputs);
    out->implicit_inputs = map(n.implicit_inputs);
    std::unordered_map<const Graph*, Graph*> copies;
    for (const auto& sub : n.subgraphs) {
      out->subgraphs.push_back(graph(*sub, scope, out.get()));
      copies[sub.get()] = out->subgraphs.back().get();
    }
    out->attributes = n.attributes;
    for (Attribute& a : out->attributes)
      for (Graph*& sub : a.graphs) sub = copies.at(sub);
    nodes_[&n] = out.get();
    return out;
  }

  // A value of the copied scopes, or the outer value itself (and null stays null).
  std::vector<Value*> map(const std::vector<Value*>& in) const {
    std::vector<Value*> out;
    out.reserve(in.size());
    for (Value* v : in) {
      auto it = v ? values_.find(v) : values_.end();
      out.push_back(it == values_.end() ? v : it->second);
    }
    return out;
  }

  std::unordered_map<const Value*, Value*> values_;
  std::unordered_map<const Node*, Node*> nodes_;
};

}  // namespace

std::unique_ptr<Graph> clone_graph(const Graph& g) { return Cloner().graph(g, g.parent, g.owner); }

}  // namespace memplan
