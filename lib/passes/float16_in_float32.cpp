#include "passes/float16_in_float32.h"

#include <algorithm>
#include <memory>
#include <set>

#include "ir/tensor.h"
#include "memplan/error.h"

namespace memplan {
namespace {

constexpr DType kHalf = DType::Float16, kFloat = DType::Float32;

std::shared_ptr<const Tensor> widened(const Tensor& t) {
  Tensor w;
  w.dtype = kFloat;
  w.dims = t.dims;
  w.splat = t.splat;
  const uint64_t n = t.splat ? (t.element_count() > 0 ? 1 : 0) : t.element_count();
  w.bytes.resize(n * sizeof(float));
  for (uint64_t i = 0; i < n; ++i) store_number(w.bytes.data() + i * sizeof(float), kFloat, t.float_at(i));
  return std::make_shared<const Tensor>(std::move(w));
}

bool is_half_cast(const Node& n) {
  return n.domain.empty() && n.op_type == "Cast" && n.attr_int("to", 0) == static_cast<int64_t>(kHalf);
}

bool has_half(Graph& main) {
  bool found = false;
  for_each_graph(main, [&](Graph& g) {
    for (const auto& v : g.values) found = found || v->type.dtype == kHalf || (v->constant && v->constant->dtype == kHalf);
    for (const auto& n : g.nodes) {
      if (is_half_cast(*n)) found = true;
      for (const Attribute& a : n->attributes)
        found = found || (a.tensor && a.tensor->dtype == kHalf) || (a.name == "dtype" && a.i == static_cast<int64_t>(kHalf));
    }
  });
  return found;
}

class Widen {
 public:
  explicit Widen(Model& m) : model_(m), opset_(m.opsets.count("") ? m.opsets.at("") : 13) {}

  int run() {
    Graph& main = *model_.main;
    // The interface stays float16: inputs are read through a Cast, outputs written through one.
    for (Value* in : std::vector<Value*>(main.inputs))
      if (in->type.dtype == kHalf && !in->constant) {
        Value* wide = main.add_fresh_value(in->name + "_float32");
        replace_reads(in, wide);
        insert_cast(main, 0, in, wide, kFloat);
        keep_.insert(in);
      }
    for (Value* out : std::vector<Value*>(main.outputs))
      if (out->type.dtype == kHalf && out->producer && !keep_.count(out) && !is_half_cast(*out->producer)) {
        // Its readers read it rounded, as those of a Cast to float16 (below).
        Node* p = out->producer;
        Value* wide = main.add_fresh_value(out->name + "_float32");
        for (Value*& o : p->outputs)
          if (o == out) o = wide;
        insert_cast(main, index_of(main, p) + 1, wide, out, kHalf);
      }
    // The model's own Casts to float16 (and those just made for the outputs) round: each keeps
    // its float16 output, which its readers read through a Cast back.
    for_each_graph(main, [&](Graph& g) {
      for (size_t i = 0; i < g.nodes.size(); ++i) {
        Node& n = *g.nodes[i];
        if (!is_half_cast(n) || !n.outputs[0] || keep_.count(n.outputs[0]) || n.outputs[0]->constant) continue;
        Value* rounded = n.outputs[0];
        keep_.insert(rounded);
        if (!has_reader(rounded)) continue;  // a graph output only
        Value* wide = g.add_fresh_value(rounded->name + "_float32");
        replace_reads(rounded, wide);
        insert_cast(g, i + 1, rounded, wide, kFloat);
        ++i;
      }
    });
    int count = 0;
    for_each_graph(main, [&](Graph& g) {
      for (auto& v : g.values) {
        if (keep_.count(v.get())) continue;
        bool wide = false;
        if (v->constant && v->constant->dtype == kHalf) {
          v->constant = widened(*v->constant);
          wide = true;
        }
        if (v->type.dtype == kHalf) {
          v->type.dtype = kFloat;
          wide = true;
        }
        count += wide;
      }
      for (auto& n : g.nodes)
        for (Attribute& a : n->attributes) {
          if (a.tensor && a.tensor->dtype == kHalf) a.tensor = widened(*a.tensor);
          if (a.name == "dtype" && a.kind == Attribute::Kind::Int && a.i == static_cast<int64_t>(kHalf))
            a.i = static_cast<int64_t>(kFloat);
        }
    });
    rebuild_uses(main);
    return count;
  }

 private:
  // Every node, in any graph, and every subgraph output that reads `from` reads `to` instead.
  void replace_reads(Value* from, Value* to) {
    for_each_graph(*model_.main, [&](Graph& g) {
      for (auto& n : g.nodes)
        for (Value*& in : n->inputs)
          if (in == from) in = to;
      if (&g != model_.main.get())
        for (Value*& o : g.outputs)
          if (o == from) o = to;
    });
  }

  bool has_reader(const Value* v) const {
    bool read = false;
    for_each_graph(*model_.main, [&](Graph& g) {
      for (const auto& n : g.nodes) read = read || std::count(n->inputs.begin(), n->inputs.end(), v) > 0;
      if (&g != model_.main.get()) read = read || std::count(g.outputs.begin(), g.outputs.end(), v) > 0;
    });
    return read;
  }

  void insert_cast(Graph& g, size_t at, Value* in, Value* out, DType to) {
    auto n = std::make_unique<Node>();
    n->name = out->name + "_cast";
    n->op_type = "Cast";
    n->opset = opset_;
    n->graph = &g;
    n->inputs = {in};
    n->outputs = {out};
    Attribute a;
    a.name = "to";
    a.kind = Attribute::Kind::Int;
    a.i = static_cast<int64_t>(to);
    n->attributes.push_back(std::move(a));
    out->producer = n.get();
    out->type.dtype = to;
    g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(at), std::move(n));
  }

  static size_t index_of(const Graph& g, const Node* n) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (g.nodes[i].get() == n) return i;
    fail_internal("a node is not in its graph");
  }

  Model& model_;
  int64_t opset_;
  std::set<const Value*> keep_;  // float16 values that stay float16
};

}  // namespace

int compute_float16_in_float32(Model& model) {
  if (!model.main || !has_half(*model.main)) return 0;
  return Widen(model).run();
}

}  // namespace memplan
