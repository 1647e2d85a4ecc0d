#include "ir/graph.h"

#include <algorithm>
#include <queue>
#include <unordered_set>

#include "memplan/error.h"

namespace memplan {

bool TensorType::is_static() const {
  return !is_container() && has_rank && std::all_of(dims.begin(), dims.end(), [](const Dim& d) { return d.known(); });
}

std::vector<int64_t> TensorType::static_dims() const {
  std::vector<int64_t> out;
  out.reserve(dims.size());
  for (const Dim& d : dims) out.push_back(d.value);
  return out;
}

std::string container_name(Container c) {
  switch (c) {
    case Container::None: return "tensor";
    case Container::Sequence: return "sequence";
    case Container::Optional: return "optional";
    case Container::OptionalSequence: return "optional sequence";
  }
  return "tensor";
}

std::string a_container(Container c) {
  const std::string name = container_name(c);
  return (name[0] == 'o' ? "an " : "a ") + name;
}

std::string TensorType::shape_string() const {
  if (is_container()) {
    TensorType element = *this;
    element.container = Container::None;
    return container_name(container) + " of " + element.shape_string();
  }
  if (!has_rank) return "unranked";
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += dims[i].known() ? std::to_string(dims[i].value) : (dims[i].symbol.empty() ? "?" : dims[i].symbol);
  }
  return s + "]";
}

const Attribute* Node::attr(const std::string& n) const {
  for (const Attribute& a : attributes)
    if (a.name == n) return &a;
  return nullptr;
}

void Node::erase_attr(const std::string& n) {
  std::erase_if(attributes, [&](const Attribute& a) { return a.name == n; });
}

void Node::set_attr_int(const std::string& n, int64_t v) {
  erase_attr(n);
  Attribute a;
  a.name = n;
  a.kind = Attribute::Kind::Int;
  a.i = v;
  attributes.push_back(std::move(a));
}

void Node::set_attr_ints(const std::string& n, std::vector<int64_t> v) {
  erase_attr(n);
  Attribute a;
  a.name = n;
  a.kind = Attribute::Kind::Ints;
  a.ints = std::move(v);
  attributes.push_back(std::move(a));
}

void Node::set_attr_string(const std::string& n, std::string v) {
  erase_attr(n);
  Attribute a;
  a.name = n;
  a.kind = Attribute::Kind::String;
  a.s = std::move(v);
  attributes.push_back(std::move(a));
}

int64_t Node::attr_int(const std::string& n, int64_t fallback) const {
  const Attribute* a = attr(n);
  return a && a->kind == Attribute::Kind::Int ? a->i : fallback;
}

float Node::attr_float(const std::string& n, float fallback) const {
  const Attribute* a = attr(n);
  return a && a->kind == Attribute::Kind::Float ? a->f : fallback;
}

std::string Node::attr_string(const std::string& n, const std::string& fallback) const {
  const Attribute* a = attr(n);
  return a && a->kind == Attribute::Kind::String ? a->s : fallback;
}

std::vector<int64_t> Node::attr_ints(const std::string& n) const {
  const Attribute* a = attr(n);
  return a && a->kind == Attribute::Kind::Ints ? a->ints : std::vector<int64_t>{};
}

Graph* Node::subgraph(const std::string& attr_name) const {
  const Attribute* a = attr(attr_name);
  return a && a->kind == Attribute::Kind::Graph && !a->graphs.empty() ? a->graphs[0] : nullptr;
}

bool Node::touches_dynamic() const {
  auto dynamic = [](const Value* v) { return v && v->dynamic; };
  return std::any_of(inputs.begin(), inputs.end(), dynamic) || std::any_of(outputs.begin(), outputs.end(), dynamic);
}

std::string Node::describe() const { return op_type + " node '" + name + "'"; }

Value* Graph::find_local(const std::string& n) const {
  auto it = by_name_.find(n);
  return it == by_name_.end() ? nullptr : it->second;
}

Value* Graph::lookup(const std::string& n) const {
  for (const Graph* g = this; g; g = g->parent)
    if (Value* v = g->find_local(n)) return v;
  return nullptr;
}

Value* Graph::add_value(const std::string& n) {
  if (by_name_.count(n)) fail(path() + ": tensor '" + n + "' is defined twice in the same graph");
  auto v = std::make_unique<Value>();
  v->name = n;
  v->graph = this;
  Value* raw = v.get();
  values.push_back(std::move(v));
  by_name_.emplace(n, raw);
  return raw;
}

std::unique_ptr<Value> Graph::release_value(Value* v) {
  auto it = std::find_if(values.begin(), values.end(), [v](const auto& p) { return p.get() == v; });
  if (it == values.end()) fail_internal("release_value: '" + v->name + "' is not in " + path());
  std::unique_ptr<Value> out = std::move(*it);
  values.erase(it);
  by_name_.erase(v->name);
  return out;
}

void Graph::absorb_output(Node& n, Node& next) {
  Value* old = n.outputs[0];
  n.outputs[0] = next.outputs[0];
  n.outputs[0]->producer = &n;
  release_value(old);
}

std::string Graph::fresh_name(const std::string& base) const {
  std::string name = base;
  for (int k = 1; by_name_.count(name); ++k) name = base + "_" + std::to_string(k);
  return name;
}

Value* Graph::add_fresh_value(const std::string& base) { return add_value(fresh_name(base)); }

Value* Graph::add_constant(const std::string& base, Tensor t) {
  Value* v = add_fresh_value(base);
  v->type = TensorType::of(t);
  v->constant = std::make_shared<Tensor>(std::move(t));
  return v;
}

TensorType TensorType::of(const Tensor& t) {
  TensorType type;
  type.dtype = t.dtype;
  type.has_rank = true;
  for (int64_t d : t.dims) type.dims.push_back(Dim{d, {}});
  return type;
}

Value* Graph::adopt_value(std::unique_ptr<Value> v) {
  v->name = fresh_name(v->name);
  v->graph = this;
  Value* raw = v.get();
  by_name_.emplace(raw->name, raw);
  values.push_back(std::move(v));
  return raw;
}

void replace_uses(Graph& scope, Value* from, Value* to) {
  for_each_graph(scope, [&](Graph& g) {
    for (auto& n : g.nodes)
      for (Value*& in : n->inputs)
        if (in == from) in = to;
    for (Value*& out : g.outputs)
      if (out == from) out = to;
  });
}

std::string Graph::path() const {
  if (!owner) return name.empty() ? "main graph" : "graph '" + name + "'";
  return parent->path() + " > " + owner->describe() + "." + owner_attribute;
}

namespace {

void add_unique(std::vector<Value*>& list, Value* v) {
  if (std::find(list.begin(), list.end(), v) == list.end()) list.push_back(v);
}

void add_unique(std::vector<Node*>& list, Node* n) {
  if (std::find(list.begin(), list.end(), n) == list.end()) list.push_back(n);
}

// `user` (a graph nested somewhere below v's scope) reads v: every graph between them captures
// v, and the control-flow node in v's own scope consumes it.
void record_outer_use(Graph* user, Value* v) {
  for (Graph* g = user; g && g != v->graph; g = g->parent) {
    add_unique(g->captures, v);
    if (g->parent == v->graph) {
      add_unique(g->owner->implicit_inputs, v);
      add_unique(v->consumers, g->owner);
    }
  }
}

}  // namespace

void Value::release_constant_bytes() {
  auto shape_only = std::make_shared<Tensor>();
  shape_only->dtype = constant->dtype;
  shape_only->dims = constant->dims;
  constant = std::move(shape_only);
}

Node* sole_consumer(const Value* v) {
  if (!v || v->is_graph_output || v->consumers.size() != 1) return nullptr;
  Node* c = v->consumers[0];
  return c->graph == v->graph && std::count(c->inputs.begin(), c->inputs.end(), v) == 1 ? c : nullptr;
}

void drop_unread_constants(Graph& main) {
  for_each_graph(main, [](Graph& g) {
    std::vector<Value*> unused;
    for (const auto& v : g.values)
      if (v->constant && v->consumers.empty() && std::find(g.outputs.begin(), g.outputs.end(), v.get()) == g.outputs.end())
        unused.push_back(v.get());
    for (Value* v : unused) {
      std::erase(g.initializers, v);
      g.release_value(v);
    }
  });
}

int fold_nodes_away(Graph& main, const std::function<void(Graph& g, std::unordered_set<const Node*>& dead)>& rewrite) {
  int removed = 0;
  for_each_graph(main, [&](Graph& g) {
    std::unordered_set<const Node*> dead;
    rewrite(g, dead);
    removed += static_cast<int>(dead.size());
    std::erase_if(g.nodes, [&](const std::unique_ptr<Node>& n) { return dead.count(n.get()) > 0; });
  });
  if (removed) {
    rebuild_uses(main);
    drop_unread_constants(main);
  }
  return removed;
}

void rebuild_uses(Graph& main) {
  for_each_graph(main, [](Graph& g) {
    g.captures.clear();
    for (auto& v : g.values) {
      v->producer = nullptr;
      v->consumers.clear();
    }
    for (auto& n : g.nodes) n->implicit_inputs.clear();
  });
  for_each_graph(main, [](Graph& g) {
    for (auto& n : g.nodes) {
      n->graph = &g;
      for (Value* out : n->outputs)
        if (out) out->producer = n.get();
      for (Value* in : n->inputs) {
        if (!in) continue;
        if (in->graph == &g)
          add_unique(in->consumers, n.get());
        else
          record_outer_use(&g, in);
      }
    }
    for (Value* out : g.outputs)
      if (out->graph != &g) record_outer_use(&g, out);
  });
}

void sort_topologically(Graph& g) {
  // Kahn's algorithm with the file's index as priority: a valid order is kept as it is.
  const size_t n = g.nodes.size();
  std::unordered_map<const Node*, size_t> index;
  for (size_t i = 0; i < n; ++i) index[g.nodes[i].get()] = i;
  std::vector<size_t> pending(n, 0);
  std::vector<std::vector<size_t>> users(n);
  for (size_t i = 0; i < n; ++i) {
    const Node& node = *g.nodes[i];
    std::unordered_set<size_t> deps;
    auto depend = [&](const Value* v) {
      if (v && v->producer && v->producer->graph == &g) deps.insert(index.at(v->producer));
    };
    for (const Value* v : node.inputs) depend(v);
    for (const Value* v : node.implicit_inputs) depend(v);
    for (size_t d : deps) {
      users[d].push_back(i);
      ++pending[i];
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<std::unique_ptr<Node>> ordered;
  ordered.reserve(n);
  std::vector<bool> placed(n, false);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    placed[i] = true;
    ordered.push_back(std::move(g.nodes[i]));
    for (size_t u : users[i])
      if (--pending[u] == 0) ready.push(u);
  }
  if (ordered.size() != n) {
    for (size_t i = 0; i < n; ++i)
      if (!placed[i])
        fail(g.path() + ": the graph has a cycle through " + g.nodes[i]->describe());
  }
  g.nodes = std::move(ordered);
}

}  // namespace memplan
